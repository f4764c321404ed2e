"""The threaded AD-LDA sweep (custom_ops.lda.threads): its first sweep is AD-LDA computed
independently (each block's SparseLDA sweep against the starting counts, the changes
summed), and after every sweep each thread's copy of the counts and of the word topic
lists is that of the topics; a merge that loses a list update is caught."""

import numpy as np
import pytest

from custom_ops.jit import njit_exact
from custom_ops.lda import threads
from custom_ops.lda.gibbs import SparseLDAState, build_counts
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


def _check_copies(state, words, doc_ptr, n_words, n_topics):
    n_wk, n_dk, n_k = build_counts(words, doc_ptr, state.z, n_words, n_topics)
    np.testing.assert_array_equal(state.n_dk, n_dk)
    for block in state.blocks:
        np.testing.assert_array_equal(block.n_wk, n_wk)
        np.testing.assert_array_equal(block.n_k, n_k)
        for v in range(n_words):
            listed = block.w_topics[state.w_ptr[v] : state.w_ptr[v] + block.w_nnz[v]]
            np.testing.assert_array_equal(np.sort(listed), np.flatnonzero(n_wk[v]))


def test_first_sweep_is_ad_lda_of_the_blocks_sparse_sweeps():
    words, doc_ptr, n_words = _corpus(1)
    n_topics = 4
    alpha, eta = _priors(n_topics, n_words)
    z0 = np.random.default_rng(2).integers(0, n_topics, words.size).astype(np.int32)
    state = threads.ThreadedLDAState(words, doc_ptr, z0, n_words, n_topics, 3)
    assert state.n_threads == 3
    state.sweep(alpha, eta, 1.0, np.random.default_rng(3).spawn(3))
    # reference: every block swept alone against the starting counts, changes summed
    n_wk0, _, n_k0 = build_counts(words, doc_ptr, z0, n_words, n_topics)
    total_wk, total_k, z_ref = n_wk0.copy(), n_k0.copy(), []
    for (a, b), rng in zip(
        zip(state.doc_cuts[:-1], state.doc_cuts[1:], strict=True),
        np.random.default_rng(3).spawn(3),
        strict=True,
    ):
        lo, hi = doc_ptr[a], doc_ptr[b]
        block = SparseLDAState(words[lo:hi], doc_ptr[a : b + 1] - lo, z0[lo:hi], n_words, n_topics)
        block.set_word_counts(n_wk0, n_k0)
        block.sweep(alpha, eta, 1.0, rng)
        total_wk += block.n_wk - n_wk0
        total_k += block.n_k - n_k0
        z_ref.append(block.z)
    np.testing.assert_array_equal(state.z, np.concatenate(z_ref))
    np.testing.assert_array_equal(state.n_wk, total_wk)
    np.testing.assert_array_equal(state.n_k, total_k)
    _check_copies(state, words, doc_ptr, n_words, n_topics)


@njit_exact(inline="always")
def _relist_without_arrivals(n_wk, w, start, nnz, topics, arrivals, listed):
    # planted bug: topics that come to a word are not listed (the lists only shrink, so
    # no write leaves the word's slots)
    m = 0
    for j in range(start, start + nnz[w]):
        k = topics[j]
        if n_wk[w, k] > 0:
            topics[start + m] = k
            m += 1
    nnz[w] = m


@njit_exact(inline="always")
def _move_without_topic_totals(n_wk, n_k, w, old, new):
    # planted bug: the topic totals n_k miss the other blocks' moves
    n_wk[w, old] -= 1
    crossed = n_wk[w, old] == 0 or n_wk[w, new] == 0
    n_wk[w, new] += 1
    return crossed


def _sweep_and_check(state_type, n_threads, sweeps=20):
    words, doc_ptr, n_words = _corpus(4)
    n_topics = 4
    alpha, eta = _priors(n_topics, n_words)
    z0 = (np.arange(words.size) % n_topics).astype(np.int32)
    state = state_type(words, doc_ptr, z0, n_words, n_topics, n_threads)
    rngs = np.random.default_rng(5).spawn(state.n_threads)
    try:
        for _ in range(sweeps):
            state.sweep(alpha, eta, 1.0, rngs)
            _check_copies(state, words, doc_ptr, n_words, n_topics)
    finally:
        state.close()


@pytest.mark.parametrize("n_threads", [2, 3])
def test_every_thread_holds_the_counts_and_lists_of_the_topics(n_threads):
    _sweep_and_check(threads.ThreadedLDAState, n_threads)


@pytest.mark.parametrize(
    "bug", [{"relist_word": _relist_without_arrivals}, {"move_token": _move_without_topic_totals}]
)
def test_the_same_check_catches_a_broken_merge(bug):
    class BrokenMerge(threads.ThreadedLDAState):
        merge_kernel = staticmethod(twin_kernel(threads.apply_moves, **bug))

    with pytest.raises(AssertionError):
        _sweep_and_check(BrokenMerge, 2)
