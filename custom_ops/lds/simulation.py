"""Exact draws of an LDS's whole state path given the data: forward filtering, backward
sampling (Carter & Kohn 1994; Frühwirth-Schnatter 1994), on the Kalman filter's output.

Given the filtered moments ``x_t | y_{1:t} ~ N(mf_t, Pf_t)`` and the predicted ones
``x_{t+1} | y_{1:t} ~ N(mp_{t+1}, Pp_{t+1})`` (:func:`custom_ops.lds.kalman.kalman_filter_kernel`),
the path is drawn backwards: ``x_T ~ N(mf_T, Pf_T)``, then for ``t = T-1, ..., 1``::

    x_t | x_{t+1}, y ~ N(mf_t + J (x_{t+1} - mp_{t+1}),  Pf_t - J A Pf_t),
    J = Pf_t A' Pp_{t+1}^{-1},

the conditional of ``x_t`` given ``x_{t+1}`` and ``y_{1:t}`` (later observations add
nothing once ``x_{t+1}`` is known). The gain and covariance are one small kernel,
:func:`backward_conditional`, the quantity a planted-bug twin replaces.

The model's forward draws (Ghahramani & Roweis 1999, the generative model) are
:func:`state_path_draw`, ``x_1 ~ N(m0, P0)``, ``x_t = A x_{t-1} + N(0, Q)``, and
:func:`observation_draw`, ``y_t = C x_t + N(0, R)``, from a NumPy ``Generator``.
"""

from __future__ import annotations

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower, spd_inverse

__all__ = [
    "backward_conditional",
    "gaussian_draw",
    "observation_draw",
    "simulation_smoother_kernel",
    "state_path_draw",
]


@njit_exact
def backward_conditional(Pf_t, A, Pp_next):
    """``(J, V)``: the gain ``Pf_t A' Pp_next^{-1}`` and the covariance
    ``Pf_t - J A Pf_t`` (symmetrised) of ``x_t`` given ``x_{t+1}`` and ``y_{1:t}``."""
    J = Pf_t @ A.T @ spd_inverse(Pp_next)
    V = Pf_t - J @ A @ Pf_t
    return J, 0.5 * (V + V.T)


@njit_exact
def gaussian_draw(mean, cov, normals):
    """``mean + S normals`` with ``S S' = cov``: the Cholesky factor, or the symmetric
    square root (negative round-off eigenvalues set to 0) when ``cov`` is singular."""
    L = cholesky_lower(cov)
    if not np.isnan(L[0, 0]):
        return mean + L @ normals
    w, U = np.linalg.eigh(cov)
    return mean + U @ (np.sqrt(np.maximum(w, 0.0)) * (U.T @ normals))


@njit_exact
def simulation_smoother_kernel(A, mf, Pf, mp, Pp, normals):
    """One draw of the path ``x_{1:T}`` (``T x n``) from ``p(x | y)`` given the filter's
    moments and ``normals``, ``T x n`` standard normal draws."""
    T, n = mf.shape
    x = np.empty((T, n))
    x[T - 1] = gaussian_draw(mf[T - 1], Pf[T - 1], normals[T - 1])
    for t in range(T - 2, -1, -1):
        J, V = backward_conditional(Pf[t], A, Pp[t + 1])
        x[t] = gaussian_draw(mf[t] + J @ (x[t + 1] - mp[t + 1]), V, normals[t])
    return x


@njit_exact
def _square_root(cov):
    """``S`` with ``S S' = cov``: the Cholesky factor, or ``U diag(sqrt(w))`` from the
    eigendecomposition (negative round-off eigenvalues set to 0) when ``cov`` is
    singular."""
    L = cholesky_lower(cov)
    if not np.isnan(L[0, 0]):
        return L
    w, U = np.linalg.eigh(cov)
    return U * np.sqrt(np.maximum(w, 0.0))


@njit_exact
def _add_noise(rng, S, out_row):
    """``out_row += S z`` with ``z`` standard normal from ``rng``."""
    k = S.shape[1]
    z = np.empty(k)
    for j in range(k):
        z[j] = rng.standard_normal()
    for i in range(S.shape[0]):
        s = 0.0
        for j in range(k):
            s += S[i, j] * z[j]
        out_row[i] += s


@njit_exact
def state_path_draw(rng, A, Q, m0, P0, out):
    """A prior path into ``out`` (``T x n``): ``x_1 ~ N(m0, P0)``,
    ``x_t = A x_{t-1} + N(0, Q)``; ``rng`` is a NumPy ``Generator``."""
    T, n = out.shape
    if T == 0:
        return
    S0 = _square_root(P0)
    SQ = _square_root(Q)
    for i in range(n):
        out[0, i] = m0[i]
    _add_noise(rng, S0, out[0])
    for t in range(1, T):
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += A[i, j] * out[t - 1, j]
            out[t, i] = s
        _add_noise(rng, SQ, out[t])


@njit_exact
def observation_draw(rng, C, R, x, out):
    """Observations into ``out`` (``T x p``) given the path ``x`` (``T x n``):
    ``y_t = C x_t + N(0, R)``; ``rng`` is a NumPy ``Generator``."""
    T, p = out.shape
    n = x.shape[1]
    SR = _square_root(R)
    for t in range(T):
        for i in range(p):
            s = 0.0
            for j in range(n):
                s += C[i, j] * x[t, j]
            out[t, i] = s
        _add_noise(rng, SR, out[t])
