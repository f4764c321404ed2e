"""The getting-it-right harness both mixture-of-trees steps share (discrete and Gaussian):
joint statistics of trees and data, the planted bug common to both, and the runner.
The family-specific models, statistics and twins stay in their test files."""

import numpy as np

from inference.testing import getting_it_right
from inference.testing.statistics import default_statistics
from pp_models.model_info import get_info
from pp_models.trees import spanning_tree_edges


def max_degree(k, n_nodes):
    """The largest degree of tree ``k`` (star vs path)."""
    def stat(state):
        return float(np.bincount(spanning_tree_edges(state["trees"][k]).ravel(),
                                 minlength=n_nodes).max())
    return stat


def edge01(state):
    """How many trees hold the edge 0-1 (the one the edge prior favours)."""
    return float(sum(((t[1] == 0) or (t[0] == 1)) for t in state["trees"]))


def along_tree_edges(pair_statistic):
    """``sum_k sum_{uv in T_k} pair_statistic(x_u, x_v)`` over the rows of component
    ``k``: large when each component's tree follows its rows' dependence."""
    def stat(state):
        X, z, trees = state["X"], state["z"], state["trees"]
        total = 0.0
        for k in range(trees.shape[0]):
            rows = X[z == k]
            for u, v in spanning_tree_edges(trees[k]):
                total += pair_statistic(rows[:, u], rows[:, v])
        return total
    return stat


def per_component(rows_statistic):
    """``sum_k rows_statistic(rows of k)`` over the non-empty components."""
    def stat(state):
        X, z = state["X"], state["z"]
        total = 0.0
        for k in range(state["trees"].shape[0]):
            rows = X[z == k]
            if len(rows):
                total += rows_statistic(rows)
        return total
    return stat


def statistics(n_rows, n_components, n_nodes, **joint):
    """The default statistics of (w, z, trees, X), each tree's largest degree, then the
    family's ``joint`` statistics of trees and data (e.g. :func:`edge01`)."""
    stats = default_statistics({"w": (n_components,), "z": (n_rows,),
                                "trees": (n_components, n_nodes)}, ["X"])
    stats.update({f"max_degree[{k}]": max_degree(k, n_nodes) for k in range(n_components)})
    stats.update(joint)
    return stats


class IgnoresEdgePrior:
    """Bug (mix in before the step class): trees drawn from the data's edge terms
    alone, without the edge prior beta."""

    def tree_log_weights(self, rows):
        return super().tree_log_weights(rows) - self.log_edge_prior


def steps(cls):
    """A ``step`` builder for ``getting_it_right``: ``cls`` with the factory's options."""
    def build(model):
        options = dict(get_info(model).step_hints[0].options)
        return [cls(["w", "z", "trees"], model=model, **options)]

    return build


def run(make_model, statistics_of, step, seed, n_samples):
    """Getting-it-right of ``step`` (None: the factory's) on a fresh model."""
    model = make_model()
    return getting_it_right(model, data_vars=["X"], step=step, n_samples=n_samples,
                            statistics=statistics_of(model), random_seed=seed)
