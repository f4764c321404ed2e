"""Numba kernels of the Bayesian-hierarchical-clustering tree builders (Heller 2007 ch. 3).

- :func:`greedy_kernel`: greedy agglomeration (Alg. 3.2) with a binary heap of candidate
  merges keyed by log r_k: O(n^2) pair evaluations, O(n^2 log n) time, O(n^2) memory;
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

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.bhc.evidence import logaddexp
from custom_ops.jit import njit_exact

__all__ = [
    "assign_kernel",
    "bernoulli_tables",
    "greedy_kernel",
    "node_stats",
    "predictive_kernel",
]



@njit_exact
def _better(k1, i1, j1, k2, i2, j2):
    # larger log r first; ties broken by the smaller ids, so runs are deterministic
    if k1 != k2:
        return k1 > k2
    if i1 != i2:
        return i1 < i2
    return j1 < j2


@njit_exact
def _sift_down(keys, hi, hj, size, pos):
    while True:
        left = 2 * pos + 1
        if left >= size:
            return
        best = left
        right = left + 1
        if right < size and _better(
            keys[right], hi[right], hj[right], keys[left], hi[left], hj[left]
        ):
            best = right
        if _better(keys[best], hi[best], hj[best], keys[pos], hi[pos], hj[pos]):
            keys[pos], keys[best] = keys[best], keys[pos]
            hi[pos], hi[best] = hi[best], hi[pos]
            hj[pos], hj[best] = hj[best], hj[pos]
            pos = best
        else:
            return


@njit_exact
def _push(keys, hi, hj, size, key, i, j):
    pos = size
    keys[pos] = key
    hi[pos] = i
    hj[pos] = j
    while pos > 0:
        parent = (pos - 1) // 2
        if _better(keys[pos], hi[pos], hj[pos], keys[parent], hi[parent], hj[parent]):
            keys[pos], keys[parent] = keys[parent], keys[pos]
            hi[pos], hi[parent] = hi[parent], hi[pos]
            hj[pos], hj[parent] = hj[parent], hj[pos]
            pos = parent
        else:
            break
    return size + 1


@njit_exact
def bernoulli_tables(a, b, n_max):
    """lgamma differences for integer counts: LA[j, m] = log Γ(a_j + m) - log Γ(a_j), LB
    likewise, LAB[N] = Σ_j log Γ(a_j + b_j + N) - log Γ(a_j + b_j). Turns the Beta-Bernoulli
    marginal into O(d) table look-ups (no lgamma in the O(n^2 d) pair loop)."""
    d = a.shape[0]
    LA = np.empty((d, n_max + 1))
    LB = np.empty((d, n_max + 1))
    LAB = np.zeros(n_max + 1)
    for j in range(d):
        ga = math.lgamma(a[j])
        gb = math.lgamma(b[j])
        gab = math.lgamma(a[j] + b[j])
        for m in range(n_max + 1):
            LA[j, m] = math.lgamma(a[j] + m) - ga
            LB[j, m] = math.lgamma(b[j] + m) - gb
            LAB[m] += math.lgamma(a[j] + b[j] + m) - gab
    return LA, LB, LAB


@njit_exact
def _pair_lml(fam, si, sj, H, tmp, use_table, LA, LB, LAB):
    if use_table:
        N = int(si[0] + sj[0] + 0.5)
        out = -LAB[N]
        for j in range(LA.shape[0]):
            m = int(si[1 + j] + sj[1 + j] + 0.5)
            out += LA[j, m] + LB[j, N - m]
        return out
    for s in range(tmp.shape[0]):
        tmp[s] = si[s] + sj[s]
    return cj.log_marginal(fam, tmp, H)


@njit_exact
def _pair_score(fam, si, sj, ldi, ldj, lpi, lpj, la, H, tmp, use_table, LA, LB, LAB):
    """(log r_k, log d_k, log p(D_k | T_k)) for the candidate merge of nodes i and j."""
    prior_one = la + math.lgamma(si[0] + sj[0])
    ldk = logaddexp(prior_one, ldi + ldj)
    A = prior_one - ldk + _pair_lml(fam, si, sj, H, tmp, use_table, LA, LB, LAB)
    B = ldi + ldj - ldk + lpi + lpj
    lpk = logaddexp(A, B)
    return A - lpk, ldk, lpk


@njit_exact(nogil=True)
def greedy_kernel(fam, init_stats, init_log_d, init_log_p, alpha, H, use_table, LA, LB, LAB,
                  progress):
    """Greedy BHC over ``n0`` initial nodes (points, or clusters with their own subtree's
    log d and log p). Returns the merge list (n0 - 1, 2) over node ids 0..2 n0 - 2 and the
    number of candidate pairs scored.

    ``progress``: a one-element int64 array to which the kernel adds the pairs it scores
    as it goes ((n0 - 1)^2 in all), read by a progress line in another thread (the kernel
    runs without the GIL)."""
    n0 = init_stats.shape[0]
    S = init_stats.shape[1]
    m = 2 * n0 - 1
    la = math.log(alpha)
    stats = np.empty((m, S))
    log_d = np.empty(m)
    log_p = np.empty(m)
    stats[:n0] = init_stats
    log_d[:n0] = init_log_d
    log_p[:n0] = init_log_p
    alive = np.zeros(m, dtype=np.bool_)
    alive[:n0] = True
    alive_ids = np.empty(n0, dtype=np.int64)
    for i in range(n0):
        alive_ids[i] = i
    n_alive = n0
    cap = max(1, n0 * (n0 - 1))
    keys = np.empty(cap)
    hi = np.empty(cap, dtype=np.int32)
    hj = np.empty(cap, dtype=np.int32)
    tmp = np.empty(S)
    size = 0
    for i in range(n0):
        for j in range(i + 1, n0):
            lr, _ld, _lp = _pair_score(
                fam,
                stats[i],
                stats[j],
                log_d[i],
                log_d[j],
                log_p[i],
                log_p[j],
                la,
                H,
                tmp,
                use_table,
                LA,
                LB,
                LAB,
            )
            keys[size] = lr
            hi[size] = i
            hj[size] = j
            size += 1
        progress[0] += n0 - i - 1
    n_scored = size
    for pos in range(size // 2 - 1, -1, -1):
        _sift_down(keys, hi, hj, size, pos)
    merges = np.empty((max(n0 - 1, 0), 2), dtype=np.int64)
    for t in range(n0 - 1):
        while True:
            i = hi[0]
            j = hj[0]
            size -= 1
            keys[0] = keys[size]
            hi[0] = hi[size]
            hj[0] = hj[size]
            _sift_down(keys, hi, hj, size, 0)
            if alive[i] and alive[j]:
                break
        k = n0 + t
        _lr, ldk, lpk = _pair_score(
            fam,
            stats[i],
            stats[j],
            log_d[i],
            log_d[j],
            log_p[i],
            log_p[j],
            la,
            H,
            tmp,
            use_table,
            LA,
            LB,
            LAB,
        )
        for s in range(S):
            stats[k, s] = stats[i, s] + stats[j, s]
        log_d[k] = ldk
        log_p[k] = lpk
        merges[t, 0] = i
        merges[t, 1] = j
        alive[i] = False
        alive[j] = False
        w = 0
        for q in range(n_alive):
            c = alive_ids[q]
            if alive[c]:
                alive_ids[w] = c
                w += 1
        n_alive = w
        for q in range(n_alive):
            c = alive_ids[q]
            lr, _ld, _lp = _pair_score(
                fam,
                stats[c],
                stats[k],
                log_d[c],
                log_d[k],
                log_p[c],
                log_p[k],
                la,
                H,
                tmp,
                use_table,
                LA,
                LB,
                LAB,
            )
            size = _push(keys, hi, hj, size, lr, c, k)
            n_scored += 1
        progress[0] += n_alive
        alive[k] = True
        alive_ids[n_alive] = k
        n_alive += 1
    return merges, n_scored


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
