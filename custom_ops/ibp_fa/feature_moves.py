"""Whole-feature birth and death for the NSFA sampler: a move that sets or clears every
entry of a column of ``Z`` at once, with the feature's factor row integrated out.

Knowles' sweep (:mod:`custom_ops.ibp_fa.nsfa`) changes one ``Z_dk`` at a time: a
feature that several rows share appears only as a singleton that other rows then join
one by one, and goes only the same way back, through states the posterior gives little
weight (on the iris measurements a chain stays at one feature for hundreds of sweeps).
:func:`feature_birth_death_move` proposes a feature of ``r >= 2`` rows, or its removal,
in one step, keeping ``V`` (every entry a free variable with its prior; the new feature's
loadings are the unused slot's prior-drawn ``V`` values) and ``lambda``, ``tau``,
``alpha`` fixed:

- **birth** (probability 1/2): a row set ``R`` uniformly among the ``S = 2^D - 1 - D``
  sets of two rows or more, a slot uniformly among the ``L`` unused ones; ``Z[R, k] = 1``
  and the factor row ``X[k]`` drawn from its conditional posterior given the loadings
  ``g = V[R, k]`` and the residual ``E`` (every other feature's part taken out):
  ``x_n ~ N(a_n / (1 + c_n), 1 / (1 + c_n))``, ``c_n = sum_d p_d g_d^2``, ``a_n = sum_d
  p_d g_d E_dn`` over the observed rows of column ``n``, ``p_d = beta tau_d``;
- **death** (probability 1/2): a feature uniformly among the ``F`` features of two rows
  or more; ``Z[:, k] = 0`` and ``X[k]`` drawn from its prior ``N(0, I)`` (an unused
  slot's factor row).

The factor row drawn from its conditional posterior makes the birth's ratio the
collapsed one: ``p(x) P(Y | x)^beta / q(x)`` is the likelihood with ``x`` integrated
out, by the matrix determinant lemma per column ``sum_n [-1/2 log(1 + c_n) + a_n^2 /
(2 (1 + c_n))]`` (the multi-row form of Eqs 3.13-3.15; the power ``beta`` enters as the
precision ``beta tau_d``, as in the module :mod:`custom_ops.ibp_fa.nsfa`'s Tempering),
and the death's prior draw of ``X[k]`` cancels the prior of the unused row. With the
slot IBP prior over the ``D`` rows (``alpha f(r) / (C - K+)`` per new feature, ``f(r) =
(D - r)! (r - 1)! / D!``; Knowles Eq. 2.12 with the slot arrangement), the ``1 / L`` of
the slot's choice cancels ``1 / (C - K+)`` and a birth is accepted with probability
``min(1, alpha f(r) exp(collapsed) S / F')``, ``F'`` the features of two rows or more
after it; a death with the reciprocal (``F`` before it). Singletons are left to the
sweep's own move. :func:`feature_move_log_ratio` combines the terms (a planted-bug twin
under ``tests/`` replaces it).

:func:`two_feature_row_update` is the other many-entries move: one row's entries in two
features resampled with both features' factor rows integrated out and then redrawn
(``2 N`` factor values and two entries of ``Z`` at once), so a row moves from one
feature to another while both refit. :func:`feature_birth_death_moves` runs rounds of
one of each.

Cost per move: O(D N K) for the residual plus O(``|R|`` N) (birth/death), O(D N) (row
update).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.ibp_fa.nsfa import residual_into
from custom_ops.jit import njit_exact

__all__ = [
    "FEATURE_MOVE_STATS",
    "feature_birth_death_move",
    "feature_birth_death_moves",
    "feature_move_log_ratio",
    "two_feature_log_marginal",
    "two_feature_row_update",
]

#: Entries of the counts array :func:`feature_birth_death_move` adds to.
FEATURE_MOVE_STATS = (
    "births_proposed",
    "births_accepted",
    "deaths_proposed",
    "deaths_accepted",
    "no_free_slot",
    "row_updates",
    "row_updates_changed",
)


@njit_exact
def feature_move_log_ratio(log_prior_ratio, log_collapsed_ratio, log_q_reverse, log_q_forward):
    """Log Metropolis-Hastings ratio of a birth: the prior ratio, the collapsed
    likelihood ratio (already tempered) and the proposal's reverse over forward
    probability."""
    return log_prior_ratio + log_collapsed_ratio + log_q_reverse - log_q_forward


@njit_exact
def _collapsed(state, rows, n_rows, k, beta, a, c):
    """Per column ``a_n`` and ``c_n`` (module docstring) of feature ``k`` on the first
    ``n_rows`` of ``rows``, against the residual ``state.E``, into ``a``, ``c``; returns
    the collapsed log likelihood ratio of the feature against none."""
    E, W, V, tau = state.E, state.W, state.V, state.tau
    N = E.shape[1]
    out = 0.0
    for n in range(N):
        an = 0.0
        cn = 0.0
        for j in range(n_rows):
            d = rows[j]
            if W[d, n] != 0.0:
                p = beta * tau[d]
                g = V[d, k]
                an += p * g * E[d, n]
                cn += p * g * g
        a[n] = an
        c[n] = cn
        out += -0.5 * math.log1p(cn) + 0.5 * an * an / (1.0 + cn)
    return out


@njit_exact
def _log_f(D, r):
    return math.lgamma(D - r + 1.0) + math.lgamma(r) - math.lgamma(D + 1.0)


@njit_exact
def feature_birth_death_move(rng, state, alpha, beta, counts):
    """One birth or death proposal; ``Z`` and ``X`` updated in place when accepted.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : custom_ops.ibp_fa.nsfa.FactorState
        The data, the state (``lam`` is not read) and the residual's workspace ``E``
        (overwritten).
    alpha : float
    beta : float
        Inverse temperature in [0, 1] of the likelihood.
    counts : (5,) int64
        Added to: :data:`FEATURE_MOVE_STATS`.

    Returns
    -------
    bool
        Whether the state changed.
    """
    Y, W, Z, V, X, E = state.Y, state.W, state.Z, state.V, state.X, state.E
    D, N = Y.shape
    C = Z.shape[1]
    if D < 2:
        return False
    m = np.zeros(C, dtype=np.int64)
    for d in range(D):
        for k in range(C):
            if Z[d, k] != 0:
                m[k] += 1
    n_free = 0
    n_wide = 0
    for k in range(C):
        if m[k] == 0:
            n_free += 1
        elif m[k] >= 2:
            n_wide += 1
    log_sets = math.log(2.0**D - 1.0 - D)
    rows = np.empty(D, dtype=np.int64)
    a = np.empty(N)
    c = np.empty(N)
    residual_into(E, Y, W, Z, V, X)
    if rng.random() < 0.5:
        counts[0] += 1
        if n_free == 0:
            counts[4] += 1
            return False
        # a row set of two or more, uniformly: subsets of the D rows by rejection
        n_rows = 0
        while n_rows < 2:
            n_rows = 0
            for d in range(D):
                if rng.random() < 0.5:
                    rows[n_rows] = d
                    n_rows += 1
        r = int(rng.random() * n_free)
        if r >= n_free:
            r = n_free - 1
        k = -1
        for s in range(C):
            if m[s] == 0:
                if r == 0:
                    k = s
                    break
                r -= 1
        collapsed = _collapsed(state, rows, n_rows, k, beta, a, c)
        log_prior = math.log(alpha) + _log_f(D, n_rows)
        log_ratio = feature_move_log_ratio(log_prior, collapsed, -math.log(n_wide + 1.0), -log_sets)
        if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
            counts[1] += 1
            for j in range(n_rows):
                Z[rows[j], k] = 1
            for n in range(N):
                sd = 1.0 / math.sqrt(1.0 + c[n])
                X[k, n] = a[n] / (1.0 + c[n]) + sd * rng.standard_normal()
            return True
        return False
    if n_wide == 0:
        return False
    counts[2] += 1
    r = int(rng.random() * n_wide)
    if r >= n_wide:
        r = n_wide - 1
    k = -1
    for s in range(C):
        if m[s] >= 2:
            if r == 0:
                k = s
                break
            r -= 1
    n_rows = 0
    for d in range(D):
        if Z[d, k] != 0:
            rows[n_rows] = d
            n_rows += 1
    # the residual without feature k: the state the reverse birth starts from
    for j in range(n_rows):
        d = rows[j]
        g = V[d, k]
        for n in range(N):
            E[d, n] += W[d, n] * g * X[k, n]
    collapsed = _collapsed(state, rows, n_rows, k, beta, a, c)
    log_prior = math.log(alpha) + _log_f(D, n_rows)
    log_ratio = -feature_move_log_ratio(log_prior, collapsed, -math.log(float(n_wide)), -log_sets)
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        counts[3] += 1
        for j in range(n_rows):
            Z[rows[j], k] = 0
        for n in range(N):
            X[k, n] = rng.standard_normal()
        return True
    return False


@njit_exact
def feature_birth_death_moves(rng, state, alpha, beta, n_moves, counts):
    """``n_moves`` rounds of one :func:`feature_birth_death_move` proposal and one
    :func:`two_feature_row_update` (counted in ``counts[5:7]``) on ``state`` (a
    :class:`custom_ops.ibp_fa.nsfa.FactorState`); returns ``counts``."""
    pair = counts[5:7]
    for _ in range(n_moves):
        feature_birth_death_move(rng, state, alpha, beta, counts)
        two_feature_row_update(rng, state, beta, pair)
    return counts


@njit_exact
def two_feature_log_marginal(a11, a12, a22, b1, b2):
    """``-1/2 log|A| + 1/2 b^T A^-1 b`` for the symmetric 2 x 2 ``A`` and ``b``: one
    column's log likelihood with two features' factors integrated out, against none."""
    det = a11 * a22 - a12 * a12
    quad = (a22 * b1 * b1 - 2.0 * a12 * b1 * b2 + a11 * b2 * b2) / det
    return -0.5 * math.log(det) + 0.5 * quad


@njit_exact
def _pair_terms(state, k1, k2, d, on1, on2, beta, n):
    """``A`` (upper triangle) and ``b`` of column ``n`` of the residual ``state.E`` for
    features ``k1, k2`` with row ``d``'s entries set to ``on1, on2``: ``(a11, a12, a22,
    b1, b2)``."""
    R, W, V, Z, tau = state.E, state.W, state.V, state.Z, state.tau
    D = R.shape[0]
    a11 = 1.0
    a12 = 0.0
    a22 = 1.0
    b1 = 0.0
    b2 = 0.0
    for r in range(D):
        if W[r, n] == 0.0:
            continue
        z1 = on1 if r == d else Z[r, k1] != 0
        z2 = on2 if r == d else Z[r, k2] != 0
        g1 = V[r, k1] if z1 else 0.0
        g2 = V[r, k2] if z2 else 0.0
        p = beta * tau[r]
        a11 += p * g1 * g1
        a12 += p * g1 * g2
        a22 += p * g2 * g2
        b1 += p * g1 * R[r, n]
        b2 += p * g2 * R[r, n]
    return a11, a12, a22, b1, b2


@njit_exact
def two_feature_row_update(rng, state, beta, counts):
    """Gibbs update of one row's entries in two used features with both features' factor
    rows integrated out, then the factor rows drawn anew; ``Z``, ``X`` in place.

    Draws two used features ``k1 != k2`` and a row ``d`` uniformly; ``(Z[d, k1], Z[d,
    k2])`` takes one of its four values with probability proportional to the slot IBP
    prior times the likelihood with ``X[k1]`` and ``X[k2]`` integrated out (per column
    :func:`two_feature_log_marginal` with ``A = I + G^T P G``, ``b = G^T P r_n``, ``G``
    the two features' loadings ``Z o V``, ``P = diag(beta tau)`` over the observed rows,
    ``r_n`` the residual of every other feature), among the values that leave both
    features used (a set fixed by the other rows); then ``(X[k1, n], X[k2, n]) ~ N(A^-1
    b, A^-1)``. This moves a row from one feature to another in one step, both factor
    rows refitting, where the sweep would pass through a row in both features or in
    neither with the factors fixed. ``state`` is a
    :class:`custom_ops.ibp_fa.nsfa.FactorState` (``lam`` not read, ``E`` overwritten);
    ``counts[0]`` and ``counts[1]`` count the updates and those that changed ``Z``.
    """
    Y, W, Z, V, X, E = state.Y, state.W, state.Z, state.V, state.X, state.E
    D, N = Y.shape
    C = Z.shape[1]
    m = np.zeros(C, dtype=np.int64)
    for r in range(D):
        for k in range(C):
            if Z[r, k] != 0:
                m[k] += 1
    used = np.empty(C, dtype=np.int64)
    n_used = 0
    for k in range(C):
        if m[k] > 0:
            used[n_used] = k
            n_used += 1
    if n_used < 2:
        return False
    i1 = int(rng.random() * n_used)
    if i1 >= n_used:
        i1 = n_used - 1
    i2 = int(rng.random() * (n_used - 1))
    if i2 >= n_used - 1:
        i2 = n_used - 2
    if i2 >= i1:
        i2 += 1
    k1 = used[i1]
    k2 = used[i2]
    d = int(rng.random() * D)
    if d >= D:
        d = D - 1
    counts[0] += 1
    # the residual of every feature but k1 and k2
    residual_into(E, Y, W, Z, V, X)
    for r in range(D):
        for n in range(N):
            if Z[r, k1] != 0:
                E[r, n] += W[r, n] * V[r, k1] * X[k1, n]
            if Z[r, k2] != 0:
                E[r, n] += W[r, n] * V[r, k2] * X[k2, n]
    rest1 = m[k1] - (Z[d, k1] != 0)
    rest2 = m[k2] - (Z[d, k2] != 0)
    logw = np.full(4, -np.inf)
    for o in range(4):
        on1 = o >= 2
        on2 = (o % 2) == 1
        m1 = rest1 + (1 if on1 else 0)
        m2 = rest2 + (1 if on2 else 0)
        if m1 == 0 or m2 == 0:
            continue
        lw = _log_f(D, m1) + _log_f(D, m2)
        for n in range(N):
            a11, a12, a22, b1, b2 = _pair_terms(state, k1, k2, d, on1, on2, beta, n)
            lw += two_feature_log_marginal(a11, a12, a22, b1, b2)
        logw[o] = lw
    top = -np.inf
    for o in range(4):
        if logw[o] > top:
            top = logw[o]
    total = 0.0
    for o in range(4):
        total += math.exp(logw[o] - top)
    u = rng.random() * total
    chosen = 3
    acc = 0.0
    for o in range(4):
        acc += math.exp(logw[o] - top)
        if u < acc:
            chosen = o
            break
    on1 = chosen >= 2
    on2 = (chosen % 2) == 1
    changed = (on1 != (Z[d, k1] != 0)) or (on2 != (Z[d, k2] != 0))
    for n in range(N):
        a11, a12, a22, b1, b2 = _pair_terms(state, k1, k2, d, on1, on2, beta, n)
        det = a11 * a22 - a12 * a12
        # covariance A^-1 and mean A^-1 b; its Cholesky factor for the draw
        s11 = a22 / det
        s12 = -a12 / det
        s22 = a11 / det
        mu1 = s11 * b1 + s12 * b2
        mu2 = s12 * b1 + s22 * b2
        l11 = math.sqrt(s11)
        l21 = s12 / l11
        l22 = math.sqrt(max(s22 - l21 * l21, 0.0))
        e1 = rng.standard_normal()
        e2 = rng.standard_normal()
        X[k1, n] = mu1 + l11 * e1
        X[k2, n] = mu2 + l21 * e1 + l22 * e2
    Z[d, k1] = 1 if on1 else 0
    Z[d, k2] = 1 if on2 else 0
    if changed:
        counts[1] += 1
    return changed
