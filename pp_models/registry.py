"""The model families the ``ppzoo`` command line knows.

Each entry says how to build the family's PyMC model from a loaded
:class:`~pp_models.datasets.Dataset` and options, which ``fit`` methods it supports, and
which shipped data set it demonstrates on. A family declares its entry as
``CLI_ENTRY = ModelEntry(...)`` beside its factory; :func:`list_models` discovers every
module under ``pp_models`` (a test fails when a module with a ``model`` factory has no
entry). A family whose factory ``ppzoo fit`` has no use for (its answer is not a
posterior, e.g. a retrieval method) declares ``CLI_ENTRY = NoCLIEntry(reason)`` instead,
and ``ppzoo list`` shows the reason.

Importing a family imports PyMC, PyTensor and Numba (seconds). What ``ppzoo list`` prints
and the check of a model's name need none of that: :func:`list_model_summaries` reads
each ``CLI_ENTRY``'s literal fields from the source without importing it, and
:func:`get_model` imports only the family asked for.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "EntrySummary",
    "ModelEntry",
    "NoCLIEntry",
    "family_modules",
    "get_model",
    "get_summary",
    "list_model_summaries",
    "list_models",
    "model_names",
    "no_cli_entries",
    "register_model",
]


@dataclass(frozen=True)
class ModelEntry:
    """A model family as the CLI sees it.

    ``build(dataset, **options)`` returns a ``pymc.Model`` for a loaded
    :class:`~pp_models.datasets.Dataset` (its ``data``, ``feature_names``, ``extras``);
    ``defaults`` are the options the CLI uses unless told otherwise, ``fit_defaults``
    the sampling sizes (``draws``, ``tune``, ``chains``) it uses for this family and any
    other ``fit`` keyword it passes (e.g. ``var_names``).
    """

    name: str
    description: str
    methods: tuple[str, ...]
    build: Callable[..., pm.Model]
    default_dataset: str
    defaults: dict[str, Any] = field(default_factory=dict)
    fit_defaults: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NoCLIEntry:
    """A family with a ``model`` factory but no ``ppzoo fit`` entry, and why.

    ``name`` is the family; ``reason`` one sentence a user of ``ppzoo list`` reads (what
    the family computes instead, and where).
    """

    name: str
    reason: str

    def __post_init__(self):
        if not self.reason.strip():
            raise ValueError(f"NoCLIEntry {self.name!r}: give the reason")


_MODELS: dict[str, ModelEntry] = {}
_DISCOVERED: list[bool] = []


def register_model(entry: ModelEntry) -> ModelEntry:
    """Make ``entry`` known to ``ppzoo``."""
    if entry.name in _MODELS:
        raise ValueError(f"model {entry.name!r} is already registered")
    _MODELS[entry.name] = entry
    return entry


def list_models() -> list[ModelEntry]:
    """The registered model families, sorted by name."""
    _load_builtin_models()
    return [_MODELS[k] for k in sorted(_MODELS)]


def get_model(name: str) -> ModelEntry:
    """The registered family ``name`` (importing only the module that declares it)."""
    if name not in _MODELS:
        module = importlib.import_module(get_summary(name).module)
        entry = getattr(module, "CLI_ENTRY", None)
        if isinstance(entry, ModelEntry) and entry.name not in _MODELS:
            register_model(entry)
    if name not in _MODELS:
        raise ValueError(f"model {name!r}: its module declares no CLI_ENTRY of that name")
    return _MODELS[name]


def get_summary(name: str) -> EntrySummary:
    """The :class:`EntrySummary` of family ``name``, without importing it; a
    ``ValueError`` naming the families (and the closest one) for an unknown name, or the
    reason a family has no ``ppzoo`` entry."""
    summaries = {s.name: s for s in list_model_summaries()}
    if name not in summaries:
        for entry in no_cli_entries():
            if entry.name == name:
                raise ValueError(f"model {name!r} has no ppzoo entry: {entry.reason}")
        import difflib

        close = difflib.get_close_matches(str(name), list(summaries), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(f"unknown model {name!r}{hint}; available: "
                         f"{', '.join(sorted(summaries))}")
    return summaries[name]


@dataclass(frozen=True)
class EntrySummary:
    """What ``ppzoo list`` shows of a family, read from its ``CLI_ENTRY`` without
    importing it; ``module`` is the module that declares the entry."""

    name: str
    description: str
    methods: tuple[str, ...]
    default_dataset: str
    defaults: dict[str, Any]
    fit_defaults: dict[str, Any]
    module: str


#: the ModelEntry fields a summary holds (each must be a literal in the source)
_SUMMARY_FIELDS = ("name", "description", "methods", "default_dataset", "defaults",
                   "fit_defaults")


def list_model_summaries() -> list[EntrySummary]:
    """Every family's :class:`EntrySummary`, sorted by name, without importing a family.

    Entries registered at run time with :func:`register_model` are included; a
    ``CLI_ENTRY`` whose fields are not literals is read by importing its module.
    """
    found = {s.name: s for s in _scanned() if isinstance(s, EntrySummary)}
    for entry in _MODELS.values():
        if entry.name in found:
            continue
        found[entry.name] = EntrySummary(entry.name, entry.description, tuple(entry.methods),
                                         entry.default_dataset, dict(entry.defaults),
                                         dict(entry.fit_defaults), type(entry).__module__)
    return [found[k] for k in sorted(found)]


def no_cli_entries() -> list[NoCLIEntry]:
    """The families that declare they have no ``ppzoo fit`` entry, sorted by name (read
    from the source like :func:`list_model_summaries`)."""
    return sorted((e for e in _scanned() if isinstance(e, NoCLIEntry)), key=lambda e: e.name)


def model_names() -> list[str]:
    """The names of the families, sorted, without importing them."""
    return [s.name for s in list_model_summaries()]


_SCANNED: list[list] = []


def _scanned() -> list:
    """Every family's :class:`EntrySummary` or :class:`NoCLIEntry`, read once."""
    if not _SCANNED:
        _SCANNED.append(list(_scan_entries()))
    return _SCANNED[0]


