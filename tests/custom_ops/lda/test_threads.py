"""The threaded sweep (custom_ops.lda.threads, the word x document partition): its first
sweep is the cells swept one after the other in the schedule's order by the serial
SparseLDA kernel, each thread with the topic totals of the epoch's start; after every
sweep the shared counts, every thread's topic totals and the topic lists are those of
the topics; a merge that loses the other threads' totals and a schedule that skips cells
are caught."""

import numpy as np
import pytest

from custom_ops.jit import njit_exact
from custom_ops.lda import threads
from custom_ops.lda.gibbs import (
    SparseLDAState,
    SweepPrior,
    Tokens,
    TopicCounts,
    TopicLists,
    build_counts,
    fill_topic_lists,
    gibbs_sweep_sparse,
)
from tests.helpers.twin_kernels import twin_kernel

ALPHA, ETA = 0.1, 0.05


def _corpus(seed, n_docs=40, n_words=30, n_topics=4, length=25):
    """Documents drawn from LDA (alpha = 0.1, eta = 0.05), CSR by documents."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, ETA), size=n_topics)
    words = []
    for _ in range(n_docs):
        theta = rng.dirichlet(np.full(n_topics, ALPHA))
        words.extend(rng.choice(n_words, p=phi[k]) for k in rng.choice(n_topics, length, p=theta))
    doc_ptr = np.arange(n_docs + 1, dtype=np.int64) * length
    return np.asarray(words, dtype=np.int32), doc_ptr, n_words


def _priors(n_topics, n_words):
    return np.full(n_topics, ALPHA), np.full(n_words, ETA)


def _topic_lists(counts):
    ptr = np.arange(counts.shape[0] + 1, dtype=np.int64) * counts.shape[1]
    topics = np.zeros(counts.size, dtype=np.int32)
    nnz = np.zeros(counts.shape[0], dtype=np.int32)
    fill_topic_lists(counts, ptr, topics, nnz)
    return ptr, topics, nnz


def _schedule_reference(words, doc_ptr, z0, state, n_topics, rngs):
    """One sweep computed cell by cell in one thread: in epoch e, block p's tokens of word
    group (p + e) mod P (the state's document cuts and word groups) are swept by the
    serial kernel against counts shared by all cells and block p's own topic totals,
    which start the epoch equal; after the epoch the totals' changes are summed."""
    n_blocks, n_words = state.n_threads, state.n_words
    alpha, eta = _priors(n_topics, n_words)
    n_wk, n_dk, n_k = build_counts(words, doc_ptr, z0, n_words, n_topics)
    w_ptr, w_topics, w_nnz = _topic_lists(n_wk)
    d_ptr, d_topics, d_nnz = _topic_lists(n_dk)
    z = z0.copy()
    doc_of = np.repeat(np.arange(doc_ptr.size - 1), np.diff(doc_ptr))
    group_of = state.word_group[words]
    pow_offset = np.zeros(n_words + 1, dtype=np.int64)
    for epoch in range(n_blocks):
        totals = []
        for p in range(n_blocks):
            a, b = state.doc_cuts[p], state.doc_cuts[p + 1]
            tokens = np.flatnonzero(
                (doc_of >= a) & (doc_of < b) & (group_of == (p + epoch) % n_blocks)
            )
            cell_ptr = np.searchsorted(doc_of[tokens], np.arange(a, b + 1)).astype(np.int64)
            z_cell = z[tokens].copy()
            n_k_p = n_k.copy()
            gibbs_sweep_sparse(
                Tokens(words[tokens], cell_ptr, z_cell),
                TopicCounts(n_wk, n_dk[a:b], n_k_p),
                TopicLists(w_ptr, w_topics, w_nnz, d_ptr[a : b + 1], d_topics, d_nnz[a:b]),
                SweepPrior(alpha, eta, 1.0, pow_offset, np.empty(0), np.empty(0)),
                rngs[p],
            )
            z[tokens] = z_cell
            totals.append(n_k_p)
        n_k = n_k + sum(t - n_k for t in totals)
    return z, n_wk, n_k


def _check_schedule(state_type):
    words, doc_ptr, n_words = _corpus(1)
    n_topics = 4
    alpha, eta = _priors(n_topics, n_words)
    z0 = np.random.default_rng(2).integers(0, n_topics, words.size).astype(np.int32)
    state = state_type(words, doc_ptr, z0, n_words, n_topics, 2)
    state.sweep(alpha, eta, 1.0, np.random.default_rng(3).spawn(2))
    z_ref, n_wk_ref, n_k_ref = _schedule_reference(
        words, doc_ptr, z0, state, n_topics, np.random.default_rng(3).spawn(2)
    )
    np.testing.assert_array_equal(state.z, z_ref)
    np.testing.assert_array_equal(state.n_wk, n_wk_ref)
    np.testing.assert_array_equal(state.n_k, n_k_ref)
    return state


def test_first_sweep_is_the_cells_swept_in_the_schedule_order():
    state = _check_schedule(threads.ThreadedLDAState)
    assert state.n_threads == 2
    # the cells hold every token once, each a quarter of the corpus give or take
    n_tokens = state.words.size
    cells = [state.cell_tokens(p, g) for p in range(2) for g in range(2)]
    np.testing.assert_array_equal(np.sort(np.concatenate(cells)), np.arange(n_tokens))
    assert all(abs(c.size - n_tokens / 4) < 0.2 * n_tokens for c in cells)


def _check_counts(state, words, doc_ptr, n_words, n_topics):
    n_wk, n_dk, n_k = build_counts(words, doc_ptr, state.z, n_words, n_topics)
    np.testing.assert_array_equal(state.n_wk, n_wk)
    np.testing.assert_array_equal(state.n_dk, n_dk)
    np.testing.assert_array_equal(state.n_k, n_k)
    for row in state.counts.n_k_threads:
        np.testing.assert_array_equal(row[:n_topics], n_k)
    c = state.counts
    # the state's rows are its own numbering of the words
    np.testing.assert_array_equal(c.n_wk[state.internal_id], n_wk)
    for counts, ptr, topics, nnz in (
        (c.n_wk, c.w_ptr, c.w_topics, c.w_nnz),
        (n_dk, c.d_ptr, c.d_topics, c.d_nnz),
    ):
        for r in range(counts.shape[0]):
            listed = topics[ptr[r] : ptr[r] + nnz[r]]
            np.testing.assert_array_equal(np.sort(listed), np.flatnonzero(counts[r]))


def _sweep_and_check(state_type, sweeps=15):
    words, doc_ptr, n_words = _corpus(4)
    n_topics = 4
    alpha, eta = _priors(n_topics, n_words)
    z0 = (np.arange(words.size) % n_topics).astype(np.int32)
    state = state_type(words, doc_ptr, z0, n_words, n_topics, 2)
    rngs = np.random.default_rng(5).spawn(state.n_threads)
    for _ in range(sweeps):
        state.sweep(alpha, eta, 1.0, rngs)
        _check_counts(state, words, doc_ptr, n_words, n_topics)
    # several sweeps in one call are those sweeps one call at a time
    again = state_type(words, doc_ptr, z0, n_words, n_topics, 2)
    again.sweep(alpha, eta, 1.0, np.random.default_rng(5).spawn(2), sweeps)
    np.testing.assert_array_equal(again.z, state.z)


def test_the_counts_and_lists_are_those_of_the_topics_after_every_sweep():
    _sweep_and_check(threads.ThreadedLDAState)


@njit_exact(inline="always")
def _merge_first_thread_only(n_k, n_k_threads):
    # planted bug: the topic totals take thread 0's copy, losing the others' moves
    for k in range(n_k.size):
        n_k[k] = n_k_threads[0, k]
    for p in range(n_k_threads.shape[0]):
        for k in range(n_k.size):
            n_k_threads[p, k] = n_k[k]


@njit_exact(inline="always")
def _own_diagonal_cell(p, epoch, n_blocks):
    # planted bug: every epoch sweeps the block's diagonal cell, never the others
    return p * n_blocks + p


def _twin_state(**bug):
    class Broken(threads.ThreadedLDAState):
        sweep_kernel = staticmethod(twin_kernel(threads.partition_sweeps, **bug))

    return Broken


def test_the_same_check_catches_a_merge_that_loses_totals():
    with pytest.raises(AssertionError):
        _sweep_and_check(_twin_state(merge_topic_totals=_merge_first_thread_only))


def test_the_schedule_check_catches_skipped_cells():
    with pytest.raises(AssertionError):
        _check_schedule(_twin_state(cell_of=_own_diagonal_cell))


def test_one_block_is_the_serial_sweep_draw_for_draw():
    # with one block the one cell is the corpus in its order, swept by the serial kernel
    # against the state's own arrays (called here without the thread launch)
    words, doc_ptr, n_words = _corpus(4)
    alpha, eta = _priors(4, n_words)
    z0 = (np.arange(words.size) % 4).astype(np.int32)
    state = threads.ThreadedLDAState(words, doc_ptr, z0, n_words, 4, 1)
    serial = SparseLDAState(words, doc_ptr, z0, n_words, 4)
    prior = SweepPrior(alpha, eta, 1.0, state.pow_offset, np.empty(0), np.empty(0))
    rng_one, rng_serial = np.random.default_rng(6), np.random.default_rng(6)
    for _ in range(5):
        threads.sweep_cell(state.cells, state.counts, prior, 0, 0, rng_one)
        serial.sweep(alpha, eta, 1.0, rng_serial)
    np.testing.assert_array_equal(state.z, serial.z)
    np.testing.assert_array_equal(state.n_wk, serial.n_wk)


def test_topics_out_gives_the_topics_in_corpus_order_and_counts_the_changes():
    words, doc_ptr, n_words = _corpus(7)
    alpha, eta = _priors(4, n_words)
    z0 = np.random.default_rng(8).integers(0, 4, words.size).astype(np.int32)
    state = threads.ThreadedLDAState(words, doc_ptr, z0, n_words, 4, 2)
    state.sweep(alpha, eta, 1.0, np.random.default_rng(9).spawn(2))
    z_in = z0.astype(np.int64)
    out, changed = state.topics_out(z_in)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, state.z)  # the scatter through ``order``
    assert changed == int(np.count_nonzero(state.z != z0)) > 0


def test_word_groups_deal_words_by_frequency_to_the_lightest_group():
    freq = np.array([5, 9, 1, 9, 3, 0, 4])
    # by decreasing frequency (ties in word order): 1, 3, 0, 6, 4, 2, 5; loads after each:
    # (9, 0), (9, 9), (14, 9), (14, 13), (14, 16), (15, 16), (15, 16) with ties to group 0
    np.testing.assert_array_equal(threads.word_groups(freq, 2), [0, 0, 0, 1, 1, 0, 1])
