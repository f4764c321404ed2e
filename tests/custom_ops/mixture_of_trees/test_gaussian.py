"""Mixture of Gaussian trees: the decomposed hyper-Markov marginal likelihood against a
direct chain-rule computation with SciPy's Student-t densities, the Op, and the data
draw's moments."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from custom_ops.mixture_of_trees.gaussian import (
    GaussianTreeMixtureLogp,
    gaussian_component_stats,
    gaussian_tree_log_marginal,
    gaussian_tree_mixture_logp,
)

PARENTS = np.array([-1, 0, 1, 1])  # 0 - 1 - {2, 3}


def _hyper(V, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(V, V))
    return rng.normal(size=V), 0.7, 2.5, A @ A.T / V + np.eye(V)


def _niw_predictive(x, rows, m0, kappa0, nu0, S0):
    """Student-t posterior predictive of NIW (Murphy 2012 Eq. 4.215), NumPy/SciPy."""
    d = len(m0)
    n = len(rows)
    xbar = rows.mean(0) if n else np.zeros(d)
    kn, nn = kappa0 + n, nu0 + n
    mn = (kappa0 * m0 + n * xbar) / kn
    C = (rows - xbar).T @ (rows - xbar) if n else np.zeros((d, d))
    Sn = S0 + C + kappa0 * n / kn * np.outer(xbar - m0, xbar - m0)
    dof = nn - d + 1
    return stats.multivariate_t(loc=mn, shape=Sn * (kn + 1) / (kn * dof), df=dof).logpdf(x)


def _chain_rule_log_marginal(X, parents, m0, kappa0, delta, S0):
    """log p(D | T) = sum_i log p(x_i | x_<i, T), each predictive the root's t times
    every child's bivariate t over its parent's t, with the clique hyperparameters
    (m0_C, kappa0, delta + |C| - 1, S0_CC)."""
    total = 0.0
    for i in range(len(X)):
        past = X[:i]
        for v, p in enumerate(parents):
            if p < 0:
                total += _niw_predictive(X[i, [v]], past[:, [v]], m0[[v]], kappa0, delta,
                                         S0[np.ix_([v], [v])])
            else:
                c = [p, v]
                total += _niw_predictive(X[i, c], past[:, c], m0[c], kappa0, delta + 1,
                                         S0[np.ix_(c, c)])
                total -= _niw_predictive(X[i, [p]], past[:, [p]], m0[[p]], kappa0, delta,
                                         S0[np.ix_([p], [p])])
    return total


@pytest.mark.parametrize("n", [1, 6, 25])
def test_decomposed_marginal_equals_chain_rule(n):
    m0, kappa0, delta, S0 = _hyper(4, n)
    X = np.random.default_rng(n).normal(size=(n, 4)) @ np.array(
        [[1, 0.5, 0, 0], [0, 1, 0.3, -0.4], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    st = gaussian_component_stats(X, np.zeros(n, dtype=np.int64), 1)[0]
    ours = gaussian_tree_log_marginal(st, PARENTS, m0, kappa0, delta, S0)
    np.testing.assert_allclose(ours, _chain_rule_log_marginal(X, PARENTS, m0, kappa0,
                                                              delta, S0), rtol=1e-10)


def test_op_value_and_shape():
    m0, kappa0, delta, S0 = _hyper(4, 0)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 4))
    z = rng.integers(0, 2, size=9)
    trees = np.array([PARENTS, [-1, 0, 0, 2]])
    expected = sum(_chain_rule_log_marginal(X[z == k], trees[k], m0, kappa0, delta, S0)
                   for k in range(2))
    np.testing.assert_allclose(gaussian_tree_mixture_logp(X, z, trees, m0, kappa0, delta,
                                                          S0), expected, rtol=1e-10)
    out = GaussianTreeMixtureLogp()(pt.dmatrix(), pt.lvector(), pt.lmatrix(), m0, kappa0,
                                    delta, S0)
    f = pytensor.function(list(out.owner.inputs[:3]), out)
    np.testing.assert_allclose(f(X, z, trees), expected, rtol=1e-10)
    assert out.type.ndim == 0
    with pytest.raises(TypeError, match="integer"):
        GaussianTreeMixtureLogp()(X, z.astype(float), trees, m0, kappa0, delta, S0)
