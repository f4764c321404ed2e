"""A split-merge move on the IOMM's memberships (Meeds et al. 2007's feature split-merge,
the overlapping-cluster form of Jain & Neal 2004), given the cluster parameters.

The single-site sweep (:mod:`custom_ops.iomm.memberships`) changes one entry of ``Z`` at
a time, so a cluster of hundreds of points appears or goes only through hundreds of
improbable intermediate states. :func:`split_merge_move` changes a whole cluster at once.
It is a Metropolis-Hastings move on ``Z`` with ``Theta`` fixed, in the slot
representation of the IBP (:class:`pp_models.distributions.IndianBuffet`), where an
unused slot's parameters are a draw from the prior (the parameter sweep redraws them):

1. draw an ordered pair of distinct points ``(i, j)`` and a cluster ``k`` uniformly from
   the ``|S_i|`` clusters of ``i``;
2. **split** when ``j`` is in ``k`` too: a slot ``k'`` among the ``L`` unused ones, drawn
   with probability proportional to ``p(x_j | z_j with k replaced by k')^beta`` (the
   unused slot whose prior-drawn expert fits ``j`` best is the likeliest); ``i`` stays in
   ``k`` only, ``j`` moves to ``k'`` only, and every other member ``l`` of ``k`` goes to
   ``k`` only, ``k'`` only or both with probabilities proportional to its likelihood
   under each, to the power ``beta`` (given ``Theta`` the points are independent, so the
   order of these draws does not matter);
3. **merge** when ``j`` is not in ``k``: ``k'`` uniformly from the ``|A|`` clusters of
   ``j`` that ``i`` is not in (no move when there is none); every member of ``k'`` joins
   ``k`` (the union) and ``k'`` becomes unused.

Each split has exactly one merge that undoes it (same ``i, j``; the union restores
``k``; ``k'`` unused again) and vice versa. With ``P`` the slot IBP prior, ``L`` the
likelihood, ``q`` the proposal probabilities above (the pair's ``1 / (N (N - 1))`` and
the ``1 / |S_i|`` are the same both ways and cancel; ``|S_i|`` is unchanged by either
move), a split is accepted with probability
``min(1, P(Z') L(Z')^beta q(merge) / (P(Z) L(Z)^beta q(split)))``, where
``P(Z') / P(Z) = alpha f(m_a) f(m_b) / (f(n) (C - K+))``, ``f(m) = (N - m)! (m - 1)! /
N!`` (Griffiths & Ghahramani 2011 Eq. 2.12 with the slot arrangement's ``(C - K+)! /
C!``), and a merge with the reciprocal. ``beta`` (1: the posterior) is the power of the
likelihood, for a tempered run; the proposal uses it too, its probabilities entering the
ratio as made. :func:`split_merge_log_ratio` combines the terms (a planted-bug twin under
``tests/`` replaces it).

Cost per move: O(n (C + L) D) for a cluster of ``n`` points.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.iomm.experts import dim_loglik, row_sums
from custom_ops.jit import njit_exact

__all__ = ["SPLIT_MERGE_STATS", "split_merge_log_ratio", "split_merge_move", "split_merge_moves"]

#: Entries of the counts array :func:`split_merge_move` adds to.
SPLIT_MERGE_STATS = (
    "splits_proposed",
    "splits_accepted",
    "merges_proposed",
    "merges_accepted",
    "no_free_slot",
)


@njit_exact
def split_merge_log_ratio(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    """Log Metropolis-Hastings ratio: prior ratio, likelihood ratio to the power ``beta``
    and the proposal's reverse over forward probability."""
    return log_prior_ratio + beta * log_lik_ratio + log_q_reverse - log_q_forward


@njit_exact
def _log_f(N, m):
    """``log((N - m)! (m - 1)! / N!)``, a used column's factor of the IBP prior."""
    return math.lgamma(N - m + 1.0) + math.lgamma(m) - math.lgamma(N + 1.0)


@njit_exact
def _loglik_swap(code, x, T, E, k_out, k_in, count, background):
    """One point's log density at natural sums ``T - E[k_out] + E[k_in]`` (a slot index
    of -1: nothing taken out / put in) with ``count`` clusters."""
    D = x.shape[0]
    empty = count == 0
    out = 0.0
    for d in range(D):
        t0 = T[d, 0]
        t1 = T[d, 1] if code == 1 else 0.0
        if k_out >= 0:
            t0 -= E[k_out, d, 0]
            if code == 1:
                t1 -= E[k_out, d, 1]
        if k_in >= 0:
            t0 += E[k_in, d, 0]
            if code == 1:
                t1 += E[k_in, d, 1]
        out += dim_loglik(code, x[d], t0, t1, empty, background[d, 0], background[d, 1])
    return out


