"""The model families the ``ppzoo`` command line knows.

Each entry says how to build the family's PyMC model from a loaded
:class:`~pp_models.datasets.Dataset` and options, which ``fit`` methods it supports, and
which shipped data set it demonstrates on. A family declares its entry as
``CLI_ENTRY = ModelEntry(...)`` beside its factory; :func:`list_models` discovers every
module under ``pp_models`` (a test fails when a module with a ``model`` factory has no
entry). A family whose factory ``ppzoo fit`` has no use for (its answer is not a
posterior, e.g. a retrieval method) declares ``CLI_ENTRY = NoCLIEntry(reason)`` instead,
and ``ppzoo list`` shows the reason.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymc as pm

__all__ = ["ModelEntry", "NoCLIEntry", "family_modules", "get_model", "list_models",
           "no_cli_entries", "register_model"]


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
    """The registered family ``name``."""
    _load_builtin_models()
    if name not in _MODELS:
        for entry in no_cli_entries():
            if entry.name == name:
                raise ValueError(f"model {name!r} has no ppzoo entry: {entry.reason}")
        raise ValueError(f"unknown model {name!r}; available: {', '.join(sorted(_MODELS))}")
    return _MODELS[name]


def no_cli_entries() -> list[NoCLIEntry]:
    """The families that declare they have no ``ppzoo fit`` entry, sorted by name."""
    found = [getattr(module, "CLI_ENTRY", None) for module in family_modules()]
    return sorted((e for e in found if isinstance(e, NoCLIEntry)), key=lambda e: e.name)


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
