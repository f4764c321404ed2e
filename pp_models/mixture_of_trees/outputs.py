"""Post-fit outputs of the Bayesian mixture of trees: posterior edge probabilities.

Given the assignments, component ``k``'s tree posterior is decomposable with log edge
weights ``log beta_uv + g_uv`` (``g`` = the edge's BDeu log Bayes factor on the
component's rows, :func:`edge_log_weights`), so its exact edge marginals follow from the
matrix-tree theorem in O(V^3) (:func:`conditional_edge_marginals`, Meilă & Jaakkola
2006). With hundreds of rows the log weights span hundreds of nats, far more than one
Laplacian in double precision can hold, so the effective conductances come from a
positive-only log-space Kron reduction
(:func:`custom_ops.trees.spanning.spanning_tree_log_edge_marginals`, the same
kernel the tree sampler's decisions use). ``fit`` reports their average over the draws
of each chain given that draw's assignments (Rao-Blackwellised,
:func:`rao_blackwell_edge_probabilities`), next to the plain frequencies of the edges in
the sampled trees.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.mixture_of_trees.gaussian import (
    gaussian_component_stats,
    gaussian_tree_edge_log_weights,
)
from custom_ops.trees.spanning import (
    pairwise_bdeu_gain,
    spanning_tree_log_edge_marginals,
)
from pp_models.mixture_of_trees.chow_liu import discrete_statistics
from pp_models.model_info import posterior_with_labels

__all__ = ["add_edge_probabilities", "conditional_edge_marginals", "edge_log_weights",
           "gaussian_edge_log_weights", "rao_blackwell_edge_probabilities"]


def edge_log_weights(codes, n_categories, ess, edge_prior):
    """``log beta_uv + g_uv`` for the rows ``codes`` of one component."""
    joint, marginal, offsets, _total = discrete_statistics(codes, n_categories)
    gain = pairwise_bdeu_gain(joint, marginal, offsets, n_categories, float(ess))
    with np.errstate(divide="ignore"):
        out = np.log(edge_prior) + gain
    np.fill_diagonal(out, 0.0)
    return out


def gaussian_edge_log_weights(X, m0, kappa0, delta, S0, edge_prior):
    """``log beta_uv + g_uv`` for the rows ``X`` of one Gaussian component (``g`` the
    hyper-Markov NIW edge term, :mod:`custom_ops.mixture_of_trees.gaussian`)."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    stats = gaussian_component_stats(X, np.zeros(X.shape[0], dtype=np.int64), 1)[0]
    gain, _alone = gaussian_tree_edge_log_weights(stats, m0, float(kappa0), float(delta),
                                                  S0)
    with np.errstate(divide="ignore"):
        out = np.log(edge_prior) + gain
    np.fill_diagonal(out, 0.0)
    return out


def conditional_edge_marginals(log_weights):
    """Exact P(uv in T) for P(T) ∝ prod exp(log_weights), accurate when the log weights
    span hundreds of nats (marginals that round to 0 or 1 in double precision come out
    as exactly 0 or 1); the diagonal is 0."""
    log_p = spanning_tree_log_edge_marginals(np.ascontiguousarray(log_weights,
                                                                  dtype=np.float64))
    return np.exp(log_p)


def rao_blackwell_edge_probabilities(z_draws, n_components, component_log_weights):
    """``mean over draws of P(uv in T_k | z, X)`` per chain: (chain, K, V, V).

    ``z_draws`` (chain, draw, n) holds the sampled assignments and
    ``component_log_weights(mask)`` returns the conditional log edge weights of the rows
    in ``mask``. The conditional marginals are exact, so the average has a smaller
    variance than the edge frequencies of the sampled trees (Rao-Blackwell); draws whose
    assignments repeat the previous draw's reuse its marginals.
    """
    n_chains, n_draws, _n = z_draws.shape
    out = None
    for c in range(n_chains):
        previous = None
        for s in range(n_draws):
            z = z_draws[c, s]
            if previous is None or not np.array_equal(z, previous[0]):
                marg = np.stack([conditional_edge_marginals(component_log_weights(z == k))
                                 for k in range(n_components)])
                previous = (z, marg)
            if out is None:
                V = previous[1].shape[-1]
                out = np.zeros((n_chains, n_components, V, V))
            out[c] += previous[1]
    return out / n_draws


