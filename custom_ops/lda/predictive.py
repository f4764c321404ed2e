"""Numba kernels of the collapsed LDA's checks after fitting: each token's conditional
predictive (the pointwise log-likelihood for LOO) and replicated words (the posterior
predictive), from the topics ``z`` of a posterior draw.

Layout as in :mod:`custom_ops.lda.gibbs`: tokens document by document
(``words[doc_ptr[d]:doc_ptr[d + 1]]``), ``z`` aligned with ``words``, counts ``n_wk``
word-major.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact

__all__ = ["loo_log_predictive", "replicate_words"]


@njit_exact
def _counts(words, doc_ptr, z, n_words, n_topics):
    n_docs = doc_ptr.shape[0] - 1
    n_wk = np.zeros((n_words, n_topics))
    n_dk = np.zeros((n_docs, n_topics))
    n_k = np.zeros(n_topics)
    for d in range(n_docs):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            n_wk[words[i], z[i]] += 1.0
            n_dk[d, z[i]] += 1.0
            n_k[z[i]] += 1.0
    return n_wk, n_dk, n_k


@njit_exact
def loo_log_predictive(words, doc_ptr, z, n_words, n_topics, alpha, eta, out):
    """``out[i] = log p(w_i | z_{-i}, w_{-i})`` for every token (Griffiths & Steyvers
    2004; Murphy 2012 Eq. 27.37's normaliser)::

        sum_k (n_dk + alpha_k) / (N_d - 1 + sum alpha) (n_wk + eta_w) / (n_k + sum eta)

    with token ``i``'s own topic taken out of the counts: its topic summed out under its
    document's topic proportions given the others, and each topic's word distribution
    integrated out given the other tokens.
    """
    n_wk, n_dk, n_k = _counts(words, doc_ptr, z, n_words, n_topics)
    sum_alpha = 0.0
    for k in range(n_topics):
        sum_alpha += alpha[k]
    sum_eta = 0.0
    for v in range(n_words):
        sum_eta += eta[v]
    for d in range(doc_ptr.shape[0] - 1):
        length = doc_ptr[d + 1] - doc_ptr[d]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[i]
            k0 = z[i]
            n_wk[w, k0] -= 1.0
            n_dk[d, k0] -= 1.0
            n_k[k0] -= 1.0
            p = 0.0
            for k in range(n_topics):
                p += (n_dk[d, k] + alpha[k]) * (n_wk[w, k] + eta[w]) / (n_k[k] + sum_eta)
            out[i] = math.log(p) - math.log(length - 1.0 + sum_alpha)
            n_wk[w, k0] += 1.0
            n_dk[d, k0] += 1.0
            n_k[k0] += 1.0
    return out


@njit_exact
def replicate_words(rng, words, doc_ptr, z, n_words, n_topics, eta, out):
    """One replicate of every token given its topic: each topic's word distribution
    drawn from its posterior ``Dir(eta + n_k.)`` given the draw's topics, then
    ``out[i] ~ Cat(phi_{z_i})``."""
    n_wk, _n_dk, _n_k = _counts(words, doc_ptr, z, n_words, n_topics)
    cum = np.empty((n_topics, n_words))
    for k in range(n_topics):
        total = 0.0
        for v in range(n_words):
            total += rng.gamma(eta[v] + n_wk[v, k], 1.0)
            cum[k, v] = total
        if total <= 0.0:  # every gamma draw underflowed: a word at random
            for v in range(n_words):
                cum[k, v] = v + 1.0
            total = float(n_words)
        for v in range(n_words):
            cum[k, v] /= total
    for i in range(z.shape[0]):
        row = cum[z[i]]
        u = rng.random()
        lo, hi = 0, n_words - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if row[mid] <= u:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo
    return out
