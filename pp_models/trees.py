"""Trees: one representation per kind of tree, shared by every family.

Sections (each owns its kind; families import from here, never re-derive):

- binary merge trees (BHC, agglomerative clustering, metrics): merges, scipy linkage,
  parent vectors, Newick, node sizes, leaves under a node, height;
- rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees):
  multifurcating, parent array + divergence times;
- undirected spanning trees (Chow-Liu, mixtures of trees): edge lists over V nodes.

Numba kernels behind them live in :mod:`custom_ops.trees`.
"""

from __future__ import annotations

# ======================================================================================
# Undirected spanning trees (Chow-Liu, mixtures of trees)
#
# Representation: a parent vector rooted at node 0 (``parents[0] == -1``), one per
# labelled tree; ``spanning_tree_edges`` gives the (V-1, 2) edge list (u < v, sorted).
# Forests use -1 for every root. Weights over trees are symmetric (V, V) matrices.
# ======================================================================================
import itertools as _itertools

import numpy as _np

from custom_ops import trees as _tree_kernels


def spanning_tree_edges(parents) -> _np.ndarray:
    """Edges ``(u, v)`` with ``u < v``, sorted, of the tree or forest ``parents``."""
    parents = _np.asarray(parents, dtype=_np.int64)
    child = _np.flatnonzero(parents >= 0)
    edges = _np.sort(_np.stack([child, parents[child]], axis=1), axis=1)
    return edges[_np.lexsort((edges[:, 1], edges[:, 0]))] if edges.size else edges.reshape(0, 2)


def parents_from_edges(edges, n_nodes: int) -> _np.ndarray:
    """Parent vector rooted at node 0 of the spanning tree with these ``n_nodes - 1`` edges.

    Raises ``ValueError`` when the edges do not form a spanning tree on ``n_nodes``.
    """
    edges = _np.asarray(edges, dtype=_np.int64).reshape(-1, 2)
    if edges.shape[0] != n_nodes - 1:
        raise ValueError(f"edges: a spanning tree on {n_nodes} nodes has {n_nodes - 1} edges, "
                         f"got {edges.shape[0]}")
    if edges.size and (edges.min() < 0 or edges.max() >= n_nodes):
        raise ValueError(f"edges: node ids must lie in [0, {n_nodes})")
    parents = _tree_kernels.parents_from_edge_arrays(edges[:, 0].copy(), edges[:, 1].copy(),
                                                     n_nodes)
    if not _tree_kernels.is_spanning_tree(parents):
        raise ValueError("edges: they do not form a spanning tree (a cycle or a disconnected "
                         "node)")
    return parents


def check_spanning_tree(parents, n_nodes: int | None = None, name: str = "parents"):
    """``parents`` as int64, or ``ValueError`` if it is not a tree rooted at node 0."""
    arr = _np.asarray(parents)
    if arr.ndim != 1 or not _np.issubdtype(arr.dtype, _np.integer):
        raise ValueError(f"{name}: expected a 1-D integer parent vector, got {arr.dtype} "
                         f"shape {arr.shape}")
    arr = arr.astype(_np.int64)
    if n_nodes is not None and arr.size != n_nodes:
        raise ValueError(f"{name}: expected {n_nodes} nodes, got {arr.size}")
    if not _tree_kernels.is_spanning_tree(arr):
        raise ValueError(f"{name}: not a spanning tree rooted at node 0 (parents[0] must be "
                         "-1 and every node must reach node 0 without a cycle)")
    return arr


def all_spanning_trees(n_nodes: int) -> _np.ndarray:
    """Every labelled tree on ``n_nodes`` nodes (Cayley: ``V^(V-2)``) as parent vectors,
    by decoding every Prüfer sequence; intended for brute-force checks (V <= 8)."""
    if n_nodes < 1 or n_nodes > 8:
        raise ValueError(f"n_nodes must be in [1, 8] for enumeration, got {n_nodes}")
    if n_nodes <= 2:
        return _np.array([[-1, 0][:n_nodes]], dtype=_np.int64)
    out = _np.empty((n_nodes ** (n_nodes - 2), n_nodes), dtype=_np.int64)
    for i, seq in enumerate(_itertools.product(range(n_nodes), repeat=n_nodes - 2)):
        out[i] = _tree_kernels.prufer_to_parents(_np.array(seq, dtype=_np.int64), n_nodes)
    return out


