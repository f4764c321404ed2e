"""Greedy sequential build of a Pitman-Yor diffusion tree (Knowles 2012 §7.5.1) in
Numba, each candidate position scored on the cached messages of
:mod:`custom_ops.pydt.messages` in O(depth x children x D) instead of by the full
recursion. The user API is :func:`pp_models.pydt.greedy.greedy`.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.messages import (
    EDGE,
    NODE,
    PYDTState,
    Topology,
    attach,
    detach,
    journal,
    link,
    log1m_time,
    new_journal,
    node_likelihood,
    node_prior,
    prior_tables,
    refresh_path,
    refresh_prior,
    restore,
    state_root_term,
)
from custom_ops.trees.diffusion import DETACHED, UNUSED_SLOT

# @njit_exact_numpy, as custom_ops.pydt.messages: a NaN or infinite density is rejected,
# not raised

__all__ = ["pydt_greedy"]


@njit_exact_numpy
def _greedy_try(x, mode, anchor, l_new, st, jn, stamp, keep):
    """Attach leaf ``x`` at a candidate position and return the change of the log joint;
    undone unless ``keep``."""
    root_before = st.root[0]
    root_term_before = state_root_term(st, root_before)
    acc = np.zeros(2)
    jn.length[0] = 0
    slot = -1
    if mode == EDGE:
        st.free_top[0] -= 1
        slot = st.free[st.free_top[0]]
        journal(slot, jn, stamp, st.mu, st.s, st.ll, st.lp)
    start = attach(x, mode, anchor, l_new, slot, st)
    if mode == EDGE:
        refresh_prior(anchor, st, acc, jn, stamp, True)
    refresh_path(start, st, True, acc, jn, stamp, True)
    delta = acc[0] + acc[1] + state_root_term(st, st.root[0]) - root_term_before
    if not keep:
        detach(x, st)
        restore(jn, st)
        st.root[0] = root_before
    jn.length[0] = 0
    return delta


@njit_exact_numpy
def pydt_greedy(parent, log1m_t, X, order, c, theta, alpha, sigma2):
    """Greedy sequential build (Knowles 2012 §7.5.1) as pp_models.pydt.greedy.greedy
    documents it, with each candidate scored from the cached messages in
    O(depth x children x D) instead of by the full recursion.

    Leaves are added in ``order``; leaf ``order[k]`` goes to the best of: the edge above
    each node on the path from the nearest placed leaf (Euclidean) to the root, at the
    midpoint in log(1 - t) of the edge (one unit above a leaf), and each internal node
    on that path; the first best wins ties. ``parent`` (2n - 1) and ``log1m_t`` (n - 1)
    are written. Returns the number of candidates scored, or -1 if every candidate of
    some leaf had zero density.
    """
    n, d = X.shape
    nn = 2 * n - 1
    tables = prior_tables(n, theta, alpha)
    for v in range(nn):
        parent[v] = UNUSED_SLOT if v >= n else DETACHED
    for k in range(n - 1):
        log1m_t[k] = 0.0
    first = np.full(nn, -1, dtype=np.int64)
    nxt = np.full(nn, -1, dtype=np.int64)
    prv = np.full(nn, -1, dtype=np.int64)
    nch = np.zeros(nn, dtype=np.int64)
    nb = np.zeros(nn, dtype=np.int64)
    nb[:n] = 1
    topo = Topology(parent, first, nxt, prv, nch, nb)
    mu = np.zeros((nn, d))
    mu[:n] = X
    s = np.zeros(nn)
    rr = np.zeros(nn)
    ll = np.zeros(nn)
    lp = np.zeros(nn)
    free = np.empty(nn, dtype=np.int64)
    free_top = np.zeros(1, dtype=np.int64)
    for v in range(nn - 1, n - 1, -1):
        free[free_top[0]] = v
        free_top[0] += 1
    jn = new_journal(nn, d)
    path = np.empty(nn, dtype=np.int64)
    # two leaves under a root halfway in log(1 - t) of their expected divergence
    free_top[0] -= 1
    root = free[free_top[0]]
    st = PYDTState(topo, log1m_t, mu, s, rr, ll, lp, np.array([root]), free, free_top,
                   np.array([1]), n, c, theta, alpha, sigma2, tables, 1.0)
    parent[root] = -1
    link(order[0], root, topo)
    link(order[1], root, topo)
    nb[root] = 2
    log1m_t[root - n] = -math.log(2.0)
    ll[root] = node_likelihood(root, topo, log1m_t, n, mu, s, rr, sigma2)
    lp[root] = node_prior(root, topo, log1m_t, n, tables, c)
    stamp = 0
    for k in range(2, n):
        x = order[k]
        nearest = order[0]
        best_d = np.inf
        for i in range(k):
            y = order[i]
            dist = 0.0
            for j in range(d):
                diff = X[y, j] - X[x, j]
                dist += diff * diff
            if dist < best_d:
                best_d = dist
                nearest = y
        n_path = 0
        u = nearest
        while u >= 0:
            path[n_path] = u
            n_path += 1
            u = parent[u]
        best = -np.inf
        best_mode = -1
        best_anchor = -1
        best_l = math.nan
        for q in range(n_path):
            v = path[q]
            l_v = log1m_time(log1m_t, n, v)
            p = parent[v]
            l_p = 0.0 if p < 0 else log1m_t[p - n]
            l_mid = l_p - 1.0 if not math.isfinite(l_v) else 0.5 * (l_p + l_v)
            for mode in (EDGE, NODE):
                if mode == NODE and v < n:
                    continue
                stamp += 1
                val = _greedy_try(x, mode, v, l_mid, st, jn, stamp, np.bool_(False))
                if val > best:
                    best = val
                    best_mode = mode
                    best_anchor = v
                    best_l = l_mid
        if best_mode < 0:
            return -1
        stamp += 1
        # int()/np.bool_(): plain run-time types, so both calls share one compile of
        # _greedy_try instead of one per Literal constant
        _greedy_try(x, int(best_mode), int(best_anchor), best_l, st, jn, stamp,
                    np.bool_(True))
    return stamp - (n - 2)
