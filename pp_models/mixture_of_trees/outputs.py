"""Post-fit outputs of the Bayesian mixture of trees: posterior edge probabilities.

Given the assignments, component ``k``'s tree posterior is decomposable with log edge
weights ``log beta_uv + g_uv`` (``g`` = the edge's BDeu log Bayes factor on the
component's rows, :func:`edge_log_weights`), so its exact edge marginals follow from the
matrix-tree theorem in O(V^3) (:func:`conditional_edge_marginals`, Meilă & Jaakkola
2006) while the weights span a moderate range (< e^30 between the heaviest and lightest
edge that matters). With hundreds of rows the log weights span far more than double
precision can hold in one Laplacian, so ``fit`` reports edge frequencies over the
exactly sampled trees instead (:func:`add_edge_probabilities`).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.spanning_tree_kernels import pairwise_bdeu_gain, spanning_tree_edge_marginals
from pp_models.mixture_of_trees.chow_liu import discrete_statistics
from pp_models.model_info import posterior_with_labels

__all__ = ["add_edge_probabilities", "conditional_edge_marginals", "edge_log_weights"]


def edge_log_weights(codes, n_categories, ess, edge_prior):
    """``log beta_uv + g_uv`` for the rows ``codes`` of one component."""
    joint, marginal, offsets, _total = discrete_statistics(codes, n_categories)
    gain = pairwise_bdeu_gain(joint, marginal, offsets, n_categories, float(ess))
    with np.errstate(divide="ignore"):
        out = np.log(edge_prior) + gain
    np.fill_diagonal(out, 0.0)
    return out


def conditional_edge_marginals(log_weights):
    """Exact P(uv in T) for P(T) ∝ prod exp(log_weights): weights rescaled by their
    maximum and floored at e^-30 (so the Laplacian stays numerically invertible; edges
    that light have marginals ~1e-13 or are bridges either way)."""
    V = log_weights.shape[0]
    off = ~np.eye(V, dtype=bool)
    W = np.exp(np.maximum(log_weights - log_weights[off].max(), -30.0))
    np.fill_diagonal(W, 0.0)
    return np.clip(spanning_tree_edge_marginals(W), 0.0, 1.0)


def add_edge_probabilities(dt: xr.DataTree) -> xr.DataTree:
    """A copy of ``dt`` with a group ``tree_structure`` holding ``edge_probability``
    (chain, component, node, node_b): the fraction of draws whose tree of that component
    contains the edge. The trees are exact draws from their conditional posteriors, so
    this is an unbiased estimate of the posterior edge probability; component labels
    can differ between chains, hence one estimate per chain."""
    post = posterior_with_labels(dt)
    trees = post["trees"].values  # (chain, draw, K, V)
    n_chains, n_draws, K, V = trees.shape
    out = np.zeros((n_chains, K, V, V))
    child = np.arange(V)
    for c in range(n_chains):
        for k in range(K):
            parents = trees[c, :, k, :]
            for s in range(n_draws):
                has = parents[s] >= 0
                out[c, k, child[has], parents[s][has]] += 1.0
        out[c] /= n_draws
    out = out + np.swapaxes(out, -1, -2)
    nodes = post["trees"].coords[post["trees"].dims[-1]].values
    da = xr.DataArray(out, dims=("chain", "component", "node", "node_b"),
                      coords={"chain": post["chain"].values, "node": nodes, "node_b": nodes})
    result = dt.copy()
    result["tree_structure"] = xr.DataTree(xr.Dataset({"edge_probability": da}))
    return result


def plot_structure(dt: xr.DataTree, path=None, *, chain: int = 0, threshold: float = 0.5):
    """Draw each component's posterior tree: the maximum spanning tree of the posterior
    edge probabilities of ``chain``, line widths by probability; edges below
    ``threshold`` dashed. Saves a PNG to ``path`` when given; returns the figure."""
    import matplotlib.pyplot as plt

    from pp_models.trees import (
        maximum_spanning_tree,
        plot_spanning_tree,
        spanning_tree_edges,
    )

    if "tree_structure" not in dt.children:
        dt = add_edge_probabilities(dt)
    probs = dt["tree_structure"]["edge_probability"]
    labels = [str(s) for s in probs.coords["node"].values]
    P = probs.values[chain]
    K = P.shape[0]
    w = posterior_with_labels(dt)["w"].values[chain].mean(axis=0)
    fig, axes = plt.subplots(1, K, figsize=(max(4.0, 0.45 * len(labels)) * K, 5.0),
                             squeeze=False)
    for k in range(K):
        parents = maximum_spanning_tree(P[k])
        ax = axes[0, k]
        plot_spanning_tree(parents, labels=labels, edge_values=P[k], ax=ax,
                           title=f"component {k} (weight {w[k]:.2f})", fontsize=7)
        # lines are drawn in the order of the sorted edge list
        for line, (u, v) in zip(ax.lines, spanning_tree_edges(parents), strict=True):
            if P[k][u, v] < threshold:
                line.set_linestyle("--")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
