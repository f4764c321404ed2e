"""Numba kernels of the Bayesian-hierarchical-clustering tree builders (Heller 2007 ch. 3).

- :func:`greedy_kernel`: greedy agglomeration (Alg. 3.2): each node's best candidate
  merge in a heap of nodes, stale bests re-scanned lazily (Müllner 2011's generic
  algorithm): (n - 1)^2 distinct pair evaluations plus the re-scans, O(n d) memory;
  Beta-Bernoulli marginals from integer-count tables (:func:`bernoulli_tables`);
- :func:`assign_kernel`: the filters of the randomized builders (Alg. 3.5 / 3.6) and the
  tree predictive of a subtree (Eqs. 3.10-3.11);
- :func:`predictive_kernel`: log p(x | D) of new rows under a whole tree (Eq. 3.10);
- :func:`node_stats`: sufficient statistics of every node of a merge list.

Families are the integer codes and flat hyperparameter vectors of
:mod:`custom_ops.conjugate`, so each kernel is compiled once and cached on disk;
:mod:`pp_models.bhc` calls them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.bhc.evidence import logaddexp
from custom_ops.jit import njit_exact

__all__ = [
    "GreedyNodes",
    "MergeLikelihood",
    "assign_kernel",
    "bernoulli_tables",
    "greedy_kernel",
    "node_stats",
    "predictive_kernel",
]

# helpers of the greedy scan, inlined into it (their code becomes the kernel's)
_inline = njit_exact(inline="always")


class GreedyNodes(NamedTuple):
    """The ``n0`` initial nodes of a greedy build (points, or clusters with their own
    subtree): sufficient statistics ``stats`` ((n0, S) float64, the layout of
    :func:`custom_ops.conjugate.point_stats`), ``log_d`` and ``log_p`` ((n0,) float64:
    each node's log d and log p(D | T); a point's are log alpha and its log marginal)."""

    stats: np.ndarray
    log_d: np.ndarray
    log_p: np.ndarray


class MergeLikelihood(NamedTuple):
    """The conjugate marginal of a merged node: the family code ``fam`` (an int), its
    packed hyperparameters ``H`` (float64, :func:`custom_ops.conjugate.pack_hyper`) and
    whether to use the Beta-Bernoulli tables ``use_table`` (a bool), ``LA, LB, LAB`` of
    :func:`bernoulli_tables` (unused otherwise: any float64 arrays of ranks 2, 2, 1)."""

    fam: int
    H: np.ndarray
    use_table: bool
    LA: np.ndarray
    LB: np.ndarray
    LAB: np.ndarray


class _Nodes(NamedTuple):
    """Every node of the build, initial and merged (m = 2 n0 - 1 slots): statistics
    ``stats`` (m, S), integer counts ``cnt`` (m, S - 1) int32 for the table look-ups
    (a (1, 1) dummy without), sizes ``size`` (m,) int64, ``log_d`` and ``log_p`` (m,);
    with ``la`` = log alpha and ``LG[N]`` = log Gamma(N)."""

    stats: np.ndarray
    cnt: np.ndarray
    size: np.ndarray
    log_d: np.ndarray
    log_p: np.ndarray
    la: float
    LG: np.ndarray


class _Scoring(NamedTuple):
    """What a merge's log marginal reads: the :class:`MergeLikelihood` fields with the
    summed statistics' scratch ``tmp`` (S,)."""

    fam: int
    H: np.ndarray
    tmp: np.ndarray
    use_table: bool
    LA: np.ndarray
    LB: np.ndarray
    LAB: np.ndarray


class _Bests(NamedTuple):
    """Each node's best candidate merge: its log r ``bkey`` (m,) and the pair ``bi, bj``
    (m,) int64 (the int64 maximum: none)."""

    bkey: np.ndarray
    bi: np.ndarray
    bj: np.ndarray


class _Heap(NamedTuple):
    """The heap of nodes ordered by their best merge: ``heap`` (m,) int64 node ids and
    each node's place in it ``pos`` (m,) int64 (-1: not in the heap)."""

    heap: np.ndarray
    pos: np.ndarray


