"""Numba kernels for binary merge trees (:mod:`pp_models.trees`, first section).

The traversal of any rooted tree stored as a parent vector is
:mod:`custom_ops.trees.traversal`; the other kinds of tree have their kernels beside
this module: :mod:`custom_ops.trees.spanning` and :mod:`custom_ops.trees.diffusion`.
"""

from __future__ import annotations

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "MERGE_ERRORS",
    "merges_error",
    "node_depths",
    "node_sizes",
    "validate_merges",
]


# --------------------------------------------------------------------------------------
# binary merge trees: ``merges`` (n - 1, 2) int64, row t joins nodes merges[t] into node
# n + t (scipy's linkage order); leaves are 0..n-1, the root is 2n - 2
# --------------------------------------------------------------------------------------
#: Messages of the codes :func:`merges_error` returns (``{name}`` is the argument's name).
MERGE_ERRORS = {
    1: "{name}: must have shape (n - 1, 2) (or a scipy linkage (n - 1, 4))",
    2: "{name}: ids must lie in 0 .. n + t - 1 at row t (a cluster must exist before it merges)",
    3: "{name}: a cluster is merged twice (not a binary tree)",
    4: "{name}: a row merges a cluster with itself",
}


@njit_exact
def merges_error(merges, n):
    """0 if ``merges`` is a binary tree over ``n`` leaves, else a :data:`MERGE_ERRORS`
    code (jitted callers raise a static message)."""
    if merges.ndim != 2 or merges.shape[0] != n - 1 or merges.shape[1] != 2:
        return 1
    used = np.zeros(2 * n - 1, dtype=np.bool_)
    for t in range(n - 1):
        i = merges[t, 0]
        j = merges[t, 1]
        if i < 0 or j < 0 or i >= n + t or j >= n + t:
            return 2
        if i == j:
            return 4
        if used[i] or used[j]:
            return 3
        used[i] = True
        used[j] = True
    return 0


def validate_merges(merges, n=None, *, name="merges"):
    """Return ``merges`` as C-contiguous int64 (n - 1, 2) or raise ``ValueError`` naming
    ``name`` and what is wrong. Accepts a scipy linkage matrix (its first two columns);
    ``n`` (the number of leaves) defaults to ``len(merges) + 1``."""
    arr = np.asarray(merges)
    if n is None:
        n = arr.shape[0] + 1 if arr.ndim == 2 else 0
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 2:
        raise ValueError(f"data: a tree needs at least 2 points, got n = {n}")
    if arr.ndim == 2 and arr.shape[1] == 4:
        arr = arr[:, :2]
    if arr.ndim != 2 or arr.shape != (n - 1, 2):
        raise ValueError(
            MERGE_ERRORS[1].format(name=name) + f"; got shape {arr.shape} for n = {n}"
        )
    if not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)):
        raise ValueError(f"{name}: must be numeric, got dtype {arr.dtype}")
    if np.issubdtype(arr.dtype, np.floating):
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise ValueError(f"{name}: cluster ids must be integers")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    code = merges_error(arr, n)
    if code:
        raise ValueError(MERGE_ERRORS[code].format(name=name))
    return arr


@njit_exact
def node_sizes(merges):
    """Number of leaves under every node (2n - 1,), leaves first."""
    n = merges.shape[0] + 1
    sizes = np.ones(2 * n - 1, dtype=np.int64)
    for t in range(n - 1):
        sizes[n + t] = sizes[merges[t, 0]] + sizes[merges[t, 1]]
    return sizes


@njit_exact
def node_depths(merges):
    """Edges from the root to every node (2n - 1,), leaves first (the root has 0)."""
    n = merges.shape[0] + 1
    depth = np.zeros(2 * n - 1, dtype=np.int64)
    for t in range(n - 2, -1, -1):
        for c in range(2):
            depth[merges[t, c]] = depth[n + t] + 1
    return depth
