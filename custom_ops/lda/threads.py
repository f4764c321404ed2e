"""One LDA chain swept on several threads: approximate distributed LDA in shared memory.

Newman, Asuncion, Smyth & Welling (2009, JMLR), §3 (AD-LDA): the documents are split into
``P`` blocks of consecutive documents; in every sweep each block runs the SparseLDA sweep
(:func:`custom_ops.lda.gibbs.gibbs_sweep_sparse`, which releases the GIL) over its own
tokens on its own thread, against its own copy of the corpus-wide word-topic counts, as
if no other block moved; then every block's changes are summed into the counts,

.. math:: n_{wk} \\leftarrow n_{wk} + \\sum_p \\big(n^{(p)}_{wk} - n_{wk}\\big),

which the next sweep starts from. A block's document-topic counts are its own and stay
exact. The chain is not the serial sampler's (a block does not see the others' moves
within a sweep); with one block it is (:mod:`pp_models.lda.adlda` runs the same algorithm
over processes or a cluster).

The merge costs O(tokens) per sweep, not O(V K): block ``p``'s change is

.. math:: n^{(p)}_{wk} - n_{wk} = \\sum_{i \\in p} \\big([w_i = w, z'_i = k]
    - [w_i = w, z_i = k]\\big)

over its tokens ``i`` with old topic ``z_i`` and new topic ``z'_i``, so each thread keeps
its copy of the counts (and of SparseLDA's per-word topic lists) from sweep to sweep and,
after all blocks have swept, adds to it the other blocks' moved tokens, one decrement and
one increment each, then brings the topic list of each word that had a move in line with
its counts. All copies then hold the same counts, the corpus-wide ones. (Applied in any
order the decrements never take a cell below zero: the tokens decremented from a cell
were all in it.) The copies are separate allocations, so threads never write to one
cache line.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.lda.gibbs import (
    build_counts,
    fill_topic_lists,
    gibbs_sweep_sparse,
    tempered_powers,
)
from custom_ops.lda.summaries import draw_summary_lists

__all__ = ["ThreadedLDAState", "apply_moves", "move_token", "relist_word"]

#: int32 padding after each block's small arrays (topic totals), a cache line's worth,
#: so that the counts two threads update never share a line.
_PAD = 16


@njit_exact(inline="always")
def move_token(n_wk, n_k, w, old, new):
    """Move one token of word ``w`` from topic ``old`` to topic ``new`` in the counts;
    returns whether a count of the word crossed zero (its topic list must change)."""
    n_wk[w, old] -= 1
    n_k[old] -= 1
    crossed = n_wk[w, old] == 0 or n_wk[w, new] == 0
    n_wk[w, new] += 1
    n_k[new] += 1
    return crossed


@njit_exact(inline="always")
def relist_word(n_wk, w, start, nnz, topics, arrivals, listed):
    """Bring word ``w``'s topic list ``topics[start : start + nnz[w]]`` in line with its
    counts after some of its tokens moved: keep the listed topics whose count is still
    positive (in their order), then append the topics its tokens moved to (``arrivals``)
    that are positive and not yet listed. ``listed`` is a zeroed boolean work array of
    length K, left zeroed. One pass over the list per word, where removing each emptied
    topic as it empties would scan the list once per moved token."""
    m = 0
    for j in range(start, start + nnz[w]):
        k = topics[j]
        if n_wk[w, k] > 0:
            topics[start + m] = k
            listed[k] = True
            m += 1
    for k in arrivals:
        if n_wk[w, k] > 0 and not listed[k]:
            topics[start + m] = k
            listed[k] = True
            m += 1
    for j in range(start, start + m):
        listed[topics[j]] = False
    nnz[w] = m


@njit_exact(nogil=True)
def apply_moves(words, z_old, z_new, n_wk, n_k, w_ptr, w_topics, w_nnz):
    """Add the moves ``z_old -> z_new`` of the tokens ``words`` to the counts ``n_wk``,
    ``n_k`` (:func:`move_token`) and bring the per-word topic lists (SparseLDA's layout,
    :class:`~custom_ops.lda.gibbs.SparseLDAState`) in line with them, once per word one
    of whose counts crossed zero (:func:`relist_word`; the others' lists still hold their
    positive topics). O(moved tokens + V + those words' lists). Returns the number of
    moved tokens."""
    n_words, n_topics = n_wk.shape
    relist = np.zeros(n_words, dtype=np.bool_)
    moved = 0
    for i in range(words.size):
        if z_old[i] != z_new[i]:
            if move_token(n_wk, n_k, words[i], z_old[i], z_new[i]):
                relist[words[i]] = True
            moved += 1
    # the new topics of the moved tokens of those words, grouped by word (counting sort)
    first = np.zeros(n_words + 1, dtype=np.int64)
    for i in range(words.size):
        if z_old[i] != z_new[i] and relist[words[i]]:
            first[words[i] + 1] += 1
    for v in range(n_words):
        first[v + 1] += first[v]
    fill = first[:n_words].copy()
    arrivals = np.empty(first[n_words], dtype=np.int32)
    for i in range(words.size):
        w = words[i]
        if z_old[i] != z_new[i] and relist[w]:
            arrivals[fill[w]] = z_new[i]
            fill[w] += 1
    listed = np.zeros(n_topics, dtype=np.bool_)
    for v in range(n_words):
        if relist[v]:
            relist_word(
                n_wk, v, w_ptr[v], w_nnz, w_topics, arrivals[first[v] : first[v + 1]], listed
            )
    return moved


class _Block:
    """One block of documents: views of the global token and document arrays, and the
    thread's own copy of the word-topic counts and word topic lists."""

    def __init__(self, state, a: int, b: int):
        lo, hi = int(state.doc_ptr[a]), int(state.doc_ptr[b])
        self.words = state.words[lo:hi]
        self.doc_ptr = state.doc_ptr[a : b + 1] - lo
        self.z = state.z[lo:hi]
        self.z_old = np.empty_like(self.z)
        self.n_dk = state.n_dk[a:b]
        d0 = int(state.d_ptr[a])
        self.d_ptr = state.d_ptr[a : b + 1] - d0
        self.d_topics = state.d_topics[d0 : int(state.d_ptr[b])]
        self.d_nnz = state.d_nnz[a:b]
        self.n_wk = np.array(state.n_wk0, copy=True)
        self.n_k = np.zeros(state.n_topics + _PAD, dtype=np.int32)[: state.n_topics]
        self.n_k[:] = state.n_k0
        self.w_topics = np.array(state.w_topics0, copy=True)
        self.w_nnz = np.array(state.w_nnz0, copy=True)


class ThreadedLDAState:
    """The topics of a corpus split into ``n_threads`` blocks of documents swept on as
    many threads (module docstring), with the global counts and topic lists.

    ``z``, ``n_dk`` and the document topic lists are global arrays of which each block
    sweeps a slice; ``n_wk``, ``n_k`` and the word topic lists are the first block's
    copies, equal to every other block's between sweeps.

    Parameters
    ----------
    words, doc_ptr, z : arrays
        The corpus (CSR by documents) and its current topics (``z`` is copied).
    n_words, n_topics, n_threads : int
        ``n_threads`` >= 1 blocks, at most one per document (fewer when there are fewer
        documents), split to hold about the same number of tokens each.
    """

    #: the kernel that adds another block's moves to a thread's copy (a twin names another)
    merge_kernel = staticmethod(apply_moves)

    def __init__(self, words, doc_ptr, z, n_words: int, n_topics: int, n_threads: int):
        self.words = np.ascontiguousarray(words, dtype=np.int32)
        self.doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        self.z = np.array(z, dtype=np.int32, copy=True)
        self.n_words = int(n_words)
        self.n_topics = int(n_topics)
        n_docs = self.doc_ptr.size - 1
        # block boundaries at documents, about equal numbers of tokens
        targets = np.linspace(0, self.doc_ptr[-1], n_threads + 1)[1:-1]
        cuts = np.unique(np.clip(np.searchsorted(self.doc_ptr, targets), 1, max(n_docs - 1, 1)))
        self.doc_cuts = np.concatenate([[0], cuts[cuts < n_docs], [n_docs]]).astype(np.int64)
        self.n_wk0, self.n_dk, self.n_k0 = build_counts(
            self.words, self.doc_ptr, self.z, self.n_words, self.n_topics
        )
        # topic lists with the capacities of the corpus-wide counts (SparseLDAState's)
        word_freq = np.bincount(self.words, minlength=self.n_words)
        doc_len = np.diff(self.doc_ptr)
        self.w_ptr = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(np.minimum(word_freq, self.n_topics), out=self.w_ptr[1:])
        self.d_ptr = np.zeros(n_docs + 1, dtype=np.int64)
        np.cumsum(np.minimum(doc_len, self.n_topics), out=self.d_ptr[1:])
        self.w_topics0 = np.zeros(int(self.w_ptr[-1]), dtype=np.int32)
        self.w_nnz0 = np.zeros(self.n_words, dtype=np.int32)
        self.d_topics = np.zeros(int(self.d_ptr[-1]), dtype=np.int32)
        self.d_nnz = np.zeros(n_docs, dtype=np.int32)
        fill_topic_lists(self.n_wk0, self.w_ptr, self.w_topics0, self.w_nnz0)
        fill_topic_lists(self.n_dk, self.d_ptr, self.d_topics, self.d_nnz)
        self.pow_offset = np.zeros(self.n_words + 1, dtype=np.int64)
        np.cumsum(word_freq + 1, out=self.pow_offset[1:])
        self.power_tables = None
        self._no_powers = (np.empty(0), np.empty(0))
        self.blocks = [
            _Block(self, int(a), int(b))
            for a, b in zip(self.doc_cuts[:-1], self.doc_cuts[1:], strict=True)
        ]
        del self.n_wk0, self.n_k0, self.w_topics0, self.w_nnz0
        self._pool = None
        self._open_pool()

    def _open_pool(self) -> None:
        # the calling thread sweeps the first block, the pool the others
        n = len(self.blocks)
        self._pool = ThreadPoolExecutor(n - 1) if n > 1 else None
        self._barrier = threading.Barrier(n)

    @property
    def n_threads(self) -> int:
        return len(self.blocks)

    @property
    def n_wk(self) -> np.ndarray:
        return self.blocks[0].n_wk

    @property
    def n_k(self) -> np.ndarray:
        return self.blocks[0].n_k

    def powers(self, eta, beta: float):
        """``(word_pow, topic_pow)`` of :func:`~custom_ops.lda.gibbs.tempered_powers` at
        ``beta`` and ``eta``, kept while they stay the same (empty at ``beta = 1``)."""
        if beta == 1.0:
            return self._no_powers
        key = (beta, np.asarray(eta, dtype=np.float64).tobytes())
        if self.power_tables is None or self.power_tables[0] != key:
            tables = tempered_powers(
                self.pow_offset, np.asarray(eta, dtype=np.float64), float(beta), self.words.size
            )
            self.power_tables = (key, tables)
        return self.power_tables[1]

    def _sweep_block(self, p: int, alpha, eta, beta, word_pow, topic_pow, rng) -> None:
        b = self.blocks[p]
        b.z_old[:] = b.z
        gibbs_sweep_sparse(
            b.words,
            b.doc_ptr,
            b.z,
            b.n_wk,
            b.n_dk,
            b.n_k,
            self.w_ptr,
            b.w_topics,
            b.w_nnz,
            b.d_ptr,
            b.d_topics,
            b.d_nnz,
            alpha,
            eta,
            beta,
            self.pow_offset,
            word_pow,
            topic_pow,
            rng,
        )

    def _merge_into(self, p: int) -> None:
        mine = self.blocks[p]
        for q, other in enumerate(self.blocks):
            if q != p:
                self.merge_kernel(
                    other.words,
                    other.z_old,
                    other.z,
                    mine.n_wk,
                    mine.n_k,
                    self.w_ptr,
                    mine.w_topics,
                    mine.w_nnz,
                )

    def sweep(self, alpha, eta, beta, rngs) -> None:
        """One AD-LDA sweep at inverse temperature ``beta``: block ``p`` sweeps with the
        generator ``rngs[p]`` on its own thread; when all have, each thread adds the
        other blocks' moves to its copy of the counts (one task per thread and sweep,
        the two phases separated by a barrier)."""
        word_pow, topic_pow = self.powers(eta, beta)
        if self._pool is None:
            self._sweep_block(0, alpha, eta, beta, word_pow, topic_pow, rngs[0])
            return

        def task(p):
            try:
                self._sweep_block(p, alpha, eta, beta, word_pow, topic_pow, rngs[p])
            except BaseException:
                self._barrier.abort()  # release the threads waiting for this one
                raise
            self._barrier.wait()
            self._merge_into(p)

        futures = [self._pool.submit(task, p) for p in range(1, len(self.blocks))]
        try:
            task(0)
        finally:
            for f in futures:
                f.exception()  # wait for every thread before raising any error
            if self._barrier.broken:
                self._barrier.reset()
        for f in futures:
            f.result()

    def summary(self, alpha: float, eta: float, tables) -> tuple[float, float, float]:
        """:func:`~custom_ops.lda.summaries.draw_summary_lists` of the global counts."""
        return draw_summary_lists(
            self.n_wk,
            self.n_dk,
            self.n_k,
            self.w_ptr,
            self.blocks[0].w_topics,
            self.blocks[0].w_nnz,
            self.d_ptr,
            self.d_topics,
            self.d_nnz,
            alpha,
            eta,
            tables,
        )

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pool"] = None
        state["_barrier"] = None
        return state

    def __setstate__(self, state):
        # the blocks' views become copies when pickled: re-point them at the globals
        self.__dict__.update(state)
        for p, (a, b) in enumerate(zip(self.doc_cuts[:-1], self.doc_cuts[1:], strict=True)):
            old = self.blocks[p]
            lo, hi = int(self.doc_ptr[a]), int(self.doc_ptr[b])
            self.z[lo:hi] = old.z
            self.n_dk[a:b] = old.n_dk
            d0 = int(self.d_ptr[a])
            self.d_topics[d0 : int(self.d_ptr[b])] = old.d_topics
            self.d_nnz[a:b] = old.d_nnz
            old.z = self.z[lo:hi]
            old.n_dk = self.n_dk[a:b]
            old.d_topics = self.d_topics[d0 : int(self.d_ptr[b])]
            old.d_nnz = self.d_nnz[a:b]
        self._open_pool()
