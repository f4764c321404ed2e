"""Greedy sequential build of a diffusion tree (Knowles 2012 §7.5.1), a starting tree.

Leaves are added one at a time (in the given order); leaf ``i`` goes to the candidate
position of highest joint density p(tree, times, X_{0..i} | c, theta, alpha, sigma2) of
the partial tree (:mod:`custom_ops.pydt.ops`). Candidates are the branch points on the path
from the root to the nearest placed leaf (Euclidean) and the midpoint in
``log(1 - t)`` of every edge on that path, the thesis's "midpoint of every branch" and
"every branch point" restricted to one path so that a leaf costs O(depth) evaluations
instead of O(n) (the full message-passing search of ch. 7 is not reproduced). Each
candidate is scored from cached upward messages in O(depth x D)
(:func:`custom_ops.pydt.greedy.pydt_greedy`), so the build is O(n^2 D) for the
nearest-neighbour searches and O(n depth^2 D) for the scoring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from custom_ops.pydt.greedy import pydt_greedy
from custom_ops.pydt.ops import check_parameters, pydt_forward
from pp_models.trees import DETACHED, UNUSED_SLOT, DiffusionTree
from pp_models.validation import as_data_matrix

__all__ = ["GreedyResult", "greedy"]


@dataclass(frozen=True)
class GreedyResult:
    """The built tree (leaves in the rows' order), its log joint density and the number of
    candidate positions scored."""

    tree: DiffusionTree
    log_joint: float
    n_evaluations: int


def _grow(parent, log1m_t, k):
    """Arrays of a k-leaf tree re-indexed for k + 1 leaves; the new leaf k detached."""
    new_parent = np.full(2 * k + 1, UNUSED_SLOT, dtype=np.int64)
    new_l = np.zeros(k)

    def remap(v):
        return v if v < k else v + 1

    for v in range(2 * k - 1):
        p = parent[v]
        if p == UNUSED_SLOT:
            continue
        new_parent[remap(v)] = p if p < 0 else remap(p)
    new_l[: k - 1] = log1m_t
    new_parent[k] = DETACHED
    return new_parent, new_l


def greedy(X, *, c=1.0, theta=1.0, alpha=0.0, sigma2=1.0, order=None):
    """Build a tree over the rows of ``X`` greedily (module docstring).

    Parameters
    ----------
    X : (n, D) array
    c, theta, alpha, sigma2 : float
        Parameters held fixed during the build.
    order : sequence of int, optional
        Order in which the rows are added (default 0..n-1); the returned tree's leaf
        ``i`` is always row ``i``.

    Returns
    -------
    GreedyResult
    """
    X = np.ascontiguousarray(as_data_matrix(X, "X", min_rows=2))
    check_parameters(c, theta, alpha, sigma2)
    n = X.shape[0]
    order = np.arange(n) if order is None else np.asarray(order)
    if order.ndim != 1 or (order.size and not np.issubdtype(order.dtype, np.integer)):
        raise TypeError(f"order: must be a sequence of row indices, got {order!r}")
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError("order: must be a permutation of the rows")
    order = np.ascontiguousarray(order, dtype=np.int64)
    parent = np.empty(2 * n - 1, dtype=np.int64)
    log1m_t = np.empty(n - 1)
    evaluations = pydt_greedy(parent, log1m_t, X, order, float(c), float(theta),
                              float(alpha), float(sigma2))
    if evaluations < 0:
        raise RuntimeError("greedy: no candidate position has a finite density")
    tree = DiffusionTree(parent, log1m_t)
    lp, ll = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)
    return GreedyResult(tree, float(lp + ll), evaluations)
