"""Bayesian mixture of trees: the posterior over trees equals enumeration; recovery; input."""

import numpy as np
import pytest

from inference import fit
from pp_models import mixture_of_trees
from pp_models.mixture_of_trees import forest_log_marginal
from pp_models.mixture_of_trees.outputs import conditional_edge_marginals, edge_log_weights
from pp_models.trees import all_spanning_trees, spanning_tree_edges


def _enumerated_tree_posterior(log_marginal, beta):
    """Every tree on 4 nodes and ``P(T | X) ∝ beta(T) p(X | T)``, ``log p(X | T) =
    log_marginal(T)``."""
    trees = all_spanning_trees(4)
    log_post = np.array([log_marginal(t)
                         + sum(np.log(beta[u, v]) for u, v in spanning_tree_edges(t))
                         for t in trees])
    return trees, np.exp(log_post - np.logaddexp.reduce(log_post))


def _check_tree_draws(dt, trees, post):
    """The sampled trees' frequencies match ``post`` within multinomial error; returns
    the exact edge marginals ``P(uv in T | X)``."""
    draws = dt["posterior"]["trees"].values[0, :, 0, :]
    index = {tuple(t): i for i, t in enumerate(trees)}
    freq = np.bincount([index[tuple(d)] for d in draws], minlength=16) / len(draws)
    se = np.sqrt(post * (1 - post) / len(draws))
    assert np.all(np.abs(freq - post) < 4.5 * se + 1e-3), np.c_[freq, post]
    exact = np.zeros((4, 4))
    for t, p in zip(trees, post, strict=True):
        for u, v in spanning_tree_edges(t):
            exact[u, v] += p
            exact[v, u] += p
    return exact


def test_one_component_tree_posterior_equals_enumeration():
    """K = 1: z and w are trivial and the tree draws are exact and independent, so the
    frequencies of the 16 trees on 4 nodes must match P(T | X) ∝ beta(T) p(X | T) (BDeu
    marginal likelihood by direct counting) within multinomial error."""
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 4))
    X[:, 1] = np.where(rng.random(30) < 0.8, X[:, 0], X[:, 1])
    X[:, 3] = np.where(rng.random(30) < 0.7, X[:, 1], X[:, 3])
    beta = np.ones((4, 4))
    beta[2, 3] = beta[3, 2] = 3.0
    trees, post = _enumerated_tree_posterior(lambda t: forest_log_marginal(X, t, ess=2.0),
                                             beta)
    m = mixture_of_trees.model(X, 1, ess=2.0, edge_prior=beta)
    dt = fit(m, method="gibbs", draws=3000, tune=0, chains=1, random_seed=1,
             progressbar=False)
    # with z fixed the Rao-Blackwellised edge probabilities are the exact marginals (by
    # enumeration), and the sampled trees' edge frequencies match them within MC error
    exact = _check_tree_draws(dt, trees, post)
    kernel = conditional_edge_marginals(np.log(beta) + edge_log_weights(X, np.array([2] * 4),
                                                                          2.0, 1.0))
    np.testing.assert_allclose(kernel, exact, atol=1e-12)
    reported = dt["tree_structure"]["edge_probability"].values[0, 0]
    np.testing.assert_allclose(reported, exact, atol=1e-12)
    frequency = dt["tree_structure"]["edge_frequency"].values[0, 0]
    np.testing.assert_allclose(frequency, exact, atol=4.5 * np.sqrt(0.25 / 3000))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_components": 0}, "n_components"), ({"n_components": 2, "alpha": 0.0}, "alpha"),
    ({"n_components": 2, "ess": -1.0}, "ess"), ({"n_components": 2, "kind": "poisson"},
                                                "discrete"),
    ({"n_components": 2, "kind": "gaussian", "delta": 0.0}, "delta"),
    ({"n_components": 2, "kind": "gaussian", "S0": -np.eye(4)}, "S0"),
    ({"n_components": 2, "kind": "gaussian", "m0": np.zeros(3)}, "m0"),
    ({"n_components": 2, "kind": "gaussian", "split_merge": True}, "split_merge"),
    ({"n_components": 2, "kind": "gaussian", "block_moves": 5}, "block_moves"),
    ({"n_components": 2, "block_moves": -1}, "block_moves"),
    ({"n_components": 2, "edge_prior": np.ones((3, 3))}, "edge_prior"),
    ({"n_components": 2, "edge_prior": -np.ones((4, 4))}, "edge_prior|weights"),
])
def test_bad_input(kwargs, match):
    X = np.zeros((5, 4), dtype=int)
    with pytest.raises(ValueError, match=match):
        mixture_of_trees.model(X, **kwargs)
    with pytest.raises(ValueError, match="2 variables"):
        mixture_of_trees.model(np.zeros((5, 1), int), 2)
    with pytest.raises(ValueError, match="NaN"):
        mixture_of_trees.model(np.array([[0, np.nan], [1, 0]]), 2)


