"""BHC inputs: the likelihoods, empirical default hyperparameters (Heller 2007 §3.4.1)
and the validation every estimator and the model share."""

from __future__ import annotations

import numpy as np

from custom_ops import conjugate as cj
from pp_models.validation import check_positive

__all__ = [
    "LEARNABLE",
    "LIKELIHOODS",
    "check_alpha",
    "check_data",
    "default_hyper",
    "resolve_hyper",
]

LIKELIHOODS = tuple(cj.FAMILY_CODES)

#: The positive quantities that :func:`~pp_models.bhc.learn` learns and that get a prior
#: (:mod:`pp_models.bhc.priors`) by default, per likelihood (a Gaussian's ``m0`` stays
#: at the data mean).
LEARNABLE = {
    "bernoulli": ("alpha", "a", "b"),
    "multinomial": ("alpha", "concentration"),
    "gaussian": ("alpha", "kappa0", "nu0", "S0"),
    "diag_gaussian": ("alpha", "kappa0", "a0", "b0"),
}


def default_hyper(X, likelihood):
    """Empirical hyperparameters from a single model fitted to the whole data set, the
    practice Heller (2007, §3.4.1) recommends.

    * bernoulli: ``a_j = 2 p_j``, ``b_j = 2 (1 - p_j)``, ``p_j`` the smoothed column
      mean ``(m_j + 0.5) / (n + 1)`` (prior mean = data mean, strength 2);
    * multinomial: ``concentration_k = K q_k``, ``q_k`` the smoothed overall frequency;
    * gaussian: ``m0`` = data mean, ``kappa0 = 0.1``, ``nu0 = d + 2``,
      ``S0 = (nu0 - d - 1) diag(var) / 4`` (prior mean cluster covariance: a quarter of
      each column's variance, i.e. clusters half as wide as the data; the diagonal,
      because the total covariance's correlations come from the cluster layout);
    * diag_gaussian: ``m0`` = data mean, ``kappa0 = 0.1``, ``a0 = 2``, ``b0 = var / 4``.
    """
    n, d = X.shape
    if likelihood == "bernoulli":
        p = (X.sum(0) + 0.5) / (n + 1.0)
        return {"a": 2.0 * p, "b": 2.0 * (1.0 - p)}
    if likelihood == "multinomial":
        q = X.sum(0) + 0.5
        return {"concentration": d * q / q.sum()}
    var = X.var(0)
    var = np.where(var > 0, var, 1.0)
    if likelihood == "gaussian":
        nu0 = d + 2.0
        return {
            "m0": X.mean(0),
            "kappa0": 0.1,
            "nu0": nu0,
            "S0": (nu0 - d - 1.0) * np.diag(var) / 4.0,
        }
    return {"m0": X.mean(0), "kappa0": 0.1, "a0": 2.0, "b0": var / 4.0}


def resolve_hyper(X, likelihood, hyper):
    d = X.shape[1]
    names = cj.FAMILIES[likelihood].hyper_names
    vals = default_hyper(X, likelihood)
    if hyper is not None:
        if not isinstance(hyper, dict):
            raise TypeError(f"hyper: must be a dict keyed by {names} or None, got {type(hyper)}")
        unknown = set(hyper) - set(names)
        if unknown:
            raise ValueError(f"hyper: unknown {sorted(unknown)} for {likelihood}; use {names}")
        vals.update(hyper)
    tup = cj.FAMILIES[likelihood].make_hyper(d, **vals)
    return tup, dict(zip(names, tup, strict=True))


def check_alpha(alpha):
    return check_positive(alpha, "alpha (the DP concentration)")


def check_data(X, likelihood):
    if likelihood not in LIKELIHOODS:
        raise ValueError(f"likelihood: unknown {likelihood!r}; choose one of {LIKELIHOODS}")
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    X = cj.check_data(likelihood, X, "X")
    if X.shape[0] < 2:
        raise ValueError(f"X: BHC needs at least 2 points, got {X.shape[0]}")
    return X
