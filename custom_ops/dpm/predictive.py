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
* :func:`crp_conjugate_loo_log_predictive`: per draw and row, the conditional predictive
  ``log p(x_i | z_{-i}, X_{-i})`` of the row given the others' tables (the pointwise
  log-likelihood for LOO, :mod:`pp_models.dpm.predictive`).

One pass over the draws with the per-table statistics accumulated row by row, instead of
a Python loop over draws x tables calling SciPy on the whole grid each time.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate import (
    add,
    log_predictive,
    log_predictive_columns,
    remove,
    stats_size,
)
from custom_ops.jit import njit_exact
from custom_ops.log_weights import log_sum_exp

__all__ = ["crp_conjugate_loo_log_predictive", "crp_conjugate_predictive_density",
           "mvn_mixture_density",
           "normal_mixture_density"]

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


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
def crp_conjugate_loo_log_predictive(fam, X, labels, alphas, discount, hps, out):
    """``out[s, i] = log p(x_i | z_{-i}, X_{-i})`` for every draw ``s`` and row ``i``.

    Row ``i`` taken out of its table, the others' CRP seats it at table k with
    probability (n_k - d) / (n - 1 + a_s) and at a new table with (a_s + K d) / (n - 1 +
    a_s) (Pitman 2006 Eq. 3.6, over the K tables the other rows occupy), and each table
    predicts it by its conjugate posterior predictive (the new one by the prior
    predictive); the log of the sum over tables (Neal 2000 Algorithm 3's normaliser).

    ``fam``: conjugate family code; ``X`` (n, d); ``labels`` (S, n) int64 (any labels
    >= 0); ``alphas`` (S,); ``discount`` the Pitman-Yor d; ``hps`` (S, H) or (1, H)
    packed hyperparameters; ``out`` (S, n).
    """
    S, n = labels.shape
    d = X.shape[1]
    size = stats_size(fam, d)
    terms = np.empty(n + 1)
    for s in range(S):
        K = 0
        for i in range(n):
            K = max(K, labels[s, i] + 1)
        stats = np.zeros((K + 1, size))  # row K stays empty: the new table
        for i in range(n):
            add(fam, stats[labels[s, i]], X[i])
        hp = hps[s] if hps.shape[0] > 1 else hps[0]
        a = alphas[s]
        norm = math.log(n - 1.0 + a)
        for i in range(n):
            k0 = labels[s, i]
            remove(fam, stats[k0], X[i])
            m = 0
            for k in range(K):
                if stats[k, 0] > 0.5:
                    terms[m] = (math.log(stats[k, 0] - discount) - norm
                                + log_predictive(fam, X[i], stats[k], hp))
                    m += 1
            terms[m] = (math.log(a + m * discount) - norm
                        + log_predictive(fam, X[i], stats[K], hp))
            m += 1
            out[s, i] = log_sum_exp(terms[:m])
            add(fam, stats[k0], X[i])
    return out
