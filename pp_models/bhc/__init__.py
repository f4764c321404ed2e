"""Bayesian hierarchical clustering (Heller 2007, ch. 3); see ``model.py``."""

from pp_models.bhc.model import (
    CLI_ENTRY,
    LIKELIHOODS,
    METHODS,
    OBJECTIVES,
    BHCResult,
    default_hyper,
    fit,
    learn,
    model,
)

__all__ = [
    "CLI_ENTRY",
    "LIKELIHOODS",
    "METHODS",
    "OBJECTIVES",
    "BHCResult",
    "default_hyper",
    "fit",
    "learn",
    "model",
]
