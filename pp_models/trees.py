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

import itertools as _itertools

import numpy as _np
import numpy as np

from custom_ops import trees as _tree_kernels
from custom_ops.trees import node_depths, node_sizes, validate_merges

__all__ = [
    "all_spanning_trees",
    "check_spanning_tree",
    "check_tree_weights",
    "from_newick",
    "from_parents",
    "leaves_under",
    "maximum_spanning_tree",
    "merges_from_linkage",
    "node_depths",
    "node_sizes",
    "parents_from_edges",
    "plot_spanning_tree",
    "sample_spanning_tree",
    "spanning_tree_edge_marginals",
    "spanning_tree_edges",
    "spanning_tree_log_partition",
    "to_linkage",
    "to_newick",
    "to_parents",
    "tree_height",
    "tree_layout",
    "validate_merges",
]


# ======================================================================================
# binary merge trees
# ======================================================================================
# One representation: ``merges``, an int64 (n - 1, 2) array in scipy's linkage order, row
# t joining nodes merges[t] into node n + t (leaves 0..n-1, root 2n - 2). Everything
# else is a conversion (scipy linkage, parent vector, Newick) or a statistic of it.
# Validation and the hot loops are in custom_ops.trees (the BHC Op validates with them).
def merges_from_linkage(linkage, n=None, *, name="linkage"):
    """The merges of a scipy linkage matrix (n - 1, 4) (or of a merge list), validated."""
    return validate_merges(linkage, n, name=name)


def to_linkage(merges, heights=None):
    """scipy linkage (n - 1, 4): ``[i, j, height, size]`` per merge.

    ``heights`` (n - 1,) are the merges' heights; they must not decrease from child to
    parent for ``scipy.cluster.hierarchy.dendrogram``. Default: the number of merges
    on the longest path down to a leaf (1 for a merge of two leaves).
    """
    m = validate_merges(merges)
    n = m.shape[0] + 1
    if heights is None:
        levels = np.zeros(2 * n - 1)
        for t, (i, j) in enumerate(m):
            levels[n + t] = max(levels[i], levels[j]) + 1.0
        heights = levels[n:]
    heights = np.asarray(heights, dtype=np.float64)
    if heights.shape != (n - 1,):
        raise ValueError(f"heights: expected shape ({n - 1},), got {heights.shape}")
    return np.column_stack([m, heights, node_sizes(m)[n:]]).astype(np.float64)


def to_parents(merges):
    """Parent of every node (2n - 1,) int64, leaves first; the root's parent is -1."""
    m = validate_merges(merges)
    n = m.shape[0] + 1
    parents = np.full(2 * n - 1, -1, dtype=np.int64)
    parents[m[:, 0]] = np.arange(n, 2 * n - 1)
    parents[m[:, 1]] = np.arange(n, 2 * n - 1)
    return parents


def from_parents(parents):
    """Merges of a parent vector over 2n - 1 nodes (leaves 0..n-1, internal node n + t
    the t-th merge, root's parent -1); each row lists the smaller child id first.

    Raises ``ValueError`` unless every internal node has exactly two children with
    smaller ids and only the root has no parent.
    """
    p = np.asarray(parents)
    if p.ndim != 1 or p.size < 3 or p.size % 2 == 0 or not np.issubdtype(p.dtype, np.integer):
        raise ValueError(f"parents: expected an integer vector of odd length 2n - 1 >= 3, "
                         f"got shape {p.shape} and dtype {p.dtype}")
    n = (p.size + 1) // 2
    root = p.size - 1
    if p[root] != -1 or np.count_nonzero(p == -1) != 1:
        raise ValueError("parents: exactly one node, the last (2n - 2), must have parent -1")
    child = np.flatnonzero(p >= 0)
    if np.any(p[child] < n) or np.any(p[child] <= child) or np.any(p[child] > root):
        raise ValueError("parents: a parent must be an internal node with a larger id")
    counts = np.bincount(p[child] - n, minlength=n - 1)
    if np.any(counts != 2):
        raise ValueError("parents: every internal node must have exactly two children")
    order = np.lexsort((child, p[child]))
    return validate_merges(child[order].reshape(n - 1, 2), n, name="parents")


