"""Kalman filtering and smoothing of a linear-Gaussian state-space model (Numba).

The model (Ghahramani & Roweis 1999, "Hidden Markov Models/Linear Dynamical Systems";
"LDS Pseudocode")::

    x_1 ~ N(m0, P0),   x_t = A x_{t-1} + w_t,  w_t ~ N(0, Q),
    y_t = C x_t + v_t,  v_t ~ N(0, R),         t = 1..T,

with ``x_t`` of dimension ``n`` and ``y_t`` of dimension ``p``. A NaN entry of ``y`` is
missing: step ``t`` conditions on the observed entries ``o`` of ``y_t`` only, through
the rows ``C_o`` and the block ``R_oo`` (the marginal of the observed entries); a step
with nothing observed is a pure prediction.

Kernels
-------
``kalman_filter_kernel(y, A, C, Q, R, m0, P0)``
    The seed's filter, ``rho_t = N(y_t; C x+, C V+ C' + R)``, with the covariance update
    in Joseph's form ``V_t = (I - K C) V+ (I - K C)' + K R K'`` and symmetrised, which
    stays positive semi-definite where ``(I - K C) V+`` loses symmetry to round-off.
    Returns the per-step log-likelihoods, the filtered and the predicted moments.
``rts_smoother_kernel(A, filtered_mean, filtered_cov, predicted_mean, predicted_cov)``
    The seed's backward pass, ``J = V_t A' (V+)^{-1}``,
    ``x^_t = x_t + J (x^_{t+1} - A x_t)``, ``V^_t = V_t + J (V^_{t+1} - V+) J'``, and the
    lag-one cross covariances ``Cov(x_{t+1}, x_t | y) = V^_{t+1} J'`` (the seed's
    ``V^_{t+1,t}``) that EM and the gradient need.
``kalman_log_likelihood_kernel(y, A, C, Q, R, m0, P0)``
    The filter's total log-likelihood, moments not stored.
``kalman_value_and_gradient_kernel(y, A, C, Q, R, m0, P0)``
    The log-likelihood and its gradient in every input by Fisher's identity,
    ``d log p(y) / d theta = E[d log p(x, y) / d theta | y]``: the complete-data
    log-density is a sum of Gaussian terms whose derivatives are linear in the smoothed
    first and second moments, so one filter pass forward and one smoother pass backward
    (the cost of about two filters) give it. ``Q``, ``R`` and ``P0`` are treated as
    symmetric (the gradient returned is the symmetric one) and must be positive definite.

The kernels work in place on buffers allocated once per call, in scalar loops over the
small blocks: at state-space dimensions a NumPy product per block costs more in call and
allocation overhead than its arithmetic. The covariance recursions do not depend on the
values of ``y``; once they reach their fixed point in floating point, the filter and the
smoother reuse a step's covariance arithmetic exactly instead of repeating it (see
:func:`_filter_into` and :func:`_smoother_step`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower_into, spd_inverse

__all__ = [
    "kalman_filter_kernel",
    "kalman_log_likelihood_kernel",
    "kalman_value_and_gradient_kernel",
    "rts_smoother_kernel",
]

LOG_2PI = math.log(2.0 * math.pi)


class _Model(NamedTuple):
    """The model's arrays ``(A, C, Q, R, m0, P0)``, or a gradient in each of them."""

    A: np.ndarray
    C: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    m0: np.ndarray
    P0: np.ndarray


class _FilterMoments(NamedTuple):
    """The filtered (``mf``, ``Pf``) and predicted (``mp``, ``Pp``) moments over the
    steps (``T x n`` and ``T x n x n``)."""

    mf: np.ndarray
    Pf: np.ndarray
    mp: np.ndarray
    Pp: np.ndarray


class _SmoothedPair(NamedTuple):
    """The smoothed moments of step ``t + 1`` (read) and of step ``t`` (written)."""

    ms_next: np.ndarray
    Ps_next: np.ndarray
    ms: np.ndarray
    Ps: np.ndarray


