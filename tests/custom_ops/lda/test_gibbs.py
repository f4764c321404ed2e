"""LDA kernels against independent references: sequential Pólya urns, enumeration of every
assignment of a tiny corpus, scipy optimisation."""

import itertools
import math

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import gammaln

from custom_ops.lda import dense, summaries
from custom_ops.lda import evaluation as lda_eval
from custom_ops.lda import gibbs as lk

# a tiny corpus: 3 documents, V = 3, 7 tokens
WORDS = np.array([0, 1, 1, 2, 0, 1, 2], dtype=np.int32)
DOC_PTR = np.array([0, 3, 5, 7], dtype=np.int64)
V, K = 3, 2
ALPHA = np.array([0.5, 0.9])
ETA = np.array([0.3, 0.7, 0.4])


def polya_log_joint(words, doc_ptr, z, alpha, eta):
    """log p(w, z) by the chain rule: each token's predictive given the earlier ones.

    p(z) = prod_d prod_i (n_dk,<i + alpha_k) / (i + sum alpha)  (Pólya urn per document)
    p(w | z) = prod_i (n_{k w},<i + eta_w) / (n_k,<i + sum eta)  (Pólya urn per topic)
    Independent of the Gamma-function form (Murphy Eqs. 27.34, 27.36) the kernel uses.
    """
    alpha = np.broadcast_to(alpha, (len(np.atleast_1d(alpha)),))
    n_topics = alpha.size
    eta = np.asarray(eta, dtype=float)
    lp = 0.0
    n_kw = np.zeros((n_topics, eta.size))
    for d in range(len(doc_ptr) - 1):
        n_dk = np.zeros(n_topics)
        for j, i in enumerate(range(doc_ptr[d], doc_ptr[d + 1])):
            k, w = z[i], words[i]
            lp += math.log((n_dk[k] + alpha[k]) / (j + alpha.sum()))
            lp += math.log((n_kw[k, w] + eta[w]) / (n_kw[k].sum() + eta.sum()))
            n_dk[k] += 1
            n_kw[k, w] += 1
    return lp


def test_build_counts_matches_numpy():
    rng = np.random.default_rng(0)
    words = rng.integers(0, 7, size=50).astype(np.int32)
    doc_ptr = np.array([0, 10, 10, 35, 50])
    z = rng.integers(0, 4, size=50).astype(np.int32)
    n_wk, n_dk, n_k = lk.build_counts(words, doc_ptr, z, 7, 4)
    doc = np.repeat(np.arange(4), np.diff(doc_ptr))
    ref_wk = np.zeros((7, 4), int)
    np.add.at(ref_wk, (words, z), 1)
    ref_dk = np.zeros((4, 4), int)
    np.add.at(ref_dk, (doc, z), 1)
    np.testing.assert_array_equal(n_wk, ref_wk)
    np.testing.assert_array_equal(n_dk, ref_dk)
    np.testing.assert_array_equal(n_k, np.bincount(z, minlength=4))
    assert n_wk.shape == (7, 4) and n_dk.shape == (4, 4) and n_k.shape == (4,)


@pytest.mark.parametrize("symmetric", [True, False])
def test_log_joint_matches_sequential_polya_urns(symmetric):
    rng = np.random.default_rng(1)
    n_words, n_topics = 6, 3
    words = rng.integers(0, n_words, size=40).astype(np.int32)
    doc_ptr = np.array([0, 5, 20, 20, 40])
    z = rng.integers(0, n_topics, size=40).astype(np.int32)
    if symmetric:
        alpha, eta = 0.3, 0.05
        alpha_v, eta_v = np.full(n_topics, alpha), np.full(n_words, eta)
    else:
        alpha = alpha_v = rng.uniform(0.1, 2.0, n_topics)
        eta = eta_v = rng.uniform(0.01, 1.0, n_words)
    counts = lk.build_counts(words, doc_ptr, z, n_words, n_topics)
    expected = polya_log_joint(words, doc_ptr, z, alpha_v, eta_v)
    assert lk.log_joint(*counts, alpha, eta) == pytest.approx(expected, rel=1e-12, abs=1e-9)


def _exact_posterior():
    states = list(itertools.product(range(K), repeat=WORDS.size))
    lj = np.array([polya_log_joint(WORDS, DOC_PTR, np.array(s), ALPHA, ETA) for s in states])
    p = np.exp(lj - lj.max())
    return states, p / p.sum()