def to_newick(merges, leaf_names=None, *, heights=None):
    """Newick string of the tree, e.g. ``((0,1),2);``.

    ``leaf_names`` (n,) default to the leaf ids; with ``heights`` (the linkage heights,
    leaves at 0) every node gets the branch length to its parent.
    """
    m = validate_merges(merges)
    n = m.shape[0] + 1
    names = [str(i) for i in range(n)] if leaf_names is None else [str(s) for s in leaf_names]
    if len(names) != n:
        raise ValueError(f"leaf_names: expected {n} names, got {len(names)}")
    for s in names:
        if any(c in s for c in "(),:;"):
            raise ValueError(f"leaf_names: {s!r} contains a Newick delimiter")
    h = None
    if heights is not None:
        h = np.concatenate([np.zeros(n), np.asarray(heights, dtype=np.float64)])
        parents = to_parents(m)
    text = names[:]
    for i, j in m:
        parts = []
        for c in (i, j):
            s = text[c]
            if h is not None:
                s += f":{float(h[parents[c]] - h[c])!r}"
            parts.append(s)
            text[c] = None
        text.append("(" + ",".join(parts) + ")")
    return text[-1] + ";"


def from_newick(newick):
    """``(merges, leaf_names, heights)`` of a binary Newick string.

    Leaves are numbered in their order in the string; merges in post-order. ``heights``
    (n - 1,) are the merges' heights above the leaves when every branch has a length
    (ultrametric trees; the mean over the node's leaves otherwise), else ``None``.
    """
    if not isinstance(newick, str):
        raise TypeError(f"newick: expected a str, got {type(newick).__name__}")
    s = newick.strip()
    if not s.endswith(";"):
        raise ValueError("newick: must end with ';'")
    s = s[:-1]
    pos = 0
    names, rows, lengths = [], [], {}

    def length():
        nonlocal pos
        if pos < len(s) and s[pos] == ":":
            start = pos = pos + 1
            while pos < len(s) and s[pos] not in ",()":
                pos += 1
            try:
                return float(s[start:pos])
            except ValueError:
                raise ValueError(f"newick: bad branch length {s[start:pos]!r}") from None
        return None

    def node():
        nonlocal pos
        if pos < len(s) and s[pos] == "(":
            pos += 1
            children = [node()]
            while pos < len(s) and s[pos] == ",":
                pos += 1
                children.append(node())
            if pos >= len(s) or s[pos] != ")":
                raise ValueError(f"newick: expected ')' at position {pos}")
            pos += 1
            if len(children) != 2:
                raise ValueError("newick: the tree is not binary")
            while pos < len(s) and s[pos] not in ",():":
                pos += 1  # an internal node's label is ignored
            rows.append(children)
            ident = ("internal", len(rows) - 1)
        else:
            start = pos
            while pos < len(s) and s[pos] not in ",():":
                pos += 1
            names.append(s[start:pos].strip())
            ident = ("leaf", len(names) - 1)
        lengths[ident] = length()
        return ident

    root = node()
    if pos != len(s):
        raise ValueError(f"newick: unexpected {s[pos:]!r} after the tree")
    n = len(names)
    if n < 2:
        raise ValueError("newick: a tree needs at least 2 leaves")

    def node_id(ident):
        return ident[1] if ident[0] == "leaf" else n + ident[1]

    merges = validate_merges(
        np.array([[node_id(a), node_id(b)] for a, b in rows], dtype=np.int64), n,
        name="newick",
    )
    heights = None
    if all(lengths.get(k) is not None for k in lengths if k != root):
        parents = to_parents(merges)
        ids = {node_id(k): v for k, v in lengths.items() if k != root}
        # height of an internal node: mean over its leaves of the path length down
        depth = np.zeros(2 * n - 1)
        for k in range(2 * n - 3, -1, -1):
            depth[k] = depth[parents[k]] + ids[k]
        sizes = node_sizes(merges)
        total = depth[:n].copy()
        sums = np.concatenate([total, np.zeros(n - 1)])
        for t, (i, j) in enumerate(merges):
            sums[n + t] = sums[i] + sums[j]
        heights = sums[n:] / sizes[n:] - depth[n:]
    return merges, names, heights


def leaves_under(merges, node):
    """Leaf ids under ``node`` (a leaf is its own), in depth-first order, the second child's
    subtree first."""
    m = np.asarray(merges)
    n = m.shape[0] + 1
    if not 0 <= int(node) < 2 * n - 1:
        raise ValueError(f"node: must lie in [0, {2 * n - 1}), got {node}")
    out, stack = [], [int(node)]
    while stack:
        c = stack.pop()
        if c < n:
            out.append(c)
        else:
            stack.extend(int(x) for x in m[c - n])
    return out


def tree_height(merges):
    """Edges on the longest root-to-leaf path."""
    return int(node_depths(validate_merges(merges)).max())


# ======================================================================================
# Undirected spanning trees (Chow-Liu, mixtures of trees)
#
# Representation: a parent vector rooted at node 0 (``parents[0] == -1``), one per
# labelled tree; ``spanning_tree_edges`` gives the (V-1, 2) edge list (u < v, sorted).
# Forests use -1 for every root. Weights over trees are symmetric (V, V) matrices.
# ======================================================================================




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
