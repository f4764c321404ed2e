"""Greedy sequential build (Knowles 2012 §7.5.1)."""

import numpy as np
import pytest

from custom_ops.pydt.ops import pydt_forward
from pp_models import pydt
from pp_models.pydt.greedy import greedy


def test_greedy_beats_the_true_tree_and_keeps_row_labels():
    draw = pydt.sample_prior(40, c=1.0, theta=1.0, alpha=0.2, dim=3, random_seed=0)[0]
    truth = sum(pydt_forward(draw.tree.parent, draw.tree.log1m_t, draw.X, 1.0, 1.0, 0.2, 1.0))
    order = np.random.default_rng(1).permutation(40)
    built = greedy(draw.X, c=1.0, theta=1.0, alpha=0.2, order=order)
    built.tree.check()
    assert built.log_joint > truth
    assert built.log_joint == pytest.approx(
        sum(pydt_forward(built.tree.parent, built.tree.log1m_t, draw.X, 1.0, 1.0, 0.2, 1.0)))


def test_near_duplicates_become_siblings():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(10, 2)) * 5
    X[7] = X[3] + 1e-4
    built = greedy(X, order=rng.permutation(10))
    C = built.tree.mrca_times()
    others = [j for j in range(10) if j not in (3, 7)]
    assert C[3, 7] > C[3, others].max()
    assert C[3, 7] > C[7, others].max()


def test_greedy_bad_input():
    with pytest.raises(ValueError, match="X needs at least 2 rows"):
        greedy(np.zeros((1, 2)))
    # no columns: before, accepted (and the Numba kernel compiled) to build a tree of nothing
    with pytest.raises(ValueError, match="X has no columns"):
        greedy(np.zeros((3, 0)))
    with pytest.raises(TypeError, match="X must be a numeric 2-D array"):
        greedy([["a"], ["b"], ["c"]])
    with pytest.raises(TypeError, match="order: must be a sequence of row indices"):
        greedy(np.zeros((3, 1)), order="x")
    with pytest.raises(ValueError, match="order"):
        greedy(np.zeros((3, 1)), order=[0, 0, 1])
    with pytest.raises(ValueError, match="alpha"):
        greedy(np.zeros((3, 1)), alpha=1.0)
