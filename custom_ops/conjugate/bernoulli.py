"""Beta-Bernoulli conjugate family (Heller 2007 §2.1.1, Bernoulli-Beta marginal).

Data rows are binary vectors of length d; ``hyper = (a, b)``, Beta(a_j, b_j) per
dimension, both float64 (d,). Statistics ``[n, m_1..m_d]`` (m_j: the ones in column j).
Jitted kernels ``bernoulli_stats`` ... ``bernoulli_log_predictive``, with the signatures
listed in :mod:`custom_ops.conjugate`; they trust their inputs (validation:
:mod:`custom_ops.conjugate.families`).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate.special import digamma
from custom_ops.jit import njit_exact

__all__ = [
    "bernoulli_add",
    "bernoulli_log_marginal",
    "bernoulli_log_marginal_grad",
    "bernoulli_log_predictive",
    "bernoulli_point_stats",
    "bernoulli_remove",
    "bernoulli_stats",
    "bernoulli_stats_size",
]



def bernoulli_stats_size(d):
    return 1 + d


@njit_exact
def bernoulli_stats(X):
    n, d = X.shape
    s = np.zeros(1 + d)
    s[0] = n
    for i in range(n):
        for j in range(d):
            s[1 + j] += X[i, j]
    return s


@njit_exact
def bernoulli_point_stats(X):
    n, d = X.shape
    s = np.empty((n, 1 + d))
    for i in range(n):
        s[i, 0] = 1.0
        for j in range(d):
            s[i, 1 + j] = X[i, j]
    return s


@njit_exact
def bernoulli_add(stats, x):
    stats[0] += 1.0
    for j in range(x.shape[0]):
        stats[1 + j] += x[j]


@njit_exact
def bernoulli_remove(stats, x):
    stats[0] -= 1.0
    for j in range(x.shape[0]):
        stats[1 + j] -= x[j]


@njit_exact
def bernoulli_log_marginal(stats, hyper):
    """Π_j Γ(a+b)Γ(a+m)Γ(b+N-m) / (Γ(a)Γ(b)Γ(a+b+N)) (Heller 2007 §2.1.1)."""
    a, b = hyper
    n = stats[0]
    out = 0.0
    for j in range(a.shape[0]):
        m = stats[1 + j]
        aj = a[j]
        bj = b[j]
        out += (
            math.lgamma(aj + bj)
            - math.lgamma(aj)
            - math.lgamma(bj)
            + math.lgamma(aj + m)
            + math.lgamma(bj + n - m)
            - math.lgamma(aj + bj + n)
        )
    return out


@njit_exact
def bernoulli_log_marginal_grad(stats, hyper):
    a, b = hyper
    n = stats[0]
    ga = np.empty_like(a)
    gb = np.empty_like(b)
    for j in range(a.shape[0]):
        m = stats[1 + j]
        common = digamma(a[j] + b[j]) - digamma(a[j] + b[j] + n)
        ga[j] = common + digamma(a[j] + m) - digamma(a[j])
        gb[j] = common + digamma(b[j] + n - m) - digamma(b[j])
    return bernoulli_log_marginal(stats, hyper), (ga, gb)


@njit_exact
def bernoulli_log_predictive(x, stats, hyper):
    """p(x_j = 1 | D) = (a_j + m_j) / (a_j + b_j + N), independently per dimension."""
    a, b = hyper
    n = stats[0]
    out = 0.0
    for j in range(a.shape[0]):
        m = stats[1 + j]
        tot = math.log(a[j] + b[j] + n)
        if x[j] > 0.5:
            out += math.log(a[j] + m) - tot
        else:
            out += math.log(b[j] + n - m) - tot
    return out
