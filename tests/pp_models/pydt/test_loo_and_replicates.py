"""The diffusion tree's per-row conditional predictive (LOO) against quadrature of its
own likelihood, and its replicates' conditional mean (pp_models.pydt.predictive)."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import xarray as xr

from pp_models import pydt
from pp_models.distributions.pydt import DiffusionTreeGaussian, PYDiffusionTree
from pp_models.pydt import predictive
from pp_models.trees import DiffusionTree
from tests.helpers.backends import PYTHON_MODE

N, D = 6, 2
SIGMA2 = 0.7


def _tree(seed):
    return np.asarray(pm.draw(PYDiffusionTree.dist(1.0, 0.5, 0.3, N), random_seed=seed))


def _posterior(trees):
    S = len(trees)
    return xr.Dataset({"tree": (("chain", "draw", "node", "field"), np.stack(trees)[None]),
                       "sigma2": (("chain", "draw"), np.full((1, S), SIGMA2))})


def test_conditional_predictive_equals_quadrature_of_the_tree_likelihood():
    # log p(x_i | X_{-i}) = sum_j [log p(X_j) - log ∫ p(X_j) dx_ij], one column at a time
    # from the likelihood Op (message passing), integrated on a grid
    from scipy.integrate import quad

    X = np.random.default_rng(0).normal(size=(N, D))
    m = pydt.model(X)
    trees = [_tree(1), _tree(2)]
    got = predictive.pointwise_log_likelihood(_posterior(trees), m)["X"].values[0]
    value = pt.dmatrix("value")
    for s, packed in enumerate(trees):
        logp = pm.logp(DiffusionTreeGaussian.dist(pt.constant(packed), SIGMA2, 1), value)
        f = pytensor.function([value], logp, mode=PYTHON_MODE)
        for i in range(N):
            expected = 0.0
            for j in range(D):
                column = X[:, j:j + 1].copy()
                full = float(f(column))

                def density(x, column=column, full=full, i=i, f=f):
                    column[i, 0] = x
                    return np.exp(float(f(column)) - full)

                integral, _err = quad(density, -30.0, 30.0, points=[X[i, j]], limit=200,
                                      epsabs=0.0, epsrel=1e-10)
                expected -= np.log(integral)
            np.testing.assert_allclose(got[s, i], expected, rtol=1e-7)


def test_replicates_are_centred_on_the_parents_conditional_mean():
    # E[x_rep_i] = E[u_parent(i) | X] = T[parent, leaves] C^{-1} X: a replicate leaves its
    # parent's location as the observed leaf does (not the origin of a prior draw)
    X = np.random.default_rng(3).normal(2.0, 1.0, size=(N, D))
    m = pydt.model(X)
    packed = _tree(4)
    tree = DiffusionTree.from_packed(packed)
    nodes, T = predictive.divergence_covariance(tree)
    rows = np.searchsorted(nodes, tree.parent[:N])
    expected = T[rows, :N] @ np.linalg.solve(T[:N, :N], X)
    reps = 3000
    post = _posterior([packed] * reps)
    draws = predictive.posterior_predictive(post, m, np.random.default_rng(5))["X"].values[0]
    se = draws.std(0) / np.sqrt(reps)
    assert np.all(np.abs(draws.mean(0) - expected) < 4.5 * se)
