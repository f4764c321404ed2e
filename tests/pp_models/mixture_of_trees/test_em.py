"""Meilă-Jordan EM: monotone, K = 1 is Chow-Liu, recovers a planted 3-tree mixture."""

import itertools

import numpy as np
import pytest

from pp_models.mixture_of_trees import chow_liu, em
from pp_models.trees import spanning_tree_edges


def _sample_tree(rng, parents, n, mode, flip):
    """Noise on a tree around a mode: e_root ~ Bern(flip), e_v = e_parent XOR Bern(flip),
    x = mode XOR e (``parents[v] < v``)."""
    V = len(parents)
    e = np.zeros((n, V), dtype=np.int64)
    e[:, 0] = rng.random(n) < flip
    for v in range(1, V):
        e[:, v] = e[:, parents[v]] ^ (rng.random(n) < flip)
    return e ^ mode


def planted_mixture(rng, n=3000, V=12):
    """Three trees (binary heap, star, random recursive) around modes V/2 bits apart
    (their complements too)."""
    heap = np.r_[-1, (np.arange(1, V) - 1) // 2]
    star = np.r_[-1, np.zeros(V - 1, dtype=int)]
    other = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, V)])
    truth = [heap, star, other]
    modes = np.zeros((3, V), dtype=np.int64)
    modes[1, : V // 2] = 1
    modes[2, 1::2] = 1  # not a complement of another mode: pairwise distances V/2
    z = rng.choice(3, size=n, p=[0.3, 0.3, 0.4])
    X = np.zeros((n, V), dtype=np.int64)
    for k in range(3):
        idx = np.flatnonzero(z == k)
        X[idx] = _sample_tree(rng, truth[k], idx.size, modes[k], flip=0.1)
    return X, z, truth


def edge_f1(found, truth):
    a = {tuple(e) for e in found}
    b = {tuple(e) for e in truth}
    tp = len(a & b)
    return 2 * tp / (len(a) + len(b))


def _best_f1(fit, truth):
    true_edges = [spanning_tree_edges(p) for p in truth]
    return max(
        (np.mean([edge_f1(fit.trees[perm[k]].edges, true_edges[k]) for k in range(3)]), perm)
        for perm in itertools.permutations(range(3)))


def test_monotone_and_recovers_planted_mixture():
    # Tree components make the likelihood very multimodal (a tree can itself hold two
    # modes); measured over data seeds 0-7 with 10 restarts: edge F1 = 1 in 6 of 8, mean
    # 0.97 (the slow test); this seed is one of the six.
    rng = np.random.default_rng(4)
    X, z, truth = planted_mixture(rng)
    fit = em(X, 3, n_init=10, random_seed=4, max_iter=200)
    assert np.all(np.diff(fit.log_likelihood_trace) >= -1e-8 * abs(fit.log_likelihood))
    assert fit.converged
    f1, perm = _best_f1(fit, truth)
    print(f"edge F1 = {f1:.3f}")
    assert f1 >= 0.95
    agree = np.mean(np.asarray(perm)[z] == fit.predict(X))
    assert agree > 0.8
    np.testing.assert_allclose(np.sort(fit.weights), [0.3, 0.3, 0.4], atol=0.05)
    np.testing.assert_allclose(fit.logpdf(X).sum(), fit.log_likelihood, rtol=1e-10)


@pytest.mark.slow
def test_recovery_rate_over_seeds():
    f1s = []
    for seed in range(8):
        X, _z, truth = planted_mixture(np.random.default_rng(seed))
        f1s.append(_best_f1(em(X, 3, n_init=10, random_seed=seed, max_iter=200), truth)[0])
    print("edge F1 per seed:", np.round(f1s, 3))
    assert np.mean(f1s) >= 0.85 and np.sum(np.asarray(f1s) >= 0.99) >= 4


@pytest.mark.parametrize("kind", ["discrete", "gaussian"])
def test_one_component_is_chow_liu(kind):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 3, size=(200, 5)) if kind == "discrete" else rng.normal(size=(200, 5))
    X[:, 1] = X[:, 0] if kind == "discrete" else X[:, 0] + 0.3 * X[:, 1]
    fit = em(X, 1, kind=kind, random_seed=0)
    tree = chow_liu(X, kind=kind)
    np.testing.assert_array_equal(fit.trees[0].edges, tree.edges)
    np.testing.assert_allclose(fit.log_likelihood, tree.log_likelihood, rtol=1e-10)
    assert fit.n_iter == 2 and fit.converged


def test_gaussian_mixture_monotone_and_sample():
    rng = np.random.default_rng(2)
    A = rng.normal(size=(300, 4)) @ np.triu(np.ones((4, 4)))
    B = rng.normal(size=(300, 4)) @ np.tril(np.ones((4, 4))) + 6
    fit = em(np.vstack([A, B]), 2, kind="gaussian", n_init=2, random_seed=0, prior=1e-6)
    assert np.all(np.diff(fit.log_likelihood_trace) >= -1e-8 * abs(fit.log_likelihood))
    np.testing.assert_allclose(fit.weights, [0.5, 0.5], atol=0.02)
    X, z = fit.sample(100, random_seed=1)
    assert X.shape == (100, 4) and set(np.unique(z)) <= {0, 1}


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_components": 0}, "n_components"),
    ({"n_components": 2, "n_init": 0}, "n_init"), ({"n_components": 2, "tol": -1}, "tol"),
    ({"n_components": 2, "kind": "x"}, "kind"), ({"n_components": 50}, "exceeds"),
    ({"n_components": 2, "feature_names": ["a"]}, "feature_names has 1 names but X has 3"),
])
def test_bad_input(kwargs, match):
    X = np.random.default_rng(0).integers(0, 2, size=(20, 3))
    with pytest.raises(ValueError, match=match):
        em(X, **kwargs)


def test_a_fractional_n_components_is_a_type_error():
    X = np.random.default_rng(0).integers(0, 2, size=(20, 3))
    with pytest.raises(TypeError, match="n_components must be an integer, got 1.5"):
        em(X, 1.5)


def test_bad_random_seed_is_named():
    # before: numpy's "SeedSequence expects int or sequence of ints for entropy not x"
    X = np.random.default_rng(0).integers(0, 2, size=(20, 3))
    with pytest.raises(TypeError, match="random_seed must be None, an integer"):
        em(X, 2, random_seed="x", progressbar=False)
