"""PyMC model of the DP concentration and the conjugate prior's hyperparameters of
Bayesian hierarchical clustering for a fixed tree (Heller 2007 ch. 3): :func:`model`.

Its potential is the tree-consistent evidence log p(D | T)
(:class:`custom_ops.bhc.BHCEvidence`, with gradients) or Corollary 3.1's lower bound on
the DP-mixture evidence, so NUTS or ``find_MAP`` apply.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from custom_ops import bhc as ops
from custom_ops import conjugate as cj
from pp_models.bhc.defaults import check_alpha, check_data, resolve_hyper
from pp_models.bhc.greedy import greedy
from pp_models.bhc.outputs import TreeAtPosteriorMedian
from pp_models.bhc.result import BHCResult
from pp_models.model_info import ZooModelInfo, attach_info

__all__ = ["OBJECTIVES", "model"]


def _default_priors(likelihood):
    priors = {"alpha": pm.LogNormal.dist(mu=0.0, sigma=1.5)}
    if likelihood == "bernoulli":
        priors["a"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
        priors["b"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
    elif likelihood == "multinomial":
        priors["concentration"] = pm.LogNormal.dist(mu=0.0, sigma=1.0)
    else:
        priors["kappa0"] = pm.LogNormal.dist(mu=math.log(0.1), sigma=1.5)
    return priors



def _tree_merges(tree, n):
    if isinstance(tree, BHCResult):
        if tree.n != n:
            raise ValueError(f"tree: built on {tree.n} points but X has {n} rows")
        return tree.merges
    return ops.validate_merges(tree, n)



OBJECTIVES = ("lower_bound", "evidence")



def _objective(objective, X, merges, alpha, likelihood, hyper):
    """The tree's score of the hyperparameters, a scalar tensor (see :func:`learn`)."""
    if objective == "evidence":
        return ops.bhc_log_evidence(X, merges, alpha, likelihood=likelihood, **hyper)[0]
    return ops.bhc_dpm_lower_bound(X, merges, alpha, likelihood=likelihood, **hyper)



def _check_objective(objective):
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: must be one of {OBJECTIVES}, got {objective!r}")



def model(
    X,
    tree=None,
    *,
    likelihood="bernoulli",
    hyper=None,
    priors=None,
    alpha=1.0,
    objective="lower_bound",
) -> pm.Model:
    """PyMC model of the DP concentration and conjugate hyperparameters given a tree.

    The potential ``bhc_log_evidence`` is log p(D | T, alpha, hyper) computed by
    :class:`custom_ops.bhc.BHCEvidence` (with gradients), so the model can be sampled with
    NUTS or optimised with ``find_MAP``.

    Parameters
    ----------
    X : (n, d) array-like
    tree : BHCResult, (n - 1, 2) merge array or scipy linkage matrix, optional
        Default: the greedy BHC tree at ``alpha`` and the fixed ``hyper`` values.
    likelihood : str
    hyper : dict, optional
        Fixed values of the hyperparameters that get no prior (defaults:
        :func:`default_hyper`).
    priors : dict, optional
        ``{name: pm.<Dist>.dist(...)}`` for ``"alpha"`` and any hyperparameter name;
        those become free random variables (a scalar prior on a per-dimension
        hyperparameter is shared by all dimensions; a prior for ``S0`` must be
        (d, d) symmetric positive definite valued, e.g. a scalar prior times the
        identity is not expressible here: keep S0 fixed or learn it with
        :func:`~pp_models.bhc.learn`).
        ``None`` means: alpha ~ LogNormal(0, 1.5) and, per likelihood, ``a, b`` ~
        LogNormal(0, 1) | ``concentration`` ~ LogNormal(0, 1) | ``kappa0`` ~
        LogNormal(log 0.1, 1.5). Pass ``{}`` to fix everything (no free variables).
    alpha : float
        The DP concentration's value when ``priors`` has no ``"alpha"``.
    objective : {"lower_bound", "evidence"}
        The potential: Corollary 3.1's lower bound on the DP-mixture evidence
        log[d_root Γ(α)/Γ(n+α)] + log p(D | T) (default), or the tree evidence
        log p(D | T) itself. They differ only in α: p(D | T) normalises the CRP prior
        over the tree-consistent partitions alone, and its maximiser in α tracks the
        tree's shape (about n/e for greedy trees) rather than the data; see
        :func:`~pp_models.bhc.learn`.

    Returns
    -------
    pymc.Model
        Free variables: the keys of ``priors``; deterministics ``log_evidence``
        (log p(D | T)) and ``dpm_lower_bound``.
    """
    X = check_data(X, likelihood)
    _check_objective(objective)
    n, _d = X.shape
    alpha = check_alpha(alpha)
    _hyper_tuple, hyper_dict = resolve_hyper(X, likelihood, hyper)
    if tree is None:
        tree = greedy(X, likelihood=likelihood, alpha=alpha, hyper=hyper_dict)
    merges = _tree_merges(tree, n)
    names = cj.FAMILIES[likelihood].hyper_names
    priors = _default_priors(likelihood) if priors is None else dict(priors)
    unknown = set(priors) - {"alpha", *names}
    if unknown:
        raise ValueError(f"priors: unknown {sorted(unknown)}; use 'alpha' or {names}")
    for k, v in priors.items():
        if not isinstance(v, pt.TensorVariable):
            raise TypeError(f"priors[{k!r}]: expected a PyMC distribution from .dist(), got {v!r}")
    with pm.Model() as m:
        values = {}
        for name in ("alpha", *names):
            if name in priors:
                values[name] = m.register_rv(priors[name], name)
            elif name == "alpha":
                values[name] = alpha
            else:
                values[name] = hyper_dict[name]
        hyper_vals = {k: values[k] for k in names}
        lp, _lr = ops.bhc_log_evidence(
            X, merges, values["alpha"], likelihood=likelihood, **hyper_vals
        )
        lb = ops.bhc_dpm_lower_bound(
            X, merges, values["alpha"], likelihood=likelihood, **hyper_vals
        )
        pm.Potential("bhc_" + objective, lb if objective == "lower_bound" else lp)
        pm.Deterministic("log_evidence", lp)
        pm.Deterministic("dpm_lower_bound", lb)
    info = ZooModelInfo(
        family="bhc",
        preferred_method="nuts",
        notes=f"Hyperparameters of BHC for a fixed tree; potential = {objective}.",
        postprocess=TreeAtPosteriorMedian(X, likelihood, np.asarray(merges), alpha, hyper_dict),
    )
    return attach_info(m, info)
