"""One LDA chain swept on several threads: the word x document partition of Yan, Xu & Qi.

Yan, Xu & Qi (2009, NIPS), §4 ("data partition"): the documents are split into ``P``
blocks and the vocabulary into ``P`` groups, which cuts the tokens into ``P x P`` cells
(block ``p``'s tokens whose word is in group ``g``). A sweep has ``P`` epochs; in epoch
``e`` thread ``p`` runs the SparseLDA sweep (:func:`custom_ops.lda.gibbs.gibbs_sweep_sparse`)
over cell ``(p, (p + e) mod P)``. In an epoch no two threads share a document or a word, so
every thread updates the one corpus-wide word-topic counts ``n_wk``, the document-topic
counts and both kinds of topic lists in place, exactly as the serial sweep would; the
only count they share is the topic total ``n_k``, of which each thread sweeps its own copy,
and after the epoch the changes are summed,

.. math:: n_k \\leftarrow n_k + \\sum_p \\big(n^{(p)}_k - n_k\\big).

So the chain is not the serial sampler's (within an epoch a thread does not see the
others' moves in ``n_k``, the denominator ``n_k + sum eta`` of every token's conditional,
Murphy 2012 Eq. 27.37), but nothing else is stale, where approximate distributed LDA
(Newman et al. 2009 §3; :mod:`pp_models.lda.adlda`, over processes) lets every block sweep
against word-topic counts a whole sweep old. With ``P = 1`` there is one cell, the corpus
in its order, and the sweep is the serial sampler's draw for draw.

The merge is O(P K) per epoch and there are no copies of ``n_wk``, where threaded AD-LDA
has each thread add the other blocks' moved tokens to its own copy of the counts and of
the topic lists after every sweep.

Blocks are contiguous documents of about equal numbers of tokens; words are dealt to the
groups by decreasing frequency, so that each group holds about as many tokens and the
same mix of frequent and rare words (:func:`word_groups`; groups cut from the word ids at
equal numbers of tokens hold equal tokens but not equal work when the ids follow the
words' frequencies, one group then holding most rare words, whose draws fall in
SparseLDA's O(K) smoothing bucket more often). The tokens are stored cell by cell (each
cell a CSR by its block's documents, in the corpus's order within a document), and
:attr:`ThreadedLDAState.z` gives them back in the corpus's order.

All sweeps of one call run in one compiled function (:func:`partition_sweeps`, whose
epochs call :func:`sweep_cells`, a Numba ``prange`` over the threads), so a sweep costs
no Python and no thread pool.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
from numba import prange

from custom_ops.jit import njit_exact
from custom_ops.lda.gibbs import (
    SweepPrior,
    Tokens,
    TopicCounts,
    TopicLists,
    build_counts,
    fill_topic_lists,
    gibbs_sweep_sparse,
    tempered_powers,
)
from custom_ops.lda.summaries import draw_summary_lists

__all__ = [
    "Cells",
    "SharedCounts",
    "ThreadedLDAState",
    "cell_of",
    "gathered_topics_out",
    "merge_topic_totals",
    "partition_sweeps",
    "sweep_cell",
    "sweep_cells",
    "word_groups",
]


class Cells(NamedTuple):
    """The tokens stored cell by cell: cell ``c = p * P + g`` (document block ``p``, word
    group ``g``) holds ``words[token_ptr[c] : token_ptr[c + 1]]`` and their topics ``z``,
    a CSR by the block's documents with offsets ``doc_ptr[doc_ptr_at[c] : doc_ptr_at[c]
    + n_p + 1]`` (from 0 within the cell; ``n_p`` documents in block ``p``, which are
    ``doc_cuts[p] : doc_cuts[p + 1]``)."""

    words: np.ndarray
    z: np.ndarray
    token_ptr: np.ndarray
    doc_cuts: np.ndarray
    doc_ptr: np.ndarray
    doc_ptr_at: np.ndarray


class SharedCounts(NamedTuple):
    """The counts and topic lists of :class:`~custom_ops.lda.gibbs.SparseLDAState`, one
    set for all threads, plus each thread's copy of the topic totals (``n_k_threads[p,
    :K]``; the rows are padded apart). The lists' fields are repeated here rather than held
    as a :class:`~custom_ops.lda.gibbs.TopicLists`: the parallel kernel's arguments cannot
    nest a named tuple in a named tuple (Numba rejects it as a scalar argument)."""

    n_wk: np.ndarray
    n_dk: np.ndarray
    n_k: np.ndarray
    n_k_threads: np.ndarray
    w_ptr: np.ndarray
    w_topics: np.ndarray
    w_nnz: np.ndarray
    d_ptr: np.ndarray
    d_topics: np.ndarray
    d_nnz: np.ndarray


@njit_exact(inline="always")
def cell_of(p, epoch, n_blocks):
    """The cell thread ``p`` sweeps in epoch ``epoch``: its block's tokens of word group
    ``(p + epoch) mod P``, so that no two threads of an epoch share a word group."""
    return p * n_blocks + (p + epoch) % n_blocks


@njit_exact(inline="always")
def merge_topic_totals(n_k, n_k_threads):
    """``n_k += sum_p (n_k_threads[p] - n_k)``, then every thread's copy set to the sum:
    the topic totals after an epoch in which each thread changed its own copy."""
    n_blocks = n_k_threads.shape[0]
    n_topics = n_k.size
    for k in range(n_topics):
        total = n_k[k]
        for p in range(n_blocks):
            total += n_k_threads[p, k] - n_k[k]
        n_k[k] = total
    for p in range(n_blocks):
        for k in range(n_topics):
            n_k_threads[p, k] = n_k[k]


@njit_exact(nogil=True)
def sweep_cell(cells, counts, prior, p, c, rng):
    """The SparseLDA sweep of cell ``c`` of block ``p`` against the shared counts and
    thread ``p``'s topic totals, with the generator ``rng``."""
    a = cells.doc_cuts[p]
    b = cells.doc_cuts[p + 1]
    lo = cells.token_ptr[c]
    hi = cells.token_ptr[c + 1]
    at = cells.doc_ptr_at[c]
    gibbs_sweep_sparse(
        Tokens(cells.words[lo:hi], cells.doc_ptr[at : at + b - a + 1], cells.z[lo:hi]),
        TopicCounts(counts.n_wk, counts.n_dk[a:b], counts.n_k_threads[p, : counts.n_k.size]),
        TopicLists(
            counts.w_ptr,
            counts.w_topics,
            counts.w_nnz,
            counts.d_ptr[a : b + 1],
            counts.d_topics,
            counts.d_nnz[a:b],
        ),
        prior,
        rng,
    )


