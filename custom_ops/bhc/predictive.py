"""Each row's conditional predictive under a fixed BHC tree: the pointwise
log-likelihood of :mod:`pp_models.bhc.predictive` (LOO).

The tree-consistent evidence (Heller 2007 Eq. 3.2) is linear in each data point's
density: ``p(D_k | T_k) = pi_k p(D_k | H1) + (1 - pi_k) p(D_i | T_i) p(D_j | T_j)`` with
``pi_k`` a function of ``alpha`` and the tree only. Integrating row ``x`` out therefore
replaces, on the path from its leaf to the root, each ``p(D_k | H1)`` by the conjugate
marginal of the node's other rows and the leaf's own term by 1, the ``pi_k`` unchanged;
``log p(x | X_{-x}, T) = log p(D | T) - log ∫ p(D | T) dx``.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.bhc.evidence import tree_forward
from custom_ops.conjugate import log_marginal
from custom_ops.jit import njit_exact

__all__ = ["tree_loo_log_predictive"]


@njit_exact
def _logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    top = max(a, b)
    return top + math.log(math.exp(a - top) + math.exp(b - top))


@njit_exact
def tree_loo_log_predictive(fam, pstats, merges, alpha, hp, out):
    """``out[x] = log p(x | X_{-x}, T, alpha, hp)`` for every row ``x`` (module
    docstring); ``pstats``: the rows' conjugate statistics, ``merges`` (n - 1, 2), ``hp``
    the packed hyperparameters. Returns ``(out, log p(D | T))``."""
    log_p, _log_r, _log_q, log_d, _lml, stats = tree_forward(fam, pstats, merges, alpha, hp)
    n = pstats.shape[0]
    m = 2 * n - 1
    parent = np.full(m, -1, dtype=np.int64)
    for t in range(n - 1):
        parent[merges[t, 0]] = n + t
        parent[merges[t, 1]] = n + t
    la = math.log(alpha)
    rest = np.empty(pstats.shape[1])
    root = m - 1
    for x in range(n):
        masked = 0.0  # the leaf's own density, integrated: log 1
        child = x
        k = parent[x]
        while k >= 0:
            t = k - n
            a = merges[t, 0]
            b = merges[t, 1]
            other = b if a == child else a
            log_pi = la + math.lgamma(stats[k, 0]) - log_d[k]
            log_1mpi = log_d[a] + log_d[b] - log_d[k]
            for s in range(rest.shape[0]):
                rest[s] = stats[k, s] - pstats[x, s]
            masked = _logaddexp(log_pi + log_marginal(fam, rest, hp),
                                log_1mpi + masked + log_p[other])
            child = k
            k = parent[k]
        out[x] = log_p[root] - masked
    return out, log_p[root]
