"""One LDA chain swept on several threads: approximate distributed LDA in shared memory.

Newman, Asuncion, Smyth & Welling (2009, JMLR), §3 (AD-LDA): the documents are split into
``P`` blocks of consecutive documents; in every sweep each block runs the SparseLDA sweep
(:func:`custom_ops.lda.gibbs.gibbs_sweep_sparse`, which releases the GIL) over its own
tokens on its own thread, against its own copy of the corpus-wide word-topic counts, as
if no other block moved; then every block's changes are summed into the global counts,

.. math:: n_{wk} \\leftarrow n_{wk} + \\sum_p \\big(n^{(p)}_{wk} - n_{wk}\\big),

which the next sweep starts from. A block's document-topic counts are its own and stay
exact. The chain is not the serial sampler's (a block does not see the others' moves
within a sweep); with one block it is (:mod:`pp_models.lda.adlda` runs the same algorithm
over processes or a cluster).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.lda.gibbs import SparseLDAState

__all__ = ["ThreadedLDAState"]


@njit_exact(nogil=True)
def _add_changes(total, after, before):
    # total += after - before, in one pass without temporaries (V x K cells per block)
    flat_total = total.reshape(-1)
    flat_after = after.reshape(-1)
    flat_before = before.reshape(-1)
    for i in range(flat_total.size):
        flat_total[i] += flat_after[i] - flat_before[i]


class ThreadedLDAState:
    """The topics of a corpus split into ``n_threads`` blocks of documents, each a
    :class:`~custom_ops.lda.gibbs.SparseLDAState` of its tokens, plus the global counts.

    Parameters
    ----------
    words, doc_ptr, z : arrays
        The corpus (CSR by documents) and its current topics.
    n_words, n_topics, n_threads : int
        ``n_threads`` >= 2 blocks, at most one per document (fewer when there are fewer
        documents), split to hold about the same number of tokens each.
    """

    def __init__(self, words, doc_ptr, z, n_words: int, n_topics: int, n_threads: int):
        self.words = np.ascontiguousarray(words, dtype=np.int32)
        self.doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        n_docs = self.doc_ptr.size - 1
        z = np.asarray(z)
        # block boundaries at documents, about equal numbers of tokens
        targets = np.linspace(0, self.doc_ptr[-1], n_threads + 1)[1:-1]
        cuts = np.unique(np.clip(np.searchsorted(self.doc_ptr, targets), 1, max(n_docs - 1, 1)))
        self.doc_cuts = np.concatenate([[0], cuts[cuts < n_docs], [n_docs]]).astype(np.int64)
        self.blocks = []
        for a, b in zip(self.doc_cuts[:-1], self.doc_cuts[1:], strict=True):
            lo, hi = self.doc_ptr[a], self.doc_ptr[b]
            self.blocks.append(
                SparseLDAState(
                    self.words[lo:hi], self.doc_ptr[a : b + 1] - lo, z[lo:hi], n_words, n_topics
                )
            )
        self.n_wk = np.sum([s.n_wk for s in self.blocks], axis=0).astype(np.int32)
        self.n_k = np.sum([s.n_k for s in self.blocks], axis=0).astype(np.int32)
        self._pool = ThreadPoolExecutor(len(self.blocks)) if len(self.blocks) > 1 else None

    @property
    def n_threads(self) -> int:
        return len(self.blocks)

    @property
    def z(self) -> np.ndarray:
        return np.concatenate([s.z for s in self.blocks])

    @property
    def n_dk(self) -> np.ndarray:
        return np.concatenate([s.n_dk for s in self.blocks])

    def sweep(self, alpha, eta, beta, rngs) -> None:
        """One AD-LDA sweep at inverse temperature ``beta``: block ``p`` sweeps with the
        generator ``rngs[p]`` on its own thread, then the changes are merged."""
        n_wk, n_k = self.n_wk, self.n_k

        def run(p):
            block = self.blocks[p]
            block.set_word_counts(n_wk, n_k)
            block.sweep(alpha, eta, beta, rngs[p])
            return block

        if self._pool is None:
            done = [run(0)]
        else:
            done = list(self._pool.map(run, range(len(self.blocks))))
        new_wk = n_wk.copy()
        new_k = n_k.copy()
        for block in done:
            _add_changes(new_wk, block.n_wk, n_wk)
            _add_changes(new_k, block.n_k, n_k)
        self.n_wk, self.n_k = new_wk, new_k

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_pool"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if len(self.blocks) > 1:
            self._pool = ThreadPoolExecutor(len(self.blocks))