@njit_exact(parallel=True)
def sweep_cells(cells, counts, prior, rngs, cell_ids):
    """One epoch: thread ``p`` sweeps cell ``cell_ids[p]`` of its block with ``rngs[p]``
    (:func:`sweep_cell`), all threads at once (a Numba ``prange``)."""
    for p in prange(cell_ids.size):
        sweep_cell(cells, counts, prior, p, cell_ids[p], rngs[p])


@njit_exact(nogil=True)
def partition_sweeps(cells, counts, prior, rngs, n_sweeps):
    """``n_sweeps`` sweeps of the partitioned sampler (module docstring): per epoch, thread
    ``p`` sweeps cell :func:`cell_of` ``(p, epoch)`` with ``rngs[p]`` (:func:`sweep_cells`),
    then the topic totals are merged (:func:`merge_topic_totals`). ``rngs`` is a tuple of
    ``P`` generators; the counts and ``cells.z`` are updated in place. The schedule and
    the merge stay out of the parallel kernel, which a change of them need not
    recompile."""
    n_blocks = cells.doc_cuts.size - 1
    cell_ids = np.empty(n_blocks, dtype=np.int64)
    for _ in range(n_sweeps):
        for epoch in range(n_blocks):
            for p in range(n_blocks):
                cell_ids[p] = cell_of(p, epoch, n_blocks)
            sweep_cells(cells, counts, prior, rngs, cell_ids)
            merge_topic_totals(counts.n_k, counts.n_k_threads)


