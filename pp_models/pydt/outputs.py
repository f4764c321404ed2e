"""Post-fit outputs of the PYDT model: the predictive density of new points (Knowles
2012 §7.6)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import logsumexp

from custom_ops.pydt import check_parameters, pydt_forward
from pp_models.pydt.attach import children_lists, leaf_counts_from, sample_attach
from pp_models.pydt.greedy import _grow
from pp_models.trees import DiffusionTree

__all__ = ["log_predictive", "log_predictive_tree"]


def log_predictive_tree(tree, X, X_new, *, c, theta, alpha, sigma2, n_positions=20,
                        random_seed=None):
    """log p(x* | tree, X, c, theta, alpha, sigma2) for each row of ``X_new``.

    The new point diverges from the tree as the generative process says (Eqs. 4.9-4.11)
    and moves by Brownian motion to t = 1; its density is the expectation over that
    position of p(X, x* | tree + x*) / p(X | tree), with the internal locations
    integrated out by the Op's message passing. The expectation is a Monte Carlo average
    over ``n_positions`` positions per tree (§7.6 draws about 3 per branch and averages
    the resulting Gaussians); the positions are shared by all rows of ``X_new``.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    X_new = np.ascontiguousarray(X_new, dtype=np.float64)
    if X_new.ndim != 2 or X_new.shape[1] != X.shape[1]:
        raise ValueError(f"X_new: must have {X.shape[1]} columns like X, got shape "
                         f"{X_new.shape}")
    check_parameters(c, theta, alpha, sigma2)
    rng = np.random.default_rng(random_seed)
    n = tree.n_leaves
    base = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)[1]
    parent, log1m_t = _grow(tree.parent, tree.log1m_t, n)
    grown = DiffusionTree(parent, log1m_t, validate=False)
    root = int(np.flatnonzero(parent == -1)[0])
    kids = children_lists(parent)
    counts = leaf_counts_from(root, kids, n + 1)
    out = np.empty((n_positions, X_new.shape[0]))
    data = np.empty((n + 1, X.shape[1]))
    data[:n] = X
    for k in range(n_positions):
        pos = sample_attach(rng, grown, root, kids, counts, -math.inf, c, theta, alpha)
        trial = grown.copy()
        trial.attach(n, *pos)
        for j, x in enumerate(X_new):
            data[n] = x
            out[k, j] = pydt_forward(trial.parent, trial.log1m_t, data, c, theta, alpha,
                                     sigma2)[1] - base
    return logsumexp(out, axis=0) - math.log(n_positions)


def log_predictive(posterior, X, X_new, *, n_positions=5, max_draws=50, random_seed=None):
    """Posterior predictive log density of each row of ``X_new``: the average over
    (up to ``max_draws``, evenly thinned) posterior draws of :func:`log_predictive_tree`.

    ``posterior`` is the ``posterior`` group of ``fit(pydt.model(X))`` (needs ``tree``,
    ``c``, ``sigma2`` and, unless the model is binary, ``theta`` and ``alpha``).
    """
    from pp_models.pydt.model import trees_from_posterior

    ds = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    trees = trees_from_posterior(ds)

    def flat(name, default):
        return ds[name].values.reshape(-1) if name in ds else np.full(len(trees), default)

    c, sigma2 = flat("c", 1.0), flat("sigma2", 1.0)
    theta, alpha = flat("theta", 0.0), flat("alpha", 0.0)
    idx = np.unique(np.linspace(0, len(trees) - 1, min(max_draws, len(trees))).astype(int))
    rng = np.random.default_rng(random_seed)
    per_draw = np.array([
        log_predictive_tree(trees[i], X, X_new, c=c[i], theta=theta[i], alpha=alpha[i],
                            sigma2=sigma2[i], n_positions=n_positions, random_seed=rng)
        for i in idx
    ])
    return logsumexp(per_draw, axis=0) - math.log(len(idx))
