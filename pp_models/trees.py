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
# rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees)
# ======================================================================================
import math as _math
from dataclasses import dataclass as _dataclass

import numpy as _np

from custom_ops.trees import (
    DIFFUSION_TREE_ERRORS,
    diffusion_tree_mrca_times,
    diffusion_tree_structure,
)

UNUSED_SLOT = -2
"""``parent`` code of an internal slot a multifurcating tree does not use."""


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

    parent: _np.ndarray
    log1m_t: _np.ndarray
    validate: bool = True

    def __post_init__(self):
        self.parent = _np.ascontiguousarray(self.parent, dtype=_np.int64)
        self.log1m_t = _np.ascontiguousarray(self.log1m_t, dtype=_np.float64)
        if self.validate:
            self.check()

    # ---------------------------------------------------------------- basic facts
    @property
    def n_leaves(self) -> int:
        return (self.parent.shape[0] + 1) // 2

    @property
    def internal_nodes(self) -> _np.ndarray:
        """Node ids of the internal nodes in use."""
        n = self.n_leaves
        return n + _np.flatnonzero(self.parent[n:] != UNUSED_SLOT)

    @property
    def n_internal(self) -> int:
        return int(self.internal_nodes.size)

    @property
    def root(self) -> int:
        return int(_np.flatnonzero(self.parent == -1)[0])

    @property
    def root_time(self) -> float:
        """Divergence time of the first branch point (the tree's height is ``1 - t``)."""
        return float(-_math.expm1(self.log1m_t[self.root - self.n_leaves]))

    def time(self, v: int) -> float:
        """Divergence time ``t`` of node ``v`` (1 for a leaf)."""
        n = self.n_leaves
        return 1.0 if v < n else float(-_math.expm1(self.log1m_t[v - n]))

    @property
    def times(self) -> _np.ndarray:
        """``t`` of every internal slot (NaN for unused slots)."""
        t = -_np.expm1(self.log1m_t)
        t[self.parent[self.n_leaves:] == UNUSED_SLOT] = _np.nan
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

    def children(self, v: int) -> _np.ndarray:
        return _np.flatnonzero(self.parent == v)

    def n_children(self) -> _np.ndarray:
        """Number of children of every node slot (0 for leaves and unused slots)."""
        counts = _np.zeros(self.parent.shape[0], dtype=_np.int64)
        p = self.parent[self.parent >= 0]
        _np.add.at(counts, p, 1)
        return counts

    def leaf_counts(self) -> _np.ndarray:
        """Number of leaves under every node slot (1 at leaves, 0 at unused slots)."""
        return self._structure()[4]

    @property
    def n_multifurcations(self) -> int:
        """Internal nodes with more than two children."""
        return int(_np.count_nonzero(self.n_children() > 2))

    @property
    def is_binary(self) -> bool:
        return self.n_internal == self.n_leaves - 1

    def mrca_times(self) -> _np.ndarray:
        """(n, n) divergence times of each pair's most recent common ancestor (1 on the
        diagonal): ``sigma2`` times it is the covariance of the leaves (digest §3.9)."""
        return diffusion_tree_mrca_times(self.parent, self.log1m_t, self.n_leaves)

    # ---------------------------------------------------------------- conversions
    def to_packed(self) -> _np.ndarray:
        """(2 n - 1, 2) float array ``[parent, log1m_t]`` per node (0 at leaves): the value
        of :class:`pp_models.distributions.PYDiffusionTree`."""
        n = self.n_leaves
        out = _np.zeros((2 * n - 1, 2))
        out[:, 0] = self.parent
        out[n:, 1] = self.log1m_t
        out[n:, 1][self.parent[n:] == UNUSED_SLOT] = 0.0
        return out

    @classmethod
    def from_packed(cls, packed, validate: bool = True) -> DiffusionTree:
        packed = _np.asarray(packed, dtype=_np.float64)
        if packed.ndim != 2 or packed.shape[1] != 2 or packed.shape[0] % 2 != 1:
            raise ValueError(f"tree: a packed tree has shape (2 n - 1, 2), got {packed.shape}")
        n = (packed.shape[0] + 1) // 2
        return cls(_np.rint(packed[:, 0]).astype(_np.int64), packed[n:, 1].copy(), validate)

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

    def to_linkage(self) -> _np.ndarray:
        """scipy linkage matrix (n - 1, 4) of a binary tree, heights ``1 - t``."""
        if not self.is_binary:
            raise ValueError(
                f"tree: scipy linkage needs a binary tree; this one has "
                f"{self.n_multifurcations} multifurcations"
            )
        n = self.n_leaves
        internal = self.internal_nodes
        # later divergences merge first (scipy needs non-decreasing heights)
        order = internal[_np.argsort(self.log1m_t[internal - n], kind="stable")]
        cluster = _np.arange(self.parent.shape[0])
        counts = self.leaf_counts()
        Z = _np.empty((n - 1, 4))
        for row, v in enumerate(order):
            a, b = self.children(v)
            ca, cb = sorted((cluster[a], cluster[b]))
            Z[row] = (ca, cb, 1.0 - self.time(v), counts[v])
            cluster[v] = n + row
        return Z

    # ---------------------------------------------------------------- picture
    def plot(self, ax=None, labels=None, leaf_colors=None, linewidth=1.0):
        """Dendrogram with divergence time on the vertical axis (0 at the top, the
        leaves at t = 1); multifurcations are drawn as one bar. Returns the axes."""
        import matplotlib.pyplot as plt

        if ax is None:
            _fig, ax = plt.subplots(figsize=(max(4.0, 0.15 * self.n_leaves), 4.0))
        n = self.n_leaves
        kids = [[] for _ in range(self.parent.shape[0])]
        for v, p in enumerate(self.parent):
            if p >= 0:
                kids[p].append(v)
        x = _np.zeros(self.parent.shape[0])
        leaf_order = []

        def place(v):
            if v < n:
                x[v] = len(leaf_order)
                leaf_order.append(v)
                return
            for w in kids[v]:
                place(w)
            x[v] = _np.mean([x[w] for w in kids[v]])

        place(self.root)
        segs_v, segs_h = [], []
        for v in range(self.parent.shape[0]):
            p = self.parent[v]
            if p == UNUSED_SLOT:
                continue
            t_top = 0.0 if p == -1 else self.time(p)
            segs_v.append(((x[v], t_top), (x[v], self.time(v))))
            if v >= n:
                xs = [x[w] for w in kids[v]]
                segs_h.append(((min(xs), self.time(v)), (max(xs), self.time(v))))
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(segs_v + segs_h, colors="k", linewidths=linewidth))
        if leaf_colors is not None:
            ax.scatter(x[:n], _np.ones(n), c=_np.asarray(leaf_colors), s=12, zorder=3)
        ax.set_xlim(-1, n)
        ax.set_ylim(1.02, -0.02)
        ax.set_ylabel("divergence time t")
        if labels is not None or n <= 40:
            names = [str(i) for i in range(n)] if labels is None else [str(s) for s in labels]
            ax.set_xticks(range(n))
            ax.set_xticklabels([names[v] for v in leaf_order], rotation=90, fontsize=7)
        else:
            ax.set_xticks([])
        return ax

    # ---------------------------------------------------------------- edits (in place)
    # A detached subtree keeps its internal structure; its root gets parent DETACHED until
    # it is attached again. In between, the rest may be a single leaf with parent -1.
    def free_slot(self) -> int:
        """An unused internal slot (the lowest)."""
        n = self.n_leaves
        free = _np.flatnonzero(self.parent[n:] == UNUSED_SLOT)
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
        siblings = _np.flatnonzero(self.parent == p)
        siblings = siblings[siblings != v]
        self.parent[v] = DETACHED
        if siblings.size >= 2:
            return "node", p, _math.nan
        s = int(siblings[0])
        self.parent[s] = self.parent[p]
        l_p = float(self.log1m_t[p - n])
        self.parent[p] = UNUSED_SLOT
        self.log1m_t[p - n] = 0.0
        return "edge", s, l_p

    def attach(self, v: int, mode: str, anchor: int, log1m_t: float = _math.nan) -> None:
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


DETACHED = -3
"""``parent`` code of the root of a detached subtree (:meth:`DiffusionTree.detach`)."""
