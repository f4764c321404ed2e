"""Independent Normal-Gamma per dimension ("diagonal Gaussian") conjugate family.

Data rows are real vectors of length d; ``hyper = (m0, kappa0, a0, b0)``, all float64
(d,): mu_j | tau_j ~ N(m0_j, 1/(kappa0_j tau_j)), tau_j ~ Gamma(shape a0_j, rate b0_j).
Statistics ``[n, Σx (d), Σx² (d)]``. Jitted kernels ``diag_gaussian_stats`` ...
``diag_gaussian_log_predictive`` (signatures in :mod:`custom_ops.conjugate`);
``diag_gaussian_log_predictive_columns`` (the predictive's marginal on some columns at
many points).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate.special import digamma
from custom_ops.jit import njit_exact

__all__ = [
    "diag_gaussian_add",
    "diag_gaussian_log_marginal",
    "diag_gaussian_log_marginal_grad",
    "diag_gaussian_log_predictive",
    "diag_gaussian_log_predictive_columns",
    "diag_gaussian_point_stats",
    "diag_gaussian_remove",
    "diag_gaussian_stats",
    "diag_gaussian_stats_size",
]



def diag_gaussian_stats_size(d):
    return 1 + 2 * d


@njit_exact
def diag_gaussian_stats(X):
    n, d = X.shape
    s = np.zeros(1 + 2 * d)
    s[0] = n
    for i in range(n):
        for j in range(d):
            s[1 + j] += X[i, j]
            s[1 + d + j] += X[i, j] * X[i, j]
    return s


@njit_exact
def diag_gaussian_point_stats(X):
    n, d = X.shape
    s = np.empty((n, 1 + 2 * d))
    for i in range(n):
        s[i, 0] = 1.0
        for j in range(d):
            s[i, 1 + j] = X[i, j]
            s[i, 1 + d + j] = X[i, j] * X[i, j]
    return s


@njit_exact
def diag_gaussian_add(stats, x):
    d = x.shape[0]
    stats[0] += 1.0
    for j in range(d):
        stats[1 + j] += x[j]
        stats[1 + d + j] += x[j] * x[j]


@njit_exact
def diag_gaussian_remove(stats, x):
    d = x.shape[0]
    stats[0] -= 1.0
    for j in range(d):
        stats[1 + j] -= x[j]
        stats[1 + d + j] -= x[j] * x[j]


@njit_exact
def _ng_post(n, s, q, m0, k0, a0, b0):
    kn = k0 + n
    mn = (k0 * m0 + s) / kn
    an = a0 + 0.5 * n
    bn = b0 + 0.5 * (q + k0 * m0 * m0 - kn * mn * mn)
    return kn, mn, an, bn


@njit_exact
def diag_gaussian_log_marginal(stats, hyper):
    """Per dim: Γ(an)/Γ(a0) b0^a0 / bn^an (κ0/κn)^½ (2π)^{-n/2}."""
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    out = -0.5 * n * d * math.log(2.0 * math.pi)
    for j in range(d):
        kn, _mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
        out += (
            math.lgamma(an)
            - math.lgamma(a0[j])
            + a0[j] * math.log(b0[j])
            - an * math.log(bn)
            + 0.5 * (math.log(k0[j]) - math.log(kn))
        )
    return out


@njit_exact
def diag_gaussian_log_marginal_grad(stats, hyper):
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    gm = np.empty(d)
    gk = np.empty(d)
    ga = np.empty(d)
    gb = np.empty(d)
    for j in range(d):
        kn, mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
        diff = m0[j] - mn
        # ∂bn/∂m0 = κ0 (m0 - mn); ∂bn/∂κ0 = ½ (m0 - mn)^2
        gm[j] = -an / bn * k0[j] * diff
        gk[j] = 0.5 * (1.0 / k0[j] - 1.0 / kn) - an / bn * 0.5 * diff * diff
        ga[j] = digamma(an) - digamma(a0[j]) + math.log(b0[j]) - math.log(bn)
        gb[j] = a0[j] / b0[j] - an / bn
    return diag_gaussian_log_marginal(stats, hyper), (gm, gk, ga, gb)


@njit_exact
def _ng_student_t(stats, hyper, j):
    """(location, dof, squared scale, log normaliser) of dimension j's predictive t."""
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    kn, mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
    dof = 2.0 * an
    scale2 = bn * (kn + 1.0) / (an * kn)
    log_norm = (
        math.lgamma(0.5 * (dof + 1.0))
        - math.lgamma(0.5 * dof)
        - 0.5 * math.log(dof * math.pi * scale2)
    )
    return mn, dof, scale2, log_norm


@njit_exact
def diag_gaussian_log_predictive(x, stats, hyper):
    """Per dim Student-t_{2an}(x | mn, bn (κn+1) / (an κn))."""
    d = hyper[0].shape[0]
    out = 0.0
    for j in range(d):
        mn, dof, scale2, log_norm = _ng_student_t(stats, hyper, j)
        z = x[j] - mn
        out += log_norm - 0.5 * (dof + 1.0) * math.log1p(z * z / (dof * scale2))
    return out


@njit_exact
def diag_gaussian_log_predictive_columns(points, cols, stats, hyper, out):
    """``out[g]`` = log p(points[g] | D) of the predictive's marginal on the columns
    ``cols`` (``points`` (G, len(cols))): the product of :func:`diag_gaussian_log_predictive`'s
    per-dimension Student-t densities over ``cols`` (the dimensions are independent),
    their parameters computed once for all points."""
    p = cols.shape[0]
    params = np.empty((p, 4))
    for a in range(p):
        mn, dof, scale2, log_norm = _ng_student_t(stats, hyper, cols[a])
        params[a, 0] = mn
        params[a, 1] = dof
        params[a, 2] = scale2
        params[a, 3] = log_norm
    for g in range(points.shape[0]):
        acc = 0.0
        for a in range(p):
            z = points[g, a] - params[a, 0]
            dof = params[a, 1]
            acc += params[a, 3] - 0.5 * (dof + 1.0) * math.log1p(z * z / (dof * params[a, 2]))
        out[g] = acc
