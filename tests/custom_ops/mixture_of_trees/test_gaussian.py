"""Mixture of Gaussian trees: the decomposed hyper-Markov marginal likelihood against a
direct chain-rule computation with SciPy's Student-t densities, the Op, and the data
draw's moments."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest

from custom_ops.mixture_of_trees.gaussian import (
    GaussianTreeMixtureLogp,
    gaussian_component_stats,
    gaussian_tree_log_marginal,
    gaussian_tree_mixture_logp,
)
from tests.oracles.mixture_of_trees import chain_rule_log_marginal

PARENTS = np.array([-1, 0, 1, 1])  # 0 - 1 - {2, 3}


def _hyper(V, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(V, V))
    return rng.normal(size=V), 0.7, 2.5, A @ A.T / V + np.eye(V)


@pytest.mark.parametrize("n", [1, 6, 25])
def test_decomposed_marginal_equals_chain_rule(n):
    m0, kappa0, delta, S0 = _hyper(4, n)
    X = np.random.default_rng(n).normal(size=(n, 4)) @ np.array(
        [[1, 0.5, 0, 0], [0, 1, 0.3, -0.4], [0, 0, 1, 0], [0, 0, 0, 1.0]])
    st = gaussian_component_stats(X, np.zeros(n, dtype=np.int64), 1)[0]
    ours = gaussian_tree_log_marginal(st, PARENTS, m0, kappa0, delta, S0)
    np.testing.assert_allclose(ours, chain_rule_log_marginal(X, PARENTS, m0, kappa0,
                                                              delta, S0), rtol=1e-10)


def test_op_value_and_shape():
    m0, kappa0, delta, S0 = _hyper(4, 0)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(9, 4))
    z = rng.integers(0, 2, size=9)
    trees = np.array([PARENTS, [-1, 0, 0, 2]])
    expected = sum(chain_rule_log_marginal(X[z == k], trees[k], m0, kappa0, delta, S0)
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