def _scan_entries():
    import pp_models

    root = Path(pp_models.__file__).parent
    for info in pkgutil.iter_modules(pp_models.__path__):
        if info.name.startswith("_"):
            continue
        if info.ispkg:
            files = sorted((root / info.name).glob("*.py"))
        else:
            files = [root / f"{info.name}.py"]
        for path in files:
            stem = path.stem
            module = (f"pp_models.{info.name}" if not info.ispkg
                      else f"pp_models.{info.name}" + ("" if stem == "__init__" else f".{stem}"))
            summary = _summary_in(path, module)
            if summary is not None:
                yield summary


def _summary_in(path: Path, module: str) -> EntrySummary | NoCLIEntry | None:
    """The ``CLI_ENTRY = ModelEntry(...)`` (or ``NoCLIEntry(...)``) assigned at the top
    level of ``path``."""
    text = path.read_text(encoding="utf-8")
    if "CLI_ENTRY" not in text:
        return None
    for node in ast.parse(text, filename=str(path)).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == "CLI_ENTRY" for t in node.targets)):
            continue
        if getattr(node.value.func, "id", getattr(node.value.func, "attr", "")) == "NoCLIEntry":
            try:
                return NoCLIEntry(*map(ast.literal_eval, node.value.args),
                                  **{k.arg: ast.literal_eval(k.value)
                                     for k in node.value.keywords})
            except ValueError:
                return importlib.import_module(module).CLI_ENTRY
        fields = {"defaults": {}, "fit_defaults": {}}
        for keyword in node.value.keywords:
            if keyword.arg in _SUMMARY_FIELDS:
                try:
                    fields[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    break  # not a literal: read it by importing the module
        else:
            if all(k in fields for k in _SUMMARY_FIELDS):
                return EntrySummary(module=module, **{
                    k: tuple(v) if k == "methods" else v for k, v in fields.items()})
        entry = importlib.import_module(module).CLI_ENTRY
        if isinstance(entry, NoCLIEntry):
            return entry
        return EntrySummary(entry.name, entry.description, tuple(entry.methods),
                            entry.default_dataset, dict(entry.defaults),
                            dict(entry.fit_defaults), module)
    return None


def _load_builtin_models() -> None:
    if _DISCOVERED:
        return
    _DISCOVERED.append(True)
    for module in family_modules():
        entry = getattr(module, "CLI_ENTRY", None)
        if isinstance(entry, ModelEntry) and entry.name not in _MODELS:
            register_model(entry)


def family_modules() -> list:
    """Import and return every module and package directly under ``pp_models``.

    A family declares ``CLI_ENTRY = ModelEntry(...)`` next to its factory (in its module,
    or in its package's ``__init__``); discovery finds it here, so a family cannot be
    forgotten by a hand-kept list.
    """
    import pp_models

    return [
        importlib.import_module(f"pp_models.{info.name}")
        for info in pkgutil.iter_modules(pp_models.__path__)
        if not info.name.startswith("_")
    ]
