"""Post-fit outputs of the PYDT model: the predictive density of new points (Knowles
2012 §7.6) and a picture of the most probable sampled tree."""

from __future__ import annotations

import math

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from custom_ops.pydt import check_parameters, pydt_forward
from pp_models.model_info import posterior_with_labels
from pp_models.pydt.attach import children_lists, leaf_counts_from, sample_attach
from pp_models.pydt.greedy import _grow
from pp_models.trees import DiffusionTree

__all__ = ["log_predictive", "log_predictive_tree", "plot_results"]


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

    ``posterior`` is the result of ``fit(pydt.model(X))`` (a DataTree; the tree is read
    from its ``posterior_labels`` group) or a Dataset with ``tree``, ``c``, ``sigma2``
    and, unless the model is binary, ``theta`` and ``alpha``.
    """
    from pp_models.pydt.model import trees_from_posterior

    if isinstance(posterior, xr.DataTree) and "posterior" in posterior.children:
        ds = posterior_with_labels(posterior)  # a whole fit: the tree is a label variable
    else:
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


def _best_draw(posterior, X):
    """Index (flat over chains) of the draw with the highest ``log p(tree, X | c, theta,
    alpha, sigma2)`` (the Op's joint); the last draw when ``X`` is not at hand."""
    from pp_models.pydt.model import trees_from_posterior

    trees = trees_from_posterior(posterior)
    if X is None:
        return len(trees) - 1, trees, None

    def flat(name, default):
        if name in posterior:
            return posterior[name].values.reshape(-1)
        return np.full(len(trees), default)

    c, sigma2 = flat("c", 1.0), flat("sigma2", 1.0)
    theta, alpha = flat("theta", 0.0), flat("alpha", 0.0)
    X = np.ascontiguousarray(X, dtype=np.float64)
    log_joint = np.array([
        sum(pydt_forward(t.parent, t.log1m_t, X, c[i], theta[i], alpha[i], sigma2[i]))
        for i, t in enumerate(trees)
    ])
    best = int(np.argmax(np.where(np.isfinite(log_joint), log_joint, -np.inf)))
    return best, trees, float(log_joint[best])


def plot_results(dt, path=None):
    """Dendrogram of the posterior draw of highest joint density of tree and data given
    the draw's hyperparameters (a MAP tree among the draws), divergence time on the
    vertical axis (``DiffusionTree.plot``). Saves a PNG to ``path`` when given; returns
    the figure. ``ppzoo fit pydt`` writes it as ``tree.png``.
    """
    import matplotlib.pyplot as plt

    if not isinstance(dt, xr.DataTree):
        raise TypeError(f"dt: expected the DataTree fit returns, got {type(dt).__name__}")
    posterior = posterior_with_labels(dt)
    X = None
    if "observed_data" in dt.children and "X" in dt["observed_data"]:
        X = dt["observed_data"]["X"].values
    best, trees, log_joint = _best_draw(posterior, X)
    tree = trees[best]
    n_draws = posterior.sizes["draw"]
    chain, draw = divmod(best, n_draws)
    labels = None
    if X is not None:
        obs = dt["observed_data"]["X"]
        if obs.dims and obs.dims[0] in obs.coords:
            labels = [str(v) for v in obs.coords[obs.dims[0]].values]
    fig, ax = plt.subplots(figsize=(max(5.0, 0.12 * tree.n_leaves), 4.5))
    tree.plot(ax=ax, labels=labels if labels is not None and tree.n_leaves <= 40 else None)
    if log_joint is not None:
        title = (f"PYDT: most probable sampled tree (chain {chain}, draw {draw})\n"
                 f"log p(tree, X | hyperparameters) = {log_joint:.1f}")
    else:
        title = f"PYDT: last sampled tree (chain {chain}, draw {draw})"
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(f"{tree.n_leaves} data points, {tree.n_internal} branch points")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
