"""The generative process for one new point on a tree (Knowles 2012 Eqs. 4.9-4.11, 4.16)
as the one kernel the detach-reattach move and the predictive density's Monte Carlo
check use (``custom_ops.pydt.sweep.sample_attach`` / ``log_attach_density``, and
``pp_models.pydt.attach.sample_attach`` over them), against the Python oracle
(``tests.oracles.pydt``):

- the log density of a position, at positions of every kind the oracle draws;
- where the kernel puts the point (the node or edge it joins) has the oracle's
  distribution: a two-sample chi-square test of the two samplers' draws.
"""

import numpy as np
import pytest
from scipy import stats

from custom_ops.pydt.messages import EDGE, NODE, full_state
from custom_ops.pydt.sweep import log_attach_density
from pp_models import pydt
from pp_models.pydt.attach import children_lists, leaf_counts_from, sample_attach
from tests.oracles import pydt as oracle

PARAMS = {"c": 1.2, "theta": 0.9, "alpha": 0.35}
#: rejection level of the chi-square test: the chance that a correct kernel fails it
LEVEL = 1e-4


def _tree(seed, n=8):
    return pydt.sample_prior(n, **PARAMS, dim=0, random_seed=seed)[0].tree


def _oracle_parts(tree):
    root = int(np.flatnonzero(tree.parent == -1)[0])
    kids = children_lists(tree.parent)
    return root, kids, leaf_counts_from(root, kids, tree.n_leaves)


#: slow: a Python entry point of its own to compile; the sweep's exact tests use the same
#: kernel in the default run
@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_log_density_is_the_oracles(seed):
    tree = _tree(seed)
    root, kids, counts = _oracle_parts(tree)
    n = tree.n_leaves
    st = full_state(
        tree.parent.copy(),
        tree.log1m_t.copy(),
        np.zeros((n, 0)),
        PARAMS["c"],
        PARAMS["theta"],
        PARAMS["alpha"],
        1.0,
        1.0,
    )
    path = np.empty(tree.parent.shape[0], dtype=np.int64)
    rng = np.random.default_rng(seed)
    modes = set()
    for _ in range(40):
        mode, anchor, l_new = oracle.sample_attach(rng, tree, root, kids, counts, -np.inf, **PARAMS)
        modes.add(mode)
        ours = log_attach_density(st, EDGE if mode == "edge" else NODE, anchor, l_new, path)
        theirs = oracle.log_attach_density(tree, root, kids, counts, mode, anchor, l_new, **PARAMS)
        assert ours == pytest.approx(theirs, rel=1e-10, abs=1e-10)
    assert modes == {"edge", "node"}


def test_kernel_draws_where_the_oracle_draws():
    tree = _tree(4, n=6)
    root, kids, counts = _oracle_parts(tree)
    n_draws = 2000
    rng = np.random.default_rng(5)
    ours = [sample_attach(rng, tree, **PARAMS)[:2] for _ in range(n_draws)]
    theirs = [
        oracle.sample_attach(rng, tree, root, kids, counts, -np.inf, **PARAMS)[:2]
        for _ in range(n_draws)
    ]
    keys = sorted(set(ours) | set(theirs))
    table = np.array([[ours.count(k) for k in keys], [theirs.count(k) for k in keys]])
    # pool the rare cells (expected < 5) into one
    rare = table.sum(axis=0) / 2 < 5
    if rare.any():
        table = np.c_[table[:, ~rare], table[:, rare].sum(axis=1)]
    assert stats.chi2_contingency(table)[1] > LEVEL
