"""The blocked O(K) sweep (``gibbs_sweep_blocked``) leaves the power posterior
p(z | alpha) p(w | z, eta)^beta invariant: every assignment of a 4-topic corpus of 4
tokens enumerated (``tests/oracles/lda.py``, sequential Pólya urns) at
beta in {0, 0.4, 1} with two blocks of two topics (the binary search over blocks and
the scan inside one), and of a 3-topic corpus of 5 tokens with two blocks of one topic
plus the tail block; a twin that forgets the mass of the blocks before the chosen one is
caught by the same check."""

import numpy as np
import pytest

from custom_ops.jit import njit_exact
from custom_ops.lda import dense
from custom_ops.lda import gibbs as lk
from tests.helpers.twin_kernels import twin_kernel
from tests.oracles.lda import LDAEnumeration

V = 3
ETA = np.array([0.3, 0.7, 0.4])
N_SWEEPS = 12_000
N_BATCHES = 40


class Corpus:
    def __init__(self, docs, alpha):
        self.words = np.array([w for d in docs for w in d], dtype=np.int32)
        self.doc_ptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])])
        self.alpha = np.asarray(alpha)
        self.enum = LDAEnumeration(docs, self.alpha.size, self.alpha, ETA)


FOUR_TOPICS = Corpus([[0, 1], [1, 2]], [0.5, 0.9, 0.3, 0.7])
THREE_TOPICS = Corpus([[0, 1, 1], [2, 0]], [0.5, 0.9, 0.3])


@njit_exact(inline="always")
def _no_offset(u, cum, b):
    return u


def chain(kernel, corpus, n_blocks, beta, seed, n_sweeps=N_SWEEPS):
    """Batch means and their standard errors of the state frequencies (40 batches)."""
    rng = np.random.default_rng(seed)
    words, doc_ptr = corpus.words, corpus.doc_ptr
    n_topics = corpus.alpha.size
    z = np.zeros(words.size, dtype=np.int32)
    n_wk, n_dk, n_k = lk.build_counts(words, doc_ptr, z, V, n_topics)
    tokens = lk.Tokens(words, doc_ptr, z)
    counts = lk.TopicCounts(n_wk, n_dk, n_k)
    prior = lk.SweepPrior(corpus.alpha, ETA, beta, *lk.tempering_tables(words, V, ETA, beta))
    batch = n_sweeps // N_BATCHES
    freq = np.zeros((N_BATCHES, len(corpus.enum.states)))
    for b in range(N_BATCHES):
        for _ in range(batch):
            kernel(tokens, counts, prior, n_blocks, rng)
            freq[b, corpus.enum.index(z)] += 1
    freq /= batch
    return freq.mean(0), freq.std(0, ddof=1) / np.sqrt(N_BATCHES)


def max_z(mean, mcse, p):
    # 256 or 243 states, 40 batches: 5 batch-means standard errors (t with 39 degrees of
    # freedom) per state; the floor covers states seen equally in every batch
    return float((np.abs(mean - p) / np.maximum(mcse, 2e-3 / 5)).max())


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_blocked_sweep_leaves_the_power_posterior_invariant(beta):
    mean, mcse = chain(dense.gibbs_sweep_blocked, FOUR_TOPICS, 2, beta, seed=31)
    assert max_z(mean, mcse, FOUR_TOPICS.enum.power_posterior(beta)) < 5


def test_blocked_sweep_with_a_tail_block_leaves_the_power_posterior_invariant():
    mean, mcse = chain(dense.gibbs_sweep_blocked, THREE_TOPICS, 2, 0.4, seed=34)
    assert max_z(mean, mcse, THREE_TOPICS.enum.power_posterior(0.4)) < 5


def test_a_blocked_sweep_that_forgets_the_earlier_blocks_is_caught():
    twin = twin_kernel(dense.gibbs_sweep_blocked, block_residual=_no_offset)
    mean, mcse = chain(twin, FOUR_TOPICS, 2, 1.0, seed=32, n_sweeps=8_000)
    assert max_z(mean, mcse, FOUR_TOPICS.enum.power_posterior(1.0)) >= 5


def test_blocked_sweep_keeps_the_counts_of_its_topics():
    rng = np.random.default_rng(33)
    n_words, n_topics = 40, 70
    doc_ptr = np.array([0, 50, 51, 130, 130, 200], dtype=np.int64)
    words = rng.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    z = rng.integers(0, n_topics, doc_ptr[-1]).astype(np.int32)
    n_wk, n_dk, n_k = lk.build_counts(words, doc_ptr, z, n_words, n_topics)
    alpha, eta = np.full(n_topics, 0.2), np.full(n_words, 0.05)
    for beta in (1.0, 0.5):
        prior = lk.SweepPrior(alpha, eta, beta, *lk.tempering_tables(words, n_words, eta, beta))
        for _ in range(5):
            dense.gibbs_sweep_blocked(
                lk.Tokens(words, doc_ptr, z), lk.TopicCounts(n_wk, n_dk, n_k), prior, 8, rng
            )
    for got, want in zip(
        (n_wk, n_dk, n_k), lk.build_counts(words, doc_ptr, z, n_words, n_topics), strict=True
    ):
        np.testing.assert_array_equal(got, want)
    assert np.unique(z).size > 20  # the draws reach the blocks and the tail
    assert dense.dense_block_width(20) == 0 and dense.dense_block_width(500) == 64
