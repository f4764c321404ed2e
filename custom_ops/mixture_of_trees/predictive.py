"""Numba kernels of a fitted mixture of trees' checks: each row's conditional predictive
given the other rows (the pointwise log-likelihood for LOO) and replicated rows drawn
with the parameters from their posterior (the posterior predictive), for the discrete
(BDeu CPTs) and the Gaussian (hyper-Markov NIW) components, given a posterior draw of
the weights, trees and assignments.

Row ``i``'s conditional predictive sums its assignment out under the weights (the
assignments are independent given ``w``)::

    p(x_i | z_{-i}, X_{-i}, w, T) = sum_k w_k p(x_i | rows of k but i, T_k).
"""

from __future__ import annotations

import numpy as np

from custom_ops.conjugate import gaussian_add, gaussian_remove
from custom_ops.jit import njit_exact
from custom_ops.log_weights import log_sum_exp
from custom_ops.mixture_of_trees.discrete import (
    draw_component_rows,
    row_log_predictive,
    tree_tables,
)
from custom_ops.mixture_of_trees.gaussian import (
    gaussian_component_stats,
    gaussian_tree_draw_row,
    gaussian_tree_row_log_predictive,
)
from custom_ops.trees.spanning import breadth_first_order

__all__ = [
    "gaussian_loo_log_predictive",
    "gaussian_replicate_rows",
    "loo_log_predictive",
    "replicate_rows",
]


@njit_exact
def _count(tables, codes_i, parents_k, k, delta):
    for v in range(codes_i.shape[0]):
        p = parents_k[v]
        j = codes_i[p] if p >= 0 else 0
        tables[k, v, j, codes_i[v]] += delta


@njit_exact
def loo_log_predictive(codes, z, parents, log_w, n_categories, ess, out):
    """``out[i] = log sum_k w_k p(x_i | rows of k but i, T_k)`` (discrete rows, CPTs
    integrated out)."""
    K = parents.shape[0]
    tables = tree_tables(codes, z, parents, n_categories)
    terms = np.empty(K)
    for i in range(codes.shape[0]):
        k0 = z[i]
        _count(tables, codes[i], parents[k0], k0, -1.0)
        for k in range(K):
            terms[k] = log_w[k] + row_log_predictive(tables, codes[i], parents[k], k,
                                                     n_categories, ess)
        out[i] = log_sum_exp(terms)
        _count(tables, codes[i], parents[k0], k0, 1.0)
    return out


@njit_exact
def replicate_rows(rng, codes, z, parents, n_categories, ess, out):
    """One replicate of every row given its component: each component's CPTs drawn from
    their posterior (Dirichlet, prior cell ``ess / (K_pa K_v)`` plus the counts of its
    rows), then the row by ancestral sampling (:func:`draw_component_rows`)."""
    tables = tree_tables(codes, z, parents, n_categories)
    for k in range(parents.shape[0]):
        draw_component_rows(rng, k, z, parents[k], n_categories, ess, tables[k], out)
    return out


@njit_exact
def gaussian_loo_log_predictive(X, z, parents, log_w, prior, out):
    """``out[i] = log sum_k w_k p(x_i | rows of k but i, T_k)`` (Gaussian rows,
    parameters integrated out; ``prior`` a
    :class:`~custom_ops.mixture_of_trees.gaussian.NIWPrior`)."""
    m0, kappa0, delta, S0 = prior
    K = parents.shape[0]
    stats = gaussian_component_stats(X, z, K)
    terms = np.empty(K)
    for i in range(X.shape[0]):
        k0 = z[i]
        gaussian_remove(stats[k0], X[i])
        for k in range(K):
            terms[k] = log_w[k] + gaussian_tree_row_log_predictive(
                X[i], stats[k], parents[k], m0, kappa0, delta, S0)
        out[i] = log_sum_exp(terms)
        gaussian_add(stats[k0], X[i])
    return out


@njit_exact
def gaussian_replicate_rows(rng, X, z, parents, prior, out):
    """One replicate of every row of each component, drawn jointly from the posterior
    predictive of the component's observed rows (a Pólya urn started at their
    statistics: each replicate row from the predictive of the observed rows and the
    replicates drawn before it, which draws the rows of one parameter value drawn from
    its posterior; ``prior`` a :class:`~custom_ops.mixture_of_trees.gaussian.NIWPrior`)."""
    K = parents.shape[0]
    stats = gaussian_component_stats(X, z, K)
    for k in range(K):
        order = breadth_first_order(parents[k])
        for i in np.nonzero(z == k)[0]:
            gaussian_tree_draw_row(rng, parents[k], order, stats[k], prior, out[i])
            gaussian_add(stats[k], out[i])
    return out
