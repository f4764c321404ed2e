"""Greedy sequential build of a diffusion tree (Knowles 2012 §7.5.1), a starting tree.

Leaves are added one at a time (in the given order); leaf ``i`` goes to the candidate
position of highest joint density p(tree, times, X_{0..i} | c, theta, alpha, sigma2) of
the partial tree (:mod:`custom_ops.pydt`). Candidates are the branch points on the path
from the root to the nearest placed leaf (Euclidean) and the midpoint in
``log(1 - t)`` of every edge on that path, the thesis's "midpoint of every branch" and
"every branch point" restricted to one path so that a leaf costs O(depth) evaluations
instead of O(n) (the full message-passing search of ch. 7 is not reproduced).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from custom_ops.pydt import check_parameters, pydt_forward
from pp_models.trees import DETACHED, UNUSED_SLOT, DiffusionTree

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
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] < 2 or not np.all(np.isfinite(X)):
        raise ValueError("X: must be a finite 2-D array with at least 2 rows")
    check_parameters(c, theta, alpha, sigma2)
    n = X.shape[0]
    order = np.arange(n) if order is None else np.asarray(order, dtype=np.int64)
    if sorted(order.tolist()) != list(range(n)):
        raise ValueError("order: must be a permutation of the rows")
    Xo = np.ascontiguousarray(X[order])
    # two leaves under a root halfway in log(1 - t) of their expected divergence
    parent = np.array([2, 2, -1], dtype=np.int64)
    log1m_t = np.array([-math.log(2.0)])
    evaluations = 0
    best_value = -math.inf
    for k in range(2, n):
        parent, log1m_t = _grow(parent, log1m_t, k)
        tree = DiffusionTree(parent, log1m_t, validate=False)
        placed = Xo[:k]
        nearest = int(np.argmin(((placed - Xo[k]) ** 2).sum(axis=1)))
        path = [nearest]
        while tree.parent[path[-1]] >= 0:
            path.append(int(tree.parent[path[-1]]))
        candidates = []
        for v in path:
            l_v = -math.inf if v < k + 1 else tree.log1m_t[v - k - 1]
            p = int(tree.parent[v])
            l_p = 0.0 if p < 0 else tree.log1m_t[p - k - 1]
            l_mid = l_p - 1.0 if not math.isfinite(l_v) else 0.5 * (l_p + l_v)
            candidates.append(("edge", v, l_mid))
            if v >= k + 1:
                candidates.append(("node", v, math.nan))
        best = None
        best_value = -math.inf
        data = Xo[: k + 1]
        for cand in candidates:
            trial = tree.copy()
            trial.attach(k, *cand)
            lp, ll = pydt_forward(trial.parent, trial.log1m_t, data, c, theta, alpha, sigma2)
            evaluations += 1
            if lp + ll > best_value:
                best_value, best = lp + ll, trial
        if best is None:
            raise RuntimeError("greedy: no candidate position has a finite density")
        parent, log1m_t = best.parent, best.log1m_t
    # leaf j of the built tree is row order[j]: relabel leaves to row indices
    final = np.full(2 * n - 1, UNUSED_SLOT, dtype=np.int64)
    final[n:] = parent[n:]
    final[order] = parent[:n]
    tree = DiffusionTree(final, log1m_t)
    lp, ll = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)
    return GreedyResult(tree, float(lp + ll), evaluations)
