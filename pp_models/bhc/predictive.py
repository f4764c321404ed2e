"""BHC's pointwise log-likelihood (for LOO) and posterior predictive draws
(``inference.log_likelihood``, ``inference.predictive``), for the model of
:func:`pp_models.bhc.model`: the DP concentration and the conjugate prior's
hyperparameters given a fixed tree ``T``, the data entering through the tree-consistent
evidence ``p(D | T)`` (a potential, so PyMC sees no observed variable to forward-sample
or score). At each posterior draw of ``alpha`` and the hyperparameters:

- pointwise log-likelihood of row ``i``: the conditional predictive ``log p(x_i |
  X_{-i}, T, alpha, H) = log p(D | T) - log ∫ p(D | T) dx_i``
  (:func:`custom_ops.bhc.predictive.tree_loo_log_predictive`); the same for both
  objectives, whose potentials differ only by a function of ``alpha``;
- posterior predictive: a tree-consistent partition drawn from its posterior under the
  tree (from the root, node ``k``'s rows are one cluster with probability ``r_k``,
  Heller 2007 Eq. 3.3, else its children are visited), each cluster's parameters from
  their conjugate posterior given its rows, then its rows afresh.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops import conjugate as cj
from custom_ops.bhc.evidence import tree_forward
from custom_ops.bhc.predictive import tree_loo_log_predictive
from pp_models.bhc.defaults import resolve_hyper
from pp_models.bhc.outputs import TreeAtPosteriorMedian
from pp_models.dpm.predictive import draw_from_posterior
from pp_models.model_info import draws_dataset, get_info

__all__ = ["pointwise_log_likelihood", "posterior_predictive"]


def _per_draw(posterior: xr.Dataset, model):
    """(tree, [(alpha, hyper tuple, hyper dict) per flattened draw])."""
    tree = get_info(model).postprocess
    if not isinstance(tree, TreeAtPosteriorMedian):
        raise ValueError("model must be built by pp_models.bhc.model")
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    size = chains * draws

    def flat(name):
        values = np.asarray(posterior[name].values, dtype=np.float64)
        return values.reshape(size, *values.shape[2:])

    alphas = flat("alpha") if "alpha" in posterior.data_vars else np.full(size, tree.alpha)
    names = cj.FAMILIES[tree.likelihood].hyper_names
    learned = {k: flat(k) for k in names if k in posterior.data_vars}
    out = []
    for s in range(size):
        hyper = dict(tree.hyper)
        for k, values in learned.items():
            shape = np.shape(tree.hyper[k])
            hyper[k] = np.broadcast_to(values[s], shape).copy() if shape else float(values[s])
        hyper_tuple, hyper_dict = resolve_hyper(tree.X, tree.likelihood, hyper)
        out.append((float(alphas[s]), hyper_tuple, hyper_dict))
    return tree, out


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, obs)}``: each row's conditional predictive under the tree."""
    tree, draws = _per_draw(posterior, model)
    fam = cj.FAMILY_CODES[tree.likelihood]
    X = np.ascontiguousarray(tree.X, dtype=np.float64)
    pstats = cj.point_stats(fam, X)
    merges = np.ascontiguousarray(tree.merges, dtype=np.int64)
    out = np.empty((len(draws), X.shape[0]))
    for s, (alpha, hyper_tuple, _hyper) in enumerate(draws):
        tree_loo_log_predictive(fam, pstats, merges, alpha,
                                cj.pack_hyper(tree.likelihood, hyper_tuple), out[s])
    return draws_dataset(posterior, model, "X",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1),
                         dims=("obs",))


def posterior_predictive(posterior: xr.Dataset, model, rng):
    """``({"X": (chain, draw, obs, feature)}, {"X": the data})``: one replicate of every
    row per draw, and the data (the model has no observed variable that holds them)."""
    tree, draws = _per_draw(posterior, model)
    fam = cj.FAMILY_CODES[tree.likelihood]
    X = np.ascontiguousarray(tree.X, dtype=np.float64)
    n = X.shape[0]
    pstats = cj.point_stats(fam, X)
    merges = np.ascontiguousarray(tree.merges, dtype=np.int64)
    children = {n + t: (int(a), int(b)) for t, (a, b) in enumerate(merges)}
    out = np.empty((len(draws), *X.shape))
    for s, (alpha, hyper_tuple, hyper) in enumerate(draws):
        _lp, log_r, *_ = tree_forward(fam, pstats, merges, alpha,
                                          cj.pack_hyper(tree.likelihood, hyper_tuple))
        for rows in _partition(children, np.exp(log_r), n, rng):
            out[s, rows] = draw_from_posterior(tree.likelihood, rng, X[rows], hyper,
                                               len(rows), n_trials=X[rows].sum(1))
    dims = ("obs", "feature")
    replicates = draws_dataset(posterior, model, "X", out.reshape(
        posterior.sizes["chain"], posterior.sizes["draw"], *X.shape), dims=dims)
    # the data enter the model through a potential: no observed variable holds them
    observed = xr.Dataset({"X": (dims, X)}, coords={d: replicates[d] for d in dims})
    return replicates, observed


def _partition(children, r, n, rng):
    """A tree-consistent partition drawn top-down: node ``k`` is one cluster with
    probability ``r[k]`` (leaves always), else its children are visited."""
    clusters, stack = [], [2 * n - 2]
    while stack:
        k = stack.pop()
        if k < n or rng.random() < r[k]:
            clusters.append(_leaves(children, k, n))
        else:
            stack.extend(children[k])
    return clusters


def _leaves(children, k, n):
    out, stack = [], [k]
    while stack:
        v = stack.pop()
        if v < n:
            out.append(v)
        else:
            stack.extend(children[v])
    return np.sort(np.asarray(out))