class _Candidates(NamedTuple):
    """The nodes ``ids[start:start + count]`` (int64) a node's merges are scored with."""

    ids: np.ndarray
    start: int
    count: int


class _ScanWork(NamedTuple):
    """:func:`_scan`'s scratch: the pairs' log marginals ``lml`` (n0,), their order
    ``order`` (n0,) int64 (leaves first) and the two table terms ``T0, T1`` (d,) of each
    column against a leaf."""

    lml: np.ndarray
    order: np.ndarray
    T0: np.ndarray
    T1: np.ndarray


@njit_exact
def _better(k1, i1, j1, k2, i2, j2):
    # larger log r first; ties broken by the smaller ids, so runs are deterministic
    if k1 != k2:
        return k1 > k2
    if i1 != i2:
        return i1 < i2
    return j1 < j2


@njit_exact
def bernoulli_tables(a, b, n_max):
    """lgamma differences for integer counts: LA[m, j] = log Γ(a_j + m) - log Γ(a_j), LB
    likewise, LAB[N] = Σ_j log Γ(a_j + b_j + N) - log Γ(a_j + b_j). Turns the Beta-Bernoulli
    marginal into O(d) table look-ups (no lgamma in the O(n^2 d) pair loop); a pair's
    look-ups at small counts fall in a few adjacent rows of d values."""
    d = a.shape[0]
    LA = np.empty((n_max + 1, d))
    LB = np.empty((n_max + 1, d))
    LAB = np.zeros(n_max + 1)
    for j in range(d):
        ga = math.lgamma(a[j])
        gb = math.lgamma(b[j])
        gab = math.lgamma(a[j] + b[j])
        for m in range(n_max + 1):
            LA[m, j] = math.lgamma(a[j] + m) - ga
            LB[m, j] = math.lgamma(b[j] + m) - gb
            LAB[m] += math.lgamma(a[j] + b[j] + m) - gab
    return LA, LB, LAB


@njit_exact
def _merge_values(lo, hi, state, model):
    """(log d_k, log p(D_k | T_k)) of merging nodes lo < hi (Eq. 3.2, Alg. 3.3)."""
    stats, cnt, size, log_d, log_p, la, LG = state
    fam, H, tmp, use_table, LA, LB, LAB = model
    N = size[lo] + size[hi]
    prior_one = la + LG[N]
    ld_sum = log_d[lo] + log_d[hi]
    ldk = logaddexp(prior_one, ld_sum)
    if use_table:
        lml = -LAB[N]
        for j in range(cnt.shape[1]):
            m = cnt[lo, j] + cnt[hi, j]
            lml += LA[m, j] + LB[N - m, j]
    else:
        for s in range(tmp.shape[0]):
            tmp[s] = stats[lo, s] + stats[hi, s]
        lml = cj.log_marginal(fam, tmp, H)
    A = prior_one - ldk + lml
    B = ld_sum - ldk + log_p[lo] + log_p[hi]
    return ldk, logaddexp(A, B)


