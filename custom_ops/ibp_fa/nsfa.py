"""Numba sweep of Knowles' non-parametric sparse factor analysis sampler (NSFA).

Model (Knowles 2012 ch. 3; spec digest §2): ``Y (D x N) = G X + E`` with
``G = Z o V``, ``Z ~ IBP(alpha)`` over the ``D`` rows, slab ``V_dk ~ N(0, 1/lambda_k)``
(spike-and-slab loadings, Eq. 3.2), ``X_kn ~ N(0, 1)``, ``E_dn ~ N(0, 1/tau_d)`` with
``tau_d = psi_d^{-1}`` the noise precision. ``Z`` has ``C`` slots; a slot whose column
is all zero is unused and its ``V`` column, ``X`` row and ``lambda`` are prior draws
(they do not touch the likelihood). Missing entries of ``Y`` have weight ``W_dn = 0``.

:func:`nsfa_sweep` is Algorithm 1, with the digest's errata fixed:

for each row d
    1. for each column k with ``m_{-d,k} > 0``: Gibbs on ``Z_dk`` with ``g_dk``
       collapsed (Eqs 3.4-3.5), prior odds ``m_{-d,k} / (D - m_{-d,k})`` (Eq. 2.13;
       the printed Eq. 3.6 has ``D - 1 - m``), then ``g_dk | Z_dk = 1 ~ N(mu, 1/lam)``;
    2. one Metropolis-Hastings move on the row's singleton features (``m_{-d,k} = 0``):
       propose ``kappa*`` from ``J`` (Eq. 3.10: ``(1-pi) Poisson(f alpha/D) + pi 1(k=1)``;
       ``f = 1, pi = 0`` is the prior proposal of Eqs 3.8-3.9) with loadings from their
       prior, and accept with Eq. 3.11, where **both** the proposed and the current
       singletons' X rows are integrated out: ``P(Y_d | g) = prod_n N(E^_dn; 0,
       psi_d + |g|^2)`` (Eqs 3.13-3.15 by the matrix determinant lemma), ``E^`` the
       residual with every singleton off. Then the singletons' X rows are drawn from
       their collapsed posterior ``N(m_n, M^{-1})``, ``M = I + tau_d g g^T``.

then X | rest jointly per column (Eq. 3.17: one Cholesky of ``G^T T G + I`` per sweep,
or one per column with missing data), then the conjugate updates with the ½ the printed
rates omit: ``tau_d ~ Gamma(a + N_d/2, b + ½ sum_n E_dn^2)`` (or one isotropic tau),
``lambda_k ~ Gamma(a + m_k/2, b + ½ sum_d G_dk^2)`` (or one shared lambda),
``alpha ~ Gamma(a + K+, b + H_D)`` (Eq. 3.16). Finally the auxiliary slab values of
``Z_dk = 0`` entries are redrawn from their prior.

Cost per sweep: O(N D K) (Z, G and X; Knowles §3.2) plus O(D K^2 + K^3), and O(N C)
prior draws for the auxiliary values (the ``C - K`` unused slots' ``X`` rows, ``V`` off
``Z``); :func:`nsfa_sweeps` runs many sweeps in one call and draws those after the last
only (its docstring says why the law of the states it returns is unchanged).

**Tempering.** :func:`nsfa_sweep` samples the power posterior at inverse temperature
``beta`` (``beta = 1``: the posterior above; ``0``: the prior)::

    p_beta(Z, V, X, lambda, tau, alpha | Y)
        ∝ p(alpha) P(Z | alpha) p(lambda) p(V | lambda) p(X) p(tau) P(Y | G, X, tau)^beta,

with P(Y | G, X, tau) Eq. 3.3 over the observed entries. Each factor of Eq. 3.3 to the
power beta is, as a function of ``(G, X)``, a Gaussian of precision ``beta tau_d``::

    N(Y_dn; (G X)_dn, 1/tau_d)^beta = c(tau_d, beta) N(Y_dn; (G X)_dn, 1/(beta tau_d)),
    c(tau, beta) = (tau / 2 pi)^(beta/2) (2 pi / (beta tau))^(1/2),

and ``c`` does not involve ``G``, ``X`` or ``Z``. So every conditional of ``Z``, ``G``
and ``X`` given ``tau`` (the collapsed ones too: ``g_dk`` and the singletons' ``X*``
are integrated against their priors, which beta does not touch) is the untempered one
with ``tau_d`` replaced by ``beta tau_d``:

- Eqs 3.4-3.5 (``Z_dk``, ``g_dk`` collapsed): ``lambda = beta tau_d X_k. X_k.^T +
  lambda_k``, ``mu = beta tau_d X_k. E^_d.^T / lambda``; then ``g_dk ~ N(mu, 1/lambda)``.
  The prior odds (2.13) are unchanged.
- Eqs 3.11-3.15 (singletons, ``X*`` collapsed): the likelihood ratio ``a_l`` is that
  of ``prod_n N(E^_dn; 0, 1/(beta tau_d) + |g|^2)``, computed in precision form
  (:func:`collapsed_singleton_log_ratio`, 0 at ``beta = 0``); the proposal and prior
  ratio ``a_p`` are unchanged. The singletons' X rows: ``M = I + beta tau_d g g^T``,
  mean ``M^{-1} beta tau_d g E^_dn``.
- Eq. 3.17 (``X``): ``Lambda = G^T (beta T) G + I``, ``mu_n = Lambda^{-1} G^T (beta T)
  y_n`` with ``T = diag(tau)``.
- Noise (§3.2 (g), ½ restored): the factor of ``tau_d`` is ``Gamma(tau_d; a, b)
  tau_d^(beta N_d / 2) exp(-beta tau_d SS_d / 2)`` (``c`` above included), so ``tau_d ~
  Gamma(a + beta N_d / 2, b + beta SS_d / 2)`` (isotropic: ``a + beta sum_d N_d / 2``,
  ``b + beta SS / 2``).
- ``lambda`` (§3.2 (f)), ``alpha`` (Eq. 3.16) and the auxiliary slab values of ``Z_dk
  = 0`` entries enter no likelihood term: unchanged.

At ``beta = 0`` every likelihood term vanishes and the sweep is a Gibbs/MH sampler of
the prior.

The prior odds of a shared feature (:func:`shared_feature_log_odds`) and the taking out
of a row's singletons before their move (:func:`take_out_singletons`) are kernels of
their own: the tests' planted-bug twins are this sweep compiled with one of them
replaced (``tests/helpers/twin_kernels.py``): the printed Eq. 3.6 odds ``m/(D - 1 - m)``,
and the row's singletons removed before new ones are proposed (the invalid scheme of
§3.2 that under-counts).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "FIXED",
    "ISOTROPIC_OR_SHARED",
    "PER_ELEMENT",
    "FactorState",
    "SweepSettings",
    "SweepWork",
    "collapsed_singleton_log_ratio",
    "log_birth_proposal",
    "nsfa_sweep",
    "nsfa_sweeps",
    "redraws_auxiliary",
    "residual",
    "residual_into",
    "shared_feature_log_odds",
    "sweep_once",
    "sweep_work",
    "take_out_singletons",
]


#: Modes of the loading precision (``lam_mode``) and of the noise (``noise_mode``).
FIXED, ISOTROPIC_OR_SHARED, PER_ELEMENT = 0, 1, 2


class FactorState(NamedTuple):
    """The factor-analysis state the kernels read and update in place.

    ``Y, W`` (D, N) float64: data (any value where missing) and observation weights (1
    observed, 0 missing); ``Z`` (D, C) int8, ``V`` (D, C) float64, ``X`` (C, N) float64;
    ``lam`` (C,) float64 loading precisions (all equal when shared or fixed); ``tau``
    (D,) float64 noise precisions (all equal when isotropic or fixed); ``E`` (D, N)
    float64 the residual's workspace (overwritten).
    """

    Y: np.ndarray
    W: np.ndarray
    Z: np.ndarray
    V: np.ndarray
    X: np.ndarray
    lam: np.ndarray
    tau: np.ndarray
    E: np.ndarray


class SweepSettings(NamedTuple):
    """The options of :func:`nsfa_sweep` that stay fixed over a run.

    ``complete``: no missing entries (one Cholesky per sweep for X); ``hyper``
    float64[6]: ``a_lambda, b_lambda, a_tau, b_tau, a_alpha, b_alpha`` (shape, rate);
    ``lam_mode``, ``noise_mode``: :data:`FIXED`, :data:`ISOTROPIC_OR_SHARED` or
    :data:`PER_ELEMENT`; ``alpha_random``: whether ``alpha`` is sampled;
    ``birth_factor``, ``birth_one_prob``: Eq. 3.10's ``lambda`` and ``pi`` (1 and 0: the
    prior proposal).
    """

    complete: bool
    hyper: np.ndarray
    lam_mode: int
    noise_mode: int
    alpha_random: bool
    birth_factor: float
    birth_one_prob: float


@njit_exact
def residual(Y, W, Z, V, X):
    """``W o (Y - (Z o V) X)`` using the active columns only."""
    E = np.empty(Y.shape)
    residual_into(E, Y, W, Z, V, X)
    return E


@njit_exact
def residual_into(E, Y, W, Z, V, X):
    """:func:`residual` written into ``E`` (no allocation: a fresh D x N block per call
    costs page faults comparable to a sweep at D N ~ 1e5)."""
    D, N = Y.shape
    C = Z.shape[1]
    for d in range(D):
        for n in range(N):
            E[d, n] = Y[d, n]
        for k in range(C):
            if Z[d, k] != 0:
                g = V[d, k]
                for n in range(N):
                    E[d, n] -= g * X[k, n]
        for n in range(N):
            E[d, n] *= W[d, n]


@njit_exact
def collapsed_singleton_log_ratio(n_obs, sum_sq, precision, g_sq):
    """``sum_n [log N(E^_n; 0, 1/precision + |g|^2) - log N(E^_n; 0, 1/precision)]``
    over ``n_obs`` observed entries with ``sum_sq = sum_n E^_n^2``: the log-likelihood of
    the row's singleton loadings ``g`` (their X rows integrated out) against none, Eqs
    3.13-3.15 in closed form (matrix determinant lemma), in precision form::

        -n/2 log(1 + precision |g|^2) + sum_sq precision^2 |g|^2 / (2 (1 + precision |g|^2))

    ``precision = beta tau_d`` (module docstring, Tempering); 0 at ``precision = 0``."""
    c = precision * g_sq
    return -0.5 * n_obs * math.log1p(c) + 0.5 * sum_sq * precision * c / (1.0 + c)


@njit_exact
def _log_poisson(k, rate):
    if rate <= 0.0:
        return 0.0 if k == 0 else -np.inf
    return k * math.log(rate) - rate - math.lgamma(k + 1.0)


@njit_exact
def log_birth_proposal(k, rate, one_prob):
    """``log J(kappa)`` of Eq. 3.10: ``(1 - pi) Poisson(kappa; rate) + pi 1(kappa = 1)``."""
    p = (1.0 - one_prob) * math.exp(_log_poisson(k, rate))
    if k == 1:
        p += one_prob
    return math.log(p) if p > 0.0 else -np.inf


@njit_exact
def _draw_birth_count(rng, rate, one_prob):
    if one_prob > 0.0 and rng.random() < one_prob:
        return 1
    return rng.poisson(rate)


@njit_exact
def _draw_singleton_rows(rng, X, slots, n_slots, g, tau, Ehat_d, W_d):
    """X rows of the row's singletons from their collapsed posterior
    ``N(M^{-1} tau g e_n, M^{-1})``, ``M = I + tau g g^T`` (prior where e_n is missing),
    ``tau`` the row's tempered noise precision ``beta tau_d``.
    ``M^{-1/2} = I + (1/sqrt(1 + c) - 1) u u^T`` with ``u = g/|g|``, ``c = tau |g|^2``."""
    N = X.shape[1]
    g_sq = 0.0
    for j in range(n_slots):
        g_sq += g[j] * g[j]
    c = tau * g_sq
    shrink = 1.0 / math.sqrt(1.0 + c) - 1.0
    norm = math.sqrt(g_sq) if g_sq > 0.0 else 1.0
    eps = np.empty(n_slots)
    for n in range(N):
        u_eps = 0.0
        for j in range(n_slots):
            eps[j] = rng.standard_normal()
            u_eps += g[j] / norm * eps[j]
        mean_scale = tau * Ehat_d[n] / (1.0 + c) if W_d[n] != 0.0 else 0.0
        for j in range(n_slots):
            x = eps[j]
            if W_d[n] != 0.0:
                x += shrink * (g[j] / norm) * u_eps
            X[slots[j], n] = mean_scale * g[j] + x


@njit_exact
def _cholesky_solve_draw(rng, Lam, B, out_cols, X, rows):
    """``X[rows, n] ~ N(Lam^{-1} B[:, n], Lam^{-1})`` for the columns ``out_cols``."""
    K = Lam.shape[0]
    L = np.linalg.cholesky(Lam)
    tmp = np.empty(K)
    for c in range(out_cols.shape[0]):
        n = out_cols[c]
        # forward: L y = b ; then back: L^T x = y + eps  (x ~ N(Lam^-1 b, Lam^-1))
        for i in range(K):
            s = B[i, c]
            for j in range(i):
                s -= L[i, j] * tmp[j]
            tmp[i] = s / L[i, i]
        for i in range(K):
            tmp[i] += rng.standard_normal()
        for i in range(K - 1, -1, -1):
            s = tmp[i]
            for j in range(i + 1, K):
                s -= L[j, i] * tmp[j]
            tmp[i] = s / L[i, i]
        for i in range(K):
            X[rows[i], n] = tmp[i]


@njit_exact
def shared_feature_log_odds(m_minus, D):
    """Log prior odds of ``Z_dk = 1`` for a feature the other rows use ``m_minus`` times
    (Eq. 3.6 with the count corrected: ``m / (D - m)``); infinite when every other row
    uses it."""
    if D - m_minus <= 0:
        return np.inf
    return math.log(m_minus / (D - m_minus))


@njit_exact
def take_out_singletons(d, state, m, S, Ehat):
    """Row ``d``'s singletons (the features only it uses, ``m`` the features' row
    counts) into ``S``, and ``Ehat`` the residual ``state.E`` of row ``d`` without them
    (Eq. 3.7: their ``X`` rows are integrated out of the move on their number). Returns
    ``(kappa, sum of their squared loadings)``."""
    Z, V, X, W, E = state.Z, state.V, state.X, state.W, state.E
    N = E.shape[1]
    kappa = 0
    g_sq = 0.0
    for k in range(Z.shape[1]):
        if Z[d, k] != 0 and m[k] == 1:
            S[kappa] = k
            kappa += 1
            g_sq += V[d, k] * V[d, k]
    for n in range(N):
        Ehat[n] = E[d, n]
    for j in range(kappa):
        k = S[j]
        for n in range(N):
            Ehat[n] += W[d, n] * V[d, k] * X[k, n]
    return kappa, g_sq


class SweepWork(NamedTuple):
    """The sweep's buffers, allocated once per :func:`nsfa_sweeps` call.

    ``m`` (C,) int64 the features' row counts; ``n_obs`` (D,) float64 the observed
    entries per row (fixed by ``W``); ``S`` (C,) int64 a row's singleton slots;
    ``g_new``, ``lam_new``, ``gs`` (C,) float64 proposed and current singleton loadings
    and precisions; ``Ehat`` (N,) float64 a row's residual without its singletons;
    ``active`` (C,) int64 the used slots.
    """

    m: np.ndarray
    n_obs: np.ndarray
    S: np.ndarray
    g_new: np.ndarray
    lam_new: np.ndarray
    gs: np.ndarray
    Ehat: np.ndarray
    active: np.ndarray


@njit_exact
def sweep_work(state):
    """Fresh :class:`SweepWork` for ``state`` (``n_obs`` filled from ``state.W``)."""
    D, N = state.Y.shape
    C = state.Z.shape[1]
    n_obs = np.zeros(D)
    for d in range(D):
        for n in range(N):
            n_obs[d] += state.W[d, n]
    return SweepWork(np.zeros(C, dtype=np.int64), n_obs, np.empty(C, dtype=np.int64),
                     np.empty(C), np.empty(C), np.empty(C), np.empty(N),
                     np.empty(C, dtype=np.int64))


@njit_exact
def nsfa_sweep(rng, state, beta, alpha, settings):
    """One NSFA sweep of the power posterior at ``beta`` (module docstring), updating
    ``state.Z, V, X, lam, tau`` in place, the auxiliary values (unused slots' ``X`` rows,
    ``V_dk`` where ``Z_dk = 0``) drawn from their prior at its end.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : FactorState
        The data, the state and the residual's workspace (overwritten).
    beta : float
        Inverse temperature in [0, 1] of the likelihood (module docstring, Tempering).
    alpha : float
    settings : SweepSettings
        The hyperparameters, the modes of the precisions, whether ``alpha`` is random,
        the singleton proposal (Eq. 3.10) and whether the data are complete.

    Returns
    -------
    (alpha, births_accepted, birth_proposals, capacity_rejections, net_change)
    """
    residual_into(state.E, state.Y, state.W, state.Z, state.V, state.X)
    return sweep_once(rng, state, beta, alpha, settings, sweep_work(state), True)


@njit_exact
def redraws_auxiliary(i, n_sweeps):
    """Whether sweep ``i`` of :func:`nsfa_sweeps`'s ``n_sweeps`` ends with the auxiliary
    values drawn from their prior: the last one."""
    return i == n_sweeps - 1


@njit_exact
def nsfa_sweeps(rng, state, beta, alpha, settings, n_sweeps):
    """``n_sweeps`` NSFA sweeps (:func:`nsfa_sweep`) in one call, the auxiliary values
    drawn from their prior after the last one only.

    The auxiliary values are the ``X`` rows of unused slots and the ``V_dk`` of ``Z_dk =
    0`` entries: their conditional is their prior (they enter no likelihood term, and the
    ``lambda`` update has them integrated out), and no update of the sweep reads them
    (the ``Z_dk`` update integrates ``g_dk`` out and draws it anew, a new singleton's
    loadings and ``X`` row are drawn from the proposal and the collapsed posterior, ``X``
    of Eq. 3.17 and the residual use the used slots only). So the chain of every other
    variable is the same Markov chain whether they are redrawn after every sweep or
    after the last, and after the last they have their exact conditional: the states
    returned have the law of :func:`nsfa_sweep` applied ``n_sweeps`` times, at a fraction
    of the cost when most slots are unused (each unused slot's ``X`` row is ``N``
    normal draws per sweep). The whole-feature moves read the unused slots' ``V``
    (:mod:`custom_ops.ibp_fa.feature_moves`): interleaved with them, call
    :func:`nsfa_sweep`.

    Returns
    -------
    (alpha, births_accepted, birth_proposals, capacity_rejections, net_change), summed
    over the sweeps (``alpha`` the last).
    """
    work = sweep_work(state)
    residual_into(state.E, state.Y, state.W, state.Z, state.V, state.X)
    accepted = 0
    proposals = 0
    overflow = 0
    net = 0
    for i in range(n_sweeps):
        alpha, a, p, o, c = sweep_once(rng, state, beta, alpha, settings, work,
                                       redraws_auxiliary(i, n_sweeps))
        accepted += a
        proposals += p
        overflow += o
        net += c
    return alpha, accepted, proposals, overflow, net


@njit_exact
def sweep_once(rng, state, beta, alpha, settings, work, auxiliary):
    """The body of :func:`nsfa_sweep` on the buffers ``work`` (:class:`SweepWork`);
    ``auxiliary``: whether the auxiliary values are drawn from their prior at its end
    (:func:`nsfa_sweeps` says when they need not be). ``state.E`` must hold the residual
    (:func:`residual_into`) on entry, and holds the new state's on return (the updates
    after ``X`` change neither ``G`` where ``Z = 1`` nor ``X``)."""
    Y, W, Z, V, X, lam, tau, E = state
    (complete, hyper, lam_mode, noise_mode, alpha_random, birth_factor, birth_one_prob) = settings
    D, N = Y.shape
    C = Z.shape[1]
    a_lam, b_lam, a_tau, b_tau, a_alpha, b_alpha = (hyper[0], hyper[1], hyper[2], hyper[3],
                                                    hyper[4], hyper[5])
    m, n_obs, S, g_new, lam_new, gs, Ehat, active = work
    for k in range(C):
        m[k] = 0
    for d in range(D):
        for k in range(C):
            if Z[d, k] != 0:
                m[k] += 1
    gamma = alpha / D
    accepted = 0
    proposals = 0
    overflow = 0
    net = 0
    for d in range(D):
        # the likelihood's precision at beta (module docstring, Tempering)
        t = beta * tau[d]
        # 1. shared columns: Z_dk with g_dk collapsed (Eqs 3.4-3.5, 2.13)
        for k in range(C):
            m_minus = m[k] - (1 if Z[d, k] != 0 else 0)
            if m_minus <= 0:
                continue
            if Z[d, k] != 0:
                g_old = V[d, k]
                for n in range(N):
                    E[d, n] += W[d, n] * g_old * X[k, n]
            xx = 0.0
            xe = 0.0
            for n in range(N):
                w = W[d, n]
                xx += w * X[k, n] * X[k, n]
                xe += X[k, n] * E[d, n]
            prec = t * xx + lam[k]
            mu = t * xe / prec
            log_odds = (0.5 * math.log(lam[k] / prec) + 0.5 * prec * mu * mu
                        + shared_feature_log_odds(m_minus, D))
            if log_odds > 0:
                p_on = 1.0 / (1.0 + math.exp(-log_odds))
            else:
                e = math.exp(log_odds)
                p_on = e / (1.0 + e)
            if rng.random() < p_on:
                g = mu + rng.standard_normal() / math.sqrt(prec)
                V[d, k] = g
                if Z[d, k] == 0:
                    Z[d, k] = 1
                    m[k] += 1
                for n in range(N):
                    E[d, n] -= W[d, n] * g * X[k, n]
            else:
                if Z[d, k] != 0:
                    Z[d, k] = 0
                    m[k] -= 1
        # 2. singletons: MH on kappa_d with their X rows integrated out (Eqs 3.7-3.15)
        kappa, g_sq = take_out_singletons(d, state, m, S, Ehat)
        sum_sq = 0.0
        for n in range(N):
            sum_sq += Ehat[n] * Ehat[n]
        unused = 0
        for k in range(C):
            if m[k] == 0:
                unused += 1
        rate = birth_factor * gamma
        kappa_new = _draw_birth_count(rng, rate, birth_one_prob)
        proposals += 1
        if kappa_new > unused + kappa:
            overflow += 1
        else:
            g_sq_new = 0.0
            for j in range(kappa_new):
                if lam_mode == PER_ELEMENT:
                    lam_new[j] = rng.gamma(a_lam, 1.0 / b_lam)
                else:
                    lam_new[j] = lam[0]
                g_new[j] = rng.standard_normal() / math.sqrt(lam_new[j])
                g_sq_new += g_new[j] * g_new[j]
            log_a = (collapsed_singleton_log_ratio(n_obs[d], sum_sq, t, g_sq_new)
                     - collapsed_singleton_log_ratio(n_obs[d], sum_sq, t, g_sq)
                     + _log_poisson(kappa_new, gamma) - _log_poisson(kappa, gamma)
                     + log_birth_proposal(kappa, rate, birth_one_prob)
                     - log_birth_proposal(kappa_new, rate, birth_one_prob))
            if log_a >= 0.0 or rng.random() < math.exp(log_a):
                accepted += 1
                net += kappa_new - kappa
                for j in range(kappa):
                    Z[d, S[j]] = 0
                    m[S[j]] = 0
                filled = 0
                for k in range(C):
                    if filled == kappa_new:
                        break
                    if m[k] == 0:
                        Z[d, k] = 1
                        m[k] = 1
                        V[d, k] = g_new[filled]
                        if lam_mode == PER_ELEMENT:
                            lam[k] = lam_new[filled]
                        S[filled] = k
                        filled += 1
                kappa = kappa_new
        # the row's singletons' X rows from their collapsed posterior, then the residual
        for j in range(kappa):
            gs[j] = V[d, S[j]]
        if kappa > 0:
            _draw_singleton_rows(rng, X, S, kappa, gs, t, Ehat, W[d])
        for n in range(N):
            E[d, n] = Ehat[n]
        for j in range(kappa):
            k = S[j]
            for n in range(N):
                E[d, n] -= W[d, n] * gs[j] * X[k, n]

    # 3. X | rest (Eq. 3.17) with precisions beta tau_d, prior rows for unused slots
    K = 0
    for k in range(C):
        if m[k] > 0:
            active[K] = k
            K += 1
        elif auxiliary:
            for n in range(N):
                X[k, n] = rng.standard_normal()
    if K > 0:
        G = np.zeros((D, K))
        for d in range(D):
            for i in range(K):
                if Z[d, active[i]] != 0:
                    G[d, i] = V[d, active[i]]
        if complete:
            Lam = np.zeros((K, K))
            for d in range(D):
                for i in range(K):
                    gi = G[d, i] * beta * tau[d]
                    if gi == 0.0:
                        continue
                    for j in range(K):
                        Lam[i, j] += gi * G[d, j]
            for i in range(K):
                Lam[i, i] += 1.0
            B = np.zeros((K, N))
            for d in range(D):
                for i in range(K):
                    gi = G[d, i] * beta * tau[d]
                    if gi == 0.0:
                        continue
                    for n in range(N):
                        B[i, n] += gi * Y[d, n]
            _cholesky_solve_draw(rng, Lam, B, np.arange(N), X, active)
        else:
            one = np.empty(1, dtype=np.int64)
            Bn = np.empty((K, 1))
            for n in range(N):
                Lam = np.zeros((K, K))
                for i in range(K):
                    Lam[i, i] = 1.0
                    Bn[i, 0] = 0.0
                for d in range(D):
                    if W[d, n] == 0.0:
                        continue
                    for i in range(K):
                        gi = G[d, i] * beta * tau[d]
                        if gi == 0.0:
                            continue
                        Bn[i, 0] += gi * Y[d, n]
                        for j in range(K):
                            Lam[i, j] += gi * G[d, j]
                one[0] = n
                _cholesky_solve_draw(rng, Lam, Bn, one, X, active)
    residual_into(E, Y, W, Z, V, X)

    # 4. conjugate updates (rates with the ½ the thesis omits; the noise's likelihood
    # factors to the power beta)
    if noise_mode == PER_ELEMENT:
        for d in range(D):
            ss = 0.0
            for n in range(N):
                ss += E[d, n] * E[d, n]
            tau[d] = rng.gamma(a_tau + 0.5 * beta * n_obs[d],
                               1.0 / (b_tau + 0.5 * beta * ss))
    elif noise_mode == ISOTROPIC_OR_SHARED:
        ss = 0.0
        total = 0.0
        for d in range(D):
            total += n_obs[d]
            for n in range(N):
                ss += E[d, n] * E[d, n]
        value = rng.gamma(a_tau + 0.5 * beta * total, 1.0 / (b_tau + 0.5 * beta * ss))
        for d in range(D):
            tau[d] = value
    if lam_mode == PER_ELEMENT:
        for k in range(C):
            ss = 0.0
            for d in range(D):
                if Z[d, k] != 0:
                    ss += V[d, k] * V[d, k]
            lam[k] = rng.gamma(a_lam + 0.5 * m[k], 1.0 / (b_lam + 0.5 * ss))
    elif lam_mode == ISOTROPIC_OR_SHARED:
        ss = 0.0
        total = 0.0
        for k in range(C):
            total += m[k]
            for d in range(D):
                if Z[d, k] != 0:
                    ss += V[d, k] * V[d, k]
        value = rng.gamma(a_lam + 0.5 * total, 1.0 / (b_lam + 0.5 * ss))
        for k in range(C):
            lam[k] = value
    # auxiliary slab values: their prior given the (new) precisions
    if auxiliary:
        for d in range(D):
            for k in range(C):
                if Z[d, k] == 0:
                    V[d, k] = rng.standard_normal() / math.sqrt(lam[k])
    if alpha_random:
        H = 0.0
        for j in range(1, D + 1):
            H += 1.0 / j
        alpha = rng.gamma(a_alpha + K, 1.0 / (b_alpha + H))
    return alpha, accepted, proposals, overflow, net
