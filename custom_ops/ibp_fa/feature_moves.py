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

Cost per move: O(D N K) for the residual plus O(|R| N).
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
]

#: Entries of the counts array :func:`feature_birth_death_move` adds to.
FEATURE_MOVE_STATS = (
    "births_proposed",
    "births_accepted",
    "deaths_proposed",
    "deaths_accepted",
    "no_free_slot",
)


@njit_exact
def feature_move_log_ratio(log_prior_ratio, log_collapsed_ratio, log_q_reverse, log_q_forward):
    """Log Metropolis-Hastings ratio of a birth: the prior ratio, the collapsed
    likelihood ratio (already tempered) and the proposal's reverse over forward
    probability."""
    return log_prior_ratio + log_collapsed_ratio + log_q_reverse - log_q_forward


@njit_exact
def _collapsed(E, W, V, rows, n_rows, k, tau, beta, a, c):
    """Per column ``a_n`` and ``c_n`` (module docstring) into ``a``, ``c``; returns the
    collapsed log likelihood ratio of the feature against none."""
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
def feature_birth_death_move(rng, Y, W, Z, V, X, tau, alpha, beta, E, counts):
    """One birth or death proposal; ``Z`` and ``X`` updated in place when accepted.

    Parameters
    ----------
    rng : numpy.random.Generator
    Y, W : (D, N) float64
        Data and observation weights (1 observed, 0 missing).
    Z : (D, C) int8; V : (D, C) float64; X : (C, N) float64
    tau : (D,) float64
        Noise precisions.
    alpha : float
    beta : float
        Inverse temperature in [0, 1] of the likelihood.
    E : (D, N) float64
        Workspace for the residual (overwritten).
    counts : (5,) int64
        Added to: :data:`FEATURE_MOVE_STATS`.

    Returns
    -------
    bool
        Whether the state changed.
    """
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
        collapsed = _collapsed(E, W, V, rows, n_rows, k, tau, beta, a, c)
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
    collapsed = _collapsed(E, W, V, rows, n_rows, k, tau, beta, a, c)
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
def feature_birth_death_moves(rng, Y, W, Z, V, X, tau, alpha, beta, n_moves, E, counts):
    """``n_moves`` proposals of :func:`feature_birth_death_move` in turn; returns
    ``counts``."""
    for _ in range(n_moves):
        feature_birth_death_move(rng, Y, W, Z, V, X, tau, alpha, beta, E, counts)
    return counts
