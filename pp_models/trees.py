"""Trees: one representation per kind of tree, shared by every family.

Sections (each owns its kind; families import from here, never re-derive):

- binary merge trees (BHC, agglomerative clustering, metrics): merges, scipy linkage,
  parent vectors, Newick, node sizes, leaves under a node, height;
- rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees):
  multifurcating, parent array + divergence times;
- undirected spanning trees (Chow-Liu, mixtures of trees): edge lists over V nodes.

Numba kernels behind them live in :mod:`custom_ops.trees` (merge trees),
:mod:`custom_ops.trees.spanning` and :mod:`custom_ops.trees.diffusion`.

One module for the three kinds, so that they sit side by side with their conversions;
each section is self-contained and would be the module to split off if a fourth kind
arrives. Pictures of spanning trees are in :mod:`pp_models.tree_pictures`; a diffusion
tree draws itself (:meth:`DiffusionTree.plot`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass as _dataclass

import numpy as np

from custom_ops.trees import node_depths, node_sizes, validate_merges
from custom_ops.trees import spanning as _tree_kernels
from custom_ops.trees.diffusion import (
    DETACHED,
    DIFFUSION_TREE_ERRORS,
    UNUSED_SLOT,
    diffusion_tree_mrca_times,
    diffusion_tree_structure,
)
from pp_models.validation import rng_from_seed

__all__ = [
    "DiffusionTree",
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
    "sample_spanning_tree",
    "spanning_tree_edge_marginals",
    "spanning_tree_edges",
    "spanning_tree_log_partition",
    "to_linkage",
    "to_newick",
    "to_parents",
    "tree_height",
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




def spanning_tree_edges(parents) -> np.ndarray:
    """Edges ``(u, v)`` with ``u < v``, sorted, of the tree or forest ``parents``."""
    parents = np.asarray(parents, dtype=np.int64)
    child = np.flatnonzero(parents >= 0)
    edges = np.sort(np.stack([child, parents[child]], axis=1), axis=1)
    return edges[np.lexsort((edges[:, 1], edges[:, 0]))] if edges.size else edges.reshape(0, 2)


def parents_from_edges(edges, n_nodes: int) -> np.ndarray:
    """Parent vector rooted at node 0 of the spanning tree with these ``n_nodes - 1`` edges.

    Raises ``ValueError`` when the edges do not form a spanning tree on ``n_nodes``.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
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
    arr = np.asarray(parents)
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name}: expected a 1-D integer parent vector, got {arr.dtype} "
                         f"shape {arr.shape}")
    arr = arr.astype(np.int64)
    if n_nodes is not None and arr.size != n_nodes:
        raise ValueError(f"{name}: expected {n_nodes} nodes, got {arr.size}")
    if not _tree_kernels.is_spanning_tree(arr):
        raise ValueError(f"{name}: not a spanning tree rooted at node 0 (parents[0] must be "
                         "-1 and every node must reach node 0 without a cycle)")
    return arr


def all_spanning_trees(n_nodes: int) -> np.ndarray:
    """Every labelled tree on ``n_nodes`` nodes (Cayley: ``V^(V-2)``) as parent vectors,
    by decoding every Prüfer sequence; intended for brute-force checks (V <= 8)."""
    if n_nodes < 1 or n_nodes > 8:
        raise ValueError(f"n_nodes must be in [1, 8] for enumeration, got {n_nodes}")
    if n_nodes <= 2:
        return np.array([[-1, 0][:n_nodes]], dtype=np.int64)
    out = np.empty((n_nodes ** (n_nodes - 2), n_nodes), dtype=np.int64)
    for i, seq in enumerate(itertools.product(range(n_nodes), repeat=n_nodes - 2)):
        out[i] = _tree_kernels.prufer_to_parents(np.array(seq, dtype=np.int64), n_nodes)
    return out


