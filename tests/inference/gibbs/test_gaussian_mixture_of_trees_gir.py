"""Getting-it-right for the mixture of Gaussian trees' Gibbs step, with a planted bug.

Model: 12 rows of 4 real variables, K = 2, alpha = 3, hyper-Markov NIW prior m0 = 0,
kappa0 = 0.05 (component means far apart, so the data inform z), delta = 5, S0 = 3 I
(Student-t data with 5+ degrees of freedom: the moment statistics have finite
variances), a non-uniform edge prior. Statistics: the defaults plus
joint statistics of trees and data: each tree's largest degree, and the products of the
data along each component's tree edges on that component's rows (large when the trees
follow the data's dependence)."""

import numpy as np

from inference.gibbs.mixture_of_trees import GaussianMixtureOfTreesGibbs
from inference.testing import getting_it_right
from pp_models import mixture_of_trees
from pp_models.trees import spanning_tree_edges

N_SAMPLES = 2000


def make_model():
    X = np.random.default_rng(0).normal(size=(12, 4))
    beta = np.ones((4, 4))
    beta[0, 1] = beta[1, 0] = 4.0
    return mixture_of_trees.model(X, 2, kind="gaussian", alpha=3.0, edge_prior=beta,
                                  m0=np.zeros(4), kappa0=0.05, delta=5.0,
                                  S0=3.0 * np.eye(4))


def _max_degree(k):
    def stat(state):
        return float(np.bincount(spanning_tree_edges(state["trees"][k]).ravel(),
                                 minlength=4).max())
    return stat


def _edge_products(state):
    X, z, trees = state["X"], state["z"], state["trees"]
    total = 0.0
    for k in range(trees.shape[0]):
        rows = X[z == k]
        for u, v in spanning_tree_edges(trees[k]):
            total += np.sum(rows[:, u] * rows[:, v])
    return total


def _squared_deviation(state):
    X, z = state["X"], state["z"]
    total = 0.0
    for k in range(state["trees"].shape[0]):
        rows = X[z == k]
        if len(rows):
            total += np.sum((rows - rows.mean(0)) ** 2)
    return total


def _edge01(state):
    return float(sum(((t[1] == 0) or (t[0] == 1)) for t in state["trees"]))


def statistics(model):
    from inference.testing.statistics import default_statistics

    stats = default_statistics({"w": (2,), "z": (12,), "trees": (2, 4)}, ["X"])
    stats.update({"max_degree[0]": _max_degree(0), "max_degree[1]": _max_degree(1),
                  "edge_products": _edge_products, "squared_deviation": _squared_deviation,
                  "edge01": _edge01})
    return stats


class IgnoresEdgePrior(GaussianMixtureOfTreesGibbs):
    """Bug: trees drawn from the data's edge terms alone, without beta."""

    def tree_log_weights(self, rows):
        return super().tree_log_weights(rows) - self.log_edge_prior


def _steps(cls):
    def build(model):
        from pp_models.model_info import get_info

        options = dict(get_info(model).step_hints[0].options)
        return [cls(["w", "z", "trees"], model=model, **options)]

    return build


def _gir(step, seed, n_samples=N_SAMPLES):
    model = make_model()
    return getting_it_right(model, data_vars=["X"], step=step, n_samples=n_samples,
                            statistics=statistics(model), random_seed=seed)


def test_correct_step_passes():
    """Passed on seeds 21-24 at 2000 draws and 21 at 3000; at 1200 draws seed 21 fails
    on the label-dependent w and z statistics (labels switch rarely when the components
    lie far apart), so 2000 it is."""
    result = _gir(None, seed=21)
    print(result)
    assert result.step_description == {"gaussian_mixture_of_trees_gibbs": ["w", "z", "trees"]}
    result.assert_passed(0.01)


def test_planted_bug_is_caught():
    """Measured: IgnoresEdgePrior caught on seeds 21, 22 at 1200 and 2000 draws;
    three Gaussian-specific twins passed on both (not detectable at this size): the
    sampler's delta 3 too large, its kappa0 = 1 instead of 0.05, and an assignment sweep
    scoring rows with the empty tree."""
    result = _gir(_steps(IgnoresEdgePrior), seed=21, n_samples=1200)
    print(result.failures(0.01))
    assert not result.passed(0.01), str(result)