@njit_exact
def _scan(a, candidates, mode, state, best, where, work, model):
    """Score the merges of node ``a`` with the nodes ``candidates`` (:class:`_Candidates`:
    ``ids[start:start + count]``) and offer
    each to a's best candidate and (``mode`` > 0) to the other node's; ``mode`` 2 also
    moves that node up the heap of nodes when its best improved. Returns how many log r
    were computed exactly.

    Two passes. First the log marginals of the merged pairs: the Beta-Bernoulli one sums
    O(d) table terms in column order for each pair, four pairs at a time in independent
    accumulators (the additions of one pair form a chain; four chains keep the adder
    busy without reordering any of them); against a leaf, the two possible terms of
    each column are looked up once per call (the same sums, so the same values). Then
    the offers: log d_k depends on the pair only through (N_a + N_b, log d_a + log
    d_b), the same for every leaf, and is recomputed only when those change; and
    log r = A - logaddexp(A, B) <= A - max(A, B) holds in floating point too (logaddexp
    rounds to at least max(A, B)), so a pair whose bound is below both bests (strictly:
    a tie could win on ids) cannot change either and skips its exp and log1p."""
    stats, cnt, size, log_d, log_p, la, LG = state
    fam, H, tmp, use_table, LA, LB, LAB = model
    bkey, bi, bj = best
    heap, pos = where
    lml, order, T0, T1 = work
    cands, start, n_c = candidates
    Na = size[a]
    # leaves first, so the look-ups and the log d_k of the leaves are shared
    n_leaf = 0
    for q in range(n_c):
        if size[cands[start + q]] == 1:
            order[n_leaf] = q
            n_leaf += 1
    t = n_leaf
    for q in range(n_c):
        if size[cands[start + q]] != 1:
            order[t] = q
            t += 1
    if use_table:
        d = cnt.shape[1]
        N = Na + 1
        for j in range(d):
            c = cnt[a, j]
            T0[j] = LA[c, j] + LB[N - c, j]
            T1[j] = LA[c + 1, j] + LB[N - c - 1, j]
        t = 0
        while t + 4 <= n_leaf:
            b0 = cands[start + order[t]]
            b1 = cands[start + order[t + 1]]
            b2 = cands[start + order[t + 2]]
            b3 = cands[start + order[t + 3]]
            o0 = -LAB[N]
            o1 = -LAB[N]
            o2 = -LAB[N]
            o3 = -LAB[N]
            for j in range(d):
                o0 += T1[j] if cnt[b0, j] else T0[j]
                o1 += T1[j] if cnt[b1, j] else T0[j]
                o2 += T1[j] if cnt[b2, j] else T0[j]
                o3 += T1[j] if cnt[b3, j] else T0[j]
            lml[order[t]] = o0
            lml[order[t + 1]] = o1
            lml[order[t + 2]] = o2
            lml[order[t + 3]] = o3
            t += 4
        while t < n_leaf:
            b = cands[start + order[t]]
            o = -LAB[N]
            for j in range(d):
                o += T1[j] if cnt[b, j] else T0[j]
            lml[order[t]] = o
            t += 1
        while t + 4 <= n_c:
            b0 = cands[start + order[t]]
            b1 = cands[start + order[t + 1]]
            b2 = cands[start + order[t + 2]]
            b3 = cands[start + order[t + 3]]
            N0 = Na + size[b0]
            N1 = Na + size[b1]
            N2 = Na + size[b2]
            N3 = Na + size[b3]
            o0 = -LAB[N0]
            o1 = -LAB[N1]
            o2 = -LAB[N2]
            o3 = -LAB[N3]
            for j in range(d):
                x = cnt[a, j]
                m0 = x + cnt[b0, j]
                m1 = x + cnt[b1, j]
                m2 = x + cnt[b2, j]
                m3 = x + cnt[b3, j]
                o0 += LA[m0, j] + LB[N0 - m0, j]
                o1 += LA[m1, j] + LB[N1 - m1, j]
                o2 += LA[m2, j] + LB[N2 - m2, j]
                o3 += LA[m3, j] + LB[N3 - m3, j]
            lml[order[t]] = o0
            lml[order[t + 1]] = o1
            lml[order[t + 2]] = o2
            lml[order[t + 3]] = o3
            t += 4
        while t < n_c:
            b = cands[start + order[t]]
            N = Na + size[b]
            o = -LAB[N]
            for j in range(d):
                m = cnt[a, j] + cnt[b, j]
                o += LA[m, j] + LB[N - m, j]
            lml[order[t]] = o
            t += 1
    else:
        for q in range(n_c):
            b = cands[start + q]
            for s in range(tmp.shape[0]):
                tmp[s] = stats[a, s] + stats[b, s]
            lml[q] = cj.log_marginal(fam, tmp, H)
    lda = log_d[a]
    memo_N = -1
    memo_ld = 0.0
    prior_one = 0.0
    ldk = 0.0
    n_exact = 0
    for t in range(n_c):
        q = order[t]
        b = cands[start + q]
        N = Na + size[b]
        ld_sum = lda + log_d[b]
        if N != memo_N or ld_sum != memo_ld:
            memo_N = N
            memo_ld = ld_sum
            prior_one = la + LG[N]
            ldk = logaddexp(prior_one, ld_sum)
        lo = min(a, b)
        hi = max(a, b)
        A = prior_one - ldk + lml[q]
        B = ld_sum - ldk + log_p[lo] + log_p[hi]
        bound = A - max(A, B)
        if bound < bkey[a] and (mode == 0 or bound < bkey[b]):
            continue
        key = A - logaddexp(A, B)
        n_exact += 1
        _offer(a, key, lo, hi, bkey, bi, bj)
        if mode > 0 and _offer(b, key, lo, hi, bkey, bi, bj) and mode == 2:
            _heap_up(heap, pos, pos[b], bkey, bi, bj)
    return n_exact


