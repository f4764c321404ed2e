"""PYDT predictive density (§7.6): a proper density, and the exact two-point case."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from pp_models.pydt.outputs import log_predictive_tree
from pp_models.trees import DiffusionTree


def test_predictive_integrates_to_one_in_1d():
    rng = np.random.default_rng(0)
    tree = DiffusionTree(np.array([3, 3, 4, 4, -1]), np.log1p(-np.array([0.7, 0.3])))
    X = rng.normal(size=(3, 1))
    grid = np.linspace(-12, 12, 2001)[:, None]
    dens = np.exp(log_predictive_tree(tree, X, grid, c=1.0, theta=1.0, alpha=0.2,
                                      sigma2=1.0, n_positions=30, random_seed=1))
    assert integrate.trapezoid(dens, grid[:, 0]) == pytest.approx(1.0, abs=2e-3)


def test_two_leaves_single_position_matches_conditional_normal():
    """With a deterministic attachment (alpha -> 0, theta = 0, c huge: the new point
    diverges at t ~ 0 on the root segment) x* ~ N(0, sigma2) independent of X."""
    tree = DiffusionTree(np.array([2, 2, -1]), np.array([math.log1p(-0.5)]))
    X = np.array([[0.4], [-0.3]])
    x_new = np.array([[0.25], [1.5]])
    lp = log_predictive_tree(tree, X, x_new, c=1e6, theta=0.0, alpha=0.0, sigma2=2.0,
                             n_positions=5, random_seed=0)
    np.testing.assert_allclose(lp, stats.norm(0, math.sqrt(2.0)).logpdf(x_new[:, 0]),
                               rtol=1e-4)
