"""Chow-Liu: brute force over every labelled tree (Cayley), iterative GGM MLE, bad input."""

import numpy as np
import pytest

from pp_models.mixture_of_trees import chow_liu
from pp_models.trees import all_spanning_trees, spanning_tree_edges


def _tree_data(rng, parents, n, K, flip=0.3):
    """Sample categorical data from a tree: a child copies its parent or is uniform."""
    V = len(parents)
    X = np.zeros((n, V), dtype=np.int64)
    order = [0]
    while len(order) < V:
        order += [v for v in range(V) if parents[v] in order and v not in order]
    for v in order:
        fresh = rng.integers(0, K, n)
        if parents[v] < 0:
            X[:, v] = fresh
        else:
            keep = rng.random(n) > flip
            X[:, v] = np.where(keep, X[:, parents[v]], fresh)
    return X


def _ml_loglik_of_tree(X, parents, weights, K):
    """Weighted log likelihood at the ML CPTs of one directed tree, by direct counting."""
    total = 0.0
    for v, p in enumerate(parents):
        if p < 0:
            counts = np.bincount(X[:, v], weights=weights, minlength=K).astype(float)
            probs = counts / counts.sum()
            cell = probs[X[:, v]]
        else:
            joint = np.zeros((K, K))
            np.add.at(joint, (X[:, p], X[:, v]), weights)
            cond = joint / joint.sum(axis=1, keepdims=True)
            cell = cond[X[:, p], X[:, v]]
        total += np.sum(weights * np.log(cell))
    return total


@pytest.mark.parametrize(("V", "K", "weighted"), [(5, 3, False), (6, 2, True), (4, 4, True)])
def test_discrete_equals_brute_force_ml_tree(V, K, weighted):
    rng = np.random.default_rng(V * 10 + K)
    parents = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, V)])
    X = _tree_data(rng, parents, 150, K)
    weights = rng.gamma(1.0, size=X.shape[0]) if weighted else np.ones(X.shape[0])
    trees = all_spanning_trees(V)
    assert len(trees) == V ** (V - 2)
    logliks = np.array([_ml_loglik_of_tree(X, t, weights, K) for t in trees])
    best = int(np.argmax(logliks))
    assert np.sort(logliks)[-2] < logliks[best] - 1e-9  # unique optimum
    fitted = chow_liu(X, weights=weights if weighted else None, n_categories=K)
    np.testing.assert_allclose(fitted.log_likelihood, logliks[best], rtol=1e-10)
    np.testing.assert_array_equal(fitted.edges, spanning_tree_edges(trees[best]))
    # the fitted tree's log density is the ML one of its structure
    np.testing.assert_allclose(weights @ fitted.logpdf(X), logliks[best], rtol=1e-10)


def test_mutual_information_weights_match_definition():
    rng = np.random.default_rng(3)
    X = rng.integers(0, [2, 3, 4], size=(300, 3))
    tree = chow_liu(X, prior=2.0)
    u, v = 1, 2
    table = np.zeros((3, 4))
    np.add.at(table, (X[:, u], X[:, v]), 1.0)
    p = (table + 2.0 / 12) / (300 + 2.0)
    mi = np.sum(p * np.log(p / np.outer(p.sum(1), p.sum(0))))
    np.testing.assert_allclose(tree.edge_weights[u, v], mi, rtol=1e-12)


def _ggm_mle_htf(S, adjacency, n_sweeps=200, tol=1e-13):
    """Hastie, Tibshirani & Friedman (2009) Algorithm 17.1: GGM MLE with known structure."""
    p = S.shape[0]
    W = S.copy()
    for _ in range(n_sweeps):
        W_old = W.copy()
        for j in range(p):
            rest = np.delete(np.arange(p), j)
            nb = [i for i, r in enumerate(rest) if adjacency[j, r]]
            beta = np.zeros(p - 1)
            W11 = W[np.ix_(rest, rest)]
            if nb:
                beta[nb] = np.linalg.solve(W11[np.ix_(nb, nb)], S[rest, j][nb])
            w12 = W11 @ beta
            W[rest, j] = w12
            W[j, rest] = w12
        if np.max(np.abs(W - W_old)) < tol:
            break
    return np.linalg.inv(W)