@njit_exact
def _log_choice(logw, chosen, n):
    """``log(w[chosen] / sum(w[:n]))`` for log weights ``logw``."""
    top = -np.inf
    for s in range(n):
        if logw[s] > top:
            top = logw[s]
    total = 0.0
    for s in range(n):
        total += math.exp(logw[s] - top)
    return logw[chosen] - top - math.log(total)


@njit_exact
def _draw(rng, logw, n):
    top = -np.inf
    for s in range(n):
        if logw[s] > top:
            top = logw[s]
    total = 0.0
    for s in range(n):
        total += math.exp(logw[s] - top)
    u = rng.random() * total
    acc = 0.0
    for s in range(n):
        acc += math.exp(logw[s] - top)
        if u < acc:
            return s
    return n - 1


@njit_exact
def _pick(rng, n):
    """A uniform integer in ``0..n-1``."""
    r = int(rng.random() * n)
    return n - 1 if r >= n else r


@njit_exact
def split_merge_move(rng, code, X, Z, E, background, alpha, beta, counts):
    """One split-merge proposal on ``Z`` (N, C) int8, updated in place when accepted.

    Parameters
    ----------
    rng : numpy.random.Generator
    code : int
        ``BERNOULLI`` or ``GAUSSIAN`` (:mod:`custom_ops.iomm.experts`).
    X : (N, D) float64
    Z : (N, C) int8
    E : (C, D, S) float64
        Every slot's natural parameters (unused slots: prior draws).
    background : (D, 2) float64
        Mean and sd of a point in no cluster (Gaussian; unused for Bernoulli).
    alpha : float
        IBP concentration.
    beta : float
        Power of the likelihood (1: the posterior).
    counts : (5,) int64
        Added to: :data:`SPLIT_MERGE_STATS` (a split with no unused slot is rejected and
        counted in the last entry).

    Returns
    -------
    bool
        Whether ``Z`` changed.
    """
    N, C = Z.shape
    D, S = E.shape[1], E.shape[2]
    i = _pick(rng, N)
    j = _pick(rng, N - 1)
    if j >= i:
        j += 1
    n_i = 0
    for c in range(C):
        if Z[i, c] != 0:
            n_i += 1
    if n_i == 0:
        return False
    r = _pick(rng, n_i)
    k = -1
    for c in range(C):
        if Z[i, c] != 0:
            if r == 0:
                k = c
                break
            r -= 1
    m = np.zeros(C, dtype=np.int64)
    for p in range(N):
        for c in range(C):
            if Z[p, c] != 0:
                m[c] += 1
    free = np.empty(C, dtype=np.int64)
    L = 0
    for c in range(C):
        if m[c] == 0:
            free[L] = c
            L += 1
    n_a = 0  # |S_j \ S_i|: clusters of j that i is not in
    for c in range(C):
        if Z[j, c] != 0 and Z[i, c] == 0:
            n_a += 1
    T = np.empty((D, S))
    lls = np.empty(C + 1)
    logw = np.empty(C + 1)
    ll3 = np.empty(3)
    w3 = np.empty(3)
    log_alpha = math.log(alpha)
    if Z[j, k] != 0:
        # split k: i keeps k, j moves to an unused slot k2
        counts[0] += 1
        if L == 0:
            counts[4] += 1
            return False
        cj = row_sums(Z[j], E, T)
        ll_j = _loglik_swap(code, X[j], T, E, -1, -1, cj, background)
        for s in range(L):
            lls[s] = _loglik_swap(code, X[j], T, E, k, free[s], cj, background)
            logw[s] = beta * lls[s]
        t = _draw(rng, logw, L)
        k2 = free[t]
        log_q = _log_choice(logw, t, L)
        d_ll = lls[t] - ll_j
        option = np.full(N, -1, dtype=np.int64)
        m_a = 1
        m_b = 1
        for p in range(N):
            if p == i or p == j or Z[p, k] == 0:
                continue
            cp = row_sums(Z[p], E, T)
            ll3[0] = _loglik_swap(code, X[p], T, E, -1, -1, cp, background)
            ll3[1] = _loglik_swap(code, X[p], T, E, k, k2, cp, background)
            ll3[2] = _loglik_swap(code, X[p], T, E, -1, k2, cp + 1, background)
            for o in range(3):
                w3[o] = beta * ll3[o]
            o = _draw(rng, w3, 3)
            log_q += _log_choice(w3, o, 3)
            d_ll += ll3[o] - ll3[0]
            option[p] = o
            if o != 1:
                m_a += 1
            if o != 0:
                m_b += 1
        log_prior = log_alpha + _log_f(N, m_a) + _log_f(N, m_b) - _log_f(N, m[k]) - math.log(L)
        log_ratio = split_merge_log_ratio(log_prior, d_ll, beta, -math.log(n_a + 1.0), log_q)
        if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
            counts[1] += 1
            Z[j, k] = 0
            Z[j, k2] = 1
            for p in range(N):
                if option[p] == 1:
                    Z[p, k] = 0
                if option[p] >= 1:
                    Z[p, k2] = 1
            return True
        return False
    # merge a cluster k2 of j's that i is not in into k
    if n_a == 0:
        return False
    counts[2] += 1
    r = _pick(rng, n_a)
    k2 = -1
    for c in range(C):
        if Z[j, c] != 0 and Z[i, c] == 0:
            if r == 0:
                k2 = c
                break
            r -= 1
    # the split that would undo the merge: its choice of k2 among the merged state's
    # unused slots (these and k2) for j, moved from k2 to k in the merged state
    cj = row_sums(Z[j], E, T)
    ll_j = _loglik_swap(code, X[j], T, E, -1, -1, cj, background)
    for s in range(L):
        lls[s] = _loglik_swap(code, X[j], T, E, k2, free[s], cj, background)
        logw[s] = beta * lls[s]
    lls[L] = ll_j
    logw[L] = beta * ll_j
    log_q = _log_choice(logw, L, L + 1)
    d_ll = _loglik_swap(code, X[j], T, E, k2, k, cj, background) - ll_j
    n = 2
    for p in range(N):
        if p == i or p == j:
            continue
        in_k = Z[p, k] != 0
        in_k2 = Z[p, k2] != 0
        if not (in_k or in_k2):
            continue
        n += 1
        cp = row_sums(Z[p], E, T)
        # the member's densities in k only, k2 only and both, from its present sums
        if in_k and not in_k2:
            o = 0
            ll3[0] = _loglik_swap(code, X[p], T, E, -1, -1, cp, background)
            ll3[1] = _loglik_swap(code, X[p], T, E, k, k2, cp, background)
            ll3[2] = _loglik_swap(code, X[p], T, E, -1, k2, cp + 1, background)
        elif in_k2 and not in_k:
            o = 1
            ll3[0] = _loglik_swap(code, X[p], T, E, k2, k, cp, background)
            ll3[1] = _loglik_swap(code, X[p], T, E, -1, -1, cp, background)
            ll3[2] = _loglik_swap(code, X[p], T, E, -1, k, cp + 1, background)
        else:
            o = 2
            ll3[0] = _loglik_swap(code, X[p], T, E, k2, -1, cp - 1, background)
            ll3[1] = _loglik_swap(code, X[p], T, E, k, -1, cp - 1, background)
            ll3[2] = _loglik_swap(code, X[p], T, E, -1, -1, cp, background)
        for q in range(3):
            w3[q] = beta * ll3[q]
        log_q += _log_choice(w3, o, 3)
        d_ll += ll3[0] - ll3[o]
    log_prior = -(log_alpha + _log_f(N, m[k]) + _log_f(N, m[k2]) - _log_f(N, n) - math.log(L + 1.0))
    log_ratio = split_merge_log_ratio(log_prior, d_ll, beta, log_q, -math.log(n_a))
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        counts[3] += 1
        for p in range(N):
            if Z[p, k2] != 0:
                Z[p, k2] = 0
                Z[p, k] = 1
        return True
    return False


@njit_exact
def split_merge_moves(rng, code, X, Z, E, background, alpha, beta, n_moves, counts):
    """``n_moves`` proposals of :func:`split_merge_move` in turn; returns ``counts``."""
    for _ in range(n_moves):
        split_merge_move(rng, code, X, Z, E, background, alpha, beta, counts)
    return counts