def check_tree_weights(weights, name: str = "weights") -> np.ndarray:
    """A symmetric, finite, non-negative (V, V) float64 matrix with positive off-diagonal
    row sums (the support must connect every node to the others)."""
    try:
        W = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name}: expected a numeric (V, V) matrix: {err}") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"{name}: expected a square (V, V) matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)) or np.any(W < 0):
        raise ValueError(f"{name}: edge weights must be finite and >= 0")
    if not np.allclose(W, W.T, rtol=1e-12, atol=0.0):
        raise ValueError(f"{name}: the matrix must be symmetric")
    off = W.sum(axis=1) - np.diag(W)
    if W.shape[0] > 1 and np.any(off <= 0):
        raise ValueError(f"{name}: node {int(np.argmin(off))} has no edge of positive weight")
    return np.ascontiguousarray(W)


def spanning_tree_log_partition(weights) -> float:
    """log of sum over spanning trees of prod of edge weights (matrix-tree theorem)."""
    return float(_tree_kernels.spanning_tree_log_partition(check_tree_weights(weights)))


def spanning_tree_edge_marginals(weights) -> np.ndarray:
    """Exact P(uv in T) under P(T) ∝ prod_{uv in T} weights[u, v], in O(V^3)
    (Meilă & Jaakkola 2006; Lyons & Peres, effective resistances)."""
    return _tree_kernels.spanning_tree_edge_marginals(check_tree_weights(weights))


def sample_spanning_tree(weights, random_seed=None) -> np.ndarray:
    """One exact draw of P(T) ∝ prod_{uv in T} weights[u, v] (Wilson's algorithm)."""
    rng = rng_from_seed(random_seed)
    return _tree_kernels.wilson_spanning_tree(rng, check_tree_weights(weights))


def maximum_spanning_tree(weights, *, drop_nonpositive: bool = False) -> np.ndarray:
    """Parent vector of a maximum-weight spanning tree (rooted at 0) or, with
    ``drop_nonpositive``, of the maximum-weight spanning forest of the positive edges."""
    W = np.ascontiguousarray(weights, dtype=np.float64)
    return _tree_kernels.maximum_spanning_forest(W, bool(drop_nonpositive))


# ======================================================================================
# rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees)
# ======================================================================================

# ``parent`` codes (UNUSED_SLOT, an internal slot the tree does not use; DETACHED, the root
# of a subtree cut off by DiffusionTree.detach) are the kernels' own, from
# custom_ops.trees.diffusion.


