"""log p(w | z) and log p(z | alpha) from counts: against scipy, and summing to the
collapsed joint the Gibbs kernels report."""

import numpy as np
import pytest
from scipy.special import gammaln

from custom_ops.lda.gibbs import build_counts, log_joint
from custom_ops.lda.likelihood import log_p_topics, log_p_words


def _corpus(seed, D=30, V=25, K=4):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 20, D)  # an empty document or two
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    words = rng.integers(0, V, ptr[-1])
    z = rng.integers(0, K, ptr[-1])
    return lengths, build_counts(words, ptr, z, V, K)


def _dirichlet_multinomial(counts, prior):
    """sum over rows of log Gamma(P)/Gamma(n + P) prod_c Gamma(n_c + a_c)/Gamma(a_c)."""
    return sum(gammaln(prior.sum()) - gammaln(row.sum() + prior.sum())
               + np.sum(gammaln(row + prior) - gammaln(prior)) for row in counts)


@pytest.mark.parametrize("symmetric", [True, False])
def test_values_against_scipy_and_the_joint(symmetric):
    lengths, (n_wk, n_dk, n_k) = _corpus(1)
    rng = np.random.default_rng(2)
    alpha = np.full(4, 0.3) if symmetric else rng.uniform(0.05, 2.0, 4)
    beta = np.full(25, 0.05) if symmetric else rng.uniform(0.01, 1.0, 25)
    words = log_p_words(n_wk, n_k, beta)
    topics = log_p_topics(n_dk, lengths, alpha)
    np.testing.assert_allclose(words, _dirichlet_multinomial(n_wk.T, beta), rtol=1e-12)
    np.testing.assert_allclose(topics, _dirichlet_multinomial(n_dk, alpha), rtol=1e-12)
    np.testing.assert_allclose(words + topics, log_joint(n_wk, n_dk, n_k, alpha, beta),
                               rtol=1e-12)


def test_no_tokens_is_probability_one():
    assert log_p_topics(np.zeros((3, 4), np.int32), np.zeros(3, np.int64),
                        np.full(4, 0.1)) == 0.0
    assert log_p_words(np.zeros((5, 2), np.int32), np.zeros(2, np.int64),
                       np.full(5, 0.1)) == 0.0
