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
``kalman_gradient_kernel(y, A, C, Q, R, m0, P0, smoothed_mean, smoothed_cov, cross_cov)``
    The gradient of ``log p(y)`` in every input by Fisher's identity,
    ``d log p(y) / d theta = E[d log p(x, y) / d theta | y]``: the complete-data
    log-density is a sum of Gaussian terms whose derivatives are linear in the smoothed
    first and second moments. ``Q``, ``R`` and ``P0`` are treated as symmetric (the
    gradient returned is the symmetric one) and must be positive definite.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower, spd_inverse

__all__ = [
    "kalman_filter_kernel",
    "kalman_gradient_kernel",
    "rts_smoother_kernel",
]

LOG_2PI = math.log(2.0 * math.pi)


@njit_exact
def _symmetrise(M):
    n = M.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * (M[i, j] + M[j, i])
    return out


@njit_exact
def _sym_sum(X, Y):
    """The symmetric part of ``X + Y`` (loops)."""
    n = X.shape[0]
    out = np.empty((n, n))
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.5 * (X[i, j] + X[j, i] + Y[i, j] + Y[j, i])
    return out


@njit_exact
def _mm(X, Y):
    """``X @ Y`` for small C-contiguous matrices: loops, one compiled form for every
    call (NumPy's product compiles a BLAS wrapper per operand layout)."""
    a, b = X.shape
    c = Y.shape[1]
    out = np.zeros((a, c))
    for i in range(a):
        for k in range(b):
            xik = X[i, k]
            for j in range(c):
                out[i, j] += xik * Y[k, j]
    return out


@njit_exact
def _mmt(X, Y):
    """``X @ Y'`` for small C-contiguous matrices (loops)."""
    a, b = X.shape
    c = Y.shape[0]
    out = np.empty((a, c))
    for i in range(a):
        for j in range(c):
            s = 0.0
            for k in range(b):
                s += X[i, k] * Y[j, k]
            out[i, j] = s
    return out


@njit_exact
def _mv(X, v):
    """``X @ v`` (loops)."""
    a, b = X.shape
    out = np.empty(a)
    for i in range(a):
        s = 0.0
        for k in range(b):
            s += X[i, k] * v[k]
        out[i] = s
    return out


@njit_exact
def kalman_filter_kernel(y, A, C, Q, R, m0, P0):
    """Filter ``y`` (``T x p``, NaN missing); returns ``(log_lik, mf, Pf, mp, Pp)``.

    ``log_lik[t]`` is ``log p(y_t | y_{1:t-1})`` (0 when nothing is observed, NaN when
    the innovation covariance is not positive definite); ``mf, Pf`` the filtered and
    ``mp, Pp`` the predicted (one step ahead) moments of ``x_t``.
    """
    T, p = y.shape
    n = A.shape[0]
    log_lik = np.zeros(T)
    mf = np.zeros((T, n))
    Pf = np.zeros((T, n, n))
    mp = np.zeros((T, n))
    Pp = np.zeros((T, n, n))
    x = m0.copy()
    V = _symmetrise(P0)
    obs = np.empty(p, dtype=np.int64)
    for t in range(T):
        mp[t] = x
        Pp[t] = V
        k = 0
        for j in range(p):
            if not np.isnan(y[t, j]):
                obs[k] = j
                k += 1
        if k == 0:
            mf[t] = x
            Pf[t] = V
        else:
            # the observed rows of C, block of R and innovation v = y_o - C_o x
            Co = np.empty((k, n))
            Roo = np.empty((k, k))
            v = np.empty(k)
            for a in range(k):
                s = y[t, obs[a]]
                for j in range(n):
                    Co[a, j] = C[obs[a], j]
                    s -= C[obs[a], j] * x[j]
                v[a] = s
                for b in range(k):
                    Roo[a, b] = R[obs[a], obs[b]]
            VCt = _mmt(V, Co)
            S = _sym_sum(_mm(Co, VCt), Roo)
            L = cholesky_lower(S)
            if np.isnan(L[0, 0]):
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
            Sinv = spd_inverse(S)
            K = _mm(VCt, Sinv)
            logdet = 0.0
            for a in range(k):
                logdet += 2.0 * math.log(L[a, a])
            w = _mv(Sinv, v)
            quad = 0.0
            for a in range(k):
                quad += v[a] * w[a]
            log_lik[t] = -0.5 * (k * LOG_2PI + logdet + quad)
            gain = _mv(K, v)
            for i in range(n):
                x[i] += gain[i]
            IKC = _mm(K, Co)
            for i in range(n):
                for j in range(n):
                    IKC[i, j] = (1.0 if i == j else 0.0) - IKC[i, j]
            V = _sym_sum(_mmt(_mm(IKC, V), IKC), _mmt(_mm(K, Roo), K))
            mf[t] = x
            Pf[t] = V
        x = _mv(A, x)
        V = _sym_sum(_mmt(_mm(A, V), A), Q)
    return log_lik, mf, Pf, mp, Pp