class _SmootherWork(NamedTuple):
    """The smoother's buffers (``n x n`` but ``row``): the gain ``J`` and the cross
    covariance ``X``, kept from step to step, and the scratch ``W``, ``L``, ``row``."""

    J: np.ndarray
    X: np.ndarray
    W: np.ndarray
    L: np.ndarray
    row: np.ndarray


@njit_exact
def _symmetrise(M):
    n = M.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * (M[i, j] + M[j, i])
    return out


@njit_exact
def _cholesky_solve_row(L, k, b, out):
    """``out[:k] = b[:k] (L L')^{-1}`` for a row ``b`` (forward, then back substitution)."""
    for a in range(k):
        s = b[a]
        for m in range(a):
            s -= L[a, m] * out[m]
        out[a] = s / L[a, a]
    for a in range(k - 1, -1, -1):
        s = out[a]
        for m in range(a + 1, k):
            s -= L[m, a] * out[m]
        out[a] = s / L[a, a]


@njit_exact
def _observed(y, t, obs):
    """The number ``k`` of observed entries of ``y[t]``, their columns in ``obs[:k]``."""
    k = 0
    for j in range(y.shape[1]):
        if not np.isnan(y[t, j]):
            obs[k] = j
            k += 1
    return k


@njit_exact
def _same(X, Y):
    """Whether two equally shaped 2-D arrays are equal entry by entry."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if X[i, j] != Y[i, j]:
                return False
    return True


@njit_exact
def _filter_into(y, model, log_lik, moments, store):
    """The filter of :func:`kalman_filter_kernel` for the :class:`_Model` ``model``,
    writing ``log_lik`` (and, when ``store``, the :class:`_FilterMoments` ``moments``) in
    place; returns the step whose innovation covariance is not positive definite, or
    ``T``.

    The covariances do not depend on the values of ``y``, only on which entries are
    observed. Once the predicted covariance of step ``t + 1`` equals that of step ``t``
    entry for entry (the Riccati recursion has reached its fixed point in floating
    point), every step with the same observed entries repeats step ``t``'s covariance
    arithmetic exactly, so its gain, innovation factor and covariances are reused rather
    than recomputed: the same numbers, at the cost of the mean update alone.
    """
    A, C, Q, R, m0, P0 = model
    mf, Pf, mp, Pp = moments
    T, p = y.shape
    n = A.shape[0]
    x = np.empty(n)
    xn = np.empty(n)
    Vp = np.empty((n, n))
    Vf = np.empty((n, n))
    W = np.empty((n, n))
    IKC = np.empty((n, n))
    obs = np.empty(p, dtype=np.int64)
    obs_prev = np.empty(p, dtype=np.int64)
    v = np.empty(p)
    w = np.empty(p)
    row = np.empty(p)
    S = np.empty((p, p))
    L = np.zeros((p, p))
    VCt = np.empty((n, p))
    K = np.empty((n, p))
    KR = np.empty((n, p))
    for i in range(n):
        x[i] = m0[i]
        for j in range(n):
            Vp[i, j] = 0.5 * (P0[i, j] + P0[j, i])
    fixed = False  # the last computed step left Vp unchanged
    k_prev = -1
    logdet = 0.0
    for t in range(T):
        if store:
            for i in range(n):
                mp[t, i] = x[i]
                for j in range(n):
                    Pp[t, i, j] = Vp[i, j]
        k = _observed(y, t, obs)
        reuse = fixed and k == k_prev
        if reuse:
            for a in range(k):
                if obs[a] != obs_prev[a]:
                    reuse = False
        if k > 0:
            # innovation v = y_o - C_o x
            for a in range(k):
                s = y[t, obs[a]]
                for j in range(n):
                    s -= C[obs[a], j] * x[j]
                v[a] = s
            if not reuse:
                for i in range(n):
                    for a in range(k):
                        s = 0.0
                        for j in range(n):
                            s += Vp[i, j] * C[obs[a], j]
                        VCt[i, a] = s
                # S = sym(C_o V C_o' + R_oo)
                for a in range(k):
                    for b in range(a + 1):
                        s1 = 0.0
                        s2 = 0.0
                        for j in range(n):
                            s1 += C[obs[a], j] * VCt[j, b]
                            s2 += C[obs[b], j] * VCt[j, a]
                        sab = 0.5 * (s1 + s2 + R[obs[a], obs[b]] + R[obs[b], obs[a]])
                        S[a, b] = sab
                        S[b, a] = sab
                if not cholesky_lower_into(S, k, L):
                    return t
                logdet = 0.0
                for a in range(k):
                    logdet += 2.0 * math.log(L[a, a])
                # K = V C_o' S^{-1}, row by row
                for i in range(n):
                    for a in range(k):
                        row[a] = VCt[i, a]
                    _cholesky_solve_row(L, k, row, w)
                    for a in range(k):
                        K[i, a] = w[a]
                # Joseph's form: Vf = sym((I - K C_o) Vp (I - K C_o)' + K R_oo K')
                for i in range(n):
                    for j in range(n):
                        s = 1.0 if i == j else 0.0
                        for a in range(k):
                            s -= K[i, a] * C[obs[a], j]
                        IKC[i, j] = s
                    for b in range(k):
                        s = 0.0
                        for a in range(k):
                            s += K[i, a] * R[obs[a], obs[b]]
                        KR[i, b] = s
                for i in range(n):
                    for j in range(n):
                        s = 0.0
                        for m in range(n):
                            s += IKC[i, m] * Vp[m, j]
                        W[i, j] = s
                for i in range(n):
                    for j in range(i + 1):
                        s1 = 0.0
                        s2 = 0.0
                        for m in range(n):
                            s1 += W[i, m] * IKC[j, m]
                            s2 += W[j, m] * IKC[i, m]
                        for b in range(k):
                            s1 += KR[i, b] * K[j, b]
                            s2 += KR[j, b] * K[i, b]
                        vij = 0.5 * (s1 + s2)
                        Vf[i, j] = vij
                        Vf[j, i] = vij
            # w = S^{-1} v
            _cholesky_solve_row(L, k, v, w)
            quad = 0.0
            for a in range(k):
                quad += v[a] * w[a]
            log_lik[t] = -0.5 * (k * LOG_2PI + logdet + quad)
            for i in range(n):
                s = 0.0
                for a in range(k):
                    s += K[i, a] * v[a]
                x[i] += s
        elif not reuse:
            for i in range(n):
                for j in range(n):
                    Vf[i, j] = Vp[i, j]
        if store:
            for i in range(n):
                mf[t, i] = x[i]
                for j in range(n):
                    Pf[t, i, j] = Vf[i, j]
        # predict: x <- A x, Vp <- sym(A Vf A' + Q)
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += A[i, j] * x[j]
            xn[i] = s
        for i in range(n):
            x[i] = xn[i]
        if not reuse:
            for i in range(n):
                for j in range(n):
                    s = 0.0
                    for m in range(n):
                        s += A[i, m] * Vf[m, j]
                    W[i, j] = s
            fixed = True
            for i in range(n):
                for j in range(i + 1):
                    s1 = 0.0
                    s2 = 0.0
                    for m in range(n):
                        s1 += W[i, m] * A[j, m]
                        s2 += W[j, m] * A[i, m]
                    vij = 0.5 * (s1 + s2 + Q[i, j] + Q[j, i])
                    if vij != Vp[i, j] or vij != Vp[j, i]:
                        fixed = False
                    Vp[i, j] = vij
                    Vp[j, i] = vij
        k_prev = k
        for a in range(k):
            obs_prev[a] = obs[a]
    return T


@njit_exact
def kalman_filter_kernel(y, A, C, Q, R, m0, P0):
    """Filter ``y`` (``T x p``, NaN missing); returns ``(log_lik, mf, Pf, mp, Pp)``.

    ``log_lik[t]`` is ``log p(y_t | y_{1:t-1})`` (0 when nothing is observed, NaN from
    the first step whose innovation covariance is not positive definite); ``mf, Pf`` the
    filtered and ``mp, Pp`` the predicted (one step ahead) moments of ``x_t``.
    """
    T = y.shape[0]
    n = A.shape[0]
    log_lik = np.zeros(T)
    mf = np.zeros((T, n))
    Pf = np.zeros((T, n, n))
    mp = np.zeros((T, n))
    Pp = np.zeros((T, n, n))
    t = _filter_into(y, _Model(A, C, Q, R, m0, P0), log_lik, _FilterMoments(mf, Pf, mp, Pp), True)
    for u in range(t, T):
        log_lik[u] = np.nan
        for i in range(n):
            mf[u, i] = np.nan
            if u > t:
                mp[u, i] = np.nan
            for j in range(n):
                Pf[u, i, j] = np.nan
                if u > t:
                    Pp[u, i, j] = np.nan
    return log_lik, mf, Pf, mp, Pp


@njit_exact
def kalman_log_likelihood_kernel(y, A, C, Q, R, m0, P0):
    """``log p(y) = sum_t log p(y_t | y_{1:t-1})`` by the filter of
    :func:`kalman_filter_kernel` without storing its moments; NaN when an innovation
    covariance is not positive definite."""
    T = y.shape[0]
    n = A.shape[0]
    log_lik = np.zeros(T)
    empty = _FilterMoments(
        np.empty((0, n)), np.empty((0, n, n)), np.empty((0, n)), np.empty((0, n, n))
    )
    t = _filter_into(y, _Model(A, C, Q, R, m0, P0), log_lik, empty, False)
    if t < T:
        return np.nan
    total = 0.0
    for u in range(T):
        total += log_lik[u]
    return total


@njit_exact
def _smoother_step(A, moments, t, pair, work, reuse_gain, reuse_cov):
    """One step ``t`` of the RTS recursion (see :func:`rts_smoother_kernel`) from the
    filter's :class:`_FilterMoments`: writes ``pair.ms`` and ``pair.Ps`` (the
    :class:`_SmoothedPair`), the gain ``work.J`` and the cross covariance
    ``work.X = Ps_next J'`` (the :class:`_SmootherWork`).

    ``reuse_gain``: ``Pf[t]`` and ``Pp[t + 1]`` equal the previous step's, so ``J``
    (still in its buffer) is kept; ``reuse_cov``: ``Ps_next`` equals the previous step's
    too, so ``Ps_t`` equals ``Ps_next`` and ``X`` is kept (the same arithmetic on the
    same numbers).
    """
    mf_t = moments.mf[t]
    Pf_t = moments.Pf[t]
    mp_next = moments.mp[t + 1]
    Pp_next = moments.Pp[t + 1]
    ms_next, Ps_next, ms_t, Ps_t = pair
    J, X, W, L, row = work
    n = A.shape[0]
    if not reuse_gain:
        if not cholesky_lower_into(Pp_next, n, L):
            J[:, :] = np.nan
        else:
            # row i of J = (Pf_t A')[i] Pp_next^{-1} (Pf_t and Pp_next symmetric)
            for i in range(n):
                for m in range(n):
                    s = 0.0
                    for q in range(n):
                        s += Pf_t[i, q] * A[m, q]
                    row[m] = s
                _cholesky_solve_row(L, n, row, W[i])
                for m in range(n):
                    J[i, m] = W[i, m]
    for i in range(n):
        s = mf_t[i]
        for j in range(n):
            s += J[i, j] * (ms_next[j] - mp_next[j])
        ms_t[i] = s
    if reuse_cov:
        for i in range(n):
            for j in range(n):
                Ps_t[i, j] = Ps_next[i, j]
        return
    # Ps_t = sym(Pf_t + J (Ps_next - Pp_next) J')
    for i in range(n):
        for j in range(n):
            s = 0.0
            for m in range(n):
                s += J[i, m] * (Ps_next[m, j] - Pp_next[m, j])
            W[i, j] = s
    for i in range(n):
        for j in range(i + 1):
            s1 = 0.0
            s2 = 0.0
            for m in range(n):
                s1 += W[i, m] * J[j, m]
                s2 += W[j, m] * J[i, m]
            pij = 0.5 * (Pf_t[i, j] + Pf_t[j, i] + s1 + s2)
            Ps_t[i, j] = pij
            Ps_t[j, i] = pij
    for i in range(n):
        for j in range(n):
            s = 0.0
            for m in range(n):
                s += Ps_next[i, m] * J[j, m]
            X[i, j] = s


@njit_exact
def rts_smoother_kernel(A, mf, Pf, mp, Pp):
    """Smoothed moments ``(ms, Ps, cross)`` from the filter's output;
    ``cross[t] = Cov(x_{t+1}, x_t | y_{1:T})`` for ``t < T - 1``.

    Where the filter's covariances repeat (its fixed point, see :func:`_filter_into`)
    the gain and, once they repeat too, the smoothed covariances are reused exactly."""
    T, n = mf.shape
    ms = np.zeros((T, n))
    Ps = np.zeros((T, n, n))
    cross = np.zeros((max(T - 1, 0), n, n))
    ms[T - 1] = mf[T - 1]
    Ps[T - 1] = Pf[T - 1]
    moments = _FilterMoments(mf, Pf, mp, Pp)
    work = _SmootherWork(
        np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.zeros((n, n)), np.empty(n)
    )
    for t in range(T - 2, -1, -1):
        reuse_gain = t < T - 2 and _same(Pf[t], Pf[t + 1]) and _same(Pp[t + 1], Pp[t + 2])
        reuse_cov = reuse_gain and _same(Ps[t + 1], Ps[t + 2])
        pair = _SmoothedPair(ms[t + 1], Ps[t + 1], ms[t], Ps[t])
        _smoother_step(A, moments, t, pair, work, reuse_gain, reuse_cov)
        cross[t] = work.X
    return ms, Ps, cross


@njit_exact
def _emission_block_gradient(y, t, o, model, ms, Ps, g_y, grad):
    """Add step ``t``'s term of the gradient in ``y`` (into ``g_y``), ``C`` and ``R``
    (into ``grad.C``, ``grad.R`` of the :class:`_Model` ``grad``) when only the entries
    ``o`` of ``y_t`` are observed: ``log N(y_o; C_o x, R_oo)`` in expectation, ``C`` and
    ``R`` those of ``model``."""
    C = model.C
    R = model.R
    g_C = grad.C
    g_R = grad.R
    k = o.shape[0]
    n = C.shape[1]
    Co = np.empty((k, n))
    Roo = np.empty((k, k))
    yo = np.empty(k)
    for a in range(k):
        yo[a] = y[t, o[a]]
        for j in range(n):
            Co[a, j] = C[o[a], j]
        for b in range(k):
            Roo[a, b] = 0.5 * (R[o[a], o[b]] + R[o[b], o[a]])
    Ri = spd_inverse(Roo)
    # scalar loops over the small blocks (see the module docstring)
    e = np.empty(k)
    for a in range(k):
        s = yo[a]
        for j in range(n):
            s -= Co[a, j] * ms[j]
        e[a] = s
    G = np.empty((k, n))  # y_o x^' - C_o E[x x']
    CP = np.empty((k, n))  # C_o V^
    for a in range(k):
        for j in range(n):
            s = yo[a] * ms[j]
            c = 0.0
            for m in range(n):
                s -= Co[a, m] * (Ps[m, j] + ms[m] * ms[j])
                c += Co[a, m] * Ps[m, j]
            G[a, j] = s
            CP[a, j] = c
    Ee = np.empty((k, k))  # e e' + C_o V^ C_o'
    for a in range(k):
        for b in range(k):
            s = e[a] * e[b]
            for j in range(n):
                s += CP[a, j] * Co[b, j]
            Ee[a, b] = s
    RE = np.empty((k, k))
    for a in range(k):
        for b in range(k):
            s = 0.0
            for c in range(k):
                s += Ri[a, c] * Ee[c, b]
            RE[a, b] = s
    gCo = np.empty((k, n))
    for a in range(k):
        for j in range(n):
            s = 0.0
            for b in range(k):
                s += Ri[a, b] * G[b, j]
            gCo[a, j] = s
    gRo = np.empty((k, k))
    gyo = np.empty(k)
    for a in range(k):
        s = 0.0
        for b in range(k):
            s -= Ri[a, b] * e[b]
            r = 0.0
            for c in range(k):
                r += RE[a, c] * Ri[c, b]
            gRo[a, b] = 0.5 * (r - Ri[a, b])
        gyo[a] = s
    for a in range(k):
        g_y[t, o[a]] = gyo[a]
        for c in range(n):
            g_C[o[a], c] += gCo[a, c]
        for b in range(k):
            g_R[o[a], o[b]] += gRo[a, b]


@njit_exact
def kalman_value_and_gradient_kernel(y, A, C, Q, R, m0, P0):
    """``log p(y)`` and its gradient in ``(y, A, C, Q, R, m0, P0)``: returns
    ``(value, g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0)``.

    One filter pass forward, storing its moments, then one backward pass: the RTS
    recursion (:func:`rts_smoother_kernel`) whose smoothed moments enter Fisher's
    identity as they are made, through running sums; nothing smoothed is stored. The
    transition terms need ``sum_t E[x_t x_t' | y]`` and ``sum_t E[x_{t+1} x_t' | y]``;
    with every entry of ``y_t`` observed the derivatives in ``C`` and ``R`` are linear in
    ``sum_t y_t x^_t'``, ``sum_t E[x_t x_t' | y]``, ``sum_t e_t e_t'`` and
    ``sum_t V^_t`` (``e_t = y_t - C x^_t``); a step with some entries missing adds its
    own observed block. The gradient in a missing entry of ``y`` is 0; everything is NaN
    when an innovation covariance is not positive definite.
    """
    T, p = y.shape
    n = A.shape[0]
    log_lik = np.zeros(T)
    mf = np.empty((T, n))
    Pf = np.empty((T, n, n))
    mp = np.empty((T, n))
    Pp = np.empty((T, n, n))
    g_y = np.zeros((T, p))
    g_A = np.zeros((n, n))
    g_C = np.zeros((p, n))
    g_Q = np.zeros((n, n))
    g_R = np.zeros((p, p))
    g_m0 = np.zeros(n)
    g_P0 = np.zeros((n, n))
    model = _Model(A, C, Q, R, m0, P0)
    moments = _FilterMoments(mf, Pf, mp, Pp)
    failed = _filter_into(y, model, log_lik, moments, True)
    if failed < T:
        for g in (g_A, g_C, g_Q, g_R, g_P0, g_y):
            g[:, :] = np.nan
        g_m0[:] = np.nan
        return np.nan, g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0
    value = 0.0
    for t in range(T):
        value += log_lik[t]
    Ri = spd_inverse(_symmetrise(R))
    # running sums over t of the smoothed moments (see the docstring)
    Exx = np.zeros((n, n))  # all t
    S10 = np.zeros((n, n))  # t < T - 1
    Exx_full = np.zeros((n, n))  # the fully observed t, and so on
    Ps_full = np.zeros((n, n))
    Syx = np.zeros((p, n))
    See = np.zeros((p, p))
    n_full = 0
    # the smoothed moments of t + 1 and t, alternating: before step t, the buffer of t
    # still holds t + 2's
    ms2 = np.empty((2, n))
    Ps2 = np.empty((2, n, n))
    work = _SmootherWork(
        np.empty((n, n)), np.empty((n, n)), np.empty((n, n)), np.zeros((n, n)), np.empty(n)
    )
    X = work.X
    grad = _Model(g_A, g_C, g_Q, g_R, g_m0, g_P0)
    e = np.empty(p)
    obs = np.empty(p, dtype=np.int64)
    ms2[(T - 1) % 2] = mf[T - 1]
    Ps2[(T - 1) % 2] = Pf[T - 1]
    for t in range(T - 1, -1, -1):
        ms = ms2[t % 2]
        Ps = Ps2[t % 2]
        if t < T - 1:
            ms_next = ms2[(t + 1) % 2]
            Ps_next = Ps2[(t + 1) % 2]
            reuse_gain = t < T - 2 and _same(Pf[t], Pf[t + 1]) and _same(Pp[t + 1], Pp[t + 2])
            reuse_cov = reuse_gain and _same(Ps_next, Ps)
            pair = _SmoothedPair(ms_next, Ps_next, ms, Ps)
            _smoother_step(A, moments, t, pair, work, reuse_gain, reuse_cov)
            # E[x_{t+1} x_t' | y] = V^_{t+1} J' + x^_{t+1} x^_t'
            for i in range(n):
                for j in range(n):
                    S10[i, j] += X[i, j] + ms_next[i] * ms[j]
        for i in range(n):
            for j in range(n):
                Exx[i, j] += Ps[i, j] + ms[i] * ms[j]
        k = _observed(y, t, obs)
        if k == p:
            n_full += 1
            for a in range(p):
                s = y[t, a]
                for j in range(n):
                    s -= C[a, j] * ms[j]
                e[a] = s
            for a in range(p):
                s = 0.0
                for b in range(p):
                    s -= Ri[a, b] * e[b]
                g_y[t, a] = s
                for b in range(p):
                    See[a, b] += e[a] * e[b]
                for j in range(n):
                    Syx[a, j] += y[t, a] * ms[j]
            for i in range(n):
                for j in range(n):
                    Exx_full[i, j] += Ps[i, j] + ms[i] * ms[j]
                    Ps_full[i, j] += Ps[i, j]
        elif k > 0:
            _emission_block_gradient(y, t, obs[:k], model, ms, Ps, g_y, grad)
    ms = ms2[0]
    Ps = Ps2[0]
    # initial state: E[d log N(x_1; m0, P0) | y] in m0 and P0
    P0i = spd_inverse(_symmetrise(P0))
    d0 = ms - m0
    g_m0[:] = P0i @ d0
    M0 = Ps + np.outer(d0, d0)
    g_P0[:, :] = 0.5 * (P0i @ M0 @ P0i - P0i)
    # transitions t = 2..T: the sums of E[x_{t-1} x_{t-1}'] and E[x_t x_t'] are all of
    # Exx but its last and its first term
    S00 = Exx - (Pf[T - 1] + np.outer(mf[T - 1], mf[T - 1]))
    S11 = Exx - (Ps + np.outer(ms, ms))
    Qi = spd_inverse(_symmetrise(Q))
    g_A[:, :] = Qi @ (S10 - A @ S00)
    Mq = S11 - A @ S10.T - S10 @ A.T + A @ S00 @ A.T
    g_Q[:, :] = 0.5 * (Qi @ Mq @ Qi - (T - 1) * Qi)
    if n_full > 0:
        g_C += Ri @ (Syx - C @ Exx_full)
        Ee = See + C @ Ps_full @ C.T
        g_R += 0.5 * (Ri @ Ee @ Ri - n_full * Ri)
    return value, g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0
