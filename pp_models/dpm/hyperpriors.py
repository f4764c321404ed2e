"""Learned base measures of the Gaussian Dirichlet-process mixtures (Rasmussen 2000;
Gorur & Rasmussen 2010): the hyperpriors :func:`pp_models.dpm.model.model` accepts as
``hyperprior=``, their validation, and the map from the learned free variables to the
base-measure hyperparameters that the collapsed likelihood and the outputs use. See
``model.py``'s docstring for what each form means and when to use it.
"""

from __future__ import annotations

import numpy as np

from pp_models.dpm.spec import (
    GAUSSIAN_KAPPA0,
    GAUSSIAN_SCALE,
    DPMSpec,
    column_variances,
)
from pp_models.validation import check_gamma_prior

# --------------------------------------------------------------------------------------
# learned base measure (Rasmussen 2000; Gorur & Rasmussen 2010)
# --------------------------------------------------------------------------------------
__all__ = [
    "LEARNABLE",
    "WISHART_LEARNABLE",
    "at_hyperprior_mean",
    "check_hyperprior",
    "check_wishart_hyperprior",
    "check_wishart_kind",
    "default_hyperprior",
    "default_wishart_hyperprior",
    "learned_hyperparameters",
    "learned_variable_names",
    "wishart_nu0",
]

#: Learnable keys of ``prior`` per likelihood, and the free variable each becomes. With v
#: the column variances of X: ``kappa0`` itself; ``nu0 = d - 1 + nu0_excess``; ``S0 =
#: S0_scale * nu0 * diag(v)`` (so E[Sigma^-1] = diag(1/v) / S0_scale: S0_scale is the
#: cluster covariance as a fraction of the data's, in the harmonic-mean sense); for
#: ``"diag_gaussian"`` ``a0`` itself and ``b0 = b0_scale * a0 * v`` (E[tau_j] = 1 /
#: (b0_scale v_j)). Each free variable has a Gamma(shape, rate) hyperprior.
LEARNABLE = {
    "gaussian": {"kappa0": "kappa0", "nu0": "nu0_excess", "S0": "S0_scale"},
    "diag_gaussian": {"kappa0": "kappa0", "a0": "a0", "b0": "b0_scale"},
}


def default_hyperprior(likelihood: str, d: int) -> dict:
    """The default Gamma(shape, rate) hyperpriors of the learnable keys.

    ``kappa0`` ~ Gamma(2, 10) (mean 0.2: cluster means spread about sqrt(5) cluster
    sds); ``nu0 - (d - 1)`` ~ Gamma(2, 2 / (d + 2)) (mean d + 2, so E[nu0] = 2d + 1);
    ``S0_scale`` / ``b0_scale`` ~ Gamma(2, 5) (mean 0.4 of the data's variance); ``a0``
    ~ Gamma(2, 1).
    """
    if likelihood == "gaussian":
        return {"kappa0": (2.0, 10.0), "nu0": (2.0, 2.0 / (d + 2.0)), "S0": (2.0, 5.0)}
    if likelihood == "diag_gaussian":
        return {"kappa0": (2.0, 10.0), "a0": (2.0, 1.0), "b0": (2.0, 5.0)}
    raise ValueError(f"likelihood {likelihood!r} has no learnable base measure")


def check_hyperprior(hyperprior, likelihood, d, truncation, prior):
    """{key: (shape, rate)} of the learned keys (empty: nothing learned)."""
    # Fixed by default: a learned base measure splits data with broad, overlapping
    # classes into many clusters (model.py's docstring).
    if hyperprior is False or hyperprior is None:
        return {}
    learnable = likelihood in LEARNABLE and truncation is None
    if hyperprior is True:
        if not learnable:
            raise ValueError("hyperprior: a learned base measure needs likelihood "
                             "'gaussian' or 'diag_gaussian' and truncation=None")
        hyperprior = {}
    if not isinstance(hyperprior, dict):
        raise TypeError(f"hyperprior must be a dict {{key: (shape, rate)}}, None or False; "
                        f"got {hyperprior!r}")
    if not learnable:
        raise ValueError("hyperprior: a learned base measure needs likelihood 'gaussian' or "
                         "'diag_gaussian' and truncation=None")
    fixed = set(prior or ())
    unknown = set(hyperprior) - set(LEARNABLE[likelihood])
    if unknown:
        raise ValueError(f"hyperprior: unknown key(s) {sorted(unknown)} for likelihood="
                         f"{likelihood!r}; learnable: {list(LEARNABLE[likelihood])}")
    both = fixed & set(hyperprior)
    if both:
        raise ValueError(f"hyperprior: {sorted(both)} also fixed in prior; give each key in "
                         "one of the two")
    out = {}
    for key, pair in default_hyperprior(likelihood, d).items():
        if key in fixed:
            continue
        pair = hyperprior.get(key, pair)
        out[key] = check_gamma_prior(pair, f"hyperprior[{key!r}]")
    return out


