"""Per-draw summaries of collapsed LDA's counts, accumulated in Numba: log p(w, z) and the
concentrations of phi and theta, from the counts (O((V + D) K)) or through SparseLDA's topic
lists (O(nonzero cells)), with the log-gamma lookups they read."""

from __future__ import annotations

import math

import numpy as np
from numba import uintp

from custom_ops.jit import njit_exact

__all__ = ["draw_summary", "draw_summary_lists", "lgamma_tables"]


def lgamma_tables(alpha: float, eta: float, max_word_count: int, max_doc_count: int):
    """``lgamma(n + eta) - lgamma(eta)`` for n <= ``max_word_count`` and the same for
    ``alpha`` up to ``max_doc_count``: the lookups of :func:`draw_summary` (symmetric
    priors). A word's count in a topic is at most its corpus frequency and a document's
    count at most its length, so tables sized by those serve every state."""
    n_eta = np.arange(max_word_count + 1, dtype=np.float64)
    n_alpha = np.arange(max_doc_count + 1, dtype=np.float64)
    from scipy.special import gammaln

    return (gammaln(n_eta + eta) - gammaln(eta), gammaln(n_alpha + alpha) - gammaln(alpha))


@njit_exact
def _draw_summary(n_wk, n_dk, n_k, alpha, eta, table_eta, table_alpha):
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    v_eta = n_words * eta
    k_alpha = n_topics * alpha
    # sum_v (c + eta)^2 = sum_v c^2 + 2 eta n_k + V eta^2: only the nonzero cells count
    ll = n_topics * math.lgamma(v_eta)
    sq = np.zeros(n_topics, dtype=np.int64)
    for v in range(n_words):
        for k in range(n_topics):
            c = n_wk[v, k]
            if c > 0:
                ll += table_eta[c]
                sq[k] += c * c
    phi_c = 0.0
    for k in range(n_topics):
        ll -= math.lgamma(v_eta + n_k[k])
        denom = n_k[k] + v_eta
        phi_c += (sq[k] + 2.0 * eta * n_k[k] + n_words * eta * eta) / (denom * denom)
    ll += n_docs * math.lgamma(k_alpha)
    theta_c = 0.0
    for d in range(n_docs):
        length = 0
        acc = 0
        for k in range(n_topics):
            c = n_dk[d, k]
            if c > 0:
                ll += table_alpha[c]
                length += c
                acc += c * c
        ll -= math.lgamma(k_alpha + length)
        denom = length + k_alpha
        theta_c += (acc + 2.0 * alpha * length + n_topics * alpha * alpha) / (denom * denom)
    return ll, phi_c / n_topics, theta_c / max(n_docs, 1)


@njit_exact
def _draw_summary_lists(counts, lists, alpha, eta, table_eta, table_alpha):
    # _draw_summary's sums over the nonzero cells only, found through SparseLDA's topic
    # lists: O(nonzero cells) rather than O((V + D) K) per draw. Each row's terms are
    # summed apart and then added (shorter chains of dependent additions), with
    # unsigned indices (Numba wraps negative values of signed ones).
    n_wk, n_dk, n_k = counts
    w_ptr, w_topics, w_nnz, d_ptr, d_topics, d_nnz = lists
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    v_eta = n_words * eta
    k_alpha = n_topics * alpha
    ll = n_topics * math.lgamma(v_eta)
    sq = np.zeros(n_topics, dtype=np.int64)
    for v in range(uintp(n_words)):
        row = 0.0
        start = uintp(w_ptr[v])
        for j in range(start, start + uintp(w_nnz[v])):
            k = uintp(w_topics[j])
            c = n_wk[v, k]
            row += table_eta[uintp(c)]
            sq[k] += c * c
        ll += row
    phi_c = 0.0
    for k in range(n_topics):
        ll -= math.lgamma(v_eta + n_k[k])
        denom = n_k[k] + v_eta
        phi_c += (sq[k] + 2.0 * eta * n_k[k] + n_words * eta * eta) / (denom * denom)
    ll += n_docs * math.lgamma(k_alpha)
    theta_c = 0.0
    for d in range(uintp(n_docs)):
        length = 0
        acc = 0
        row = 0.0
        start = uintp(d_ptr[d])
        for j in range(start, start + uintp(d_nnz[d])):
            c = n_dk[d, uintp(d_topics[j])]
            row += table_alpha[uintp(c)]
            length += c
            acc += c * c
        ll += row - math.lgamma(k_alpha + length)
        denom = length + k_alpha
        theta_c += (acc + 2.0 * alpha * length + n_topics * alpha * alpha) / (denom * denom)
    return ll, phi_c / n_topics, theta_c / max(n_docs, 1)


def draw_summary_lists(
    counts, lists, alpha: float, eta: float, tables
) -> tuple[float, float, float]:
    """:func:`draw_summary` summed over the nonzero cells only, found through the topic
    lists of :class:`~custom_ops.lda.gibbs.SparseLDAState`: ``counts`` a
    :class:`~custom_ops.lda.gibbs.TopicCounts` (``n_wk``, ``n_dk``, ``n_k``) and ``lists``
    a :class:`~custom_ops.lda.gibbs.TopicLists` of them (the words' ``w_ptr``,
    ``w_topics``, ``w_nnz`` and the documents' ``d_ptr``, ``d_topics``, ``d_nnz``), which
    must describe the counts: O(nonzero cells) rather than O((V + D) K)."""
    ll, phi_c, theta_c = _draw_summary_lists(counts, lists, float(alpha), float(eta), *tables)
    return float(ll), float(phi_c), float(theta_c)


def draw_summary(n_wk, n_dk, n_k, alpha: float, eta: float, tables) -> tuple[float, float, float]:
    """``(log_joint, phi concentration, theta concentration)`` in one pass over the
    counts, for symmetric priors, with the tables of :func:`lgamma_tables`: what the
    collapsed step reports every draw (same values as :func:`log_joint` and
    :func:`concentrations`)."""
    ll, phi_c, theta_c = _draw_summary(n_wk, n_dk, n_k, float(alpha), float(eta), *tables)
    return float(ll), float(phi_c), float(theta_c)
