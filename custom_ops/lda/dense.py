"""The O(K) collapsed Gibbs sweeps of LDA: Griffiths & Steyvers' conditional drawn by a
scan over all topics.

- :func:`gibbs_sweep_dense`: the fused scan (a running sum and a binary search), the
  faster below ~64 topics;
- :func:`gibbs_sweep_blocked`: the same Markov chain with the sum laid out in blocks so
  that the compiler emits vector instructions (faster from ~64 topics;
  :func:`dense_block_width` chooses the blocks).

Counts, corpus layout and tempering are those of :mod:`custom_ops.lda.gibbs` (its module
docstring derives the tempered conditional); the powers at ``beta != 1`` are the tables of
:func:`custom_ops.lda.gibbs.tempered_powers`. Both sweeps draw from the same conditional
as the SparseLDA sweep (:func:`custom_ops.lda.gibbs.gibbs_sweep_sparse`) and the
alias-Metropolis sweep (:mod:`custom_ops.lda.alias`) leaves invariant.
"""

from __future__ import annotations

import numpy as np

from custom_ops.jit import njit_exact

__all__ = ["block_residual", "dense_block_width", "gibbs_sweep_blocked", "gibbs_sweep_dense"]


@njit_exact
def gibbs_sweep_dense(tokens, counts, prior, rng):
    """One collapsed Gibbs sweep over all tokens, O(K) per token, counts in place.

    For each token: remove it from the counts, draw its topic from Murphy (2012)
    Eq. 27.37 (Griffiths & Steyvers 2004 Eq. 5) with the word's predictive to the power
    ``beta`` (:mod:`custom_ops.lda.gibbs`, Tempering),

    .. math:: p_\\beta(z_i = k \\mid z_{-i}, w) \\propto
        \\Big(\\frac{n^{-i}_{w_i k} + \\eta_{w_i}}{n^{-i}_k + \\sum_v\\eta_v}\\Big)^\\beta
        \\,(n^{-i}_{d_i k} + \\alpha_k),

    and add it back.

    Parameters
    ----------
    tokens : custom_ops.lda.gibbs.Tokens
        The corpus, document by document (``words`` int32 (N,), ``doc_ptr`` int64
        (D + 1,)), and its topics ``z`` int32 (N,), updated in place.
    counts : custom_ops.lda.gibbs.TopicCounts
        ``n_wk`` int32 (V, K), ``n_dk`` int32 (D, K), ``n_k`` int32 (K,): counts of ``z``,
        updated in place.
    prior : custom_ops.lda.gibbs.SweepPrior
        The Dirichlet parameters ``alpha`` float64 (K,) and ``eta`` float64 (V,), the
        inverse temperature ``beta`` of the likelihood in [0, 1] (1: the posterior), and
        ``pow_offset`` int64 (V + 1,), ``word_pow``, ``topic_pow`` float64: at
        ``beta != 1``, the powers of :func:`~custom_ops.lda.gibbs.tempered_powers` at this
        ``beta`` and ``eta`` (a token then costs K lookups, as at ``beta = 1`` it costs K
        multiply-adds); unused, and may be empty, at ``beta = 1``.
    rng : numpy.random.Generator
        Source of the uniforms; its state advances.
    """
    words, doc_ptr, z = tokens
    n_wk, n_dk, n_k = counts
    alpha, eta, beta, pow_offset, word_pow, topic_pow = prior
    n_topics = n_k.size
    tempered = beta != 1.0
    n_docs = doc_ptr.size - 1
    eta_sum = 0.0
    for v in range(eta.size):
        eta_sum += eta[v]
    # 1 / (n_k + sum eta) changes for two topics per token: caching it replaces K
    # divisions per token by two.
    inv = np.empty(n_topics)
    for k in range(n_topics):
        inv[k] = topic_pow[n_k[k]] if tempered else 1.0 / (n_k[k] + eta_sum)
    # (n_dk + alpha_k) / (n_k + sum eta)^beta, the document's factor, also changes for
    # two topics per token; with it the inner loop is one multiply-add per topic.
    coef = np.empty(n_topics)
    cum = np.empty(n_topics)
    for d in range(n_docs):
        for k in range(n_topics):
            coef[k] = (n_dk[d, k] + alpha[k]) * inv[k]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[i]
            t = z[i]
            n_wk[w, t] -= 1
            n_dk[d, t] -= 1
            n_k[t] -= 1
            inv[t] = topic_pow[n_k[t]] if tempered else 1.0 / (n_k[t] + eta_sum)
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]
            eta_w = eta[w]
            total = 0.0
            if tempered:
                po = pow_offset[w]
                for k in range(n_topics):
                    total += word_pow[po + n_wk[w, k]] * coef[k]
                    cum[k] = total
            else:
                for k in range(n_topics):
                    total += (n_wk[w, k] + eta_w) * coef[k]
                    cum[k] = total
            u = rng.random() * total
            t = first_above(cum, u)
            z[i] = t
            n_wk[w, t] += 1
            n_dk[d, t] += 1
            n_k[t] += 1
            inv[t] = topic_pow[n_k[t]] if tempered else 1.0 / (n_k[t] + eta_sum)
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]


@njit_exact(inline="always")
def first_above(cum, u):
    """The first ``k`` with ``cum[k] > u`` in the non-decreasing ``cum`` (the last index
    if none: rounding), found by counting the entries ``<= u``: a branch-free loop the
    compiler vectorises, where a binary search mispredicts about half of its branches."""
    count = 0
    for k in range(cum.size):
        count += cum[k] <= u
    return min(count, cum.size - 1)