@_inline
def _order_key(key):
    # a NaN score (a NIW marginal at extreme hyperparameters) sorts below every number,
    # so the builder still finishes a tree (whose NaN evidence the caller reports)
    return -np.inf if key != key else key


@_inline
def _offer(c, key, lo, hi, bkey, bi, bj):
    """Make (key, lo, hi) node c's best candidate if it is better; True if it was."""
    key = _order_key(key)
    if _better(key, lo, hi, bkey[c], bi[c], bj[c]):
        bkey[c] = key
        bi[c] = lo
        bj[c] = hi
        return True
    return False


@njit_exact
def _heap_up(heap, pos, p, bkey, bi, bj):
    c = heap[p]
    while p > 0:
        parent = (p - 1) // 2
        u = heap[parent]
        if not _better(bkey[c], bi[c], bj[c], bkey[u], bi[u], bj[u]):
            break
        heap[p] = u
        pos[u] = p
        p = parent
    heap[p] = c
    pos[c] = p


@njit_exact
def _heap_down(heap, pos, p, size, bkey, bi, bj):
    c = heap[p]
    while True:
        left = 2 * p + 1
        if left >= size:
            break
        best = left
        u = heap[left]
        right = left + 1
        if right < size:
            v = heap[right]
            if _better(bkey[v], bi[v], bj[v], bkey[u], bi[u], bj[u]):
                best = right
                u = v
        if not _better(bkey[u], bi[u], bj[u], bkey[c], bi[c], bj[c]):
            break
        heap[p] = u
        pos[u] = p
        p = best
    heap[p] = c
    pos[c] = p


@njit_exact
def _heap_remove(heap, pos, size, c, bkey, bi, bj):
    """Remove node c from the heap; returns the new size."""
    p = pos[c]
    pos[c] = -1
    size -= 1
    if p == size:
        return size
    last = heap[size]
    heap[p] = last
    pos[last] = p
    _heap_up(heap, pos, p, bkey, bi, bj)
    _heap_down(heap, pos, pos[last], size, bkey, bi, bj)
    return size


