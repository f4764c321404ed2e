"""PyMC model of the DP concentration and the conjugate prior's hyperparameters of
Bayesian hierarchical clustering for a fixed tree (Heller 2007 ch. 3): :func:`model`.

Its potential is the tree-consistent evidence log p(D | T)
(:class:`custom_ops.bhc.evidence.BHCEvidence`, with gradients) or Corollary 3.1's lower bound on
the DP-mixture evidence, so NUTS or ``find_MAP`` apply.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from custom_ops import conjugate as cj
from custom_ops.bhc import evidence as ops
from pp_models.bhc.defaults import LEARNABLE, check_alpha, check_data, resolve_hyper
from pp_models.bhc.greedy import greedy
from pp_models.bhc.outputs import TreeAtPosteriorMedian
from pp_models.bhc.priors import PRIOR_TYPES, resolve_priors
from pp_models.bhc.result import BHCResult
from pp_models.model_info import ZooModelInfo, attach_info
from pp_models.registry import family_of_module

__all__ = ["OBJECTIVES", "model"]


def _scaled_hyper(name, base, scale, d):
    """The hyperparameter at scale factor ``scale`` on its base value (nu0: on its excess
    over d - 1), the parameterisation of :mod:`pp_models.bhc.priors`."""
    if name == "nu0":
        return (d - 1.0) + (float(base) - (d - 1.0)) * scale
    return pt.as_tensor_variable(np.asarray(base, dtype=float)) * scale


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
    :class:`custom_ops.bhc.evidence.BHCEvidence` (with gradients), so the model can be sampled with
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
        ``None`` (default): the priors of :func:`~pp_models.bhc.learn`'s MAP
        (:data:`~pp_models.bhc.priors.DEFAULT_PRIORS`): ``alpha`` ~ LogNormal(0, 1.5) and,
        for each learnable hyperparameter (bernoulli ``a, b``; multinomial
        ``concentration``; gaussian ``kappa0, nu0, S0``; diag_gaussian ``kappa0, a0,
        b0``), a free scale factor ``<name>_scale`` ~ LogNormal(0, 1) (kappa0's
        LogNormal(0, 1.5)) on its ``hyper`` value (nu0: on the excess over d - 1), with
        the hyperparameter itself a deterministic ``<name>``.
        A dict sets the free variables (names absent are fixed): values
        ``bhc.LogNormal(...)`` / ``bhc.Gamma(...)`` are priors as above (on α itself, on
        a hyperparameter's scale factor); a ``pm.<Dist>.dist(...)`` is a prior on the
        value itself (a scalar prior on a per-dimension hyperparameter is then shared by
        all dimensions; for ``S0`` use a scale prior). ``{}`` fixes everything (no free
        variables).
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
        Free variables: ``alpha`` and ``<name>_scale`` for scale priors, ``<name>``
        for PyMC priors on the value; deterministics: the scaled hyperparameters,
        ``log_evidence`` (log p(D | T)) and ``dpm_lower_bound``.
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
    d = X.shape[1]
    if priors is None:
        priors = resolve_priors(None, LEARNABLE[likelihood])
    if not isinstance(priors, dict):
        raise TypeError(f"priors: must be None or a dict keyed by 'alpha' or {names}")
    unknown = set(priors) - {"alpha", *names}
    if unknown:
        raise ValueError(f"priors: unknown {sorted(unknown)}; use 'alpha' or {names}")
    for k, v in priors.items():
        if isinstance(v, PRIOR_TYPES):
            if k not in LEARNABLE[likelihood]:
                raise ValueError(
                    f"priors[{k!r}]: scale priors apply to {LEARNABLE[likelihood]}; "
                    f"give {k} a pm distribution or fix it"
                )
        elif not isinstance(v, pt.TensorVariable):
            raise TypeError(
                f"priors[{k!r}]: expected bhc.LogNormal / bhc.Gamma or a PyMC distribution "
                f"from .dist(), got {v!r}"
            )
    with pm.Model() as m:
        values = {}
        for name in ("alpha", *names):
            prior = priors.get(name)
            if prior is None:
                values[name] = alpha if name == "alpha" else hyper_dict[name]
            elif isinstance(prior, PRIOR_TYPES) and name != "alpha":
                scale = m.register_rv(prior.dist(), f"{name}_scale")
                values[name] = pm.Deterministic(
                    name, _scaled_hyper(name, hyper_dict[name], scale, d)
                )
            else:
                dist = prior.dist() if isinstance(prior, PRIOR_TYPES) else prior
                values[name] = m.register_rv(dist, name)
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
        family=family_of_module(__name__),
        preferred_method="nuts",
        notes=f"Hyperparameters of BHC for a fixed tree; potential = {objective}.",
        postprocess=TreeAtPosteriorMedian(X, likelihood, np.asarray(merges), alpha, hyper_dict),
    )
    return attach_info(m, info)
