"""The alias-Metropolis-Hastings sweep of collapsed LDA for many topics (LightLDA).

Yuan, Gao, Ho, Dai, Wei, Zheng, Xing, Liu & Ma (2015), "LightLDA: big topic models on
modest computer clusters" (WWW), §3: the cycle of a word proposal and a document
proposal, each a Metropolis-Hastings step, O(1) per token whatever K. The token's
conditional (Murphy 2012 Eq. 27.37 at inverse temperature ``beta``,
:mod:`custom_ops.lda.gibbs`, Tempering), with ``T_w(c) = (c + eta_w)^beta`` and
``H_k = (n_k + sum_v eta_v)^beta`` and the token removed from the counts, factorises as

.. math:: p(k) \\propto (n_{dk} + \\alpha_k)\\,\\frac{T_w(n_{wk})}{H_k} .

LightLDA proposes from each factor in turn (its Eqs. for ``q_w`` and ``q_d``):

- the word proposal ``q_w(k) ∝ T_w(n'_{wk}) / H'_k``, the word factor as it was when the
  word's Walker alias table (Walker 1977, built by Vose's method, 1991) was last built;
  the table serves ``K`` draws and is then rebuilt (O(K) per ``K`` draws, O(1)
  amortised), so ``q_w`` is stale;
- the document proposal ``q_d(k) ∝ n_{dk} + alpha_k``, drawn in O(1) as the topic of a
  uniform other token of the document (probability ``(L_d - 1) / (L_d - 1 + sum
  alpha)``) or else from an alias table of ``alpha``; it is exact.

Each proposal ``t`` from the current topic ``s`` is accepted with the independence
sampler's probability

.. math:: \\min\\Big\\{1, \\frac{p(t)\\, q(s)}{p(s)\\, q(t)}\\Big\\}

(LightLDA's acceptance ratios: for ``q_d`` the document factors cancel and it is the
ratio of word factors; for ``q_w`` the stale table enters the ratio). ``p`` is evaluated
at the current counts, so every step leaves the token's exact conditional invariant however
stale the tables are, and the sweep leaves the power posterior invariant (tested by
enumeration); staleness only costs acceptance. ``beta`` enters through ``T_w`` and
``H_k`` alone (the tables of :func:`custom_ops.lda.gibbs.tempered_powers`), so tempering
needs nothing more.

Cost against SparseLDA (:func:`custom_ops.lda.gibbs.gibbs_sweep_sparse`): a token costs a
constant number of random reads and uniforms per cycle instead of O(k_w), the number of
topics of its word, and the chain mixes more slowly per sweep (proposals are rejected).
AliasLDA (Li, Ahmed, Ravi & Smola 2014), whose exact document part costs O(k_d) per
token, is not used: on long documents k_d is the larger (about 76 topics per token's
document against 13 per word on Reuters at K = 1000), and it was the slower there.

:class:`AliasLDAState` extends :class:`~custom_ops.lda.gibbs.SparseLDAState`: the sweep
keeps its topic lists (they keep the step's per-draw summary cheap and let it switch
kernels) and adds the word tables, ``20 V K`` bytes.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.lda.gibbs import (
    SparseLDAState,
    SweepPrior,
    list_insert,
    list_remove,
    tempered_powers,
)

__all__ = [
    "AliasLDAState",
    "AliasTables",
    "alias_acceptance",
    "build_alias",
    "gibbs_sweep_alias",
]

#: Cycles of a word and a document proposal per token: one, as a second costs about as
#: much as the rest of the token's update.
MH_STEPS = 1


class AliasTables(NamedTuple):
    """Each word's stale proposal masses ``q_word`` float64 (V, K), their alias table
    (``alias_prob`` float64 (V, K), ``alias_idx`` int32 (V, K)) and the draws each word's
    table still serves, ``draws_left`` int64 (V,) (a word at 0 or below has its table
    rebuilt from the current counts before its next token; all 0: build on first use)."""

    q_word: np.ndarray
    alias_prob: np.ndarray
    alias_idx: np.ndarray
    draws_left: np.ndarray


@njit_exact(inline="always")
def alias_acceptance(p_new, p_old, q_new, q_old):
    """The Metropolis-Hastings ratio ``p(t) q(s) / (p(s) q(t))`` of the word proposal
    ``q`` (a stale alias table) from ``s`` to ``t``: what corrects the staleness."""
    return (p_new * q_old) / (p_old * q_new)


@njit_exact(nogil=True)
def build_alias(masses, prob, alias, small, large):
    """Walker's alias table of ``masses`` (> 0, length n) by Vose's method, in place:
    a uniform column ``c`` keeps ``c`` with probability ``prob[c]``, else takes
    ``alias[c]``, so ``k`` is drawn with probability ``masses[k] / sum(masses)``.
    ``small`` and ``large`` are int64 work arrays of length n. Returns the sum."""
    n = masses.size
    total = 0.0
    for k in range(n):
        total += masses[k]
    n_small = 0
    n_large = 0
    for k in range(n):
        prob[k] = masses[k] * n / total
        alias[k] = k
        if prob[k] < 1.0:
            small[n_small] = k
            n_small += 1
        else:
            large[n_large] = k
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        lo = small[n_small]
        g = large[n_large - 1]
        alias[lo] = g
        prob[g] -= 1.0 - prob[lo]
        if prob[g] < 1.0:
            n_large -= 1
            small[n_small] = g
            n_small += 1
    # what is left is 1 up to rounding
    for j in range(n_large):
        prob[large[j]] = 1.0
    for j in range(n_small):
        prob[small[j]] = 1.0
    return total


@njit_exact(nogil=True)
def gibbs_sweep_alias(tokens, counts, lists, prior, tables, table_draws, n_mh, rng):
    """One sweep of LightLDA's cycle of word and document proposals, each corrected by
    Metropolis-Hastings (module docstring), O(1) per token.

    For each token: remove it from the counts, take ``n_mh`` cycles of a word-proposal
    step and a document-proposal step on its topic, add it back with the topic reached.

    Parameters
    ----------
    tokens, counts, lists : Tokens, TopicCounts, TopicLists
        The :class:`~custom_ops.lda.gibbs.SparseLDAState` arrays, updated in place (the
        topic lists stay those of the counts).
    prior : SweepPrior
        The documents' Dirichlet parameter ``alpha`` float64 (K,) and the tables
        ``pow_offset``, ``word_pow``, ``topic_pow`` of
        :func:`~custom_ops.lda.gibbs.tempered_powers` at ``beta`` and ``eta``, also at
        ``beta = 1`` (``eta`` and ``beta`` enter through the tables alone: ``T_w`` and
        ``H_k`` are always looked up, one code path, and a lookup costs about what the
        sum it replaces does).
    tables : AliasTables
        Each word's stale proposal masses ``Q'_w``, their alias table and the draws it
        still serves, updated in place.
    table_draws : int
        Draws a rebuilt table serves (K makes the O(K) rebuild O(1) per draw). Any value
        leaves the chain exact.
    n_mh : int
        Cycles (a word and a document proposal) per token, >= 1.
    rng : numpy.random.Generator
    """
    words, doc_ptr, z = tokens
    n_wk, n_dk, n_k = counts
    w_ptr, w_topics, w_nnz, d_ptr, d_topics, d_nnz = lists
    alpha = prior.alpha
    pow_offset = prior.pow_offset
    word_pow = prior.word_pow
    topic_pow = prior.topic_pow
    q_word, alias_prob, alias_idx, draws_left = tables
    n_topics = n_k.size
    n_docs = doc_ptr.size - 1
    inv = np.empty(n_topics)
    for k in range(n_topics):
        inv[k] = topic_pow[n_k[k]]
    masses = np.empty(n_topics)
    small = np.empty(n_topics, dtype=np.int64)
    large = np.empty(n_topics, dtype=np.int64)
    # the document proposal's alpha part: one table for the sweep
    alpha_prob = np.empty(n_topics)
    alpha_idx = np.empty(n_topics, dtype=np.int32)
    alpha_sum = build_alias(alpha, alpha_prob, alpha_idx, small, large)
    for d in range(n_docs):
        first = doc_ptr[d]
        others = doc_ptr[d + 1] - first - 1  # tokens of d besides the current one
        ds = d_ptr[d]
        for i in range(first, doc_ptr[d + 1]):
            w = words[i]
            s = z[i]
            n_wk[w, s] -= 1
            n_dk[d, s] -= 1
            n_k[s] -= 1
            inv[s] = topic_pow[n_k[s]]
            if n_dk[d, s] == 0:
                list_remove(d_topics, ds, d_nnz, d, s)
            ws = w_ptr[w]
            if n_wk[w, s] == 0:
                list_remove(w_topics, ws, w_nnz, w, s)
            po = pow_offset[w]
            if draws_left[w] <= 0:
                for k in range(n_topics):
                    masses[k] = word_pow[po + n_wk[w, k]] * inv[k]
                    q_word[w, k] = masses[k]
                build_alias(masses, alias_prob[w], alias_idx[w], small, large)
                draws_left[w] = table_draws
            # word part T_w(n_wk) / H_k and document part n_dk + alpha_k of p(s)
            tw = word_pow[po + n_wk[w, s]]
            word_s = tw * inv[s]
            doc_s = n_dk[d, s] + alpha[s]
            for _ in range(n_mh):
                # word proposal: the stale table of word w
                x = rng.random() * n_topics
                c = min(int(x), n_topics - 1)
                t = c if x - c < alias_prob[w, c] else alias_idx[w, c]
                draws_left[w] -= 1
                if t != s:
                    tw = word_pow[po + n_wk[w, t]]
                    word_t = tw * inv[t]
                    doc_t = n_dk[d, t] + alpha[t]
                    ratio = alias_acceptance(
                        doc_t * word_t, doc_s * word_s, q_word[w, t], q_word[w, s]
                    )
                    if rng.random() < ratio:
                        s, word_s, doc_s = t, word_t, doc_t
                # document proposal: n_dk + alpha_k, by the topic of another token of d
                # or from alpha's table
                u = rng.random() * (others + alpha_sum)
                if u < others:
                    j = first + min(int(u), others - 1)
                    t = z[j + 1] if j >= i else z[j]
                else:
                    x = (u - others) / alpha_sum * n_topics
                    c = min(int(x), n_topics - 1)
                    t = c if x - c < alpha_prob[c] else alpha_idx[c]
                if t != s:
                    tw = word_pow[po + n_wk[w, t]]
                    word_t = tw * inv[t]
                    doc_t = n_dk[d, t] + alpha[t]
                    # p(t) q_d(s) / (p(s) q_d(t)): the document factors cancel
                    if rng.random() < word_t / word_s:
                        s, word_s, doc_s = t, word_t, doc_t
            z[i] = s
            if n_dk[d, s] == 0:
                list_insert(d_topics, ds, d_nnz, d, s)
            if n_wk[w, s] == 0:
                list_insert(w_topics, ws, w_nnz, w, s)
            n_wk[w, s] += 1
            n_dk[d, s] += 1
            n_k[s] += 1
            inv[s] = topic_pow[n_k[s]]


class AliasLDAState(SparseLDAState):
    """A :class:`~custom_ops.lda.gibbs.SparseLDAState` plus every word's alias table,
    swept by :func:`gibbs_sweep_alias` (LightLDA's cycle).

    The tables (``q_word``, ``alias_prob``, ``alias_idx``: V x K each) are allocated on
    the first sweep and built lazily, word by word; they are proposals only, so tables
    left from another ``beta`` or other counts keep the chain exact (they are marked
    stale when ``beta`` changes, to keep the acceptance high). Parameters as
    :class:`~custom_ops.lda.gibbs.SparseLDAState`.
    """

    def __init__(self, words, doc_ptr, z, n_words: int, n_topics: int):
        super().__init__(words, doc_ptr, z, n_words, n_topics)
        self.q_word = None
        self._table_beta = None

    def _tables(self, beta: float):
        if self.q_word is None:
            shape = (self.n_words, self.n_topics)
            self.q_word = np.zeros(shape)
            self.alias_prob = np.zeros(shape)
            self.alias_idx = np.zeros(shape, dtype=np.int32)
            self.draws_left = np.zeros(self.n_words, dtype=np.int64)
        if beta != self._table_beta:
            self.draws_left[:] = 0
            self._table_beta = beta
        return AliasTables(self.q_word, self.alias_prob, self.alias_idx, self.draws_left)

    def lookup_powers(self, eta, beta: float):
        """``(word_pow, topic_pow)`` of :func:`~custom_ops.lda.gibbs.tempered_powers` at
        ``beta`` and ``eta``, made once and kept while they stay the same (at ``beta = 1``
        too, unlike :meth:`powers`)."""
        key = ("alias", beta, np.asarray(eta, dtype=np.float64).tobytes())
        if self.power_tables is None or self.power_tables[0] != key:
            tables = tempered_powers(
                self.pow_offset, np.asarray(eta, dtype=np.float64), float(beta), self.words.size
            )
            self.power_tables = (key, tables)
        return self.power_tables[1]

    def take_tables(self, other: AliasLDAState) -> None:
        """Use ``other``'s word tables (a state of the same corpus and K): they are
        proposals, valid for any counts, and save rebuilding every word's table."""
        if other.q_word is not None and other.q_word.shape == (self.n_words, self.n_topics):
            self.q_word = other.q_word
            self.alias_prob, self.alias_idx = other.alias_prob, other.alias_idx
            self.draws_left, self._table_beta = other.draws_left, other._table_beta

    def kernel_args(
        self, alpha, eta, beta: float, n_mh: int = MH_STEPS, table_draws: int | None = None
    ) -> tuple:
        """The arguments of :func:`gibbs_sweep_alias` before ``rng``, for a sweep at
        ``beta`` with ``n_mh`` cycles of proposals per token and tables rebuilt
        after ``table_draws`` draws (default K)."""
        prior = SweepPrior(alpha, eta, beta, self.pow_offset, *self.lookup_powers(eta, beta))
        return (
            self.tokens,
            self.counts,
            self.lists,
            prior,
            self._tables(float(beta)),
            self.n_topics if table_draws is None else int(table_draws),
            int(n_mh),
        )

    def alias_sweep(self, alpha, eta, beta, rng) -> None:
        """One LightLDA sweep at inverse temperature ``beta`` (:func:`gibbs_sweep_alias`;
        :meth:`sweep`, inherited, is SparseLDA's on the same state)."""
        gibbs_sweep_alias(*self.kernel_args(alpha, eta, beta), rng)