@pytest.mark.parametrize(("kwargs", "match"), [
    # before: numpy's "could not convert string to float: 'x'", and "yes" taken as True
    ({"edge_prior": "x"}, "edge_prior: expected a numeric"),
    ({"split_merge": "yes"}, "split_merge must be True or False"),
])
def test_bad_option_types(kwargs, match):
    with pytest.raises(TypeError, match=match):
        mixture_of_trees.model(np.zeros((5, 4), dtype=int), 2, **kwargs)


def test_conditional_edge_marginals_at_tutorial_size():
    """800 binarised pooled digits (the tutorial's size): log edge weights span > 100
    nats; the marginals are finite, in [0, 1] and sum to V - 1 (every tree has V - 1
    edges)."""
    from sklearn.datasets import load_digits

    images = load_digits().images
    pooled = images.reshape(-1, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(-1, 16)
    X = (pooled > 8).astype(np.int64)[:800]
    log_w = edge_log_weights(X, np.full(16, 2), 1.0, np.ones((16, 16)))
    off = ~np.eye(16, dtype=bool)
    assert np.ptp(log_w[off]) > 100
    P = conditional_edge_marginals(log_w)
    assert np.all(np.isfinite(P)) and P.min() >= 0.0 and P.max() <= 1.0
    np.testing.assert_allclose(P.sum() / 2, 15.0, rtol=1e-12)


def test_gaussian_one_component_tree_posterior_equals_enumeration():
    """K = 1, Gaussian: P(T | X) ∝ beta(T) p(X | T) with p(X | T) by the chain rule of
    SciPy Student-t predictives (tests/oracles/mixture_of_trees.py) over
    all 16 trees on 4 nodes; the Rao-Blackwellised edge probabilities equal it exactly
    and the sampled trees' frequencies within multinomial error."""
    from tests.oracles.mixture_of_trees import chain_rule_log_marginal

    rng = np.random.default_rng(4)
    X = rng.normal(size=(15, 4))
    X[:, 1] += 0.8 * X[:, 0]
    X[:, 3] += 0.6 * X[:, 1]
    beta = np.ones((4, 4))
    beta[2, 3] = beta[3, 2] = 3.0
    m0, kappa0, delta, S0 = np.zeros(4), 0.5, 3.0, np.eye(4)
    trees, post = _enumerated_tree_posterior(
        lambda t: chain_rule_log_marginal(X, t, m0, kappa0, delta, S0), beta)
    m = mixture_of_trees.model(X, 1, kind="gaussian", edge_prior=beta, m0=m0,
                               kappa0=kappa0, delta=delta, S0=S0)
    dt = fit(m, method="gibbs", draws=2000, tune=0, chains=1, random_seed=2,
             progressbar=False)
    exact = _check_tree_draws(dt, trees, post)
    reported = dt["tree_structure"]["edge_probability"].values[0, 0]
    np.testing.assert_allclose(reported, exact, atol=1e-10)
