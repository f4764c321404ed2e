"""Numba kernels of the Dirichlet-process-mixture outputs: the posterior predictive
density of a new row on a grid, summed over posterior draws
(:func:`pp_models.dpm.outputs.predictive_density` divides by the number of draws).

* :func:`crp_conjugate_predictive_density`: collapsed CRP draws of a conjugate Gaussian
  family. A new row joins table k with probability (n_k - d) / (n + alpha) and a new
  table with probability (alpha + K d) / (n + alpha) (Pitman 2006 Eq. 3.6; discount
  d = 0 is the Dirichlet process); each table's density is the conjugate posterior
  predictive of its rows, the new table's the prior predictive, both marginal on the
  shown columns (:func:`custom_ops.conjugate.log_predictive_columns`).
* :func:`normal_mixture_density`: mixtures of diagonal normals with given weights per
  draw (stick-breaking draws, the occupied slots of non-conjugate CRP draws, a Monte
  Carlo prior predictive), by log-sum-exp over the components at each point.
* :func:`mvn_mixture_density`: the same for full-covariance normals, each given by the
  lower Cholesky factor of its covariance (stick-breaking draws of the NIW mixture).
* :func:`crp_conditional_log_likelihood`: per draw and row, ``log p(x_i | z_{-i}, theta)``,
  the row's density given the other rows' tables and the tables' parameters drawn from
  their conjugate posterior (:func:`draw_component`, :func:`component_log_density`;
  the pointwise log-likelihood for LOO, :mod:`pp_models.dpm.predictive`), with
  :func:`conjugate_log_predictive_rows` for a new table's prior predictive.

One pass over the draws with the per-table statistics accumulated row by row, instead of
a Python loop over draws x tables calling SciPy on the whole grid each time.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.conjugate import (
    BERNOULLI,
    DIAG_GAUSSIAN,
    GAUSSIAN,
    add,
    bernoulli_view,
    diag_gaussian_view,
    gaussian_posterior,
    gaussian_view,
    log_predictive,
    log_predictive_columns,
    stats_size,
)
from custom_ops.jit import njit_exact
from custom_ops.log_weights import log_sum_exp

__all__ = [
    "CRPDraws",
    "component_log_density",
    "component_parameter_size",
    "conjugate_log_predictive_rows",
    "crp_conditional_log_likelihood",
    "crp_conjugate_predictive_density",
    "draw_component",
    "mvn_mixture_density",
    "normal_mixture_density",
]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class CRPDraws(NamedTuple):
    """Posterior draws of a conjugate CRP mixture, S of them: ``labels`` (S, n) int64
    (any labels >= 0), ``alphas`` (S,) float64 concentrations, ``hps`` (S, H) or (1, H)
    float64 packed hyperparameters (:func:`custom_ops.conjugate.pack_hyper`; one row:
    the same for every draw) and ``log_new`` (S, n) or (1, n) float64, each row's prior
    predictive under that draw's hyperparameters (:func:`conjugate_log_predictive_rows`).
    """

    labels: np.ndarray
    alphas: np.ndarray
    hps: np.ndarray
    log_new: np.ndarray


@njit_exact
def crp_conjugate_predictive_density(fam, X, labels, alphas, discount, hps, points, cols):
    """Sum over draws s of the CRP posterior predictive density at ``points``.

    Parameters
    ----------
    fam : int
        Conjugate family code (Gaussian families: :data:`custom_ops.conjugate.GAUSSIAN`,
        ``DIAG_GAUSSIAN``).
    X : (n, d) float64
        The data.
    labels : (S, n) int64
        Table labels per draw, 0..K_s - 1.
    alphas : (S,) float64
        Concentration per draw.
    discount : float
        Pitman-Yor discount (0: Dirichlet process).
    hps : (S, H) or (1, H) float64
        Packed base-measure hyperparameters per draw (one row: the same for all).
    points : (G, p) float64
        Grid points on the columns ``cols`` (p,) int64.

    Returns
    -------
    (G,) float64
        sum_s [ sum_k (n_k - d)/(n + a_s) p(x | X_k) + (a_s + K_s d)/(n + a_s) p(x) ].
    """
    S, n = labels.shape
    d = X.shape[1]
    G = points.shape[0]
    size = stats_size(fam, d)
    dens = np.zeros(G)
    mix = np.empty(G)
    lp = np.empty(G)
    for s in range(S):
        K = 0
        for i in range(n):
            K = max(K, labels[s, i] + 1)
        stats = np.zeros((K + 1, size))  # row K: the empty table (prior predictive)
        for i in range(n):
            add(fam, stats[labels[s, i]], X[i])
        hp = hps[s] if hps.shape[0] > 1 else hps[0]
        a = alphas[s]
        log_predictive_columns(fam, points, cols, stats[K], hp, lp)
        w_new = (a + K * discount) / (n + a)
        for g in range(G):
            mix[g] = w_new * math.exp(lp[g])
        for k in range(K):
            log_predictive_columns(fam, points, cols, stats[k], hp, lp)
            w = (stats[k, 0] - discount) / (n + a)
            for g in range(G):
                mix[g] += w * math.exp(lp[g])
        for g in range(G):
            dens[g] += mix[g]
    return dens


@njit_exact
def normal_mixture_density(weights, mu, sigma, points):
    """Sum over draws s of sum_k weights[s, k] prod_j N(points[g, j] | mu[s, k, j],
    sigma[s, k, j]) at each point g (log-sum-exp over k per draw; zero weights skipped).

    ``weights`` (S, K), ``mu`` and ``sigma`` (S, K, p), ``points`` (G, p); returns (G,).
    """
    S, K = weights.shape
    G, p = points.shape
    dens = np.zeros(G)
    terms = np.empty(K)
    log_sigma = np.empty((K, p))
    for s in range(S):
        log_w = np.full(K, -np.inf)
        for k in range(K):
            if weights[s, k] > 0.0:
                log_w[k] = math.log(weights[s, k])
                for j in range(p):
                    log_sigma[k, j] = math.log(sigma[s, k, j])
        for g in range(G):
            for k in range(K):
                t = log_w[k]
                if t > -np.inf:
                    comp = 0.0
                    for j in range(p):
                        z = (points[g, j] - mu[s, k, j]) / sigma[s, k, j]
                        comp += (-z * z / 2.0 - _LOG_SQRT_2PI) - log_sigma[k, j]
                    t += comp
                terms[k] = t
            dens[g] += math.exp(log_sum_exp(terms))
    return dens


@njit_exact
def mvn_mixture_density(weights, mu, chol, points):
    """Sum over draws s of sum_k weights[s, k] N(points[g] | mu[s, k], C C') with ``C =
    chol[s, k]`` lower triangular (log-sum-exp over k per draw; zero weights skipped).

    ``weights`` (S, K), ``mu`` (S, K, p), ``chol`` (S, K, p, p), ``points`` (G, p);
    returns (G,).
    """
    S, K = weights.shape
    G, p = points.shape
    dens = np.zeros(G)
    terms = np.empty(K)
    log_norm = np.empty(K)
    r = np.empty(p)
    for s in range(S):
        log_w = np.full(K, -np.inf)
        for k in range(K):
            if weights[s, k] > 0.0:
                log_w[k] = math.log(weights[s, k])
                log_norm[k] = -p * _LOG_SQRT_2PI
                for j in range(p):
                    log_norm[k] -= math.log(chol[s, k, j, j])
        for g in range(G):
            for k in range(K):
                t = log_w[k]
                if t > -np.inf:
                    # forward substitution: C r = x - mu, then -|r|^2 / 2
                    quad = 0.0
                    for i in range(p):
                        acc = points[g, i] - mu[s, k, i]
                        for j in range(i):
                            acc -= chol[s, k, i, j] * r[j]
                        r[i] = acc / chol[s, k, i, i]
                        quad += r[i] * r[i]
                    t += log_norm[k] - 0.5 * quad
                terms[k] = t
            dens[g] += math.exp(log_sum_exp(terms))
    return dens


@njit_exact
def conjugate_log_predictive_rows(fam, X, stats, hp, out):
    """``out[i] = log p(X[i] | D)``, the conjugate posterior predictive of each row given
    the sufficient statistics ``stats`` of a set D (zeros: the prior predictive,
    ``int F(x | theta) G0(d theta)``). ``fam``: conjugate family code; ``hp``: packed
    hyperparameters."""
    for i in range(X.shape[0]):
        out[i] = log_predictive(fam, X[i], stats, hp)
    return out


@njit_exact
def component_parameter_size(fam, d):
    """Length of :func:`draw_component`'s flat parameter vector for ``d`` columns."""
    if fam == GAUSSIAN:
        return d + d * d
    if fam == DIAG_GAUSSIAN:
        return 2 * d
    return d


@njit_exact
def draw_component(fam, stats, hp, rng, theta):
    """One draw of a component's parameters from its conjugate posterior given the
    statistics ``stats`` of its rows, written flat into ``theta``
    (:func:`component_parameter_size`).

    gaussian: ``mu`` then the lower Cholesky factor ``C`` of ``Sigma`` (row-major):
    ``Sigma ~ IW(nu_n, S_n)`` by Bartlett's decomposition (``S_n = L L'``, ``A`` lower
    triangular with ``A_jj^2 ~ chi^2(nu_n - j)`` and standard normals below it: ``Sigma =
    L (A A')^{-1} L'``), ``mu ~ N(m_n, Sigma / kappa_n)``; diag_gaussian: ``mu`` then
    ``sigma`` per column, precision ``tau ~ Gamma(a_n, rate b_n)``, ``mu ~ N(m_n, 1 /
    (kappa_n tau))`` (the Normal-Gamma update); bernoulli: ``p_j ~ Beta(a_j + m_j, b_j + n
    - m_j)``; multinomial: ``p ~ Dirichlet(alpha + m)``.
    """
    n = stats[0]
    if fam == GAUSSIAN:
        m0, kappa0, nu0, S0 = gaussian_view(hp)
        d = m0.shape[0]
        kn, nn, mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
        L = np.linalg.cholesky(Sn)
        A = np.zeros((d, d))
        for j in range(d):
            A[j, j] = math.sqrt(2.0 * rng.gamma(0.5 * (nn - j), 1.0))
            for i in range(j):
                A[j, i] = rng.standard_normal()
        M = L @ np.linalg.inv(A).T  # Sigma = M M'
        C = np.linalg.cholesky(M @ M.T)
        scale = 1.0 / math.sqrt(kn)
        for j in range(d):
            theta[j] = mn[j]
        for k in range(d):
            e = rng.standard_normal() * scale
            for j in range(d):
                theta[j] += M[j, k] * e
        for j in range(d):
            for k in range(d):
                theta[d + j * d + k] = C[j, k]
    elif fam == DIAG_GAUSSIAN:
        m0, k0, a0, b0 = diag_gaussian_view(hp)
        d = m0.shape[0]
        for j in range(d):
            kn = k0[j] + n
            mn = (k0[j] * m0[j] + stats[1 + j]) / kn
            an = a0[j] + 0.5 * n
            bn = b0[j] + 0.5 * (stats[1 + d + j] + k0[j] * m0[j] * m0[j] - kn * mn * mn)
            tau = rng.gamma(an, 1.0 / bn)
            theta[j] = mn + rng.standard_normal() / math.sqrt(kn * tau)
            theta[d + j] = 1.0 / math.sqrt(tau)
    elif fam == BERNOULLI:
        a, b = bernoulli_view(hp)
        for j in range(a.shape[0]):
            theta[j] = rng.beta(a[j] + stats[1 + j], b[j] + n - stats[1 + j])
    else:
        total = 0.0
        for c in range(hp.shape[0]):
            theta[c] = rng.gamma(hp[c] + stats[2 + c], 1.0)
            total += theta[c]
        for c in range(hp.shape[0]):
            theta[c] /= total


@njit_exact
def component_log_density(fam, X, theta, out):
    """``out[i] = log F(X[i] | theta)`` for one component (:func:`draw_component`'s
    layout): the multivariate normal, independent normals per column, independent
    Bernoullis, or the multinomial with its coefficient (the conventions of the
    conjugate predictives, :mod:`custom_ops.conjugate`)."""
    n, d = X.shape
    if fam == GAUSSIAN:
        log_det = 0.0
        for j in range(d):
            log_det += math.log(theta[d + j * d + j])
        r = np.empty(d)
        for i in range(n):
            quad = 0.0
            for j in range(d):  # r = C^{-1} (x - mu), forward substitution
                acc = X[i, j] - theta[j]
                for k in range(j):
                    acc -= theta[d + j * d + k] * r[k]
                r[j] = acc / theta[d + j * d + j]
                quad += r[j] * r[j]
            out[i] = -0.5 * quad - log_det - d * _LOG_SQRT_2PI
    elif fam == DIAG_GAUSSIAN:
        for i in range(n):
            acc = 0.0
            for j in range(d):
                z = (X[i, j] - theta[j]) / theta[d + j]
                acc += -0.5 * z * z - math.log(theta[d + j]) - _LOG_SQRT_2PI
            out[i] = acc
    elif fam == BERNOULLI:
        for i in range(n):
            acc = 0.0
            for j in range(d):
                acc += math.log(theta[j]) if X[i, j] > 0.5 else math.log1p(-theta[j])
            out[i] = acc
    else:
        for i in range(n):
            total = 0.0
            acc = 0.0
            for c in range(d):
                total += X[i, c]
                acc -= math.lgamma(X[i, c] + 1.0)
                if X[i, c] != 0.0:
                    acc += X[i, c] * math.log(theta[c])
            out[i] = acc + math.lgamma(total + 1.0)


@njit_exact
def crp_conditional_log_likelihood(fam, X, draws, discount, rng, out):
    """``out[s, i] = log p(x_i | z_{-i}, theta, alpha_s)``: row ``i`` taken out of its
    table, the others' CRP seats it at table k with probability (n_{k,-i} - d) / (n - 1 +
    a_s), where it has density ``F(x_i | theta_k)``, and at a new table with (a_s +
    K_{-i} d) / (n - 1 + a_s), where it has the prior predictive density (Pitman 2006
    Eq. 3.6; ``K_{-i}`` the tables the other rows occupy). Each table's ``theta_k`` is
    drawn once per draw from its conjugate posterior given all its rows
    (:func:`draw_component`, with ``rng``), so a table row ``i`` holds alone is left out.

    ``fam``: conjugate family code; ``X`` (n, d); ``draws`` the draws' labels,
    concentrations, hyperparameters and new-table terms (:class:`CRPDraws`);
    ``discount`` the Pitman-Yor d; ``rng`` a ``numpy.random.Generator``; ``out`` (S, n).
    """
    labels, alphas, hps, log_new = draws
    S, n = labels.shape
    d = X.shape[1]
    size = stats_size(fam, d)
    theta = np.empty(component_parameter_size(fam, d))
    terms = np.empty(n + 1)
    for s in range(S):
        K = 0
        for i in range(n):
            K = max(K, labels[s, i] + 1)
        stats = np.zeros((K, size))
        for i in range(n):
            add(fam, stats[labels[s, i]], X[i])
        hp = hps[s] if hps.shape[0] > 1 else hps[0]
        new = log_new[s] if log_new.shape[0] > 1 else log_new[0]
        log_f = np.empty((K, n))
        for k in range(K):
            if stats[k, 0] > 0.5:
                draw_component(fam, stats[k], hp, rng, theta)
                component_log_density(fam, X, theta, log_f[k])
        a = alphas[s]
        norm = math.log(n - 1.0 + a)
        for i in range(n):
            k0 = labels[s, i]
            m = 0
            for k in range(K):
                others = stats[k, 0] - (1.0 if k == k0 else 0.0)
                if others > 0.5:
                    terms[m] = math.log(others - discount) + log_f[k, i]
                    m += 1
            terms[m] = math.log(a + m * discount) + new[i]
            out[s, i] = log_sum_exp(terms[: m + 1]) - norm
    return out