#: Learnable keys of the conjugate (Wishart) hierarchy, ``hyperprior="wishart"``.
WISHART_LEARNABLE = ("m0", "kappa0", "S0")


def wishart_nu0(d: int) -> float:
    """Fixed ``nu0`` of the Wishart hierarchy: d + 2 (the smallest integer giving E[Sigma])."""
    return d + 2.0


def default_wishart_hyperprior(X, nu0: float | None = None) -> dict:
    """The conjugate hyperpriors of ``hyperprior="wishart"`` (Rasmussen 2000; Gorur &
    Rasmussen 2010), centred on the data: with D = diag(column variances of X),

    - ``S0 ~ Wishart(d, GAUSSIAN_SCALE (nu0 - d - 1) D / d)``: E[S0] is the fixed
      default's S0, a prior mean cluster covariance GAUSSIAN_SCALE x D (``nu0`` defaults to
      :func:`wishart_nu0`, or the value fixed in ``prior``); d degrees of freedom let the
      posterior of S0 follow the clusters' own covariances (correlations included);
    - ``kappa0 ~ Gamma(2, 2 / GAUSSIAN_KAPPA0)`` (mean: the fixed default's kappa0);
    - ``m0 ~ N(column means, D)``.
    """
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    D = np.diag(column_variances(X))
    nu0 = wishart_nu0(d) if nu0 is None else float(nu0)
    return {"m0": (X.mean(axis=0), D), "kappa0": (2.0, 2.0 / GAUSSIAN_KAPPA0),
            "S0": (d, GAUSSIAN_SCALE * (nu0 - d - 1.0) * D / d)}


def check_wishart_kind(hyperprior, likelihood, truncation):
    if hyperprior != "wishart":
        raise ValueError(f"hyperprior: the only string value is 'wishart', got {hyperprior!r}")
    if likelihood != "gaussian" or truncation is not None:
        raise ValueError("hyperprior='wishart' needs likelihood='gaussian' and "
                         "truncation=None")


def check_wishart_hyperprior(hyperprior, likelihood, X, truncation, prior, nu0):
    check_wishart_kind(hyperprior, likelihood, truncation)
    fixed = set(prior or ())
    return {k: v for k, v in default_wishart_hyperprior(X, nu0).items() if k not in fixed}


def learned_variable_names(spec: DPMSpec) -> list[str]:
    """Names of the free variables of the learned base measure of ``spec``."""
    if spec.hyperprior_kind == "wishart":
        return list(spec.hyperprior)
    return [LEARNABLE[spec.likelihood][k] for k in spec.hyperprior]


def learned_hyperparameters(spec: DPMSpec, values: dict) -> dict:
    """The base-measure hyperparameters given the learned free variables' ``values``
    (NumPy scalars or PyTensor scalars alike); fixed keys come from ``spec.prior``."""
    h = dict(spec.prior)
    if not spec.hyperprior:
        return h
    if spec.hyperprior_kind == "wishart":
        h.update({key: values[key] for key in spec.hyperprior})
        return h
    var = column_variances(spec.X)
    d = spec.X.shape[1]
    names = LEARNABLE[spec.likelihood]
    learned = spec.hyperprior
    if spec.likelihood == "gaussian":
        if "kappa0" in learned:
            h["kappa0"] = values["kappa0"]
        if "nu0" in learned:
            h["nu0"] = (d - 1.0) + values[names["nu0"]]
        if "S0" in learned:
            h["S0"] = values[names["S0"]] * h["nu0"] * np.diag(var)
        return h
    ones = np.ones(d)
    if "kappa0" in learned:
        h["kappa0"] = values["kappa0"] * ones
    if "a0" in learned:
        h["a0"] = values["a0"] * ones
    if "b0" in learned:
        h["b0"] = values[names["b0"]] * h["a0"] * var
    return h


def at_hyperprior_mean(hyper, learned, X, kind="gamma"):
    """``hyper`` with the learned keys at their hyperprior means (a representative value
    for :func:`initial_partition` and starting points)."""
    if not learned:
        return hyper
    if kind == "wishart":
        means = {"m0": lambda p: p[0], "kappa0": lambda p: p[0] / p[1],
                 "S0": lambda p: p[0] * p[1]}
        return dict(hyper, **{k: means[k](p) for k, p in learned.items()})
    likelihood = "gaussian" if "nu0" in hyper else "diag_gaussian"
    spec = DPMSpec(X, likelihood, hyper, 1.0, None, 0.0, None, (), learned)
    names = LEARNABLE[likelihood]
    return learned_hyperparameters(spec, {names[k]: a / b for k, (a, b) in learned.items()})
