"""SpanningTree distribution: pm.draw follows P(T) ∝ prod beta (chi-square over all 16
trees on 4 nodes), logp normalised, batches."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from pp_models.distributions import SpanningTree
from pp_models.trees import all_spanning_trees, spanning_tree_edges


def test_prior_draws_match_the_exact_distribution():
    rng = np.random.default_rng(0)
    W = rng.gamma(1.0, size=(4, 4))
    W = W + W.T
    trees = all_spanning_trees(4)
    logw = np.array([sum(np.log(W[u, v]) for u, v in spanning_tree_edges(t)) for t in trees])
    p = np.exp(logw - np.logaddexp.reduce(logw))
    draws = pm.draw(SpanningTree.dist(W), draws=8000, random_seed=1)
    index = {tuple(t): i for i, t in enumerate(trees)}
    counts = np.bincount([index[tuple(d)] for d in draws], minlength=16)
    assert stats.chisquare(counts, 8000 * p).pvalue > 1e-3
    # logp through PyMC equals the exact log probability and sums to one
    with pm.Model() as m:
        SpanningTree("T", W)
    logp = m.compile_logp()
    lps = np.array([logp({"T": t}) for t in trees])
    np.testing.assert_allclose(lps, np.log(p), rtol=1e-10)


def test_batched_trees_and_shapes():
    W = np.ones((6, 6))
    with pm.Model() as m:
        T = SpanningTree("T", W, shape=(3, 6))
    draws = pm.draw(T, draws=5, random_seed=2)
    assert draws.shape == (5, 3, 6)
    assert np.all(draws[..., 0] == -1)
    np.testing.assert_allclose(m.compile_logp()(m.initial_point()), -3 * 4 * np.log(6))
    batched = pm.draw(SpanningTree.dist(np.ones((2, 5, 5))), random_seed=3)
    assert batched.shape == (2, 5)


def test_invalid_values_and_weights():
    with pm.Model() as m:
        SpanningTree("T", np.ones((4, 4)))
    assert m.compile_logp()({"T": np.array([-1, 2, 1, 0])}) == -np.inf
    with pm.Model() as bad:
        SpanningTree("T", np.array([[0, 1, 2], [1, 0, 1], [1, 1, 0.0]]))
    # asymmetric weights: outside the parameter space
    assert bad.compile_logp()({"T": np.array([-1, 0, 0])}) == -np.inf
    with pytest.raises(ValueError, match="matrix"):
        SpanningTree.dist(np.ones(3))
