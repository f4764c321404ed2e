"""The model families the ``ppzoo`` command line knows.

Each entry says how to build the family's PyMC model from a loaded
:class:`~pp_models.datasets.Dataset` and options, which ``fit`` methods it supports, and
which shipped data set it demonstrates on. A family declares its entry as
``CLI_ENTRY = ModelEntry(...)`` beside its factory; :func:`list_models` discovers every
module under ``pp_models`` (a test fails when a module with a ``model`` factory has no
entry).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymc as pm

__all__ = ["ModelEntry", "family_modules", "get_model", "list_models", "register_model"]


@dataclass(frozen=True)
class ModelEntry:
    """A model family as the CLI sees it.

    ``build(dataset, **options)`` returns a ``pymc.Model`` for a loaded
    :class:`~pp_models.datasets.Dataset` (its ``data``, ``feature_names``, ``extras``);
    ``defaults`` are the options the CLI uses unless told otherwise, ``fit_defaults``
    the sampling sizes (``draws``, ``tune``, ``chains``) it uses for this family and any
    other ``fit`` keyword it passes (e.g. ``var_names``), sized by measurement
    (``benchmarks/bench_defaults.py``). ``check_note``: for a family whose default run
    does not pass ``ppzoo check``, why not and what to do instead (``ppzoo list`` prints
    it).
    """

    name: str
    description: str
    methods: tuple[str, ...]
    build: Callable[..., pm.Model]
    default_dataset: str
    defaults: dict[str, Any] = field(default_factory=dict)
    fit_defaults: dict[str, Any] = field(default_factory=dict)
    check_note: str = ""


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
        raise ValueError(f"unknown model {name!r}; available: {', '.join(sorted(_MODELS))}")
    return _MODELS[name]


def _load_builtin_models() -> None:
    if _DISCOVERED:
        return
    _DISCOVERED.append(True)
    for module in family_modules():
        entry = getattr(module, "CLI_ENTRY", None)
        if entry is not None and entry.name not in _MODELS:
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