@njit_exact
def rts_smoother_kernel(A, mf, Pf, mp, Pp):
    """Smoothed moments ``(ms, Ps, cross)`` from the filter's output;
    ``cross[t] = Cov(x_{t+1}, x_t | y_{1:T})`` for ``t < T - 1``."""
    T, n = mf.shape
    ms = np.zeros((T, n))
    Ps = np.zeros((T, n, n))
    cross = np.zeros((max(T - 1, 0), n, n))
    ms[T - 1] = mf[T - 1]
    Ps[T - 1] = Pf[T - 1]
    for t in range(T - 2, -1, -1):
        J = Pf[t] @ A.T @ spd_inverse(Pp[t + 1])
        ms[t] = mf[t] + J @ (ms[t + 1] - mp[t + 1])
        Ps[t] = _symmetrise(Pf[t] + J @ (Ps[t + 1] - Pp[t + 1]) @ J.T)
        cross[t] = Ps[t + 1] @ J.T
    return ms, Ps, cross


@njit_exact
def kalman_gradient_kernel(y, A, C, Q, R, m0, P0, ms, Ps, cross):
    """Gradient of ``sum_t log p(y_t | y_{1:t-1})`` in ``(A, C, Q, R, m0, P0, y)`` from
    the smoothed moments (Fisher's identity); the gradient in a missing entry of ``y``
    is 0."""
    T, p = y.shape
    n = A.shape[0]
    Qi = spd_inverse(_symmetrise(Q))
    P0i = spd_inverse(_symmetrise(P0))
    # Initial state: d/d m0 and d/d P0 of log N(x_1; m0, P0) in expectation.
    d0 = ms[0] - m0
    g_m0 = P0i @ d0
    M0 = Ps[0] + np.outer(d0, d0)
    g_P0 = 0.5 * (P0i @ M0 @ P0i - P0i)
    # Transitions: sums of E[x_t x_{t-1}'], E[x_{t-1} x_{t-1}'], E[x_t x_t'] over t >= 2.
    S10 = np.zeros((n, n))
    S00 = np.zeros((n, n))
    S11 = np.zeros((n, n))
    for t in range(1, T):
        S10 += cross[t - 1] + np.outer(ms[t], ms[t - 1])
        S00 += Ps[t - 1] + np.outer(ms[t - 1], ms[t - 1])
        S11 += Ps[t] + np.outer(ms[t], ms[t])
    g_A = Qi @ (S10 - A @ S00)
    Mq = S11 - A @ S10.T - S10 @ A.T + A @ S00 @ A.T
    g_Q = 0.5 * (Qi @ Mq @ Qi - (T - 1) * Qi)
    # Emissions: per step, the observed block only.
    g_C = np.zeros(C.shape)
    g_R = np.zeros(R.shape)
    g_y = np.zeros(y.shape)
    obs = np.empty(p, dtype=np.int64)
    for t in range(T):
        k = 0
        for j in range(p):
            if not np.isnan(y[t, j]):
                obs[k] = j
                k += 1
        if k == 0:
            continue
        o = obs[:k]
        Co = np.ascontiguousarray(C[o, :])
        Roo = np.empty((k, k))
        yo = np.empty(k)
        for a in range(k):
            yo[a] = y[t, o[a]]
            for b in range(k):
                Roo[a, b] = 0.5 * (R[o[a], o[b]] + R[o[b], o[a]])
        Ri = spd_inverse(Roo)
        e = yo - Co @ ms[t]
        Exx = Ps[t] + np.outer(ms[t], ms[t])
        gCo = Ri @ (np.outer(yo, ms[t]) - Co @ Exx)
        Ee = np.outer(e, e) + Co @ Ps[t] @ Co.T
        gRo = 0.5 * (Ri @ Ee @ Ri - Ri)
        gyo = -(Ri @ e)
        for a in range(k):
            g_y[t, o[a]] = gyo[a]
            for c in range(n):
                g_C[o[a], c] += gCo[a, c]
            for b in range(k):
                g_R[o[a], o[b]] += gRo[a, b]
    return g_A, g_C, g_Q, g_R, g_m0, g_P0, g_y
