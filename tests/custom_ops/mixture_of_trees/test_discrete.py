"""Mixture-of-trees kernels: collapsed marginal vs direct BDeu counting, the Op, and the
collapsed assignment sweep's stationary distribution vs enumeration of every z."""

import itertools

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from custom_ops.mixture_of_trees.discrete import (
    MixtureState,
    TreeMixtureLogp,
    TreeMixturePrior,
    assignment_sweep,
    sample_tree_mixture_data,
    tree_mixture_logp,
    tree_tables,
)
from pp_models.mixture_of_trees import forest_log_marginal

K_CATS = np.array([2, 3, 2])
TREES = np.array([[-1, 0, 1], [-1, 2, 0]])


def _data(n=7, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, K_CATS, size=(n, 3)), rng.integers(0, 2, size=n)


def test_collapsed_marginal_is_the_bdeu_score_per_component():
    X, z = _data()
    expected = sum(forest_log_marginal(X[z == k], TREES[k], ess=1.5, n_categories=K_CATS)
                   for k in range(2))
    np.testing.assert_allclose(tree_mixture_logp(X, z, TREES, K_CATS, 1.5), expected,
                               rtol=1e-12)
    assert tree_mixture_logp(X, z + 5, TREES, K_CATS, 1.5) == -np.inf


def test_op_value_shape_and_no_gradient():
    X, z = _data()
    codes, labels, trees = pt.lmatrix(), pt.lvector(), pt.lmatrix()
    out = TreeMixtureLogp()(codes, labels, trees, K_CATS, 1.5)
    f = pytensor.function([codes, labels, trees], out)
    np.testing.assert_allclose(f(X, z, TREES), tree_mixture_logp(X, z, TREES, K_CATS, 1.5))
    assert out.ndim == 0
    with pytest.raises(TypeError, match="integer"):
        TreeMixtureLogp()(pt.matrix(), labels, trees, K_CATS, 1.5)


def _exact_assignment_posterior():
    """Six rows, two components: ``p(z | X, w, trees)`` by enumerating all 64 z."""
    X, _ = _data(n=6, seed=3)
    log_w = np.log([0.3, 0.7])
    configs = np.array(list(itertools.product([0, 1], repeat=6)))
    logp = np.array([tree_mixture_logp(X, c, TREES, K_CATS, 1.0) + log_w[c].sum()
                     for c in configs])
    return X, log_w, np.exp(logp - np.logaddexp.reduce(logp))


def test_assignment_sweep_leaves_the_exact_conditional_invariant():
    X, log_w, p = _exact_assignment_posterior()
    rng = np.random.default_rng(1)
    z = np.zeros(6, dtype=np.int64)
    counts = np.zeros(64)
    powers = 2 ** np.arange(5, -1, -1)  # z as a binary number: index into p
    tables = tree_tables(X, z, TREES, K_CATS)
    n_k = np.bincount(z, minlength=2).astype(np.int64)
    state = MixtureState(z, TREES, log_w)
    prior = TreeMixturePrior(K_CATS, 1.0, np.zeros((3, 3)))  # log_beta not read here
    for it in range(20000):
        assignment_sweep(rng, X, state, tables, n_k, prior, 1.0)
        if it % 1000 == 0:  # the in-place counts stay those of z
            np.testing.assert_array_equal(tables, tree_tables(X, z, TREES, K_CATS))
            np.testing.assert_array_equal(n_k, np.bincount(z, minlength=2))
        counts[z @ powers] += 1
    keep = p * 20000 > 5
    observed = np.r_[counts[keep], counts[~keep].sum()]
    expected = np.r_[20000 * p[keep], 20000 * p[~keep].sum()]
    # successive sweeps are correlated: a loose threshold, and the TV distance
    assert 0.5 * np.abs(counts / 20000 - p).sum() < 0.03
    assert stats.chisquare(observed, expected).statistic / len(observed) < 5


def test_data_draws_follow_the_collapsed_model():
    """One row, one component: p(x) is the prior predictive, prod of Dirichlet means."""
    rng = np.random.default_rng(0)
    out = np.zeros((1, 3), dtype=np.int64)
    counts = np.zeros((2, 3, 2))
    for _ in range(6000):
        sample_tree_mixture_data(rng, np.array([0]), TREES[:1], K_CATS, 1.0, out)
        x = out[0]
        counts[x[0], x[1], x[2]] += 1
    # the prior predictive of a single row under BDeu is uniform over the cells
    expected = np.full(12, 6000 / 12)
    assert stats.chisquare(counts.ravel(), expected).pvalue > 1e-3


def test_the_same_check_catches_a_sweep_that_keeps_x_i_in_its_counts():
    """Planted bug: x_i's own counts stay in its component when it is reassigned."""
    X, log_w, p = _exact_assignment_posterior()
    rng = np.random.default_rng(1)
    z = np.zeros(6, dtype=np.int64)
    counts = np.zeros(64)
    powers = 2 ** np.arange(5, -1, -1)  # z as a binary number: index into p
    for _ in range(4000):
        for i in range(6):
            tables = tree_tables(X, z, TREES, K_CATS)
            lp = log_w.copy()
            for k in range(2):
                for v in range(3):
                    pa = TREES[k, v]
                    j = X[i, pa] if pa >= 0 else 0
                    a = 1.0 / ((1 if pa < 0 else K_CATS[pa]) * K_CATS[v])
                    row = tables[k, v, j, : K_CATS[v]]
                    lp[k] += np.log(row[X[i, v]] + a) - np.log(row.sum() + K_CATS[v] * a)
            q = np.exp(lp - lp.max())
            z[i] = rng.choice(2, p=q / q.sum())
        counts[z @ powers] += 1
    assert 0.5 * np.abs(counts / 4000 - p).sum() > 0.06


def test_tree_integrated_evidence_equals_enumeration():
    """log sum_T P(T) p(D | T) by the matrix-tree theorem equals the sum over all 16
    trees on 4 nodes of the prior times the directly counted BDeu marginal, for mixed
    category counts, a non-uniform edge prior and a subset of rows; the log partition
    from the elimination pivots equals the Laplacian determinant."""
    from custom_ops.mixture_of_trees.discrete import tree_marginal_log_evidence
    from custom_ops.trees.spanning import (
        spanning_tree_log_partition,
        spanning_tree_log_partition_log_weights,
    )
    from pp_models.trees import all_spanning_trees, spanning_tree_edges

    rng = np.random.default_rng(5)
    cats = np.array([2, 3, 2, 3])
    X = rng.integers(0, cats, size=(30, 4))
    X[:, 1] = np.where(rng.random(30) < 0.7, X[:, 0], X[:, 1])
    beta = rng.gamma(2.0, size=(4, 4))
    beta = beta + beta.T
    np.fill_diagonal(beta, 0.0)
    log_beta = np.log(beta + np.eye(4))
    rows = rng.random(30) < 0.6
    log_z = spanning_tree_log_partition(beta)
    np.testing.assert_allclose(spanning_tree_log_partition_log_weights(log_beta), log_z,
                               rtol=1e-13)
    terms = [forest_log_marginal(X[rows], t, ess=1.3, n_categories=cats)
             + sum(log_beta[u, v] for u, v in spanning_tree_edges(t)) - log_z
             for t in all_spanning_trees(4)]
    np.testing.assert_allclose(tree_marginal_log_evidence(X, rows, cats, 1.3, log_beta, 1.0),
                               np.logaddexp.reduce(terms), rtol=1e-12)
