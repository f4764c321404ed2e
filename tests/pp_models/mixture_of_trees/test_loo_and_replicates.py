"""The mixture of trees' per-row conditional predictive (LOO) against brute force, and
its replicated rows' distribution (pp_models.mixture_of_trees.predictive)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import logsumexp

from custom_ops.mixture_of_trees.discrete import row_log_predictive, tree_mixture_logp
from custom_ops.mixture_of_trees.gaussian import NIWPrior, gaussian_tree_mixture_logp
from custom_ops.mixture_of_trees.predictive import gaussian_replicate_rows, replicate_rows
from pp_models import mixture_of_trees
from pp_models.mixture_of_trees import predictive

RNG = np.random.default_rng(0)
N, V, K = 8, 4, 2
CODES = RNG.integers(0, 3, (N, V))
REAL = RNG.normal(size=(N, V))
TREES = np.array([[-1, 0, 1, 1], [-1, 0, 0, 2]])  # parent vectors rooted at node 0
GAUSS = dict(m0=np.zeros(V), kappa0=0.7, delta=3.0, S0=np.eye(V) + 0.3)


def _posterior(z, w):
    S = len(z)
    return xr.Dataset({
        "w": (("chain", "draw", "component"), np.asarray(w)[None]),
        "trees": (("chain", "draw", "component", "node"), np.broadcast_to(TREES, (S, K, V))[None]),
        "z": (("chain", "draw", "obs"), np.asarray(z)[None]),
    })


@pytest.mark.parametrize("kind", ["discrete", "gaussian"])
def test_conditional_predictive_is_the_ratio_of_collapsed_likelihoods(kind):
    # log sum_k w_k p(x_i | rows of k but i, T_k) = log sum_k w_k p(X | z^{i<-k}, T) /
    # p(X_{-i} | z_{-i}, T), from the collapsed likelihood kernels
    n_cat = np.full(V, 3)
    if kind == "discrete":
        m = mixture_of_trees.model(CODES, K, n_categories=3, ess=1.5)
        data = CODES

        def loglik(X, z):
            return tree_mixture_logp(X, z, TREES, n_cat, 1.5)
    else:
        m = mixture_of_trees.model(REAL, K, kind="gaussian", **GAUSS)
        data = REAL

        def loglik(X, z):
            return gaussian_tree_mixture_logp(X, z, TREES, GAUSS["m0"], GAUSS["kappa0"],
                                              GAUSS["delta"], GAUSS["S0"])

    z = np.array([[0, 0, 1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 1, 1, 1, 0]])
    w = np.array([[0.3, 0.7], [0.55, 0.45]])
    got = predictive.pointwise_log_likelihood(_posterior(z, w), m)["X"].values[0]
    for s in range(2):
        for i in range(N):
            terms = []
            for k in range(K):
                zk = z[s].copy()
                zk[i] = k
                terms.append(np.log(w[s, k]) + loglik(data, zk))
            rest = loglik(np.delete(data, i, 0), np.delete(z[s], i))
            np.testing.assert_allclose(got[s, i], logsumexp(terms) - rest, rtol=1e-9)


def test_a_replicated_discrete_row_follows_its_components_predictive():
    # a single replicate row, CPTs drawn from their posterior: its distribution is the
    # component's posterior predictive (row_log_predictive), over all 9 rows of 2 ternary
    # variables
    codes = RNG.integers(0, 3, (12, 2))
    z = np.zeros(12, dtype=np.int64)
    parents = np.array([[-1, 0]])
    n_cat = np.array([3, 3])
    from custom_ops.mixture_of_trees.discrete import tree_tables

    tables = tree_tables(codes, z, parents, n_cat)
    rng = np.random.default_rng(1)
    reps = 6000
    out = np.empty((12, 2), dtype=np.int64)
    seen = np.zeros((3, 3))
    for _ in range(reps):
        replicate_rows(rng, codes, z, parents, n_cat, 2.0, out)
        seen[out[0, 0], out[0, 1]] += 1
    expected = np.array([[np.exp(row_log_predictive(tables, np.array([a, b]), parents[0],
                                                    0, n_cat, 2.0)) for b in range(3)]
                         for a in range(3)])
    np.testing.assert_allclose(expected.sum(), 1.0)
    se = np.sqrt(expected * (1 - expected) / reps)
    assert np.all(np.abs(seen / reps - expected) < 4.5 * se)


def test_replicated_gaussian_rows_center_on_the_posterior_mean():
    # E[x_rep] is the posterior mean m_n of the component's mean (prior mean m0 = 0 is
    # 3 away): the urn starts at the observed rows' statistics
    data = RNG.normal(3.0, 1.0, (20, V))
    z = np.zeros(20, dtype=np.int64)
    rng = np.random.default_rng(2)
    out = np.empty_like(data)
    first = []
    for _ in range(3000):
        gaussian_replicate_rows(rng, data, z, TREES[:1], NIWPrior(**GAUSS), out)
        first.append(out[0].copy())
    first = np.array(first)
    mn = data.sum(0) / (GAUSS["kappa0"] + 20)
    assert np.all(np.abs(first.mean(0) - mn) < 4 * first.std(0) / np.sqrt(3000))
