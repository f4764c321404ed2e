"""The alias-Metropolis-Hastings sweep (``gibbs_sweep_alias``, LightLDA's cycle) leaves
the power posterior p(z | alpha) p(w | z, eta)^beta invariant: every assignment of a
4-topic corpus of 4 tokens enumerated (``tests/oracles/lda.py``,
sequential Pólya urns) at beta in {0, 0.4, 1} with the tables rebuilt every K draws, and
at beta = 1 with tables never rebuilt after their first build (the correction must undo
any staleness); a twin that accepts every word proposal (the Metropolis-Hastings
correction of the stale alias tables dropped) is caught by the same check. Also: the
sweep keeps its counts and topic lists, and an alias table draws the masses it was built
from."""

import numpy as np
import pytest
from scipy import stats

from custom_ops.lda import alias
from custom_ops.lda import gibbs as lk
from tests.custom_ops.lda.twins import accept_every_proposal
from tests.helpers.twin_kernels import twin_kernel
from tests.oracles.lda import LDAEnumeration

DOCS = [[0, 1], [1, 2]]
WORDS = np.array([w for d in DOCS for w in d], dtype=np.int32)
DOC_PTR = np.array([0, 2, 4], dtype=np.int64)
V, K = 3, 4
ALPHA = np.array([0.5, 0.9, 0.3, 0.7])
ETA = np.array([0.3, 0.7, 0.4])
ENUM = LDAEnumeration(DOCS, K, ALPHA, ETA)
N_SWEEPS = 12_000
N_BATCHES = 40
# tables built once and never again: the stalest proposal the kernel can be given
FROZEN = 2**62
# 256 states, 40 batch means each: the state's error over its batch-means standard error
# is t with 39 degrees of freedom; Bonferroni over the states for a false alarm <= 1e-4
Z_MAX = float(stats.t.isf(1e-4 / (2 * len(ENUM.states)), N_BATCHES - 1))


def chain(kernel, beta, seed, n_sweeps=N_SWEEPS, table_draws=None):
    """Batch means and their standard errors of the state frequencies (40 batches)."""
    rng = np.random.default_rng(seed)
    state = alias.AliasLDAState(WORDS, DOC_PTR, np.zeros(WORDS.size), V, K)
    batch = n_sweeps // N_BATCHES
    freq = np.zeros((N_BATCHES, len(ENUM.states)))
    for b in range(N_BATCHES):
        for _ in range(batch):
            kernel(*state.kernel_args(ALPHA, ETA, beta, table_draws=table_draws), rng)
            freq[b, ENUM.index(state.z)] += 1
    freq /= batch
    return freq.mean(0), freq.std(0, ddof=1) / np.sqrt(N_BATCHES)


def max_z(mean, mcse, p):
    # the floor covers states seen equally in every batch
    return float((np.abs(mean - p) / np.maximum(mcse, 2e-3 / 5)).max())


@pytest.mark.parametrize("beta", [0.0, 0.4, 1.0])
def test_alias_sweep_leaves_the_power_posterior_invariant(beta):
    mean, mcse = chain(alias.gibbs_sweep_alias, beta, seed=41)
    assert max_z(mean, mcse, ENUM.power_posterior(beta)) < Z_MAX


def test_alias_sweep_with_tables_never_rebuilt_leaves_the_posterior_invariant():
    mean, mcse = chain(alias.gibbs_sweep_alias, 1.0, seed=45, table_draws=FROZEN)
    assert max_z(mean, mcse, ENUM.power_posterior(1.0)) < Z_MAX


def test_an_alias_sweep_without_the_metropolis_hastings_correction_is_caught():
    # measured: |z| of 6.0-10.1 over five seeds at 12,000 sweeps against Z_MAX ~ 6.1, so
    # 30,000 sweeps (|z| grows as their square root: ~9.5 and more)
    twin = twin_kernel(alias.gibbs_sweep_alias, alias_acceptance=accept_every_proposal)
    mean, mcse = chain(twin, 1.0, seed=42, n_sweeps=30_000, table_draws=FROZEN)
    assert max_z(mean, mcse, ENUM.power_posterior(1.0)) >= Z_MAX


def test_alias_sweep_keeps_its_counts_and_topic_lists():
    rng = np.random.default_rng(43)
    n_words, n_topics = 40, 70
    doc_ptr = np.array([0, 50, 51, 130, 130, 200], dtype=np.int64)
    words = rng.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    z = rng.integers(0, n_topics, doc_ptr[-1]).astype(np.int32)
    state = alias.AliasLDAState(words, doc_ptr, z, n_words, n_topics)
    alpha, eta = np.full(n_topics, 0.2), np.full(n_words, 0.05)
    for beta in (1.0, 0.5):
        for _ in range(5):
            state.alias_sweep(alpha, eta, beta, rng)
    fresh = lk.SparseLDAState(words, doc_ptr, state.z, n_words, n_topics)
    for name in ("n_wk", "n_dk", "n_k", "w_nnz", "d_nnz"):
        np.testing.assert_array_equal(getattr(state, name), getattr(fresh, name))
    for topics, ptr, nnz, counts in (
        (state.w_topics, state.w_ptr, state.w_nnz, state.n_wk),
        (state.d_topics, state.d_ptr, state.d_nnz, state.n_dk),
    ):
        for r in range(counts.shape[0]):
            listed = np.sort(topics[ptr[r] : ptr[r] + nnz[r]])
            np.testing.assert_array_equal(listed, np.flatnonzero(counts[r]))
    assert np.unique(state.z).size > 20


def test_alias_table_draws_its_masses():
    """Vose's table: column c keeps c with probability prob[c], else alias[c]; the
    implied distribution equals the masses it was built from (exact, no sampling)."""
    rng = np.random.default_rng(44)
    for n in (1, 2, 7, 64):
        masses = rng.gamma(0.3, size=n) + 1e-3
        prob, idx = np.empty(n), np.empty(n, dtype=np.int32)
        small, large = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
        total = alias.build_alias(masses, prob, idx, small, large)
        implied = prob / n
        np.add.at(implied, idx, (1.0 - prob) / n)
        np.testing.assert_allclose(total, masses.sum(), rtol=1e-12)
        np.testing.assert_allclose(implied, masses / masses.sum(), rtol=1e-9, atol=1e-15)