def _state_frequencies(run_sweep, get_z, n_sweeps, states, n_batches=40):
    index = {s: i for i, s in enumerate(states)}
    batch = n_sweeps // n_batches
    freq = np.zeros((n_batches, len(states)))
    for b in range(n_batches):
        for _ in range(batch):
            run_sweep()
            freq[b, index[tuple(get_z())]] += 1
    freq /= batch
    return freq.mean(0), freq.std(0, ddof=1) / np.sqrt(n_batches)


def _assert_matches_exact(mean, mcse, p):
    # 128 states: a 5-MCSE band keeps the chance of a false alarm below ~1e-4; the
    # 2e-3 floor covers states whose batch frequencies happen to be all equal.
    z_scores = np.abs(mean - p) / np.maximum(mcse, 2e-3 / 5)
    assert z_scores.max() < 5, f"max z-score {z_scores.max():.1f}"


def test_dense_sweep_leaves_the_exact_posterior_invariant():
    states, p = _exact_posterior()
    rng = np.random.default_rng(2)
    z = np.zeros(WORDS.size, dtype=np.int32)
    n_wk, n_dk, n_k = lk.build_counts(WORDS, DOC_PTR, z, V, K)
    mean, mcse = _state_frequencies(
        lambda: dense.gibbs_sweep_dense(
            lk.Tokens(WORDS, DOC_PTR, z),
            lk.TopicCounts(n_wk, n_dk, n_k),
            lk.SweepPrior(ALPHA, ETA, 1.0, *lk.tempering_tables(WORDS, V, ETA, 1.0)),
            rng,
        ),
        lambda: z,
        40_000,
        states,
    )
    _assert_matches_exact(mean, mcse, p)


def test_sparse_sweep_leaves_the_exact_posterior_invariant():
    states, p = _exact_posterior()
    rng = np.random.default_rng(3)
    state = lk.SparseLDAState(WORDS, DOC_PTR, np.zeros(WORDS.size), V, K)
    mean, mcse = _state_frequencies(
        lambda: state.sweep(ALPHA, ETA, 1.0, rng), lambda: state.z, 40_000, states
    )
    _assert_matches_exact(mean, mcse, p)


def test_the_same_check_catches_a_sampler_that_keeps_the_tokens_own_count():
    """Planted bug: draw z_i without removing token i from the counts first."""
    states, p = _exact_posterior()
    rng = np.random.default_rng(4)
    z = np.zeros(WORDS.size, dtype=np.int64)
    n_wk, n_dk, n_k = (c.astype(float) for c in lk.build_counts(WORDS, DOC_PTR, z, V, K))
    doc = np.repeat(np.arange(3), np.diff(DOC_PTR))

    def buggy_sweep():
        for i in range(WORDS.size):
            w, d, t = WORDS[i], doc[i], z[i]
            prob = (n_wk[w] + ETA[w]) / (n_k + ETA.sum()) * (n_dk[d] + ALPHA)
            new = rng.choice(K, p=prob / prob.sum())
            for arr, idx in ((n_wk, w), (n_dk, d)):
                arr[idx, t] -= 1
                arr[idx, new] += 1
            n_k[t] -= 1
            n_k[new] += 1
            z[i] = new

    mean, mcse = _state_frequencies(buggy_sweep, lambda: z, 8_000, states)
    with pytest.raises(AssertionError, match="max z-score"):
        _assert_matches_exact(mean, mcse, p)


def test_sparse_state_stays_consistent_and_matches_dense_statistically():
    rng = np.random.default_rng(5)
    n_words, n_topics = 30, 12
    doc_ptr = np.array([0, 40, 41, 90, 90, 150])
    words = rng.integers(0, n_words, size=150).astype(np.int32)
    alpha = rng.uniform(0.05, 0.5, n_topics)
    eta = rng.uniform(0.01, 0.2, n_words)
    state = lk.SparseLDAState(words, doc_ptr, rng.integers(0, n_topics, 150), n_words, n_topics)
    for _ in range(50):
        state.sweep(alpha, eta, 1.0, rng)
    counts = lk.build_counts(words, doc_ptr, state.z, n_words, n_topics)
    for got, want in zip((state.n_wk, state.n_dk, state.n_k), counts, strict=True):
        np.testing.assert_array_equal(got, want)
    for v in range(n_words):  # the topics with a count, in increasing order
        listed = state.w_topics[state.w_ptr[v] : state.w_ptr[v] + state.w_nnz[v]]
        assert list(listed) == list(np.flatnonzero(state.n_wk[v]))
    for d in range(doc_ptr.size - 1):
        listed = state.d_topics[state.d_ptr[d] : state.d_ptr[d] + state.d_nnz[d]]
        assert list(listed) == list(np.flatnonzero(state.n_dk[d]))


