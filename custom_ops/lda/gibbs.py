"""Numba kernels for latent Dirichlet allocation with the topics collapsed out.

Notation (Murphy 2012 §27.3.4, in the LDA paper's letters): token ``i`` of the corpus
has word ``w_i``, document ``d_i`` and topic ``z_i``; the counts are

- ``n_wk[v, k]``: tokens of word ``v`` assigned to topic ``k`` (word-major, so the
  ``K`` counts of one word are contiguous: the inner loop of a token update reads them),
- ``n_dk[d, k]``: tokens of document ``d`` assigned to topic ``k``,
- ``n_k[k]``: tokens assigned to topic ``k``.

Tokens are stored document by document: ``words[doc_ptr[d]:doc_ptr[d + 1]]`` are the
words of document ``d`` (CSR layout), ``z`` is aligned with ``words``.

Every sampling kernel takes a ``numpy.random.Generator`` and draws its uniforms from
it inside the compiled loop (Numba advances the generator's state in place), so a sweep
is reproducible from the generator a PyMC step owns; the SparseLDA sweep, whose token
update is short enough for the generator's call to show, draws them from a stream it
seeds from the generator (:mod:`custom_ops.uniform_stream`).

Kernels
-------
- :func:`build_counts`: counts from ``(words, doc_ptr, z)``.
- :func:`log_joint`: log p(w, z | alpha, eta), Murphy (2012) Eqs. 27.34 and 27.36.
- :class:`SparseLDAState` and :func:`gibbs_sweep_sparse`: one collapsed Gibbs sweep
  (Griffiths & Steyvers 2004, Murphy Eq. 27.37), of the posterior or a power posterior
  (below), by SparseLDA's bucket decomposition (Yao, Mimno & McCallum 2009), whose cost per token
  grows with the number of topics present in the token's word and document rather
  than with K.
- The O(K) sweeps (:mod:`custom_ops.lda.dense`) and the alias-Metropolis sweep for
  many topics (:mod:`custom_ops.lda.alias`) leave the same conditional invariant, on
  the same counts.
- :func:`concentrations`: label-invariant summaries of the conditional posterior means
  of phi and theta, from the counts.

Tempering. The sweeps take an inverse temperature ``beta`` in [0, 1] and sample the
power posterior of the collapsed model, ``p_beta(z | w) ∝ p(z | alpha) p(w | z,
eta)^beta`` (the likelihood is the collapsed word term, Murphy Eq. 27.36). Removing token
``i`` and putting it back in topic ``k`` multiplies ``p(w | z, eta)`` by the predictive
``(n^{-i}_{w_i k} + eta_{w_i}) / (n^{-i}_k + sum eta)`` (the Pólya urn of topic ``k``)
and ``p(z | alpha)`` by ``(n^{-i}_{d_i k} + alpha_k) / (L_d - 1 + sum alpha)``, so

.. math:: p_\\beta(z_i = k \\mid z_{-i}, w) \\propto (n^{-i}_{d_i k} + \\alpha_k)
    \\Big(\\frac{n^{-i}_{w_i k} + \\eta_{w_i}}{n^{-i}_k + \\sum_v\\eta_v}\\Big)^\\beta .

``beta = 1`` takes the untempered code (no powers); ``beta = 0`` samples the prior
``p(z | alpha)``.

The SparseLDA sweep stays beside the counts and summaries because its topic lists are
part of the state the summaries read. Document completion and Minka's update are in
:mod:`custom_ops.lda.evaluation`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import uintp

from custom_ops.jit import njit_exact
from custom_ops.lda.summaries import draw_summary_lists
from custom_ops.uniform_stream import next_uniform, stream_from

__all__ = [
    "SparseLDAState",
    "SweepPrior",
    "Tokens",
    "TopicCounts",
    "TopicLists",
    "build_counts",
    "concentrations",
    "fill_topic_lists",
    "gibbs_sweep_sparse",
    "last_listed",
    "list_insert",
    "list_remove",
    "log_joint",
    "tempered_powers",
    "tempering_tables",
    "topics_out",
]


COUNT_DTYPE = np.int32


class Tokens(NamedTuple):
    """The corpus document by document and its topics: ``words`` int32 (N,), ``doc_ptr``
    int64 (D + 1,) (CSR offsets), ``z`` int32 (N,) (updated in place by the sweeps)."""

    words: np.ndarray
    doc_ptr: np.ndarray
    z: np.ndarray


class TopicCounts(NamedTuple):
    """The counts of an assignment: ``n_wk`` (V, K), ``n_dk`` (D, K), ``n_k`` (K,), int32
    (updated in place by the sweeps)."""

    n_wk: np.ndarray
    n_dk: np.ndarray
    n_k: np.ndarray


class TopicLists(NamedTuple):
    """SparseLDA's topic lists of the counts (:class:`SparseLDAState`): word ``v``'s topics
    in ``w_topics[w_ptr[v] : w_ptr[v] + w_nnz[v]]``, document ``d``'s in
    ``d_topics[d_ptr[d] : d_ptr[d] + d_nnz[d]]``."""

    w_ptr: np.ndarray
    w_topics: np.ndarray
    w_nnz: np.ndarray
    d_ptr: np.ndarray
    d_topics: np.ndarray
    d_nnz: np.ndarray


class SweepPrior(NamedTuple):
    """``alpha`` (K,), ``eta`` (V,), the inverse temperature ``beta`` and the tables of
    :func:`tempered_powers` (``pow_offset``, ``word_pow``, ``topic_pow``; the last two
    empty at ``beta = 1``, where only the alias sweep reads them)."""

    alpha: np.ndarray
    eta: np.ndarray
    beta: float
    pow_offset: np.ndarray
    word_pow: np.ndarray
    topic_pow: np.ndarray


@njit_exact
def _build_counts(words, doc_ptr, z, n_words, n_topics):
    n_docs = doc_ptr.size - 1
    n_wk = np.zeros((n_words, n_topics), dtype=np.int32)
    n_dk = np.zeros((n_docs, n_topics), dtype=np.int32)
    n_k = np.zeros(n_topics, dtype=np.int32)
    for d in range(n_docs):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            k = z[i]
            n_wk[words[i], k] += 1
            n_dk[d, k] += 1
            n_k[k] += 1
    return n_wk, n_dk, n_k


def build_counts(words, doc_ptr, z, n_words: int, n_topics: int):
    """Count matrices ``(n_wk (V, K), n_dk (D, K), n_k (K,))`` of an assignment ``z``.

    Parameters
    ----------
    words, z : int arrays (N,)
        Word id and topic of every token, document by document.
    doc_ptr : int array (D + 1,)
        Token offsets of the documents.
    n_words, n_topics : int
        Vocabulary size V and number of topics K.
    """
    return _build_counts(
        np.ascontiguousarray(words, dtype=np.int32),
        np.ascontiguousarray(doc_ptr, dtype=np.int64),
        np.ascontiguousarray(z, dtype=np.int32),
        int(n_words),
        int(n_topics),
    )


@njit_exact
def _log_joint_symmetric(n_wk, n_dk, n_k, alpha, eta):
    # Tables of lgamma(n + a) - lgamma(a) for integer n make the sum a lookup over the
    # nonzero cells: lgamma dominated the cost otherwise (O(KV) calls per draw).
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    max_count = 0
    for k in range(n_topics):
        if n_k[k] > max_count:
            max_count = n_k[k]
    lg_eta0 = math.lgamma(eta)
    lg_alpha0 = math.lgamma(alpha)
    table_eta = np.empty(max_count + 1)
    table_alpha = np.empty(max_count + 1)
    for n in range(max_count + 1):
        table_eta[n] = math.lgamma(n + eta) - lg_eta0
        table_alpha[n] = math.lgamma(n + alpha) - lg_alpha0
    v_eta = n_words * eta
    k_alpha = n_topics * alpha
    # log p(w | z, eta), Murphy Eq. 27.36
    ll = n_topics * math.lgamma(v_eta)
    for k in range(n_topics):
        ll -= math.lgamma(v_eta + n_k[k])
    for v in range(n_words):
        for k in range(n_topics):
            c = n_wk[v, k]
            if c > 0:
                ll += table_eta[c]
    # log p(z | alpha), Murphy Eq. 27.34
    ll += n_docs * math.lgamma(k_alpha)
    for d in range(n_docs):
        length = 0
        for k in range(n_topics):
            c = n_dk[d, k]
            if c > 0:
                ll += table_alpha[c]
                length += c
        ll -= math.lgamma(k_alpha + length)
    return ll


@njit_exact
def _log_joint_general(n_wk, n_dk, n_k, alpha, eta):
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    eta_sum = 0.0
    for v in range(n_words):
        eta_sum += eta[v]
    alpha_sum = 0.0
    for k in range(n_topics):
        alpha_sum += alpha[k]
    lg_eta = np.empty(n_words)
    for v in range(n_words):
        lg_eta[v] = math.lgamma(eta[v])
    lg_alpha = np.empty(n_topics)
    for k in range(n_topics):
        lg_alpha[k] = math.lgamma(alpha[k])
    ll = n_topics * math.lgamma(eta_sum)
    for k in range(n_topics):
        ll -= math.lgamma(eta_sum + n_k[k])
    for v in range(n_words):
        for k in range(n_topics):
            c = n_wk[v, k]
            if c > 0:
                ll += math.lgamma(c + eta[v]) - lg_eta[v]
    ll += n_docs * math.lgamma(alpha_sum)
    for d in range(n_docs):
        length = 0
        for k in range(n_topics):
            c = n_dk[d, k]
            if c > 0:
                ll += math.lgamma(c + alpha[k]) - lg_alpha[k]
                length += c
        ll -= math.lgamma(alpha_sum + length)
    return ll


@njit_exact
def _concentrations(n_wk, n_dk, n_k, alpha, eta):
    n_words, n_topics = n_wk.shape
    n_docs = n_dk.shape[0]
    eta_sum = eta.sum()
    alpha_sum = alpha.sum()
    sq = np.zeros(n_topics)
    for v in range(n_words):
        for k in range(n_topics):
            x = n_wk[v, k] + eta[v]
            sq[k] += x * x
    phi_c = 0.0
    for k in range(n_topics):
        denom = n_k[k] + eta_sum
        phi_c += sq[k] / (denom * denom)
    theta_c = 0.0
    for d in range(n_docs):
        acc = 0.0
        length = 0
        for k in range(n_topics):
            x = n_dk[d, k] + alpha[k]
            acc += x * x
            length += n_dk[d, k]
        denom = length + alpha_sum
        theta_c += acc / (denom * denom)
    return phi_c / n_topics, theta_c / max(n_docs, 1)


@njit_exact
def _topics_out(z, z_in):
    out = np.empty(z.size, dtype=np.int64)
    changed = 0
    for i in range(z.size):
        out[i] = z[i]
        if z[i] != z_in[i]:
            changed += 1
    return out, changed


def topics_out(z, z_in) -> tuple[np.ndarray, int]:
    """``(z as a new int64 array, number of tokens whose topic differs from z_in)`` in
    one pass: what the collapsed step returns each draw."""
    out, changed = _topics_out(z, z_in)
    return out, int(changed)


def concentrations(n_wk, n_dk, n_k, alpha, eta) -> tuple[float, float]:
    """``(mean_k sum_v phi_kv^2, mean_d sum_k theta_dk^2)`` of the conditional means.

    ``phi_kv = (n_vk + eta_v) / (n_k + sum eta)`` and ``theta_dk = (n_dk + alpha_k) /
    (L_d + sum alpha)`` are E[phi | z, w] and E[theta | z] (Murphy 2012 Eqs. 27.35 and
    27.33's Dirichlet posteriors); the sums of squares are inverse effective vocabulary
    sizes / numbers of topics, invariant to relabelling topics.

    Parameters
    ----------
    n_wk, n_dk, n_k : int arrays
        Counts as returned by :func:`build_counts`.
    alpha : float array (K,), eta : float array (V,)
    """
    phi_c, theta_c = _concentrations(
        n_wk, n_dk, n_k, np.asarray(alpha, dtype=np.float64), np.asarray(eta, dtype=np.float64)
    )
    return float(phi_c), float(theta_c)


def log_joint(n_wk, n_dk, n_k, alpha, eta) -> float:
    """Collapsed joint log p(w, z | alpha, eta) from the counts.

    Murphy (2012) Eq. 27.34 (log p(z | alpha)) plus Eq. 27.36 (log p(w | z, eta), with
    the erratum gamma for beta):

    .. math::
        \\sum_k \\Big[\\log\\Gamma(\\textstyle\\sum_v\\eta_v)
        - \\log\\Gamma(n_k + \\sum_v\\eta_v)
        + \\sum_v \\log\\frac{\\Gamma(n_{vk}+\\eta_v)}{\\Gamma(\\eta_v)}\\Big]
        + \\sum_d \\Big[\\log\\Gamma(\\textstyle\\sum_k\\alpha_k)
        - \\log\\Gamma(L_d + \\sum_k\\alpha_k)
        + \\sum_k \\log\\frac{\\Gamma(n_{dk}+\\alpha_k)}{\\Gamma(\\alpha_k)}\\Big]

    Parameters
    ----------
    n_wk, n_dk, n_k : int arrays
        Counts as returned by :func:`build_counts`.
    alpha, eta : float or float arrays (K,) / (V,)
        Dirichlet parameters; scalars mean symmetric priors.
    """
    alpha_arr = np.asarray(alpha, dtype=np.float64)
    eta_arr = np.asarray(eta, dtype=np.float64)
    if alpha_arr.ndim == 0 and eta_arr.ndim == 0:
        return float(_log_joint_symmetric(n_wk, n_dk, n_k, float(alpha_arr), float(eta_arr)))
    n_words, n_topics = n_wk.shape
    return float(
        _log_joint_general(
            n_wk,
            n_dk,
            n_k,
            np.broadcast_to(alpha_arr, (n_topics,)).copy(),
            np.broadcast_to(eta_arr, (n_words,)).copy(),
        )
    )


# ---------------------------------------------------------------------------------------
# SparseLDA (Yao, Mimno & McCallum 2009)
# ---------------------------------------------------------------------------------------


class SparseLDAState:
    """Counts of an assignment plus the sparse topic lists SparseLDA walks.

    For every word ``v`` the topics with ``n_wk[v, k] > 0`` are kept in
    ``w_topics[w_ptr[v] : w_ptr[v] + w_nnz[v]]`` in increasing order, and likewise the
    topics of every document in ``d_topics``. Capacities are ``min(K, tokens of v)`` and
    ``min(K, L_d)``, which can never overflow. The sweeps keep the order (the walks over
    a list depend on it), so a state built afresh from a chain's ``z`` continues the
    chain draw for draw: what resuming a stored chain relies on (unordered lists, a
    removal swapping the last entry in, were walked faster, but a resumed chain then left
    the stored one).

    Parameters
    ----------
    words, doc_ptr, z : arrays
        The corpus and its current topics (``z`` is copied).
    n_words, n_topics : int
    """

    def __init__(self, words, doc_ptr, z, n_words: int, n_topics: int):
        self.words = np.ascontiguousarray(words, dtype=np.int32)
        self.doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        self.z = np.array(z, dtype=np.int32, copy=True)
        self.n_words = int(n_words)
        self.n_topics = int(n_topics)
        self.n_wk, self.n_dk, self.n_k = build_counts(
            self.words, self.doc_ptr, self.z, self.n_words, self.n_topics
        )
        word_freq = np.bincount(self.words, minlength=self.n_words)
        doc_len = np.diff(self.doc_ptr)
        self.w_ptr = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(np.minimum(word_freq, self.n_topics), out=self.w_ptr[1:])
        self.d_ptr = np.zeros(doc_len.size + 1, dtype=np.int64)
        np.cumsum(np.minimum(doc_len, self.n_topics), out=self.d_ptr[1:])
        self.w_topics = np.zeros(int(self.w_ptr[-1]), dtype=np.int32)
        self.d_topics = np.zeros(int(self.d_ptr[-1]), dtype=np.int32)
        self.w_nnz = np.zeros(self.n_words, dtype=np.int32)
        self.d_nnz = np.zeros(doc_len.size, dtype=np.int32)
        fill_topic_lists(self.n_wk, self.w_ptr, self.w_topics, self.w_nnz)
        fill_topic_lists(self.n_dk, self.d_ptr, self.d_topics, self.d_nnz)
        # the tempered sweeps' tables (tempered_powers), made on the first sweep at a
        # beta != 1 and kept while beta and eta stay the same: ``(key, tables)`` or None.
        # They depend on the corpus only through its word frequencies, so a new state of
        # the same corpus may take them over (assign ``power_tables``).
        self.pow_offset = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(word_freq + 1, out=self.pow_offset[1:])
        self.power_tables = None
        self._no_powers = (np.empty(0), np.empty(0))

    @property
    def tokens(self) -> Tokens:
        """The corpus and its topics as the sweeps take them."""
        return Tokens(self.words, self.doc_ptr, self.z)

    @property
    def counts(self) -> TopicCounts:
        """The counts as the sweeps and summaries take them."""
        return TopicCounts(self.n_wk, self.n_dk, self.n_k)

    @property
    def lists(self) -> TopicLists:
        """The topic lists as the sparse sweeps and summaries take them."""
        return TopicLists(
            self.w_ptr, self.w_topics, self.w_nnz, self.d_ptr, self.d_topics, self.d_nnz
        )

    def sweep_prior(self, alpha, eta, beta: float) -> SweepPrior:
        """The :class:`SweepPrior` of a sweep at ``beta`` (:meth:`powers` for its
        tables)."""
        return SweepPrior(alpha, eta, beta, self.pow_offset, *self.powers(eta, beta))

    def set_word_counts(self, n_wk, n_k) -> None:
        """Sample against the word-topic counts ``n_wk`` (V, K) and ``n_k`` (K,) (copied)
        instead of this state's own: the corpus-wide counts of approximate distributed
        LDA, of which this state's tokens are one part (Newman et al. 2009 §3). The word
        topic lists are rebuilt with room for every topic, as the counts of other tokens
        may fill any. Counts equal to the state's own change nothing (the lists keep the
        order the sweeps left them in, which the next sweep's draws depend on), so a
        single partition's sweeps are exactly the serial sampler's."""
        n_wk = np.asarray(n_wk)
        if n_wk.shape != (self.n_words, self.n_topics) or np.shape(n_k) != (self.n_topics,):
            raise ValueError(
                f"n_wk must be ({self.n_words}, {self.n_topics}) and n_k "
                f"({self.n_topics},), got {n_wk.shape} and {np.shape(n_k)}"
            )
        full = self.w_ptr[-1] == self.n_words * self.n_topics
        if full and np.array_equal(n_wk, self.n_wk):
            return
        self.n_wk = np.array(n_wk, dtype=COUNT_DTYPE, order="C")
        self.n_k = np.array(n_k, dtype=COUNT_DTYPE)
        if not full:
            self.w_ptr = np.arange(self.n_words + 1, dtype=np.int64) * self.n_topics
            self.w_topics = np.zeros(self.n_words * self.n_topics, dtype=np.int32)
        fill_topic_lists(self.n_wk, self.w_ptr, self.w_topics, self.w_nnz)

    def powers(self, eta, beta: float):
        """``(word_pow, topic_pow)`` of :func:`tempered_powers` at ``beta`` and ``eta``,
        made once and kept while they stay the same (empty arrays at ``beta = 1``)."""
        if beta == 1.0:
            return self._no_powers
        key = (beta, np.asarray(eta, dtype=np.float64).tobytes())
        if self.power_tables is None or self.power_tables[0] != key:
            tables = tempered_powers(
                self.pow_offset, np.asarray(eta, dtype=np.float64), float(beta), self.words.size
            )
            self.power_tables = (key, tables)
        return self.power_tables[1]

    def summary(self, alpha: float, eta: float, tables) -> tuple[float, float, float]:
        """:func:`draw_summary` of this state's counts through its topic lists (valid
        after sparse sweeps, not after dense ones, which leave the lists as they were)."""
        return draw_summary_lists(self.counts, self.lists, alpha, eta, tables)

    def topics_out(self, z_in) -> tuple[np.ndarray, int]:
        """:func:`topics_out` of this state's topics: a new int64 copy and how many
        differ from ``z_in``."""
        return topics_out(self.z, z_in)

    def sweep(self, alpha, eta, beta, rng) -> None:
        """One SparseLDA Gibbs sweep at inverse temperature ``beta`` (see
        :func:`gibbs_sweep_sparse`)."""
        gibbs_sweep_sparse(
            self.tokens, self.counts, self.lists, self.sweep_prior(alpha, eta, beta), rng
        )


@njit_exact(nogil=True)
def fill_topic_lists(counts, ptr, topics, nnz):
    """The topic lists of :class:`SparseLDAState` of the rows of ``counts``: row ``r``'s
    topics with a positive count in ``topics[ptr[r] : ptr[r] + nnz[r]]``, in place."""
    for r in range(counts.shape[0]):
        m = 0
        for k in range(counts.shape[1]):
            if counts[r, k] > 0:
                topics[ptr[r] + m] = k
                m += 1
        nnz[r] = m


@njit_exact(inline="always")
def list_remove(topics, start, nnz_ref, row, k):
    """Remove topic ``k`` from row ``row``'s topic list ``topics[start : start +
    nnz_ref[row]]``, keeping the others in increasing order, and shorten it."""
    m = uintp(nnz_ref[row])
    first = uintp(start)
    topic = uintp(k)
    end = first + m
    j = first
    while j < end and uintp(topics[j]) != topic:
        j += uintp(1)
    while j + uintp(1) < end:
        topics[j] = topics[j + uintp(1)]
        j += uintp(1)
    nnz_ref[row] = m - uintp(1)


@njit_exact(inline="always")
def list_insert(topics, start, nnz_ref, row, k):
    """Insert topic ``k`` (not listed) into row ``row``'s topic list ``topics[start :
    start + nnz_ref[row]]`` at its place in increasing order, and lengthen it."""
    m = uintp(nnz_ref[row])
    first = uintp(start)
    topic = uintp(k)
    j = first + m
    while j > first and uintp(topics[j - uintp(1)]) > topic:
        topics[j] = topics[j - uintp(1)]
        j -= uintp(1)
    topics[j] = topic
    nnz_ref[row] = m + uintp(1)


@njit_exact(inline="always")
def last_listed(topics, start, m, row_counts):
    """The last topic in the list ``topics[start : start + m]`` with a positive count in
    ``row_counts`` (the sweep's walks end there when rounding carries them past the end;
    the token's old topic may be listed with a zero count)."""
    for back in range(m):
        k = uintp(topics[start + m - uintp(1) - uintp(back)])
        if row_counts[k] > 0:
            return k
    return uintp(topics[start])


def tempering_tables(words, n_words: int, eta, beta: float):
    """``(pow_offset, word_pow, topic_pow)`` for a sweep of the corpus ``words`` at
    inverse temperature ``beta`` (:func:`tempered_powers`; the two tables are empty at
    ``beta = 1``, where the sweeps do not read them)."""
    freq = np.bincount(np.asarray(words), minlength=int(n_words))
    pow_offset = np.zeros(int(n_words) + 1, dtype=np.int64)
    np.cumsum(freq + 1, out=pow_offset[1:])
    if beta == 1.0:
        return pow_offset, np.empty(0), np.empty(0)
    eta = np.ascontiguousarray(np.broadcast_to(np.asarray(eta, dtype=np.float64), (int(n_words),)))
    return (pow_offset, *tempered_powers(pow_offset, eta, float(beta), int(freq.sum())))


@njit_exact
def tempered_powers(pow_offset, eta, beta, n_tokens):
    """The tables of :func:`gibbs_sweep_sparse` at inverse temperature ``beta``:
    ``word_pow[pow_offset[v] + c] = (c + eta_v)^beta`` for ``c = 0..freq_v`` (the counts
    word ``v`` can have in a topic; ``pow_offset`` the cumulative ``freq_v + 1``) and
    ``topic_pow[n] = (n + sum eta)^-beta`` for ``n = 0..n_tokens``."""
    eta_sum = 0.0
    for v in range(eta.size):
        eta_sum += eta[v]
    word_pow = np.empty(pow_offset[-1])
    for v in range(eta.size):
        for i in range(pow_offset[v], pow_offset[v + 1]):
            word_pow[i] = (i - pow_offset[v] + eta[v]) ** beta
    topic_pow = np.empty(n_tokens + 1)
    for n in range(n_tokens + 1):
        topic_pow[n] = (n + eta_sum) ** -beta
    return word_pow, topic_pow


@njit_exact(nogil=True)
def gibbs_sweep_sparse(tokens, counts, lists, prior, rng):
    """One collapsed Gibbs sweep by SparseLDA's three buckets (Yao et al. 2009 §3).

    The unnormalised conditional of Murphy (2012) Eq. 27.37 splits as

    .. math::
        \\frac{(n_{wk}+\\eta_w)(n_{dk}+\\alpha_k)}{n_k+H}
        = \\underbrace{\\eta_w\\frac{\\alpha_k}{n_k+H}}_{s}
        + \\underbrace{\\eta_w\\frac{n_{dk}}{n_k+H}}_{r}
        + \\underbrace{n_{wk}\\frac{n_{dk}+\\alpha_k}{n_k+H}}_{q},
        \\qquad H = \\textstyle\\sum_v \\eta_v .

    ``S = sum_k alpha_k / (n_k + H)`` is kept for all topics, ``R`` over the topics of
    the current document and ``q`` is computed over the topics of the current word, so a
    token costs O(#topics of w + #topics of d) instead of O(K); the rare draws that land
    in the smoothing bucket ``s`` walk all K topics. The Markov chain is exactly that of
    :func:`~custom_ops.lda.dense.gibbs_sweep_dense` (same conditional, drawn another
    way).

    At inverse temperature ``beta`` (module docstring, Tempering) the same split holds
    with ``T(c) = (c + eta_w)^beta`` and ``H_k = (n_k + H)^beta``:

    .. math::
        \\frac{T(n_{wk})\\,(n_{dk}+\\alpha_k)}{H_k}
        = T(0)\\frac{\\alpha_k}{H_k} + T(0)\\frac{n_{dk}}{H_k}
        + \\big(T(n_{wk}) - T(0)\\big)\\frac{n_{dk}+\\alpha_k}{H_k},

    the last term again zero unless the word has the topic (``T(c) - T(0) = c`` and
    ``T(0) = eta_w`` at ``beta = 1``). Counts are integers, so the powers are looked up in
    the tables of :func:`tempered_powers` (``word_pow``, ``topic_pow``) and a token costs
    no power (a power per lookup made the tempered sweep several times slower).

    Parameters
    ----------
    tokens : Tokens
        The corpus; its ``z`` is updated in place.
    counts : TopicCounts
        The counts of ``z``, updated in place.
    lists : TopicLists
        The topic lists of the counts (:class:`SparseLDAState`), updated in place.
    prior : SweepPrior
        ``alpha`` (K,), ``eta`` (V,), the inverse temperature ``beta`` and the tables
        :func:`tempered_powers` made for this ``beta`` and ``eta`` (unused, and may be
        empty, at ``beta = 1``).
    rng : numpy.random.Generator
        Seeds the sweep's stream of uniforms (:func:`custom_ops.uniform_stream.stream_from`,
        one draw); its state advances.
    """
    words, doc_ptr, z = tokens
    n_wk, n_dk, n_k = counts
    w_ptr, w_topics, w_nnz, d_ptr, d_topics, d_nnz = lists
    alpha, eta, beta, pow_offset, word_pow, topic_pow = prior
    # Indices are cast to unsigned: Numba wraps negative values of signed indices, a
    # compare and add per array access in the hot loop.
    n_topics = uintp(n_k.size)
    n_docs = uintp(doc_ptr.size - 1)
    eta_sum = 0.0
    for v in range(eta.size):
        eta_sum += eta[v]
    tempered = beta != 1.0
    inv = np.empty(n_topics)
    for k in range(n_topics):
        if tempered:
            inv[k] = topic_pow[n_k[k]]
        else:
            inv[k] = 1.0 / (n_k[k] + eta_sum)
    # coef[k] = (n_dk + alpha_k) / (n_k + H)^beta for the current document; equals
    # alpha_k / (n_k + H)^beta for topics absent from it.
    coef = np.empty(n_topics)
    for k in range(n_topics):
        coef[k] = alpha[k] * inv[k]
    qv = np.empty(n_topics)
    stream = stream_from(rng)
    for d in range(n_docs):
        # S and R are recomputed per document so that rounding in their running
        # updates cannot accumulate over the sweep.
        s_sum = 0.0
        for k in range(n_topics):
            s_sum += alpha[k] * inv[k]
        ds = uintp(d_ptr[d])
        r_sum = 0.0
        for j in range(ds, ds + uintp(d_nnz[d])):
            k = uintp(d_topics[j])
            r_sum += n_dk[d, k] * inv[k]
            coef[k] = (n_dk[d, k] + alpha[k]) * inv[k]
        for i in range(uintp(doc_ptr[d]), uintp(doc_ptr[d + uintp(1)])):
            w = uintp(words[i])
            old = uintp(z[i])
            t = old
            # Most tokens keep their topic once the chain has settled: the values
            # below are then put back as they were rather than recomputed, and the
            # topic lists are left alone while the token is out, the old topic staying
            # listed with a zero count (it adds nothing to the q and r buckets).
            inv_old = inv[t]
            coef_old = coef[t]
            s_old = s_sum
            r_old = r_sum
            # remove token i
            s_sum -= alpha[t] * inv[t]
            r_sum -= n_dk[d, t] * inv[t]
            n_wk[w, t] -= 1
            n_dk[d, t] -= 1
            n_k[t] -= 1
            if tempered:
                inv[t] = topic_pow[n_k[t]]
            else:
                inv[t] = 1.0 / (n_k[t] + eta_sum)
            s_sum += alpha[t] * inv[t]
            r_sum += n_dk[d, t] * inv[t]
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]
            ws = uintp(w_ptr[w])
            # q bucket over the word's topics; t0 = T(0), the s and r buckets' factor
            q_sum = 0.0
            m = uintp(w_nnz[w])
            eta_w = eta[w]
            if not tempered:
                t0 = eta_w
                for j in range(m):
                    k = uintp(w_topics[ws + j])
                    val = n_wk[w, k] * coef[k]
                    qv[j] = val
                    q_sum += val
                q_old = n_wk[w, old] * coef[old]
            else:
                po = uintp(pow_offset[w])
                t0 = word_pow[po]
                for j in range(m):
                    k = uintp(w_topics[ws + j])
                    val = (word_pow[po + uintp(n_wk[w, k])] - t0) * coef[k]
                    qv[j] = val
                    q_sum += val
                q_old = (word_pow[po + uintp(n_wk[w, old])] - t0) * coef[old]
            r_mass = t0 * r_sum
            s_mass = t0 * s_sum
            uniform, stream = next_uniform(stream)
            u = uniform * (q_sum + r_mass + s_mass)
            found = False
            if u < q_sum:
                # the token's old topic first (the likeliest draw: the walk mostly ends
                # at once), then the others in the list's order; the order depends on
                # the state alone, so a rebuilt state draws the same
                found = u < q_old
                if not found:
                    u -= q_old
                    for j in range(m):
                        k = uintp(w_topics[ws + j])
                        if k == old:
                            continue
                        u -= qv[j]
                        if u < 0.0:
                            t = k
                            found = True
                            break
                if not found:  # rounding: the walk ran off the end
                    t = last_listed(w_topics, ws, m, n_wk[w])
                    found = True
            else:
                u -= q_sum
                if u < r_mass:
                    u /= t0
                    dn = uintp(d_nnz[d])
                    r_of_old = n_dk[d, old] * inv[old]  # the old topic first, as above
                    found = u < r_of_old
                    if not found:
                        u -= r_of_old
                        for j in range(ds, ds + dn):
                            k = uintp(d_topics[j])
                            if k == old:
                                continue
                            u -= n_dk[d, k] * inv[k]
                            if u < 0.0:
                                t = k
                                found = True
                                break
                    if not found and dn > 0:  # rounding: the walk ran off the end
                        t = last_listed(d_topics, ds, dn, n_dk[d])
                        found = True
                else:
                    u = (u - r_mass) / t0
                if not found:  # smoothing bucket: rare, O(K)
                    t = n_topics - uintp(1)
                    for k in range(n_topics):
                        u -= alpha[k] * inv[k]
                        if u < 0.0:
                            t = k
                            break
            # add token i back with topic t
            if t == old:
                n_wk[w, t] += 1
                n_dk[d, t] += 1
                n_k[t] += 1
                inv[t] = inv_old
                coef[t] = coef_old
                s_sum = s_old
                r_sum = r_old
                continue
            if n_dk[d, old] == 0:
                list_remove(d_topics, ds, d_nnz, d, old)
            if n_wk[w, old] == 0:
                list_remove(w_topics, ws, w_nnz, w, old)
            z[i] = t
            s_sum -= alpha[t] * inv[t]
            r_sum -= n_dk[d, t] * inv[t]
            if n_dk[d, t] == 0:
                list_insert(d_topics, ds, d_nnz, d, t)
            if n_wk[w, t] == 0:
                list_insert(w_topics, ws, w_nnz, w, t)
            n_wk[w, t] += 1
            n_dk[d, t] += 1
            n_k[t] += 1
            if tempered:
                inv[t] = topic_pow[n_k[t]]
            else:
                inv[t] = 1.0 / (n_k[t] + eta_sum)
            s_sum += alpha[t] * inv[t]
            r_sum += n_dk[d, t] * inv[t]
            coef[t] = (n_dk[d, t] + alpha[t]) * inv[t]
        # leave coef as alpha_k / (n_k + H) for the next document (topics that left
        # the document already have that value)
        for j in range(ds, ds + uintp(d_nnz[d])):
            k = uintp(d_topics[j])
            coef[k] = alpha[k] * inv[k]
