"""The PYDT tree step's greedy start (only while tuning): built binary by default
(theta = alpha = 0 in the greedy build), at the current theta, alpha on request; the
branch-point moves' option (default n per sweep, bad values rejected)."""

import numpy as np
import pytest

from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt
from pp_models.trees import DiffusionTree


def _first_tree(binary_start, tune=1):
    X = pydt.sample_prior(30, c=1.0, theta=0.0, alpha=0.0, dim=3, random_seed=2)[0].X
    model = pydt.model(X)
    step = PYDTTreeStep([model["tree"]], model=model, moves=0, slice_times=False,
                        binary_start=binary_start, branch_moves=0)
    step.setup_chain(np.random.default_rng(0), tune, 1)
    point = model.initial_point()
    new, _ = step.step(point)
    return (DiffusionTree.from_packed(point["tree"], validate=False),
            DiffusionTree.from_packed(new["tree"]))


def test_binary_greedy_start_while_tuning():
    incoming, start = _first_tree(binary_start=True)
    assert start.n_internal == 29  # binary: n - 1 branch points
    assert not np.array_equal(start.parent, incoming.parent)


def test_greedy_start_at_the_initial_theta_alpha_multifurcates():
    # theta = 4, alpha = 0.5 (the prior means of the thesis's hyperpriors) favour a few
    # wide branch points: the start this option replaced
    _incoming, start = _first_tree(binary_start=False)
    assert start.n_internal < 15


def test_no_start_without_tuning():
    incoming, start = _first_tree(binary_start=True, tune=0)
    np.testing.assert_array_equal(start.parent, incoming.parent)


def test_branch_moves_option():
    X = np.zeros((6, 1))
    model = pydt.model(X)
    assert PYDTTreeStep([model["tree"]], model=model).branch_moves == 6
    assert PYDTTreeStep([model["tree"]], model=model, branch_moves=0).branch_moves == 0
    for bad, error in ((-1, ValueError), (2.5, TypeError), (True, TypeError)):
        with pytest.raises(error, match="branch_moves"):
            PYDTTreeStep([model["tree"]], model=model, branch_moves=bad)