def check_tree_weights(weights, name: str = "weights") -> _np.ndarray:
    """A symmetric, finite, non-negative (V, V) float64 matrix with positive off-diagonal
    row sums (the support must connect every node to the others)."""
    W = _np.asarray(weights, dtype=_np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"{name}: expected a square (V, V) matrix, got shape {W.shape}")
    if not _np.all(_np.isfinite(W)) or _np.any(W < 0):
        raise ValueError(f"{name}: edge weights must be finite and >= 0")
    if not _np.allclose(W, W.T, rtol=1e-12, atol=0.0):
        raise ValueError(f"{name}: the matrix must be symmetric")
    off = W.sum(axis=1) - _np.diag(W)
    if W.shape[0] > 1 and _np.any(off <= 0):
        raise ValueError(f"{name}: node {int(_np.argmin(off))} has no edge of positive weight")
    return _np.ascontiguousarray(W)


def spanning_tree_log_partition(weights) -> float:
    """log of sum over spanning trees of prod of edge weights (matrix-tree theorem)."""
    return float(_tree_kernels.spanning_tree_log_partition(check_tree_weights(weights)))


def spanning_tree_edge_marginals(weights) -> _np.ndarray:
    """Exact P(uv in T) under P(T) ∝ prod_{uv in T} weights[u, v], in O(V^3)
    (Meilă & Jaakkola 2006; Lyons & Peres, effective resistances)."""
    return _tree_kernels.spanning_tree_edge_marginals(check_tree_weights(weights))


def sample_spanning_tree(weights, random_seed=None) -> _np.ndarray:
    """One exact draw of P(T) ∝ prod_{uv in T} weights[u, v] (Wilson's algorithm)."""
    rng = _np.random.default_rng(random_seed)
    return _tree_kernels.wilson_spanning_tree(rng, check_tree_weights(weights))


def maximum_spanning_tree(weights, *, drop_nonpositive: bool = False) -> _np.ndarray:
    """Parent vector of a maximum-weight spanning tree (rooted at 0) or, with
    ``drop_nonpositive``, of the maximum-weight spanning forest of the positive edges."""
    W = _np.ascontiguousarray(weights, dtype=_np.float64)
    return _tree_kernels.maximum_spanning_forest(W, bool(drop_nonpositive))


def tree_layout(parents) -> _np.ndarray:
    """(V, 2) positions for drawing a tree or forest: depth downwards, leaves spread
    evenly left to right, each parent centred over its children."""
    parents = _np.asarray(parents, dtype=_np.int64)
    V = parents.size
    children = [[] for _ in range(V)]
    for v, p in enumerate(parents):
        if p >= 0:
            children[p].append(v)
    pos = _np.zeros((V, 2))
    next_x = [0.0]

    def place(v, depth):  # iterative would be longer; depth <= V stays small in practice
        if children[v]:
            xs = [place(c, depth + 1) for c in children[v]]
            x = 0.5 * (min(xs) + max(xs))
        else:
            x = next_x[0]
            next_x[0] += 1.0
        pos[v] = (x, -depth)
        return x

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * V + 100))
    try:
        for root in _np.flatnonzero(parents < 0):
            place(int(root), 0)
    finally:
        sys.setrecursionlimit(limit)
    return pos


def plot_spanning_tree(parents, *, labels=None, edge_values=None, ax=None, title=None,
                       node_size: float = 300.0, fontsize: float = 8.0):
    """Draw a tree or forest with :func:`tree_layout`; ``edge_values`` (V, V) sets the
    line width (e.g. mutual information or posterior edge probability)."""
    import matplotlib.pyplot as plt

    parents = _np.asarray(parents, dtype=_np.int64)
    pos = tree_layout(parents)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(4.0, 0.5 * parents.size), 4.0))
    edges = spanning_tree_edges(parents)
    if edge_values is not None:
        vals = _np.array([edge_values[u, v] for u, v in edges]) if edges.size else _np.zeros(0)
        top = vals.max() if vals.size and vals.max() > 0 else 1.0
        widths = 0.5 + 3.5 * vals / top
    else:
        widths = _np.full(len(edges), 1.5)
    for (u, v), lw in zip(edges, widths, strict=True):
        ax.plot(pos[[u, v], 0], pos[[u, v], 1], color="0.4", lw=lw, zorder=1)
    ax.scatter(pos[:, 0], pos[:, 1], s=node_size, color="white", edgecolor="k", zorder=2)
    names = [str(i) for i in range(parents.size)] if labels is None else list(labels)
    for v, name in enumerate(names):
        ax.text(pos[v, 0], pos[v, 1], name, ha="center", va="center", fontsize=fontsize,
                zorder=3)
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    return ax