def test_a_walk_past_the_end_stops_at_the_last_topic_with_a_count():
    """The sweep leaves a token's old topic listed with a zero count while the token is
    out; a walk that rounding carries past the end must not land there."""
    topics = np.array([9, 3, 1, 4, 2, 9], dtype=np.int32)
    row = np.array([0, 2, 1, 5, 0], dtype=np.int32)  # topic 4 is listed, count 0
    assert lk.last_listed(topics, 1, 4, row) == 2  # the list is 3, 1, 4, 2
    assert lk.last_listed(topics, 1, 3, row) == 1  # 3, 1, 4: the listed 4 is empty


@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_a_state_rebuilt_from_the_topics_continues_the_chain_draw_for_draw(beta):
    """What resuming a stored chain relies on: the sweeps' draws depend on the counts and
    the generator alone, not on the order in which past updates left the topic lists."""
    rng = np.random.default_rng(12)
    n_words, n_topics = 30, 12
    doc_ptr = np.array([0, 40, 41, 90, 90, 150])
    words = rng.integers(0, n_words, size=150).astype(np.int32)
    alpha = np.full(n_topics, 0.1)
    eta = np.full(n_words, 0.05)
    state = lk.SparseLDAState(words, doc_ptr, rng.integers(0, n_topics, 150), n_words, n_topics)
    for _ in range(20):
        state.sweep(alpha, eta, beta, rng)
    rebuilt = lk.SparseLDAState(words, doc_ptr, state.z, n_words, n_topics)
    rng_rebuilt = np.random.default_rng()
    rng_rebuilt.bit_generator.state = rng.bit_generator.state
    for _ in range(10):
        state.sweep(alpha, eta, beta, rng)
        rebuilt.sweep(alpha, eta, beta, rng_rebuilt)
        np.testing.assert_array_equal(rebuilt.z, state.z)


def test_sweeps_are_reproducible_from_the_generator():
    def run(seed):
        rng = np.random.default_rng(seed)
        state = lk.SparseLDAState(WORDS, DOC_PTR, np.zeros(WORDS.size), V, K)
        zs = []
        for _ in range(20):
            state.sweep(ALPHA, ETA, 1.0, rng)
            zs.append(state.z.copy())
        return np.array(zs)

    np.testing.assert_array_equal(run(7), run(7))
    assert not np.array_equal(run(7), run(8))


def test_theta_given_fixed_topics_matches_enumeration():
    phi_wk = np.array([[0.7, 0.1], [0.2, 0.3], [0.1, 0.6]])  # (V, K), columns sum to 1
    alpha = np.array([0.4, 0.8])
    doc = np.array([0, 2, 2, 1, 0], dtype=np.int32)
    num = np.zeros(2)
    den = 0.0
    for zs in itertools.product(range(2), repeat=doc.size):
        zs = np.array(zs)
        n = np.bincount(zs, minlength=2)
        # p(z | alpha) (Pólya urn) * p(w | z, phi)
        lp = gammaln(alpha.sum()) - gammaln(doc.size + alpha.sum())
        lp += np.sum(gammaln(n + alpha) - gammaln(alpha)) + np.log(phi_wk[doc, zs]).sum()
        weight = np.exp(lp)
        num += weight * (n + alpha) / (doc.size + alpha.sum())
        den += weight
    expected = num / den
    rng = np.random.default_rng(6)
    theta = lda_eval.sample_theta_fixed_phi(
        doc, np.array([0, doc.size]), phi_wk, alpha, 100, 40_000, rng
    )
    assert theta.shape == (1, 2)
    # 40k correlated sweeps of a 5-token document: MCSE of the mean is ~1e-3
    np.testing.assert_allclose(theta[0], expected, atol=6e-3)


