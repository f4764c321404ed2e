"""Dense symmetric positive-definite linear algebra as plain Numba loops: the lower
Cholesky factor (NaN, not an exception, when the matrix is not positive definite, so a
kernel can test and branch) and the inverse through it.

Why loops and not ``numpy.linalg``: at p ~ 100 these are cheap single-threaded, while a
multi-threaded BLAS call on a loaded machine can spend orders of magnitude longer
contending for the cores; and inside Numba
``np.linalg.cholesky`` raises a generic error that a validation kernel cannot turn into
an error code. Used by the GGM samplers (:mod:`custom_ops.ggm.gibbs`) and the conjugate
families' hyperparameter checks (:mod:`custom_ops.conjugate`).
"""

from __future__ import annotations

import numpy as np

from custom_ops.jit import njit_exact

__all__ = ["cholesky_lower", "cholesky_lower_into", "spd_inverse"]


@njit_exact
def cholesky_lower_into(S, k, L):
    """The lower Cholesky factor of ``S[:k, :k]`` into ``L[:k, :k]`` (its strict upper
    triangle left as it was); False, ``L`` partly written, when ``S[:k, :k]`` is not
    positive definite. For kernels that reuse one buffer per step."""
    for j in range(k):
        d = S[j, j]
        for m in range(j):
            d -= L[j, m] * L[j, m]
        if not d > 0.0:
            return False
        L[j, j] = np.sqrt(d)
        for i in range(j + 1, k):
            s = S[i, j]
            for m in range(j):
                s -= L[i, m] * L[j, m]
            L[i, j] = s / L[j, j]
    return True


@njit_exact
def cholesky_lower(A):
    """Lower Cholesky factor of a symmetric positive-definite ``A`` (NaN if it is not)."""
    p = A.shape[0]
    L = np.zeros((p, p))
    if not cholesky_lower_into(A, p, L):
        L[:, :] = np.nan
    return L


@njit_exact
def spd_inverse(A):
    """Inverse of a symmetric positive-definite matrix through its Cholesky factor."""
    p = A.shape[0]
    L = cholesky_lower(A)
    # Linv = L^{-1} (lower triangular), then A^{-1} = Linv' Linv
    Linv = np.zeros((p, p))
    for j in range(p):
        Linv[j, j] = 1.0 / L[j, j]
        for i in range(j + 1, p):
            s = 0.0
            for k in range(j, i):
                s -= L[i, k] * Linv[k, j]
            Linv[i, j] = s / L[i, i]
    out = np.zeros((p, p))
    for i in range(p):
        for j in range(i + 1):
            s = 0.0
            for k in range(i, p):
                s += Linv[k, i] * Linv[k, j]
            out[i, j] = s
            out[j, i] = s
    return out