def dense_block_width(n_topics: int) -> int:
    """The number of blocks :func:`gibbs_sweep_blocked` splits ``n_topics`` topics into
    (0: too few topics to gain, take :func:`gibbs_sweep_dense`): the vector loops run
    over the blocks, so they need enough of them (measured on Reuters: the blocked sweep
    is slower than the fused scan below 64 topics, 1.6 times faster at 500, 2.3 times
    at 1000)."""
    if n_topics < 64:
        return 0
    return 64 if n_topics < 1024 else 128


@njit_exact(inline="always")
def block_residual(u, cum, b):
    # the uniform's offset into block b: the mass of the blocks before it
    if b > 0:
        return u - cum[b - 1]
    return u


@njit_exact
def gibbs_sweep_blocked(tokens, counts, prior, n_blocks, rng):
    """:func:`gibbs_sweep_dense`'s Markov chain, its O(K) conditional summed so that the
    compiler vectorises it.

    The first ``L * B`` topics (``B = n_blocks``, ``L = K // B``) are laid out as an
    ``(L, B)`` matrix, topic ``j B + b`` in row ``j``, column ``b``: block ``b`` holds the
    topics ``b, B + b, ..., (L - 1) B + b``. The block masses are summed row after row,
    an elementwise loop over the ``B`` columns with no dependence between them (vector
    instructions, each block's terms added in a fixed order, so the code stays exact
    under ``fastmath=False``); the remaining ``K - L B < B`` topics form one last block.
    Only the ``B + 1`` block masses are summed serially; a binary search picks the block
    with probability proportional to its mass and a scan of its ``L`` (or tail) topics the
    topic, so ``k`` is drawn with probability ``p_k / sum p`` as in the fused scan. The
    conditional and the tempering are those of :func:`gibbs_sweep_dense` (Murphy 2012 Eq.
    27.37, the word's predictive to the power ``beta``); arguments are its own plus
    ``n_blocks`` (1 <= ``B`` <= K; :func:`dense_block_width` chooses it).
    """
    words, doc_ptr, z = tokens
    n_wk, n_dk, n_k = counts
    alpha, eta, beta, pow_offset, word_pow, topic_pow = prior
    n_topics = n_k.size
    tempered = beta != 1.0
    n_docs = doc_ptr.size - 1
    eta_sum = 0.0
    for v in range(eta.size):
        eta_sum += eta[v]
    inv = np.empty(n_topics)
    for k in range(n_topics):
        inv[k] = topic_pow[n_k[k]] if tempered else 1.0 / (n_k[k] + eta_sum)
    coef = np.empty(n_topics)
    nb = max(1, min(n_blocks, n_topics))
    lanes = n_topics // nb
    main = nb * lanes
    block = np.empty(nb + 1)
    cum = np.empty(nb + 1)
    # 2-D views: the loops over their columns vectorise where the same sums over strided
    # 1-D indices did not
    coefs = coef[:main].reshape(lanes, nb)
    for d in range(n_docs):
        for k in range(n_topics):
            coef[k] = (n_dk[d, k] + alpha[k]) * inv[k]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[i]
            t = z[i]
            n_wk[w, t] -= 1
            n_dk[d, t] -= 1
            n_k[t] -= 1
            inv[t] = topic_pow[n_k[t]] if tempered else 1.0 / (n_k[t] + eta_sum)
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]
            row = n_wk[w]
            rows = row[:main].reshape(lanes, nb)
            eta_w = eta[w]
            po = pow_offset[w]
            tail = 0.0
            if tempered:
                for b in range(nb):
                    block[b] = word_pow[po + rows[0, b]] * coefs[0, b]
                for j in range(1, lanes):
                    for b in range(nb):
                        block[b] = block[b] + word_pow[po + rows[j, b]] * coefs[j, b]
                for k in range(main, n_topics):
                    tail += word_pow[po + row[k]] * coef[k]
            else:
                for b in range(nb):
                    block[b] = (rows[0, b] + eta_w) * coefs[0, b]
                for j in range(1, lanes):
                    for b in range(nb):
                        block[b] = block[b] + (rows[j, b] + eta_w) * coefs[j, b]
                for k in range(main, n_topics):
                    tail += (row[k] + eta_w) * coef[k]
            block[nb] = tail
            total = 0.0
            for b in range(nb + 1):
                total += block[b]
                cum[b] = total
            u = rng.random() * total
            # binary search for the first block whose cumulative mass exceeds u
            lo = 0
            hi = nb if main < n_topics else nb - 1
            while lo < hi:
                mid = (lo + hi) >> 1
                if cum[mid] > u:
                    hi = mid
                else:
                    lo = mid + 1
            u = block_residual(u, cum, lo)
            if lo == nb:
                first, stop, stride = main, n_topics, 1
                t = n_topics - 1  # rounding: the scan ran off the end of the block
            else:
                first, stop, stride = lo, main, nb
                t = lo + (lanes - 1) * nb
            for k in range(first, stop, stride):
                if tempered:
                    u -= word_pow[po + row[k]] * coef[k]
                else:
                    u -= (row[k] + eta_w) * coef[k]
                if u < 0.0:
                    t = k
                    break
            z[i] = t
            n_wk[w, t] += 1
            n_dk[d, t] += 1
            n_k[t] += 1
            inv[t] = topic_pow[n_k[t]] if tempered else 1.0 / (n_k[t] + eta_sum)
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]
