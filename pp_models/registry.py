"""The zoo's model families: one :class:`Family` record per family, the one place that
names a family's factory, command-line entry, pictures and predictive functions.

A family declares ``FAMILY = Family(...)`` beside its factory (its package's
``__init__``, or its module); this module discovers every one under ``pp_models`` (a
test fails when a module with a ``model`` factory declares none). The command line
(``ppzoo``), the result report (``inference.report``), the posterior predictive and
pointwise log-likelihood (``inference.predictive``, ``inference.log_likelihood``) and
the tests' grouping by family (``tests/conftest.py``, by the families' names) all read
the records. The family's name is its folder: a factory names its model's family by
its own module (``ZooModelInfo(family=family_of_module(__name__))``), never by typing
the name again, and a test checks that every record's name is its factory's folder.

Importing a family imports PyMC, PyTensor and Numba (seconds). What ``ppzoo list`` prints
and the check of a model's name need none of that:
:func:`list_model_summaries` reads each record's literal fields from the source without
importing it, and :func:`get_family` imports only the family asked for.
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
    "CLIEntry",
    "EntrySummary",
    "Family",
    "NoCLIEntry",
    "family_modules",
    "family_of_model",
    "family_of_module",
    "get_family",
    "get_model",
    "get_summary",
    "list_families",
    "list_family_summaries",
    "list_model_summaries",
    "list_models",
    "model_names",
    "no_cli_entries",
    "register_family",
]


@dataclass(frozen=True)
class CLIEntry:
    """How ``ppzoo fit`` runs a family.

    ``build(dataset, **options)`` returns a ``pymc.Model`` for a loaded
    :class:`~pp_models.datasets.Dataset` (its ``data``, ``feature_names``, ``extras``);
    ``methods`` the ``fit`` methods offered; ``defaults`` the options the CLI uses unless
    told otherwise, ``fit_defaults`` the sampling sizes (``draws``, ``tune``, ``chains``)
    it uses for this family and any other ``fit`` keyword it passes (e.g. ``var_names``),
    sized by measurement (``benchmarks/bench_defaults.py``). ``check_note``: for a family
    whose default run does not pass ``ppzoo check``, why not and what to do instead
    (``ppzoo list`` prints it). ``written(dt) -> dt``: what the command line writes (and
    draws its picture from) of the ``fit`` result, when per-draw values no user reads
    would make the output folder grow with the draws (e.g. LDA's topics, kept as their
    per-chain mean); None writes the result whole.
    """

    methods: tuple[str, ...]
    build: Callable[..., pm.Model]
    default_dataset: str
    defaults: dict[str, Any] = field(default_factory=dict)
    fit_defaults: dict[str, Any] = field(default_factory=dict)
    check_note: str = ""
    written: Callable[[Any], Any] | None = None


@dataclass(frozen=True)
class NoCLIEntry:
    """A family ``ppzoo fit`` has no use for (its answer is not a posterior, e.g. a
    retrieval method), and why: one sentence a user of ``ppzoo list`` reads (what the
    family computes instead, and where)."""

    reason: str

    def __post_init__(self):
        if not self.reason.strip():
            raise ValueError("NoCLIEntry: give the reason")


@dataclass(frozen=True)
class Family:
    """Everything the package names about one model family.

    Parameters
    ----------
    name : str
        The family's name: its folder in ``pp_models``, ``custom_ops``,
        ``inference/gibbs`` and ``tests``, ``ZooModelInfo.family`` and ``ppzoo``'s name.
    description : str
        One line for ``ppzoo list``.
    factory : callable
        ``model(data, ...)``, returning a ``pymc.Model``.
    cli : CLIEntry or NoCLIEntry
        How ``ppzoo fit`` runs it, or why it does not.
    plot : callable, optional
        ``plot(dt, path)``: the family's picture of a fit, written by ``ppzoo fit`` as
        ``<plot_name>.png``.
    plot_name : str
        That file's stem (a literal, read without importing the family).
    posterior_predictive : callable, optional
        ``f(posterior, model, rng) -> xarray.Dataset | (Dataset, observed) | None`` for
        ``inference.sample_posterior_predictive`` (None: PyMC's forward draw suits).
    pointwise_log_likelihood : callable, optional
        ``f(posterior, model) -> xarray.Dataset | None`` for
        ``inference.compute_log_likelihood`` (None: PyMC's elementwise logp suits).
    log_likelihood_needs : tuple of str
        Variables those terms need that the family does not record by default.
    """

    name: str
    description: str
    factory: Callable[..., pm.Model]
    cli: CLIEntry | NoCLIEntry
    plot: Callable | None = None
    plot_name: str = ""
    posterior_predictive: Callable | None = None
    pointwise_log_likelihood: Callable | None = None
    log_likelihood_needs: tuple[str, ...] = ()

    def __post_init__(self):
        if not isinstance(self.cli, CLIEntry | NoCLIEntry):
            raise TypeError(f"Family {self.name!r}: cli must be a CLIEntry or a NoCLIEntry")
        if (self.plot is None) != (not self.plot_name):
            raise ValueError(f"Family {self.name!r}: give plot and plot_name together")

    # ``ppzoo``'s view: the CLI entry's fields on the family
    @property
    def has_cli(self) -> bool:
        return isinstance(self.cli, CLIEntry)

    def _entry(self) -> CLIEntry:
        if not self.has_cli:
            raise ValueError(f"model {self.name!r} has no ppzoo entry: {self.cli.reason}")
        return self.cli

    @property
    def methods(self) -> tuple[str, ...]:
        return self._entry().methods

    @property
    def build(self) -> Callable[..., pm.Model]:
        return self._entry().build

    @property
    def default_dataset(self) -> str:
        return self._entry().default_dataset

    @property
    def defaults(self) -> dict[str, Any]:
        return self._entry().defaults

    @property
    def fit_defaults(self) -> dict[str, Any]:
        return self._entry().fit_defaults

    @property
    def written(self) -> Callable[[Any], Any] | None:
        return self._entry().written


_FAMILIES: dict[str, Family] = {}
_DISCOVERED: list[bool] = []


def register_family(family: Family) -> Family:
    """Make ``family`` known (the built-in ones are discovered; this is for others)."""
    if not isinstance(family, Family):
        raise TypeError(f"family must be a Family, got {type(family).__name__}")
    if family.name in _FAMILIES and _FAMILIES[family.name] is not family:
        raise ValueError(f"family {family.name!r} is already registered")
    _FAMILIES[family.name] = family
    return family


def list_families() -> list[Family]:
    """Every family, sorted by name (importing them all)."""
    _load_builtin_families()
    return [_FAMILIES[k] for k in sorted(_FAMILIES)]


def get_family(name: str) -> Family:
    """The family ``name``, importing only the module that declares it; ``ValueError``
    naming the families (and the closest one) for an unknown name."""
    if name not in _FAMILIES:
        summary = _summaries_by_name().get(name)
        if summary is None:
            raise _unknown(name, sorted(_summaries_by_name()))
        family = getattr(importlib.import_module(summary.module), "FAMILY", None)
        if isinstance(family, Family) and family.name == name:
            register_family(family)
    if name not in _FAMILIES:
        raise ValueError(f"model {name!r}: its module declares no FAMILY of that name")
    return _FAMILIES[name]


def family_of_module(module: str) -> str:
    """The name of the family a module of ``pp_models`` belongs to: the folder (or the
    single module) directly under ``pp_models`` (``"pp_models.lda.adlda"`` -> ``"lda"``),
    which is its :class:`Family` record's ``name``. A factory passes its ``__name__``."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != "pp_models":
        raise ValueError(f"module {module!r} is not a module of pp_models; give "
                         "ZooModelInfo the family's name")
    return parts[1]


def family_of_model(model) -> Family | None:
    """The family that built ``model`` (named by its ``ZooModelInfo``), or None for a
    model no zoo factory built."""
    from pp_models.model_info import get_info

    info = get_info(model)
    if info is None or info.family not in _summaries_by_name():
        return None
    return get_family(info.family)


def list_models() -> list[Family]:
    """The families ``ppzoo fit`` runs, sorted by name."""
    return [f for f in list_families() if f.has_cli]


def get_model(name: str) -> Family:
    """The family ``name`` if ``ppzoo fit`` runs it (:func:`get_summary` says why not)."""
    get_summary(name)
    return get_family(name)


@dataclass(frozen=True)
class EntrySummary:
    """A family's literal fields, read from its ``FAMILY`` without importing it;
    ``module`` is the module that declares it. ``reason`` is the :class:`NoCLIEntry`'s
    (empty for a family ``ppzoo fit`` runs, whose CLI fields are then set)."""

    name: str
    description: str
    module: str
    methods: tuple[str, ...] = ()
    default_dataset: str = ""
    defaults: dict[str, Any] = field(default_factory=dict)
    fit_defaults: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    plot_name: str = ""
    check_note: str = ""

    @property
    def has_cli(self) -> bool:
        return not self.reason


def get_summary(name: str) -> EntrySummary:
    """The :class:`EntrySummary` of the family ``ppzoo fit`` runs as ``name``, without
    importing it; a ``ValueError`` naming the families (and the closest one) for an
    unknown name, or the reason a family has no ``ppzoo`` entry."""
    summaries = _summaries_by_name()
    summary = summaries.get(name)
    if summary is not None and not summary.has_cli:
        raise ValueError(f"model {name!r} has no ppzoo entry: {summary.reason}")
    if summary is None:
        raise _unknown(name, [s.name for s in list_model_summaries()])
    return summary


def _unknown(name, names) -> ValueError:
    import difflib

    close = difflib.get_close_matches(str(name), list(names), n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(f"unknown model {name!r}{hint}; available: {', '.join(sorted(names))}")


def list_family_summaries() -> list[EntrySummary]:
    """Every family's :class:`EntrySummary`, sorted by name, without importing a family
    (families registered at run time with :func:`register_family` included)."""
    return [s for _, s in sorted(_summaries_by_name().items())]


def list_model_summaries() -> list[EntrySummary]:
    """The summaries of the families ``ppzoo fit`` runs."""
    return [s for s in list_family_summaries() if s.has_cli]


def no_cli_entries() -> list[EntrySummary]:
    """The summaries of the families with no ``ppzoo fit`` entry (their ``reason``)."""
    return [s for s in list_family_summaries() if not s.has_cli]


def model_names() -> list[str]:
    """The names of the families ``ppzoo fit`` runs, sorted, without importing them."""
    return [s.name for s in list_model_summaries()]


def _summary_of(family: Family, module: str) -> EntrySummary:
    cli = family.cli
    if isinstance(cli, NoCLIEntry):
        return EntrySummary(family.name, family.description, module, reason=cli.reason,
                            plot_name=family.plot_name)
    return EntrySummary(family.name, family.description, module, tuple(cli.methods),
                        cli.default_dataset, dict(cli.defaults), dict(cli.fit_defaults),
                        plot_name=family.plot_name,
                        check_note=cli.check_note)


def _summaries_by_name() -> dict[str, EntrySummary]:
    found = {s.name: s for s in _scanned()}
    for family in _FAMILIES.values():
        if family.name not in found:
            found[family.name] = _summary_of(family, type(family).__module__)
    return found


_SCANNED: list[list[EntrySummary]] = []


def _scanned() -> list[EntrySummary]:
    """Every built-in family's :class:`EntrySummary`, read once."""
    if not _SCANNED:
        _SCANNED.append(list(_scan_families()))
    return _SCANNED[0]


def _scan_families():
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


#: the fields a summary reads from the source (each must be a literal there)
_FAMILY_FIELDS = ("name", "description", "plot_name")
_CLI_FIELDS = ("methods", "default_dataset", "defaults", "fit_defaults", "check_note")


def _literal_keywords(call: ast.Call, names) -> dict | None:
    """The keywords of ``call`` named in ``names``, evaluated; None if one is not a
    literal."""
    out = {}
    for keyword in call.keywords:
        if keyword.arg in names:
            try:
                out[keyword.arg] = ast.literal_eval(keyword.value)
            except ValueError:
                return None
    return out


def _summary_in(path: Path, module: str) -> EntrySummary | None:
    """The summary of the ``FAMILY = Family(...)`` assigned at the top level of ``path``
    (read by importing ``module`` when a field is not a literal)."""
    text = path.read_text(encoding="utf-8")
    if "FAMILY" not in text:
        return None
    for node in ast.parse(text, filename=str(path)).body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and any(isinstance(t, ast.Name) and t.id == "FAMILY" for t in node.targets)):
            continue
        fields = _literal_keywords(node.value, _FAMILY_FIELDS)
        cli = next((k.value for k in node.value.keywords if k.arg == "cli"), None)
        kind = getattr(getattr(cli, "func", None), "id", "")
        if fields is not None and {"name", "description"} <= set(fields):
            if kind == "NoCLIEntry" and cli.args:
                try:
                    return EntrySummary(module=module, reason=ast.literal_eval(cli.args[0]),
                                        **fields)
                except ValueError:
                    pass
            elif kind == "CLIEntry":
                cli_fields = _literal_keywords(cli, _CLI_FIELDS)
                if cli_fields is not None and {"methods", "default_dataset"} <= set(cli_fields):
                    cli_fields["methods"] = tuple(cli_fields["methods"])
                    return EntrySummary(module=module, **fields, **cli_fields)
        return _summary_of(importlib.import_module(module).FAMILY, module)
    return None


def _load_builtin_families() -> None:
    if _DISCOVERED:
        return
    _DISCOVERED.append(True)
    for module in family_modules():
        family = getattr(module, "FAMILY", None)
        if isinstance(family, Family) and family.name not in _FAMILIES:
            register_family(family)


def family_modules() -> list:
    """Import and return every module and package directly under ``pp_models``.

    A family declares ``FAMILY = Family(...)`` next to its factory (in its module, or in
    its package's ``__init__``); discovery finds it here, so a family cannot be forgotten
    by a hand-kept list.
    """
    import pp_models

    return [
        importlib.import_module(f"pp_models.{info.name}")
        for info in pkgutil.iter_modules(pp_models.__path__)
        if not info.name.startswith("_")
    ]
