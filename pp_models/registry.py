"""The model families the ``ppzoo`` command line knows.

Each entry says how to build the family's PyMC model from a data matrix and options,
which ``fit`` methods it supports, and which shipped data set it demonstrates on.
A new family registers itself here with :func:`register_model` (one call at the bottom
of its module's registration block below).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pymc as pm

__all__ = ["ModelEntry", "get_model", "list_models", "register_model"]


@dataclass(frozen=True)
class ModelEntry:
    """A model family as the CLI sees it.

    ``build(data, **options)`` returns a ``pymc.Model`` for a data set's ``data``;
    ``defaults`` are the options the CLI uses unless told otherwise, ``fit_defaults``
    the sampling sizes (``draws``, ``tune``, ``chains``) it uses for this family.
    """

    name: str
    description: str
    methods: tuple[str, ...]
    build: Callable[..., pm.Model]
    default_dataset: str
    defaults: dict[str, Any] = field(default_factory=dict)
    fit_defaults: dict[str, int] = field(default_factory=dict)


_MODELS: dict[str, ModelEntry] = {}


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
    if _MODELS:
        return
    from pp_models import bhc, dpm, finite_mixture, lda

    register_model(
        ModelEntry(
            name="finite_mixture",
            description="finite Gaussian mixture (diagonal), Gibbs on assignments + NUTS",
            methods=("gibbs", "auto"),
            build=finite_mixture.model,
            default_dataset="iris",
            defaults={"n_components": 3},
        )
    )
    register_model(
        ModelEntry(
            name="dpm",
            description="Dirichlet-process mixture (collapsed CRP: Algorithm 3 + split-merge; "
            "truncation=T: stick-breaking for NUTS/ADVI)",
            methods=("gibbs", "nuts", "advi", "auto"),
            build=dpm.model,
            default_dataset="iris",
            defaults={"alpha": (1.0, 1.0)},
        )
    )
    register_model(
        ModelEntry(
            name="bhc",
            description="Bayesian hierarchical clustering: DP concentration and prior "
            "hyperparameters for the greedy BHC tree (potential = DPM evidence lower bound)",
            methods=("nuts", "advi", "auto"),
            build=bhc.model,
            default_dataset="iris",
            defaults={"likelihood": "gaussian"},
        )
    )
    register_model(
        ModelEntry(
            name="lda",
            description="latent Dirichlet allocation, collapsed Gibbs (SparseLDA) on token "
            "topics; theta and phi recorded per draw",
            methods=("gibbs", "auto"),
            build=lda.model,
            default_dataset="reuters",
            defaults={"n_topics": 20},
            fit_defaults={"draws": 200, "tune": 200, "chains": 2},
        )
    )
