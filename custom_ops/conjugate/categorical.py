"""Dirichlet-categorical tables (mixtures of trees, BDeu structure scores).

Counts of one categorical variable (or of a child per parent value: one row per parent
configuration) under a Dirichlet prior with the same concentration in every cell, as in
BDeu (Murphy 2012 Eqs. 26.28-26.30; Heckerman, Geiger & Chickering 1995). Counts may be
weighted (non-integer). ``cell`` is the per-cell Dirichlet parameter. These functions
take counts directly, not a family code: the tree models call them per edge.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "dirichlet_categorical_log_marginal",
    "dirichlet_categorical_log_predictive",
    "dirichlet_categorical_table_log_marginal",
    "dirichlet_posterior",
]



@njit_exact
def dirichlet_categorical_log_marginal(counts, cell):
    """log p(D) of categorical data with these counts, a symmetric Dirichlet(cell)
    integrated out: lgamma(K a) - lgamma(N + K a) + sum_k [lgamma(n_k + a) - lgamma(a)]
    (Murphy Eq. 26.26 corrected, §0 of the spec)."""
    K = counts.shape[0]
    n = 0.0
    out = 0.0
    lg_cell = math.lgamma(cell)
    for k in range(K):
        n += counts[k]
        out += math.lgamma(counts[k] + cell) - lg_cell
    return out + math.lgamma(K * cell) - math.lgamma(n + K * cell)


@njit_exact
def dirichlet_categorical_table_log_marginal(table, cell):
    """Sum of :func:`dirichlet_categorical_log_marginal` over the rows of ``table``
    (child counts per parent value: the BDeu local score, Murphy Eq. 26.28)."""
    out = 0.0
    for j in range(table.shape[0]):
        out += dirichlet_categorical_log_marginal(table[j], cell)
    return out


def dirichlet_categorical_log_predictive(counts, cell):
    """log p(x = k | D) for every k: log (n_k + a) - log (N + K a); NumPy, vectorised
    over leading axes of ``counts`` (..., K)."""
    counts = np.asarray(counts, dtype=np.float64)
    K = counts.shape[-1]
    return np.log(counts + cell) - np.log(counts.sum(axis=-1, keepdims=True) + K * cell)


def dirichlet_posterior(counts, concentration):
    """Dirichlet posterior parameters ``concentration + counts`` (broadcasting)."""
    return np.asarray(concentration, dtype=np.float64) + np.asarray(counts, dtype=np.float64)
