"""Numba kernels for the traversal of any rooted tree stored as a parent vector (children
lists, breadth-first order), which every kind of tree in :mod:`custom_ops.trees` shares.
"""

from __future__ import annotations

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "breadth_first",
    "children_from_counts",
    "children_lists",
]


# --------------------------------------------------------------------------------------
# any rooted tree as a parent vector: ``parents[v]`` is v's parent, a negative entry (a
# root, an unused slot) none; spanning trees and diffusion trees both traverse this way
# --------------------------------------------------------------------------------------
@njit_exact
def children_lists(parents):
    """``(child_ptr, child_idx)``: the children of ``v``, in increasing index, are
    ``child_idx[child_ptr[v]:child_ptr[v + 1]]`` (compressed rows). An entry outside
    ``0 .. V - 1`` or pointing at the node itself gives no parent. O(V)."""
    V = parents.shape[0]
    n_children = np.zeros(V, dtype=np.int64)
    for v in range(V):
        p = parents[v]
        if 0 <= p < V and p != v:
            n_children[p] += 1
    return children_from_counts(parents, n_children)


@njit_exact
def children_from_counts(parents, n_children):
    """:func:`children_lists` when the caller has counted every node's children already
    (a validation pass does): one pass less."""
    V = parents.shape[0]
    child_ptr = np.empty(V + 1, dtype=np.int64)
    child_ptr[0] = 0
    for v in range(V):
        child_ptr[v + 1] = child_ptr[v] + n_children[v]
    fill = child_ptr[:V].copy()
    child_idx = np.empty(child_ptr[V], dtype=np.int64)
    for v in range(V):
        p = parents[v]
        if 0 <= p < V and p != v:
            child_idx[fill[p]] = v
            fill[p] += 1
    return child_ptr, child_idx


@njit_exact
def breadth_first(root, child_ptr, child_idx, capacity):
    """``(order, n_reached, complete)``: the nodes under ``root`` breadth first (root,
    its children in ``child_idx`` order, theirs, ...), every node after its parent, in
    the first ``n_reached`` entries of ``order`` (length ``capacity``). ``complete`` is
    False when more than ``capacity`` nodes were reached (a cycle, or more nodes than
    the caller expects); the walk stops there. O(n_reached)."""
    order = np.empty(capacity, dtype=np.int64)
    if capacity == 0:
        return order, 0, False
    order[0] = root
    head = 0
    tail = 1
    while head < tail:
        v = order[head]
        head += 1
        for j in range(child_ptr[v], child_ptr[v + 1]):
            if tail >= capacity:
                return order, tail, False
            order[tail] = child_idx[j]
            tail += 1
    return order, tail, True