@njit_exact(nogil=True)
def greedy_kernel(nodes, alpha, likelihood, progress):
    """Greedy BHC over the ``n0`` initial ``nodes`` (:class:`GreedyNodes`: points, or
    clusters with their own subtree's log d and log p), the merged nodes' marginal given
    by ``likelihood`` (:class:`MergeLikelihood`): repeatedly merge the pair with the
    largest log r_k (Heller 2007 Alg. 3.2; ties: the smaller ids). Returns the merge list
    (n0 - 1, 2) over node ids 0..2 n0 - 2, the number of distinct candidate pairs scored
    ((n0 - 1)^2), the number of re-evaluations of pairs already scored, and how many of
    all those needed the exact log r (the others were settled by a bound, see
    :func:`_scan`).

    Each node keeps its best candidate merge; a heap of nodes (not of pairs: O(n)
    memory) orders them. A pair's score depends only on its two nodes, so a merge only
    adds the new node's pairs (each compared with its partner's best) and leaves the
    best of the nodes that had chosen a merged node stale: an upper bound on their true
    best. Such a node is re-scanned against the live nodes only when it reaches the top
    of the heap (Müllner 2011's generic algorithm); a node at the top whose candidate
    is alive holds the best pair overall. Scores are computed in the order of
    the tree's evaluation (:func:`_merge_values`), so the merges are those of a heap over
    all pairs.

    ``progress``: a one-element int64 array to which the kernel adds the distinct pairs
    it scores as it goes ((n0 - 1)^2 in all), read by a progress line in another thread
    (the kernel runs without the GIL)."""
    init_stats, init_log_d, init_log_p = nodes
    fam, H, use_table, LA, LB, LAB = likelihood
    n0 = init_stats.shape[0]
    S = init_stats.shape[1]
    m = 2 * n0 - 1
    la = math.log(alpha)
    stats = np.empty((m, S))
    size = np.empty(m, dtype=np.int64)
    n_max = 0
    for i in range(n0):
        size[i] = np.int64(init_stats[i, 0] + 0.5)
        n_max += size[i]
    # counts as integers for the table look-ups (exact: they are integer-valued floats)
    cnt = np.zeros((m if use_table else 1, S - 1 if use_table else 1), dtype=np.int32)
    if use_table:
        for i in range(n0):
            for j in range(S - 1):
                cnt[i, j] = np.int32(init_stats[i, 1 + j] + 0.5)
    LG = np.empty(n_max + 1)
    LG[0] = np.inf
    for N in range(1, n_max + 1):
        LG[N] = math.lgamma(float(N))
    log_d = np.empty(m)
    log_p = np.empty(m)
    # element loops, not slice assignments: those bring Numba's broadcasting-error code
    # (seconds of compiling) for shapes that cannot differ here
    for i in range(n0):
        for s in range(S):
            stats[i, s] = init_stats[i, s]
        log_d[i] = init_log_d[i]
        log_p[i] = init_log_p[i]
    state = _Nodes(stats, cnt, size, log_d, log_p, la, LG)
    tmp = np.empty(S)
    alive = np.zeros(m, dtype=np.bool_)
    alive[:n0] = True
    alive_ids = np.empty(n0, dtype=np.int64)
    for i in range(n0):
        alive_ids[i] = i
    n_alive = n0
    none = np.iinfo(np.int64).max
    bkey = np.full(m, -np.inf)
    bi = np.full(m, none, dtype=np.int64)
    bj = np.full(m, none, dtype=np.int64)
    others = np.empty(n0, dtype=np.int64)
    heap = np.empty(m, dtype=np.int64)
    pos = np.full(m, -1, dtype=np.int64)
    best = _Bests(bkey, bi, bj)
    where = _Heap(heap, pos)
    d = cnt.shape[1]
    work = _ScanWork(np.empty(n0), np.empty(n0, dtype=np.int64), np.empty(d), np.empty(d))
    model = _Scoring(fam, H, tmp, use_table, LA, LB, LAB)
    n_scored = 0
    n_exact = 0
    # _scan's modes, as variables: a literal argument would compile it once per value
    zero = np.int64(0)
    alone = np.int64(0)
    both = np.int64(1)
    both_and_heap = np.int64(2)
    for i in range(n0 - 1):
        n_c = n0 - i - 1
        n_exact += _scan(i, _Candidates(alive_ids, np.int64(i + 1), np.int64(n_c)), both,
                         state, best, where, work, model)
        n_scored += n_c
        progress[0] += n_c
    for i in range(n0):
        heap[i] = i
        pos[i] = i
    hsize = n0
    for p in range(hsize // 2 - 1, -1, -1):
        _heap_down(heap, pos, p, hsize, bkey, bi, bj)
    n_rescored = 0
    merges = np.empty((max(n0 - 1, 0), 2), dtype=np.int64)
    for t in range(n0 - 1):
        while True:
            a = heap[0]
            partner = bj[a] if bi[a] == a else bi[a]
            if partner != none and alive[partner]:
                break
            # a's candidate was merged away: its recorded best is an upper bound only
            bkey[a] = -np.inf
            bi[a] = none
            bj[a] = none
            w = 0
            for q in range(n_alive):
                c = alive_ids[q]
                if c != a:
                    others[w] = c
                    w += 1
            n_exact += _scan(a, _Candidates(others, zero, np.int64(w)), alone, state, best,
                             where, work, model)
            n_rescored += w
            _heap_down(heap, pos, zero, hsize, bkey, bi, bj)
        i = bi[a]
        j = bj[a]
        k = n0 + t
        ldk, lpk = _merge_values(i, j, state, model)
        for s in range(S):
            stats[k, s] = stats[i, s] + stats[j, s]
        if use_table:
            for s in range(S - 1):
                cnt[k, s] = cnt[i, s] + cnt[j, s]
        size[k] = size[i] + size[j]
        log_d[k] = ldk
        log_p[k] = lpk
        merges[t, 0] = i
        merges[t, 1] = j
        alive[i] = False
        alive[j] = False
        hsize = _heap_remove(heap, pos, hsize, i, bkey, bi, bj)
        hsize = _heap_remove(heap, pos, hsize, j, bkey, bi, bj)
        w = 0
        for q in range(n_alive):
            c = alive_ids[q]
            if alive[c]:
                alive_ids[w] = c
                w += 1
        n_alive = w
        # k is not in the heap yet: offers to it need no heap update
        n_exact += _scan(k, _Candidates(alive_ids, zero, np.int64(n_alive)), both_and_heap,
                         state, best, where, work, model)
        n_scored += n_alive
        progress[0] += n_alive
        alive[k] = True
        alive_ids[n_alive] = k
        n_alive += 1
        heap[hsize] = k
        pos[k] = hsize
        hsize += 1
        _heap_up(heap, pos, hsize - 1, bkey, bi, bj)
    return merges, n_scored, n_rescored, n_exact


@njit_exact
def assign_kernel(fam, X, cstats, log_w, group, n_groups, H):
    """argmax_g logsumexp_{c in g} [log w_c + log p(x_i | D_c)] for every row.

    With one node per group this is the filter of Heller (2007) Alg. 3.5 / 3.6; with the
    nodes of a subtree and their Eq. 3.11 weights it is the tree predictive (Eq. 3.10)
    of that subtree. Per-node work is hoisted out of the loop over points:
    Beta-Bernoulli log probabilities are tabulated (O(d) additions per point and node)
    and NIW posteriors are factorised once (O(d^2) Student-t evaluations, not O(d^3))."""
    n = X.shape[0]
    d = X.shape[1]
    C = cstats.shape[0]
    out = np.empty(n, dtype=np.int64)
    acc = np.empty(n_groups)
    W1 = np.zeros((C, d))
    base = np.zeros(C)
    states = np.zeros((C, 3 + d * (d + 1) if fam == 2 else 1))
    if fam == 0:
        a, b = cj.bernoulli_view(H)
        for c in range(C):
            N = cstats[c, 0]
            for j in range(d):
                tot = math.log(a[j] + b[j] + N)
                l1 = math.log(a[j] + cstats[c, 1 + j]) - tot
                l0 = math.log(b[j] + N - cstats[c, 1 + j]) - tot
                W1[c, j] = l1 - l0
                base[c] += l0
    elif fam == 2:
        hyper = cj.gaussian_view(H)
        for c in range(C):
            states[c] = cj.gaussian_state(cstats[c], hyper)
    for i in range(n):
        acc[:] = -np.inf
        for c in range(C):
            if fam == 0:
                v = base[c]
                for j in range(d):
                    if X[i, j] > 0.5:
                        v += W1[c, j]
            elif fam == 2:
                v = cj.gaussian_state_log_predictive(X[i], states[c])
            else:
                v = cj.log_predictive(fam, X[i], cstats[c], H)
            g = group[c]
            acc[g] = logaddexp(acc[g], log_w[c] + v)
        best = -np.inf
        arg = 0
        for g in range(n_groups):
            if acc[g] > best:
                best = acc[g]
                arg = g
        out[i] = arg
    return out


@njit_exact
def predictive_kernel(fam, x, stats, log_w, H, log_old, log_new):
    m = x.shape[0]
    out = np.empty(m)
    empty = np.zeros(stats.shape[1])
    for i in range(m):
        acc = -np.inf
        for k in range(stats.shape[0]):
            acc = logaddexp(acc, log_w[k] + cj.log_predictive(fam, x[i], stats[k], H))
        out[i] = logaddexp(log_old + acc, log_new + cj.log_predictive(fam, x[i], empty, H))
    return out


@njit_exact
def node_stats(fam, X, merges):
    n = X.shape[0]
    p = cj.point_stats(fam, X)
    out = np.empty((2 * n - 1, p.shape[1]))
    out[:n] = p
    for t in range(n - 1):
        out[n + t] = out[merges[t, 0]] + out[merges[t, 1]]
    return out
