"""The HMM kernels against enumeration of all K^T paths: forward-backward's evidence,
marginals and expected transitions, Viterbi's argmax, and FFBS's draws against the exact
path posterior (chi-square), with a planted-bug twin of FFBS that the same test catches."""

import numpy as np
import pytest
from scipy import stats

from custom_ops.hmm.forward_backward import (
    ffbs_kernel,
    forward_backward_kernel,
    path_log_prob,
    viterbi_kernel,
)
from custom_ops.jit import njit_exact
from tests.helpers.twin_kernels import twin_kernel
from tests.oracles.hmm import exact_posterior, path_scores, random_hmm

CASES = [  # (K, lengths)
    (1, (5,)),
    (2, (8,)),
    (3, (1, 5)),
    (4, (3, 2, 4)),
]


@pytest.mark.parametrize(("K", "lengths"), CASES)
@pytest.mark.parametrize("zeros", [False, True])
def test_forward_backward_matches_enumeration(K, lengths, zeros):
    rng = np.random.default_rng(K * 10 + len(lengths) + zeros)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    log_pi0, log_P, log_lik = random_hmm(rng, K, offsets[-1], zeros=zeros)
    evidence, gamma, xi, initial = forward_backward_kernel(log_pi0, log_P, log_lik, offsets)
    e_ref, g_ref, x_ref, i_ref = exact_posterior(log_pi0, log_P, log_lik, offsets)
    np.testing.assert_allclose(evidence, e_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(gamma, g_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(xi, x_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(initial, i_ref, rtol=0, atol=1e-10)


def test_unnormalised_parameters_and_extreme_likelihoods():
    """The recursion sums exp(path score) whatever the normalisation, and survives
    log-likelihoods of -800 (exp underflows without the per-row shift)."""
    rng = np.random.default_rng(7)
    log_pi0, log_P, log_lik = rng.normal(size=3), rng.normal(size=(3, 3)), rng.normal(size=(6, 3))
    log_lik = log_lik - 800.0
    offsets = np.array([0, 6])
    evidence, gamma, xi, _ = forward_backward_kernel(log_pi0, log_P, log_lik, offsets)
    e_ref, g_ref, x_ref, _ = exact_posterior(log_pi0, log_P, log_lik, offsets)
    np.testing.assert_allclose(evidence, e_ref, rtol=1e-13)
    np.testing.assert_allclose(gamma, g_ref, atol=1e-10)
    np.testing.assert_allclose(xi, x_ref, atol=1e-10)


def test_impossible_data_give_minus_infinity():
    log_pi0 = np.array([0.0, -np.inf])
    log_P = np.array([[0.0, -np.inf], [-np.inf, 0.0]])
    log_lik = np.array([[0.0, 0.0], [-np.inf, 0.0]])
    evidence, gamma, xi, _ = forward_backward_kernel(log_pi0, log_P, log_lik, np.array([0, 2]))
    assert evidence[0] == -np.inf
    assert not gamma.any() and not xi.any()


@pytest.mark.parametrize(("K", "lengths"), CASES)
def test_viterbi_is_the_argmax(K, lengths):
    rng = np.random.default_rng(100 + K)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    log_pi0, log_P, log_lik = random_hmm(rng, K, offsets[-1], zeros=True)
    path, log_prob = viterbi_kernel(log_pi0, log_P, log_lik, offsets)
    expected_total = 0.0
    for s in range(len(lengths)):
        start, stop = offsets[s], offsets[s + 1]
        paths, scores = path_scores(log_pi0, log_P, log_lik, start, stop)
        best = np.argmax(scores)
        np.testing.assert_array_equal(path[start:stop], paths[best])
        expected_total += scores[best]
    np.testing.assert_allclose(log_prob, expected_total, rtol=1e-13)
    own = path_log_prob(log_pi0, log_P, path, offsets) + log_lik[np.arange(len(path)), path].sum()
    np.testing.assert_allclose(own, log_prob, rtol=1e-13)


@njit_exact
def filtered_weights(alpha_t, P, next_state, out):
    """The planted bug: ``s_t`` drawn from the filtered ``p(s_t | y_{1:t})``, ignoring
    the state drawn after it (the backward pass's conditional without ``P_{i, s_{t+1}}``)."""
    for i in range(alpha_t.shape[0]):
        out[i] = alpha_t[i]


filtered_ffbs = twin_kernel(ffbs_kernel, backward_weights=filtered_weights)

#: draws per chi-square test; with 1e-4 the false-failure rate of each test
N_DRAWS = 20_000
ALPHA = 1e-4


def _ffbs_chi_square(kernel, seed):
    """p-value of the chi-square test of N_DRAWS FFBS paths of K = 3, lengths (2, 3)
    (3^2 x 3^3 = 243 joint paths, cells pooled below 5 expected draws) against the exact
    posterior."""
    rng = np.random.default_rng(seed)
    offsets = np.array([0, 2, 5])
    log_pi0, log_P, log_lik = random_hmm(np.random.default_rng(3), 3, 5)
    log_lik = log_lik / 2.0  # a posterior spread over many paths
    probs = []
    for s in range(2):
        _, scores = path_scores(log_pi0, log_P, log_lik, offsets[s], offsets[s + 1])
        probs.append(np.exp(scores - np.logaddexp.reduce(scores)))
    joint = np.outer(probs[0], probs[1]).ravel()
    counts = np.zeros(joint.size)
    path = np.empty(5, dtype=np.int64)
    for _ in range(N_DRAWS):
        kernel(log_pi0, log_P, log_lik, offsets, rng.random(5), path)
        first = path[0] * 3 + path[1]
        second = (path[2] * 3 + path[3]) * 3 + path[4]
        counts[first * 27 + second] += 1
    expected = joint * N_DRAWS
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    return stats.chisquare(obs, exp).pvalue


def test_ffbs_draws_the_exact_path_posterior():
    assert _ffbs_chi_square(ffbs_kernel, seed=11) > ALPHA


def test_ffbs_twin_sampling_filtered_states_is_caught():
    assert _ffbs_chi_square(filtered_ffbs, seed=11) < ALPHA


def test_ffbs_returns_the_log_evidence():
    rng = np.random.default_rng(5)
    offsets = np.array([0, 3, 7])
    log_pi0, log_P, log_lik = random_hmm(rng, 3, 7)
    path = np.empty(7, dtype=np.int64)
    value = ffbs_kernel(log_pi0, log_P, log_lik, offsets, rng.random(7), path)
    np.testing.assert_allclose(
        value, exact_posterior(log_pi0, log_P, log_lik, offsets)[0].sum(), rtol=1e-13
    )
