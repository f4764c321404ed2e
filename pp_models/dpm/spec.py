"""What a Dirichlet-process mixture built by :func:`pp_models.dpm.model.model` is: the
likelihood names, the keys of each likelihood's base-measure prior and their default
scale, and :class:`DPMSpec`, the record kept on the model for the outputs and the
hyperprior steps (one home for them, so that ``model.py``, ``hyperpriors.py`` and
``outputs.py`` need not import each other in a circle).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pymc as pm

__all__ = [
    "CONJUGATE",
    "GAUSSIAN_KAPPA0",
    "GAUSSIAN_SCALE",
    "LIKELIHOODS",
    "NONCONJUGATE",
    "PRIOR_KEYS",
    "SPEC_ATTRIBUTE",
    "DPMSpec",
    "column_variances",
    "get_spec",
]

CONJUGATE = ("gaussian", "diag_gaussian", "bernoulli", "multinomial")
NONCONJUGATE = ("normal", "poisson")
LIKELIHOODS = CONJUGATE + NONCONJUGATE

PRIOR_KEYS = {
    "gaussian": ("m0", "kappa0", "nu0", "S0"),
    "diag_gaussian": ("m0", "kappa0", "a0", "b0"),
    "bernoulli": ("a", "b"),
    "multinomial": ("concentration",),
    "normal": ("mu_loc", "mu_scale", "sigma_loc", "sigma_scale"),
    "poisson": ("rate_loc", "rate_scale"),
}

SPEC_ATTRIBUTE = "_pp_models_dpm_spec"


@dataclass(frozen=True)
class DPMSpec:
    """What :func:`model` built (kept on the model for :func:`summarize`)."""

    X: np.ndarray
    likelihood: str
    prior: dict
    alpha: float | None
    alpha_prior: tuple[float, float] | None
    discount: float
    truncation: int | None
    feature_names: tuple[str, ...] = field(default_factory=tuple)
    #: learned base-measure keys -> parameters of their hyperprior: (shape, rate) of a
    #: Gamma for ``hyperprior_kind="gamma"``; for ``"wishart"`` (w, V) of S0's Wishart,
    #: (shape, rate) of kappa0's Gamma, (mean, covariance) of m0's normal
    hyperprior: dict = field(default_factory=dict)
    hyperprior_kind: str = "gamma"


def get_spec(m: pm.Model) -> DPMSpec | None:
    """The :class:`DPMSpec` of a model built by :func:`model`, else ``None``."""
    return getattr(m, SPEC_ATTRIBUTE, None)


#: Default NIW prior of ``likelihood="gaussian"`` (chosen on the clustering panel of
#: benchmarks/bench_clustering.py): S0 = GAUSSIAN_SCALE x diag(column
#: variances) x (nu0 - d - 1), i.e. a cluster covariance a priori GAUSSIAN_SCALE times the
#: data's (for nu0 = d + 2, weak: the posterior adapts it to each cluster), and a vague
#: prior on the cluster means (sd sqrt(GAUSSIAN_SCALE / GAUSSIAN_KAPPA0) data sds). A
#: small scale (0.1, with kappa0 = 0.05) makes every tight group of points cheap to model
#: as its own cluster and splits breast cancer and digits-PCA10 into many clusters.
#: ``"diag_gaussian"`` uses the same two numbers per column (b0 = GAUSSIAN_SCALE x
#: (a0 - 1) x column variance, kappa0 = GAUSSIAN_KAPPA0).
GAUSSIAN_SCALE = 1.5
GAUSSIAN_KAPPA0 = 0.01


def column_variances(X):
    """Column variances of ``X``, with a constant column's 0 replaced by 1 (the scale the
    data-scaled defaults multiply)."""
    var = X.var(axis=0)
    return np.where(var > 0, var, 1.0)