def test_minka_fixed_point_maximises_the_dirichlet_multinomial_likelihood():
    rng = np.random.default_rng(8)
    true_alpha = np.array([0.2, 0.5, 1.5])
    theta = rng.dirichlet(true_alpha, size=300)
    n_dk = np.array([rng.multinomial(rng.integers(5, 60), t) for t in theta])
    n_dk = np.vstack([n_dk, np.zeros((1, 3), int)])  # an empty document changes nothing

    def neg_loglik(log_a):
        a = np.exp(log_a)
        lengths = n_dk.sum(1)
        return -np.sum(
            gammaln(a.sum()) - gammaln(lengths + a.sum()) + (gammaln(n_dk + a) - gammaln(a)).sum(1)
        )

    ref = np.exp(minimize(neg_loglik, np.zeros(3), method="BFGS", options={"gtol": 1e-10}).x)
    got = lda_eval.minka_alpha_update(n_dk, np.ones(3), n_iter=2000, tol=1e-12)
    np.testing.assert_allclose(got, ref, rtol=1e-4)
    # one step from a poor start already increases the likelihood (monotone ascent)
    one = lda_eval.minka_alpha_update(n_dk, np.ones(3), n_iter=1)
    assert neg_loglik(np.log(one)) < neg_loglik(np.zeros(3))


def test_draw_summary_matches_polya_urns_and_the_float_formulas():
    """The step's per-draw stats: log_joint against the sequential Pólya urns, the
    concentrations against the conditional means built in floating point."""
    rng = np.random.default_rng(5)
    n_words, n_topics, alpha, eta = 6, 3, 0.4, 0.15
    doc_ptr = np.array([0, 9, 15, 30], dtype=np.int64)
    words = rng.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    z = rng.integers(0, n_topics, doc_ptr[-1]).astype(np.int32)
    n_wk, n_dk, n_k = lk.build_counts(words, doc_ptr, z, n_words, n_topics)
    tables = summaries.lgamma_tables(
        alpha, eta, int(np.bincount(words).max()), int(np.diff(doc_ptr).max())
    )
    ll, phi_c, theta_c = summaries.draw_summary(n_wk, n_dk, n_k, alpha, eta, tables)
    assert ll == pytest.approx(
        polya_log_joint(words, doc_ptr, z, np.full(n_topics, alpha), np.full(n_words, eta)),
        rel=1e-12,
    )
    phi = (n_wk.T + eta) / (n_k[:, None] + n_words * eta)
    theta = (n_dk + alpha) / (n_dk.sum(1, keepdims=True) + n_topics * alpha)
    assert phi_c == pytest.approx((phi**2).sum(1).mean(), rel=1e-12)
    assert theta_c == pytest.approx((theta**2).sum(1).mean(), rel=1e-12)
    # the general (asymmetric) path agrees with the same floats
    a_vec, e_vec = rng.uniform(0.1, 1.0, n_topics), rng.uniform(0.1, 1.0, n_words)
    phi = (n_wk.T + e_vec) / (n_k[:, None] + e_vec.sum())
    theta = (n_dk + a_vec) / (n_dk.sum(1, keepdims=True) + a_vec.sum())
    got = lk.concentrations(n_wk, n_dk, n_k, a_vec, e_vec)
    np.testing.assert_allclose(got, [(phi**2).sum(1).mean(), (theta**2).sum(1).mean()], rtol=1e-12)


def test_summary_through_the_topic_lists_equals_the_full_scan():
    """SparseLDAState.summary walks only the listed (nonzero) cells; after sparse sweeps,
    which keep the lists, it gives draw_summary's values on the same counts."""
    rng = np.random.default_rng(9)
    n_words, n_topics, alpha, eta = 12, 7, 0.3, 0.05
    doc_ptr = np.array([0, 14, 15, 40, 40, 60], dtype=np.int64)
    words = rng.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    state = lk.SparseLDAState(
        words, doc_ptr, rng.integers(0, n_topics, doc_ptr[-1]), n_words, n_topics
    )
    tables = summaries.lgamma_tables(
        alpha, eta, int(np.bincount(words).max()), int(np.diff(doc_ptr).max())
    )
    for _ in range(5):
        state.sweep(np.full(n_topics, alpha), np.full(n_words, eta), 1.0, rng)
        full = summaries.draw_summary(state.n_wk, state.n_dk, state.n_k, alpha, eta, tables)
        np.testing.assert_allclose(state.summary(alpha, eta, tables), full, rtol=1e-12)
        assert full[0] == pytest.approx(
            polya_log_joint(
                words, doc_ptr, state.z, np.full(n_topics, alpha), np.full(n_words, eta)
            ),
            rel=1e-12,
        )


def test_topics_out_copies_and_counts_the_changes():
    z = np.array([0, 2, 1, 1], dtype=np.int32)
    z_in = np.array([0, 1, 1, 3], dtype=np.int64)
    out, changed = lk.topics_out(z, z_in)
    assert out.dtype == np.int64 and changed == 2
    np.testing.assert_array_equal(out, z)
    assert not np.shares_memory(out, z)