@njit_exact(nogil=True)
def gathered_topics_out(z_cells, position, z_in):
    """``(z, changed)``: ``z[i] = z_cells[position[i]]`` as int64 and the number of ``i``
    with ``z[i] != z_in[i]``."""
    out = np.empty(position.size, dtype=np.int64)
    changed = 0
    for i in range(position.size):
        t = z_cells[position[i]]
        out[i] = t
        if t != z_in[i]:
            changed += 1
    return out, changed


#: One threaded sweep at a time in a process: Numba's "workqueue" threading layer (its
#: fallback without OpenMP or TBB) aborts the process when two Python threads launch
#: parallel kernels at once (chains on a thread pool, each with ``n_threads > 1``).
_PARALLEL_LOCK = threading.Lock()


def _cuts(cumulative, n_parts: int, n_items: int) -> np.ndarray:
    """``n_parts + 1`` non-decreasing cut points in ``0..n_items`` splitting the running
    total ``cumulative`` (length ``n_items + 1``) into about equal parts."""
    targets = np.linspace(0, cumulative[-1], n_parts + 1)[1:-1]
    inner = np.searchsorted(cumulative, targets)
    return np.concatenate([[0], np.clip(inner, 0, n_items), [n_items]]).astype(np.int64)


def _padded_rows(n_k, n_rows: int) -> np.ndarray:
    """``n_rows`` copies of ``n_k`` as rows at least a cache line (16 int32) apart, so
    that threads updating their own row never write to one line."""
    stride = -(-n_k.size // 16) * 16 + 16
    rows = np.zeros((n_rows, stride), dtype=n_k.dtype)
    rows[:, : n_k.size] = n_k
    return rows


def word_groups(word_freq, n_groups: int) -> np.ndarray:
    """The group of every word: the words dealt out by decreasing frequency, each to the
    group with the fewest tokens so far (ties to the lowest group), so that the groups
    hold about equal numbers of tokens and each about the same mix of frequent and rare
    words (a rare word's token costs more: its draws fall in SparseLDA's smoothing bucket
    more often, a walk over all topics)."""
    order = np.argsort(-np.asarray(word_freq), kind="stable")
    # Python integers: a numpy call per word would cost more than the dealing itself
    load = [0] * n_groups
    dealt = []
    for freq in np.asarray(word_freq)[order].tolist():
        g = load.index(min(load))
        dealt.append(g)
        load[g] += freq
    group = np.zeros(order.size, dtype=np.int64)
    group[order] = dealt
    return group


class ThreadedLDAState:
    """The topics of a corpus swept on ``n_threads`` threads by the word x document
    partition (module docstring), with the shared counts and topic lists.

    Blocks are contiguous documents of about equal numbers of tokens; word groups are
    made by :func:`word_groups`. Inside the state the words are renumbered group by group
    (``word_order[i]`` is the word of internal id ``i``), so that each group's rows of the
    counts and its topic lists are contiguous and two threads never write to one cache
    line of them; :attr:`n_wk` and :attr:`z` are given back in the corpus's numbering and
    order.

    Parameters
    ----------
    words, doc_ptr, z : arrays
        The corpus (CSR by documents) and its current topics (``z`` is copied).
    n_words, n_topics, n_threads : int
        ``n_threads`` >= 1 document blocks and as many word groups (a block or group may
        be empty on a tiny corpus).
    """

    #: the compiled sweeps (a twin names another)
    sweep_kernel = staticmethod(partition_sweeps)

    def __init__(self, words, doc_ptr, z, n_words: int, n_topics: int, n_threads: int):
        words = np.ascontiguousarray(words, dtype=np.int32)
        doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        z = np.ascontiguousarray(z, dtype=np.int32)
        self.n_words = int(n_words)
        self.n_topics = int(n_topics)
        n_blocks = int(n_threads)
        n_docs = doc_ptr.size - 1
        self.words = words
        self.doc_ptr = doc_ptr
        word_freq = np.bincount(words, minlength=self.n_words)
        self.word_group = word_groups(word_freq, n_blocks)
        self.word_order = np.argsort(self.word_group, kind="stable")
        self.internal_id = np.empty(self.n_words, dtype=np.int32)
        self.internal_id[self.word_order] = np.arange(self.n_words, dtype=np.int32)
        inner_words = self.internal_id[words]
        inner_freq = word_freq[self.word_order]
        self.doc_cuts = _cuts(doc_ptr, n_blocks, n_docs)
        # cell of every token, then the tokens grouped by cell keeping the corpus's order
        doc_of = np.repeat(np.arange(n_docs), np.diff(doc_ptr))
        block = np.searchsorted(self.doc_cuts, doc_of, side="right") - 1
        group = self.word_group[words]
        cell = block * n_blocks + group
        self.order = np.argsort(cell, kind="stable")
        # where each corpus token sits in the cells (the inverse of ``order``)
        self.position = np.empty_like(self.order)
        self.position[self.order] = np.arange(self.order.size)
        token_ptr = np.zeros(n_blocks * n_blocks + 1, dtype=np.int64)
        np.cumsum(np.bincount(cell, minlength=n_blocks * n_blocks), out=token_ptr[1:])
        # per cell, the offsets of its block's documents within the cell
        per_doc = np.zeros((n_docs, n_blocks), dtype=np.int64)
        np.add.at(per_doc, (doc_of, group), 1)
        doc_ptr_parts, doc_ptr_at, at = [], [], 0
        for p in range(n_blocks):
            a, b = self.doc_cuts[p], self.doc_cuts[p + 1]
            for g in range(n_blocks):
                offsets = np.zeros(b - a + 1, dtype=np.int64)
                np.cumsum(per_doc[a:b, g], out=offsets[1:])
                doc_ptr_parts.append(offsets)
                doc_ptr_at.append(at)
                at += b - a + 1
        doc_ptr_at.append(at)
        self.cells = Cells(
            words=inner_words[self.order],
            z=z[self.order],
            token_ptr=token_ptr,
            doc_cuts=self.doc_cuts,
            doc_ptr=np.concatenate(doc_ptr_parts),
            doc_ptr_at=np.asarray(doc_ptr_at, dtype=np.int64),
        )
        n_wk, n_dk, n_k = build_counts(inner_words, doc_ptr, z, self.n_words, self.n_topics)
        # topic lists with the capacities of SparseLDAState
        doc_len = np.diff(doc_ptr)
        w_ptr = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(np.minimum(inner_freq, self.n_topics), out=w_ptr[1:])
        d_ptr = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.minimum(doc_len, self.n_topics), out=d_ptr[1:])
        self.counts = SharedCounts(
            n_wk=n_wk,
            n_dk=n_dk,
            n_k=n_k,
            n_k_threads=_padded_rows(n_k, n_blocks),
            w_ptr=w_ptr,
            w_topics=np.zeros(int(w_ptr[-1]), dtype=np.int32),
            w_nnz=np.zeros(self.n_words, dtype=np.int32),
            d_ptr=d_ptr,
            d_topics=np.zeros(int(d_ptr[-1]), dtype=np.int32),
            d_nnz=np.zeros(n_docs, dtype=np.int32),
        )
        c = self.counts
        fill_topic_lists(c.n_wk, c.w_ptr, c.w_topics, c.w_nnz)
        fill_topic_lists(c.n_dk, c.d_ptr, c.d_topics, c.d_nnz)
        self.pow_offset = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(inner_freq + 1, out=self.pow_offset[1:])
        self.power_tables = None
        self._no_powers = (np.empty(0), np.empty(0))

    @property
    def n_threads(self) -> int:
        return self.cells.doc_cuts.size - 1

    @property
    def z(self) -> np.ndarray:
        """The topics in the corpus's order (a new array)."""
        z = np.empty_like(self.cells.z)
        z[self.order] = self.cells.z
        return z

    @property
    def n_wk(self) -> np.ndarray:
        """The word-topic counts, rows in the corpus's word numbering (a new array)."""
        return self.counts.n_wk[self.internal_id]

    @property
    def n_dk(self) -> np.ndarray:
        return self.counts.n_dk

    @property
    def n_k(self) -> np.ndarray:
        return self.counts.n_k

    def topics_out(self, z_in) -> tuple[np.ndarray, int]:
        """:func:`~custom_ops.lda.gibbs.topics_out` of :attr:`z` without making it: the
        topics in the corpus's order as a new int64 array and how many differ from
        ``z_in``, in one pass."""
        out, changed = gathered_topics_out(self.cells.z, self.position, z_in)
        return out, int(changed)

    def cell_tokens(self, p: int, g: int) -> np.ndarray:
        """The corpus positions of the tokens of cell ``(p, g)``, in their sweep order."""
        c = p * self.n_threads + g
        return self.order[self.cells.token_ptr[c] : self.cells.token_ptr[c + 1]]

    def powers(self, eta, beta: float):
        """``(word_pow, topic_pow)`` of :func:`~custom_ops.lda.gibbs.tempered_powers` at
        ``beta`` and ``eta`` (in the internal word numbering), kept while they stay the
        same (empty at ``beta = 1``)."""
        if beta == 1.0:
            return self._no_powers
        key = (beta, np.asarray(eta, dtype=np.float64).tobytes())
        if self.power_tables is None or self.power_tables[0] != key:
            tables = tempered_powers(
                self.pow_offset, np.asarray(eta, dtype=np.float64), float(beta), self.words.size
            )
            self.power_tables = (key, tables)
        return self.power_tables[1]

    def sweep(self, alpha, eta, beta, rngs, n_sweeps: int = 1) -> None:
        """``n_sweeps`` sweeps at inverse temperature ``beta`` in one compiled call,
        thread ``p`` drawing from the generator ``rngs[p]``; ``eta`` in the corpus's word
        numbering."""
        if len(rngs) != self.n_threads:
            raise ValueError(f"rngs: need {self.n_threads} generators, got {len(rngs)}")
        inner_eta = np.ascontiguousarray(np.asarray(eta, dtype=np.float64)[self.word_order])
        word_pow, topic_pow = self.powers(inner_eta, beta)
        prior = SweepPrior(
            alpha=np.asarray(alpha, dtype=np.float64),
            eta=inner_eta,
            beta=float(beta),
            pow_offset=self.pow_offset,
            word_pow=word_pow,
            topic_pow=topic_pow,
        )
        with _PARALLEL_LOCK:
            self.sweep_kernel(self.cells, self.counts, prior, tuple(rngs), int(n_sweeps))

    def summary(self, alpha: float, eta: float, tables) -> tuple[float, float, float]:
        """:func:`~custom_ops.lda.summaries.draw_summary_lists` of the counts (symmetric
        ``eta``: the sum over words does not depend on their numbering)."""
        c = self.counts
        return draw_summary_lists(
            TopicCounts(c.n_wk, c.n_dk, c.n_k),
            TopicLists(c.w_ptr, c.w_topics, c.w_nnz, c.d_ptr, c.d_topics, c.d_nnz),
            alpha,
            eta,
            tables,
        )
