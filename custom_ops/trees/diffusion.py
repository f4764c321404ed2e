"""Numba kernels for rooted trees with divergence times (Pitman-Yor / Dirichlet
diffusion trees): the representation of :mod:`pp_models.trees`' diffusion-tree section."""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.trees import breadth_first, children_from_counts

__all__ = [
    "DETACHED",
    "DIFFUSION_TREE_ERRORS",
    "UNUSED_SLOT",
    "diffusion_tree_mrca_times",
    "diffusion_tree_structure",
    "diffusion_tree_topology",
]

# ======================================================================================
# rooted trees with divergence times (Pitman-Yor / Dirichlet diffusion trees)
# ======================================================================================
# Layout (see pp_models.trees.DiffusionTree): ``n`` leaves are nodes 0..n-1; internal
# slots are nodes n..2n-2. ``parent[v]`` is the parent node, -1 for the root (the first
# branch point, which hangs from the origin at t = 0) and -2 for an unused internal slot
# (a multifurcating tree has fewer than n - 1 internal nodes). ``log1m_t[k]`` is
# log(1 - t) of internal slot n + k: plain t rounds to 1.0 for small c (Knowles 2012
# §4.3.1), log(1 - t) = -A(t) / c keeps full precision. Leaves sit at t = 1.

#: ``parent`` code of an internal slot a multifurcating tree does not use (Numba reads a
#: module-level integer as a compile-time constant).
UNUSED_SLOT = -2
#: ``parent`` code of the root of a subtree cut off the tree until it is attached again.
DETACHED = -3

DIFFUSION_TREE_ERRORS = {
    1: "tree: parent must have length 2 n - 1 and log1m_t length n - 1 for n >= 2 leaves",
    2: "tree: a parent index is out of range (leaves need an internal parent; internal "
    "nodes an internal parent, -1 for the root or -2 for an unused slot)",
    3: "tree: there must be exactly one root (one internal node with parent -1)",
    4: "tree: a node hangs from an unused internal slot",
    5: "tree: every internal node needs at least 2 children",
    6: "tree: not every node is reachable from the root (a cycle)",
    7: "tree: divergence times must satisfy 0 < t < 1 (log1m_t finite and < 0)",
    8: "tree: divergence times must increase away from the root (log1m_t of a child "
    "below its parent's)",
}


@njit_exact
def diffusion_tree_topology(parent, n_leaves):
    """Validate the structure (``parent`` only) and return its traversal arrays.

    Returns ``(code, order, child_ptr, child_idx, n_below)``: ``code`` is 0 for a valid
    tree (else a key of :data:`DIFFUSION_TREE_ERRORS`, and the arrays are empty);
    ``order`` lists the active nodes top-down (root first, each node after its parent);
    the children of ``v`` are ``child_idx[child_ptr[v]:child_ptr[v + 1]]``;
    ``n_below[v]`` counts the leaves under ``v``. O(n).
    """
    n = n_leaves
    nn = parent.shape[0]
    e = np.zeros(0, dtype=np.int64)
    if n < 2 or nn != 2 * n - 1:
        return 1, e, e, e, e
    n_child = np.zeros(nn, dtype=np.int64)
    root = -1
    n_active = n
    for v in range(nn):
        p = parent[v]
        if v >= n:
            if p == UNUSED_SLOT:
                continue
            n_active += 1
            if p == -1:
                if root >= 0:
                    return 3, e, e, e, e
                root = v
                continue
        if p < n or p >= nn or p == v:
            return 2, e, e, e, e
        if parent[p] == UNUSED_SLOT:
            return 4, e, e, e, e
        n_child[p] += 1
    if root < 0:
        return 3, e, e, e, e
    for v in range(n, nn):
        if parent[v] != UNUSED_SLOT and n_child[v] < 2:
            return 5, e, e, e, e
    child_ptr, child_idx = children_from_counts(parent, n_child)
    order, n_reached, complete = breadth_first(root, child_ptr, child_idx, n_active)
    if not complete or n_reached != n_active:
        return 6, e, e, e, e
    n_below = np.zeros(nn, dtype=np.int64)
    for v in range(n):
        n_below[v] = 1
    for r in range(n_active - 1, 0, -1):
        v = order[r]
        n_below[parent[v]] += n_below[v]
    return 0, order, child_ptr, child_idx, n_below


@njit_exact
def diffusion_tree_structure(parent, log1m_t, n_leaves):
    """:func:`diffusion_tree_topology` plus the checks on the divergence times
    (0 < t < 1, increasing away from the root)."""
    n = n_leaves
    e = np.zeros(0, dtype=np.int64)
    if log1m_t.shape[0] != n - 1:
        return 1, e, e, e, e
    code, order, child_ptr, child_idx, n_below = diffusion_tree_topology(parent, n)
    if code != 0:
        return code, order, child_ptr, child_idx, n_below
    for v in range(n, parent.shape[0]):
        if parent[v] == UNUSED_SLOT:
            continue
        lv = log1m_t[v - n]
        if not (math.isfinite(lv) and lv < 0.0):
            return 7, e, e, e, e
        p = parent[v]
        if p >= 0 and not lv < log1m_t[p - n]:
            return 8, e, e, e, e
    return 0, order, child_ptr, child_idx, n_below


@njit_exact
def diffusion_tree_mrca_times(parent, log1m_t, n_leaves):
    """(n, n) matrix of the divergence time of each pair's most recent common ancestor,
    with 1 on the diagonal: the covariance of Brownian motion on the tree per unit
    variance (Knowles 2012 §4.2; digest §3.9). O(n^2) memory: for tests and small trees.
    """
    code, order, child_ptr, child_idx, n_below = diffusion_tree_structure(
        parent, log1m_t, n_leaves
    )
    n = n_leaves
    C = np.eye(n)
    if code != 0:
        C[:] = np.nan
        return C
    # leaves under each node, collected bottom-up by concatenation through a leaf order
    nn = parent.shape[0]
    start = np.zeros(nn, dtype=np.int64)
    leaf_order = np.empty(n, dtype=np.int64)
    # depth-first numbering: a node's leaves are a contiguous run
    stack = np.empty(nn, dtype=np.int64)
    top = 0
    stack[0] = order[0]
    pos = 0
    start[order[0]] = 0
    while top >= 0:
        v = stack[top]
        top -= 1
        if v < n:
            leaf_order[pos] = v
            pos += 1
            continue
        s = start[v]
        for j in range(child_ptr[v], child_ptr[v + 1]):
            w = child_idx[j]
            start[w] = s
            s += n_below[w]
        for j in range(child_ptr[v + 1] - 1, child_ptr[v] - 1, -1):
            top += 1
            stack[top] = child_idx[j]
    for v in range(n, nn):
        if parent[v] == UNUSED_SLOT:
            continue
        tv = -math.expm1(log1m_t[v - n])
        for a in range(child_ptr[v], child_ptr[v + 1]):
            wa = child_idx[a]
            for b in range(child_ptr[v], child_ptr[v + 1]):
                wb = child_idx[b]
                if wa == wb:
                    continue
                for i in range(start[wa], start[wa] + n_below[wa]):
                    for j in range(start[wb], start[wb] + n_below[wb]):
                        C[leaf_order[i], leaf_order[j]] = tv
    return C