@_dataclass(eq=False)
class DiffusionTree:
    """A rooted, multifurcating tree over ``n`` labelled leaves with divergence times.

    Arrays, cheap to copy and edit in place (Knowles 2012 §4.3; digest §3.2):

    - ``parent`` (2 n - 1,) int64: leaves are nodes ``0..n-1``, internal slots
      ``n..2n-2``; ``parent[v]`` is ``-1`` for the root (the first branch point, which
      hangs from the origin at ``t = 0``) and ``-2`` for an unused internal slot (a tree
      with multifurcations has fewer than ``n - 1`` internal nodes);
    - ``log1m_t`` (n - 1,) float64: ``log(1 - t)`` of internal slot ``n + k`` (``t`` rounds
      to 1.0 for small ``c``; ``-c log(1 - t)`` is the cumulative divergence
      function ``A(t)``). Leaves sit at ``t = 1``; unused slots hold 0.

    ``validate=False`` skips the O(n) check (for kernels that keep trees valid).
    """

    parent: np.ndarray
    log1m_t: np.ndarray
    validate: bool = True

    def __post_init__(self):
        self.parent = np.ascontiguousarray(self.parent, dtype=np.int64)
        self.log1m_t = np.ascontiguousarray(self.log1m_t, dtype=np.float64)
        if self.validate:
            self.check()

    # ---------------------------------------------------------------- basic facts
    @property
    def n_leaves(self) -> int:
        return (self.parent.shape[0] + 1) // 2

    @property
    def internal_nodes(self) -> np.ndarray:
        """Node ids of the internal nodes in use."""
        n = self.n_leaves
        return n + np.flatnonzero(self.parent[n:] != UNUSED_SLOT)

    @property
    def n_internal(self) -> int:
        return int(self.internal_nodes.size)

    @property
    def root(self) -> int:
        return int(np.flatnonzero(self.parent == -1)[0])

    @property
    def root_time(self) -> float:
        """Divergence time of the first branch point (the tree's height is ``1 - t``)."""
        return float(-math.expm1(self.log1m_t[self.root - self.n_leaves]))

    def time(self, v: int) -> float:
        """Divergence time ``t`` of node ``v`` (1 for a leaf)."""
        n = self.n_leaves
        return 1.0 if v < n else float(-math.expm1(self.log1m_t[v - n]))

    @property
    def times(self) -> np.ndarray:
        """``t`` of every internal slot (NaN for unused slots)."""
        t = -np.expm1(self.log1m_t)
        t[self.parent[self.n_leaves:] == UNUSED_SLOT] = np.nan
        return t

    def check(self) -> DiffusionTree:
        """Raise ``ValueError`` saying what is wrong with an invalid tree."""
        if self.parent.ndim != 1 or self.log1m_t.ndim != 1:
            raise ValueError("tree: parent and log1m_t must be 1-D arrays")
        code = diffusion_tree_structure(self.parent, self.log1m_t, self.n_leaves)[0]
        if code:
            raise ValueError(DIFFUSION_TREE_ERRORS[code])
        return self

    def copy(self) -> DiffusionTree:
        return DiffusionTree(self.parent.copy(), self.log1m_t.copy(), validate=False)

    def _structure(self):
        return diffusion_tree_structure(self.parent, self.log1m_t, self.n_leaves)

    def children(self, v: int) -> np.ndarray:
        return np.flatnonzero(self.parent == v)

    def n_children(self) -> np.ndarray:
        """Number of children of every node slot (0 for leaves and unused slots)."""
        counts = np.zeros(self.parent.shape[0], dtype=np.int64)
        p = self.parent[self.parent >= 0]
        np.add.at(counts, p, 1)
        return counts

    def leaf_counts(self) -> np.ndarray:
        """Number of leaves under every node slot (1 at leaves, 0 at unused slots)."""
        return self._structure()[4]

    @property
    def n_multifurcations(self) -> int:
        """Internal nodes with more than two children."""
        return int(np.count_nonzero(self.n_children() > 2))

    @property
    def is_binary(self) -> bool:
        return self.n_internal == self.n_leaves - 1

    def mrca_times(self) -> np.ndarray:
        """(n, n) divergence times of each pair's most recent common ancestor (1 on the
        diagonal): ``sigma2`` times it is the covariance of the leaves (digest §3.9)."""
        return diffusion_tree_mrca_times(self.parent, self.log1m_t, self.n_leaves)

    # ---------------------------------------------------------------- conversions
    def to_packed(self) -> np.ndarray:
        """(2 n - 1, 2) float array ``[parent, log1m_t]`` per node (0 at leaves): the value
        of :class:`pp_models.distributions.PYDiffusionTree`."""
        n = self.n_leaves
        out = np.zeros((2 * n - 1, 2))
        out[:, 0] = self.parent
        out[n:, 1] = self.log1m_t
        out[n:, 1][self.parent[n:] == UNUSED_SLOT] = 0.0
        return out

    def clades(self) -> np.ndarray:
        """The leaf sets under the internal nodes other than the root (the tree's
        clades, or splits of its leaves), one boolean row over the leaves each, in node
        order."""
        n = self.n_leaves
        inside = np.zeros((self.parent.shape[0], n), dtype=bool)
        node = np.arange(n)
        leaves = np.arange(n)
        # climb from every leaf at once; each step marks the leaves under the nodes reached
        while node.size:
            node = self.parent[node]
            keep = node >= 0
            node, leaves = node[keep], leaves[keep]
            inside[node, leaves] = True
        internal = self.internal_nodes
        return inside[internal[internal != self.root]]

    @classmethod
    def from_packed(cls, packed, validate: bool = True) -> DiffusionTree:
        packed = np.asarray(packed, dtype=np.float64)
        if packed.ndim != 2 or packed.shape[1] != 2 or packed.shape[0] % 2 != 1:
            raise ValueError(f"tree: a packed tree has shape (2 n - 1, 2), got {packed.shape}")
        n = (packed.shape[0] + 1) // 2
        return cls(np.rint(packed[:, 0]).astype(np.int64), packed[n:, 1].copy(), validate)

    def to_newick(self, labels=None) -> str:
        """Newick string with branch lengths ``t_child - t_parent`` (the root's from 0)."""
        n = self.n_leaves
        labels = [str(i) for i in range(n)] if labels is None else [str(x) for x in labels]
        if len(labels) != n:
            raise ValueError(f"labels: need {n} labels, got {len(labels)}")
        kids = [[] for _ in range(self.parent.shape[0])]
        for v, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(v)

        def rec(v, t_parent):
            length = self.time(v) - t_parent
            if v < n:
                return f"{labels[v]}:{length:.6g}"
            inner = ",".join(rec(w, self.time(v)) for w in kids[v])
            return f"({inner}):{length:.6g}"

        return rec(self.root, 0.0) + ";"

    def to_linkage(self) -> np.ndarray:
        """scipy linkage matrix (n - 1, 4) of a binary tree, heights ``1 - t``."""
        if not self.is_binary:
            raise ValueError(
                f"tree: scipy linkage needs a binary tree; this one has "
                f"{self.n_multifurcations} multifurcations"
            )
        n = self.n_leaves
        internal = self.internal_nodes
        # later divergences merge first (scipy needs non-decreasing heights)
        order = internal[np.argsort(self.log1m_t[internal - n], kind="stable")]
        cluster = np.arange(self.parent.shape[0])
        counts = self.leaf_counts()
        Z = np.empty((n - 1, 4))
        for row, v in enumerate(order):
            a, b = self.children(v)
            ca, cb = sorted((cluster[a], cluster[b]))
            Z[row] = (ca, cb, 1.0 - self.time(v), counts[v])
            cluster[v] = n + row
        return Z

    # ---------------------------------------------------------------- picture
    def plot(self, ax=None, labels=None, leaf_colors=None, linewidth=1.0, time_axis="log"):
        """Dendrogram with divergence time downwards; multifurcations are drawn as one
        bar. Returns the axes.

        ``time_axis="log"`` (default) places a branch point at ``-log(1 - t)``, the
        divergence function's own clock (``A(t) = -c log(1 - t)``): branch points crowd
        towards ``t = 1`` on a linear axis (most of a fitted tree lies in 0.8-1.0), and
        this spreads them; the ticks still read ``t``, and the leaves (``t = 1``, at
        infinity on that clock) sit on a line below the deepest branch point.
        ``"linear"``: ``t`` itself. ``labels`` name the leaves (default their indices);
        they are drawn up to 400 leaves, in a font that shrinks with their number.
        """
        import matplotlib.pyplot as plt

        if time_axis not in ("log", "linear"):
            raise ValueError(f"time_axis must be 'log' or 'linear', got {time_axis!r}")
        n = self.n_leaves
        if ax is None:
            _fig, ax = plt.subplots(figsize=(min(max(5.0, 0.1 * n), 20.0), 4.5))
        kids = [[] for _ in range(self.parent.shape[0])]
        for v, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(v)
        x = np.zeros(self.parent.shape[0])
        leaf_order = []

        def place(v):
            if v < n:
                x[v] = len(leaf_order)
                leaf_order.append(v)
                return
            for w in kids[v]:
                place(w)
            x[v] = np.mean([x[w] for w in kids[v]])

        place(self.root)
        internal = self.internal_nodes
        if time_axis == "log":
            depth = -self.log1m_t[internal - n]
            deepest = float(depth.max()) if depth.size else 1.0
            leaf_y = deepest + max(0.12 * deepest, 0.3)

            def y_of(v):
                return leaf_y if v < n else float(-self.log1m_t[v - n])
        else:
            leaf_y = 1.0

            def y_of(v):
                return self.time(v)

        segs = []
        for v in range(self.parent.shape[0]):
            p = self.parent[v]
            if p == UNUSED_SLOT:
                continue
            top = 0.0 if p == -1 else y_of(p)
            segs.append(((x[v], top), (x[v], y_of(v))))
            if v >= n:
                xs = [x[w] for w in kids[v]]
                segs.append(((min(xs), y_of(v)), (max(xs), y_of(v))))
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(segs, colors="k", linewidths=linewidth))
        if leaf_colors is not None:
            ax.scatter(x[:n], np.full(n, leaf_y), c=np.asarray(leaf_colors), s=12, zorder=3)
        ax.set_xlim(-1, n)
        ax.set_ylim(leaf_y * 1.02, -0.02 * leaf_y)
        if time_axis == "log":
            ticks = [t for t in (0.0, 0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999)
                     if -math.log1p(-t) < leaf_y * 0.92]
            ax.set_yticks([-math.log1p(-t) for t in ticks] + [leaf_y],
                          [f"{t:g}" for t in ticks] + ["1 (leaves)"])
            ax.set_ylabel("divergence time t\n(spaced as -log(1 - t))")
        else:
            ax.set_ylabel("divergence time t")
        if n <= 400:
            names = [str(i) for i in range(n)] if labels is None else [str(s) for s in labels]
            ax.set_xticks(range(n))
            ax.set_xticklabels([names[v] for v in leaf_order], rotation=90,
                               fontsize=float(np.clip(600 / n, 3.0, 7.0)))
        else:
            ax.set_xticks([])
        return ax

    # ---------------------------------------------------------------- edits (in place)
    # A detached subtree keeps its internal structure; its root gets parent DETACHED until
    # it is attached again. In between, the rest may be a single leaf with parent -1.
    def free_slot(self) -> int:
        """An unused internal slot (the lowest)."""
        n = self.n_leaves
        free = np.flatnonzero(self.parent[n:] == UNUSED_SLOT)
        if free.size == 0:
            raise ValueError("tree: no unused internal slot (the tree is binary and full)")
        return int(n + free[0])

    def detach(self, v: int) -> tuple[str, int, float]:
        """Cut the subtree under ``v`` (not the root) off the tree.

        Returns where it was, for :meth:`attach`: ``("edge", s, log1m_t)`` when its
        parent had two children (the parent is removed and ``v`` hung on the edge above
        its sibling ``s`` at the parent's time) or ``("node", p, nan)`` when the parent
        ``p`` keeps two or more children.
        """
        n = self.n_leaves
        p = int(self.parent[v])
        if p < 0:
            raise ValueError(f"tree: node {v} is the root or detached")
        siblings = np.flatnonzero(self.parent == p)
        siblings = siblings[siblings != v]
        self.parent[v] = DETACHED
        if siblings.size >= 2:
            return "node", p, math.nan
        s = int(siblings[0])
        self.parent[s] = self.parent[p]
        l_p = float(self.log1m_t[p - n])
        self.parent[p] = UNUSED_SLOT
        self.log1m_t[p - n] = 0.0
        return "edge", s, l_p

    def attach(self, v: int, mode: str, anchor: int, log1m_t: float = math.nan) -> None:
        """Hang the detached subtree ``v`` at ``anchor``: as a new child of the node
        (``mode="node"``), or under a new node at ``log1m_t`` on the edge above it
        (``mode="edge"``)."""
        if self.parent[v] != DETACHED:
            raise ValueError(f"tree: node {v} is not detached")
        if mode == "node":
            self.parent[v] = anchor
            return
        if mode != "edge":
            raise ValueError(f"mode: 'node' or 'edge', got {mode!r}")
        w = self.free_slot()
        self.parent[w] = self.parent[anchor]
        self.parent[anchor] = w
        self.parent[v] = w
        self.log1m_t[w - self.n_leaves] = log1m_t
