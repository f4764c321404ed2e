"""The two factors of LDA's collapsed joint from count matrices, each on its own.

AD-LDA (:mod:`pp_models.lda.adlda`) needs them apart: log p(w | z) from the corpus-wide
word-topic counts (held once, after each sweep's reduce), log p(z | alpha) from each
partition's own document-topic counts (summed over partitions). One pass over the
nonzero cells each, so the per-sweep diagnostics stay a small fraction of a sweep.

- :func:`log_p_words`: Murphy (2012) Eq. 27.36,
  ``sum_k [lgamma(B) - lgamma(n_k + B) + sum_v lgamma(n_vk + beta_v) - lgamma(beta_v)]``
  with ``B = sum_v beta_v``;
- :func:`log_p_topics`: Eq. 27.34, the same over documents with ``alpha``.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact

__all__ = ["log_p_topics", "log_p_words"]


@njit_exact
def _log_dirichlet_multinomial(counts, totals, prior):
    """sum over rows r of lgamma(P) - lgamma(totals[r] + P) + sum over the nonzero
    cells (r, c) of lgamma(counts[r, c] + prior[c]) - lgamma(prior[c]), P = sum(prior):
    the log Dirichlet-multinomial marginal of each row's counts."""
    n_rows, n_cols = counts.shape
    total_prior = 0.0
    for i in range(prior.size):
        total_prior += prior[i]
    lg_prior = np.empty(prior.size)
    for i in range(prior.size):
        lg_prior[i] = math.lgamma(prior[i])
    lg_total = math.lgamma(total_prior)
    out = 0.0
    for r in range(n_rows):
        out += lg_total - math.lgamma(totals[r] + total_prior)
        for c in range(n_cols):
            n = counts[r, c]
            if n > 0:
                out += math.lgamma(n + prior[c]) - lg_prior[c]
    return out


def log_p_words(n_wk, n_k, beta) -> float:
    """``log p(w | z, beta)`` from the word-topic counts ``n_wk`` (V, K) and ``n_k``
    (K,); ``beta`` (V,) is the topics' Dirichlet parameter (Murphy Eq. 27.36)."""
    n_wk = np.ascontiguousarray(n_wk)
    beta = np.ascontiguousarray(beta, dtype=np.float64)
    # the rows of the sum are topics (n_wk transposed), the prior runs over words
    total = _log_dirichlet_multinomial(n_wk.T, np.ascontiguousarray(n_k, dtype=np.int64),
                                       beta)
    return float(total)


def log_p_topics(n_dk, lengths, alpha) -> float:
    """``log p(z | alpha)`` of documents from their topic counts ``n_dk`` (D, K) and
    lengths ``L_d`` (D,); ``alpha`` (K,) is the proportions' Dirichlet parameter
    (Murphy Eq. 27.34)."""
    return float(_log_dirichlet_multinomial(
        np.ascontiguousarray(n_dk), np.ascontiguousarray(lengths, dtype=np.int64),
        np.ascontiguousarray(alpha, dtype=np.float64)))
