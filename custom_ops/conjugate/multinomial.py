"""Dirichlet-multinomial conjugate family (Heller 2007 Eq. 2.12, with per-point
multinomial coefficients).

Data rows are count vectors of length K (one-hot rows: the Dirichlet-categorical);
``hyper = (concentration,)``, Dirichlet parameters, float64 (K,). Statistics
``[n, Σ_i log multinomial coefficient(x_i), m_1..m_K]``, so a single count vector's
marginal equals ``scipy.stats.dirichlet_multinomial``. Jitted kernels
``multinomial_stats`` ... ``multinomial_log_predictive`` (signatures in
:mod:`custom_ops.conjugate`).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate.special import digamma
from custom_ops.jit import njit_exact

__all__ = [
    "multinomial_add",
    "multinomial_log_marginal",
    "multinomial_log_marginal_grad",
    "multinomial_log_predictive",
    "multinomial_point_stats",
    "multinomial_remove",
    "multinomial_stats",
    "multinomial_stats_size",
]



def multinomial_stats_size(K):
    return 2 + K


@njit_exact
def _log_multinomial_coefficient(x):
    tot = 0.0
    out = 0.0
    for k in range(x.shape[0]):
        tot += x[k]
        out -= math.lgamma(x[k] + 1.0)
    return out + math.lgamma(tot + 1.0)


@njit_exact
def multinomial_stats(X):
    n, K = X.shape
    s = np.zeros(2 + K)
    s[0] = n
    for i in range(n):
        s[1] += _log_multinomial_coefficient(X[i])
        for k in range(K):
            s[2 + k] += X[i, k]
    return s


@njit_exact
def multinomial_point_stats(X):
    n, K = X.shape
    s = np.empty((n, 2 + K))
    for i in range(n):
        s[i, 0] = 1.0
        s[i, 1] = _log_multinomial_coefficient(X[i])
        for k in range(K):
            s[i, 2 + k] = X[i, k]
    return s


@njit_exact
def multinomial_add(stats, x):
    stats[0] += 1.0
    stats[1] += _log_multinomial_coefficient(x)
    for k in range(x.shape[0]):
        stats[2 + k] += x[k]


@njit_exact
def multinomial_remove(stats, x):
    stats[0] -= 1.0
    stats[1] -= _log_multinomial_coefficient(x)
    for k in range(x.shape[0]):
        stats[2 + k] -= x[k]


@njit_exact
def multinomial_log_marginal(stats, hyper):
    """Γ(A) Π_k Γ(α_k + m_k) / (Γ(A + M) Π_k Γ(α_k)) × Π_i multinomial coefficients."""
    (alpha,) = hyper
    A = 0.0
    M = 0.0
    out = stats[1]
    for k in range(alpha.shape[0]):
        A += alpha[k]
        M += stats[2 + k]
        out += math.lgamma(alpha[k] + stats[2 + k]) - math.lgamma(alpha[k])
    return out + math.lgamma(A) - math.lgamma(A + M)


@njit_exact
def multinomial_log_marginal_grad(stats, hyper):
    (alpha,) = hyper
    A = 0.0
    M = 0.0
    for k in range(alpha.shape[0]):
        A += alpha[k]
        M += stats[2 + k]
    common = digamma(A) - digamma(A + M)
    g = np.empty_like(alpha)
    for k in range(alpha.shape[0]):
        g[k] = common + digamma(alpha[k] + stats[2 + k]) - digamma(alpha[k])
    return multinomial_log_marginal(stats, hyper), (g,)


@njit_exact
def multinomial_log_predictive(x, stats, hyper):
    """Dirichlet-multinomial pmf of count vector x under the posterior Dir(α + m)."""
    (alpha,) = hyper
    A = 0.0
    Mx = 0.0
    out = _log_multinomial_coefficient(x)
    for k in range(alpha.shape[0]):
        ak = alpha[k] + stats[2 + k]
        A += ak
        Mx += x[k]
        if x[k] != 0.0:
            out += math.lgamma(ak + x[k]) - math.lgamma(ak)
    return out + math.lgamma(A) - math.lgamma(A + Mx)