def test_gaussian_precision_equals_iterative_mle_and_tree_is_ml():
    rng = np.random.default_rng(5)
    V, n = 5, 400
    A = rng.normal(size=(V, V))
    X = rng.multivariate_normal(np.zeros(V), A @ A.T + np.eye(V), size=n)
    tree = chow_liu(X, kind="gaussian")
    S = np.cov(X.T, bias=True)
    trees = all_spanning_trees(V)
    best_ll, best_edges = -np.inf, None
    for t in trees:
        adj = np.zeros((V, V), bool)
        for a, b in spanning_tree_edges(t):
            adj[a, b] = adj[b, a] = True
        omega = _ggm_mle_htf(S, adj)
        ll = 0.5 * n * (np.linalg.slogdet(omega)[1] - np.trace(S @ omega) - V * np.log(2 * np.pi))
        if ll > best_ll:
            best_ll, best_edges, best_omega = ll, spanning_tree_edges(t), omega
    np.testing.assert_array_equal(tree.edges, best_edges)
    np.testing.assert_allclose(tree.precision, best_omega, atol=1e-10)
    np.testing.assert_allclose(tree.log_likelihood, best_ll, rtol=1e-10)


def test_recovers_a_tree_and_samples_from_it():
    rng = np.random.default_rng(1)
    V = 12
    parents = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, V)])
    X = _tree_data(rng, parents, 4000, 3, flip=0.4)
    tree = chow_liu(X)
    np.testing.assert_array_equal(tree.edges, spanning_tree_edges(parents))
    again = chow_liu(tree.sample(4000, random_seed=2))
    np.testing.assert_array_equal(again.edges, tree.edges)
    # rerooting changes the directed form, not the distribution
    other = chow_liu(X, root=5)
    assert other.root == 5 and other.parents[5] == -1
    np.testing.assert_allclose(other.logpdf(X[:50]), tree.logpdf(X[:50]), rtol=1e-10)


def test_gaussian_sample_and_logpdf():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 4)) @ np.triu(np.ones((4, 4)))
    tree = chow_liu(X, kind="gaussian")
    draws = tree.sample(20000, random_seed=1)
    cov = np.linalg.inv(tree.precision)
    # sample covariance: standard error ~ sqrt(2 / n) * scale, n = 20000
    np.testing.assert_allclose(np.cov(draws.T), cov, atol=0.05 * np.abs(cov).max())
    np.testing.assert_allclose(draws.mean(axis=0), tree.mean, atol=0.05 * np.sqrt(cov.max()))
    from scipy.stats import multivariate_normal

    ref = multivariate_normal(tree.mean, np.linalg.inv(tree.precision)).logpdf(X[:5])
    np.testing.assert_allclose(tree.logpdf(X[:5]), ref, rtol=1e-10)


def test_constant_columns():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(100, 4))
    X[:, 2] = 1
    tree = chow_liu(X)
    assert np.all(np.isfinite(tree.edge_weights))
    assert np.all(tree.edge_weights[2] == 0)
    assert np.all(np.isfinite(tree.logpdf(X)))
    G = rng.normal(size=(50, 3))
    G[:, 1] = 4.0
    with pytest.raises(ValueError, match="constant"):
        chow_liu(G, kind="gaussian")
    ridge = chow_liu(G, kind="gaussian", prior=0.1)
    assert np.all(np.isfinite(ridge.precision))


@pytest.mark.parametrize(
    ("X", "kwargs", "match"),
    [
        (np.array([[0, 1], [1, np.nan]]), {}, "NaN"),
        (np.array([[0, -1], [1, 0]]), {}, ">= 0"),
        (np.array([[0, 0.5], [1, 0]]), {}, "whole numbers"),
        (np.zeros((5, 1), int), {}, "at least 2 variables"),
        (np.zeros((5, 3), int), {"kind": "poisson"}, "kind"),
        (np.zeros((5, 3), int), {"weights": -np.ones(5)}, "weights"),
        (np.zeros((5, 3), int), {"weights": np.ones(4)}, "weights"),
        (np.zeros((5, 3), int), {"prior": -1.0}, "prior"),
        (np.full((5, 3), 3), {"n_categories": 2}, "n_categories"),
        # before: [4] was broadcast to every column without a word, [4, 4] raised numpy's
        # "operands could not be broadcast together"
        (np.zeros((5, 3), int), {"n_categories": [4]}, r"one integer or one per column \(3\)"),
        (np.zeros((5, 3), int), {"n_categories": [4, 4]}, r"one per column \(3\), got shape"),
        (np.array([[0.0, np.inf], [1, 2]]), {"kind": "gaussian"}, "NaN or inf"),
        (np.zeros(5, int), {}, "2-D"),
    ],
)
def test_bad_input(X, kwargs, match):
    with pytest.raises(ValueError, match=match):
        chow_liu(X, **kwargs)