def add_edge_probabilities(dt: xr.DataTree, component_log_weights=None) -> xr.DataTree:
    """A copy of ``dt`` with a group ``tree_structure`` holding, per (chain, component,
    node, node_b):

    - ``edge_probability``: the Rao-Blackwellised posterior edge probability
      (:func:`rao_blackwell_edge_probabilities`) when ``component_log_weights`` is given
      (the model's post-fit hook passes it), else the edge frequency;
    - ``edge_frequency``: the fraction of draws whose tree of that component contains
      the edge (the trees are exact conditional draws, so it is unbiased too).

    Component labels can differ between chains, hence one estimate per chain."""
    post = posterior_with_labels(dt)
    trees = post["trees"].values  # (chain, draw, K, V)
    n_chains, n_draws, K, V = trees.shape
    freq = np.zeros((n_chains, K, V, V))
    child = np.arange(V)
    for c in range(n_chains):
        for k in range(K):
            parents = trees[c, :, k, :]
            for s in range(n_draws):
                has = parents[s] >= 0
                freq[c, k, child[has], parents[s][has]] += 1.0
        freq[c] /= n_draws
    freq = freq + np.swapaxes(freq, -1, -2)
    if component_log_weights is None:
        prob = freq
    else:
        prob = rao_blackwell_edge_probabilities(post["z"].values.astype(np.int64), K,
                                                component_log_weights)
    nodes = post["trees"].coords[post["trees"].dims[-1]].values
    dims = ("chain", "component", "node", "node_b")
    coords = {"chain": post["chain"].values, "node": nodes, "node_b": nodes}
    result = dt.copy()
    result["tree_structure"] = xr.DataTree(xr.Dataset({
        "edge_probability": xr.DataArray(prob, dims=dims, coords=coords),
        "edge_frequency": xr.DataArray(freq, dims=dims, coords=coords)}))
    return result


#: Widest ``structure.png`` in inches (at 110 dpi: 1320 pixels); components that do not
#: fit side by side go below each other.
MAX_WIDTH = 12.0


def plot_structure(dt: xr.DataTree, path=None, *, chain: int = 0, threshold: float = 0.5,
                   max_columns: int = 2):
    """Draw each component's posterior tree: the maximum spanning tree of the posterior
    edge probabilities of ``chain``, rooted at its centre, each variable's name in its
    box; line width by posterior edge probability, dashed below ``threshold`` (an edge
    of the most probable tree that most draws leave out). Components largest first, in
    rows of at most ``max_columns`` that fit :data:`MAX_WIDTH`, with a legend. Saves a
    PNG to ``path`` when given; returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    from pp_models.tree_pictures import (
        centred_parents,
        plot_spanning_tree,
        tree_figure_size,
        tree_layout,
    )
    from pp_models.trees import maximum_spanning_tree

    if "tree_structure" not in dt.children:
        dt = add_edge_probabilities(dt)
    probs = dt["tree_structure"]["edge_probability"]
    labels = [str(s) for s in probs.coords["node"].values]
    P = probs.values[chain]
    K = P.shape[0]
    w = posterior_with_labels(dt)["w"].values[chain].mean(axis=0)
    order = np.argsort(-w, kind="stable")
    parents = [maximum_spanning_tree(P[k]) for k in range(K)]
    longest = max(len(s) for s in labels) if labels else 1
    per_leaf = 0.2 + 0.075 * min(longest, 14)  # a column holds the longest label
    sizes = [tree_figure_size(tree_layout(centred_parents(parents[k])), per_leaf=per_leaf)
             for k in range(K)]
    panel = max(s[0] for s in sizes)
    # as many columns as fit MAX_WIDTH inches (at least one)
    cols = max(1, min(K, max_columns, int(MAX_WIDTH // panel)))
    rows = -(-K // cols)
    width = min(cols * panel, MAX_WIDTH)
    height = min(rows * max(s[1] for s in sizes) + 0.7, 30.0)
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    for slot, k in enumerate(order):
        ax = axes[slot // cols, slot % cols]
        plot_spanning_tree(parents[k], labels=labels, edge_values=P[k], ax=ax,
                           title=f"component {k}: weight {w[k]:.2f}", fontsize=7,
                           dashed_below=threshold, vmax=1.0)
    for slot in range(K, rows * cols):
        axes[slot // cols, slot % cols].set_axis_off()
    handles = [Line2D([], [], color="0.35", lw=0.5 + 3.5 * q) for q in (0.5, 0.75, 1.0)]
    handles.append(Line2D([], [], color="0.35", lw=1.0, ls=(0, (3, 2))))
    fig.legend(handles, ["P = 0.5", "P = 0.75", "P = 1",
                         f"P < {threshold:g}: in the most probable tree, not in most draws"],
               title=f"line width: posterior probability P of the edge (chain {chain})",
               loc="lower center", ncol=4, fontsize=7, title_fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
