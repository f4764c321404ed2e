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

import numpy as np

from custom_ops.trees import node_depths, node_sizes, validate_merges

__all__ = [
    "from_newick",
    "from_parents",
    "leaves_under",
    "merges_from_linkage",
    "node_depths",
    "node_sizes",
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
