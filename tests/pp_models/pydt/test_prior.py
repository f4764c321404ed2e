"""PYDT prior draws (``sample_prior``, ``PYDiffusionTree`` / ``DiffusionTreeGaussian`` in
PyMC) against the closed-form shape probabilities and the Brownian-motion covariance."""

import math
from collections import Counter

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from custom_ops.pydt import ops as pydt_ops
from pp_models.distributions import DiffusionTreeGaussian, PYDiffusionTree
from pp_models.pydt import sample_prior
from pp_models.trees import DiffusionTree
from tests.oracles.pydt import chi_square_pvalue, shape_key, shape_probabilities


@pytest.mark.parametrize(("c", "theta", "alpha"), [(1.0, 1.0, 0.3), (0.3, 0.0, 0.0),
                                                    (2.0, 3.0, -1.0)])
def test_sample_prior_shapes_match_closed_form(c, theta, alpha):
    """Chi-square of 4000 four-leaf shapes (26 labelled shapes) against the Markov-
    branching probabilities; the same draws reject the wrong (DDT or PYDT) table."""
    draws = sample_prior(4, c=c, theta=theta, alpha=alpha, dim=0, size=4000, random_seed=3)
    keys = [shape_key(d.tree) for d in draws]
    assert chi_square_pvalue(keys, shape_probabilities(4, theta, alpha)) > 1e-3
    wrong = (0.0, 0.0) if theta != 0 else (2.0, 0.5)
    wrong_probs = shape_probabilities(4, *wrong)
    counts = Counter(keys)
    if any(wrong_probs[k] == 0 for k in counts):
        return  # the wrong table gives probability 0 to shapes that were drawn
    assert chi_square_pvalue(keys, wrong_probs) < 1e-6


def test_pymc_draws_match_closed_form_and_logp_is_the_op():
    tree = PYDiffusionTree.dist(0.8, 1.5, 0.2, 4)
    draws = pm.draw(tree, draws=3000, random_seed=5)
    keys = [shape_key(DiffusionTree.from_packed(d)) for d in draws]
    assert chi_square_pvalue(keys, shape_probabilities(4, 1.5, 0.2)) > 1e-3
    value = pt.dmatrix("value")
    f = pm.compile([value], pm.logp(tree, value))
    for d in draws[:5]:
        t = DiffusionTree.from_packed(d)
        ref = pydt_ops.pydt_forward(t.parent, t.log1m_t, np.zeros((4, 0)), 0.8, 1.5, 0.2,
                                    1.0)[0]
        assert f(d) == pytest.approx(ref, rel=1e-12)


def test_data_covariance_is_sigma2_times_mrca_times():
    rng = np.random.default_rng(0)
    t = sample_prior(5, c=1.0, theta=1.0, alpha=0.2, dim=0, random_seed=rng)[0].tree
    X = DiffusionTreeGaussian.dist(t.to_packed(), 0.7, 4000)
    x = pm.draw(X, random_seed=1)  # (5, 4000): 4000 independent columns
    emp = np.cov(x, bias=True) + np.outer(x.mean(1), x.mean(1))
    expected = 0.7 * t.mrca_times()
    # entrywise standard error of a second moment of a normal pair <= sqrt(2) var / sqrt(m)
    assert np.all(np.abs(emp - expected) < 5 * math.sqrt(2) * 0.7 / math.sqrt(4000))
    # logp of the data node is the Op's likelihood output
    value = pt.dmatrix("value")
    f = pm.compile([value], pm.logp(DiffusionTreeGaussian.dist(t.to_packed(), 0.7, 2), value))
    y = x[:, :2]
    ref = pydt_ops.pydt_forward(t.parent, t.log1m_t, y, 1.0, 1.0, 0.0, 0.7)[1]
    assert f(y) == pytest.approx(ref, rel=1e-12)


def test_joint_model_initial_point_and_draws():
    with pm.Model() as model:
        c = pm.Gamma("c", 1.0, 1.0)
        theta = pm.Gamma("theta", 2.0, 0.5)
        alpha = pm.Beta("alpha", 1.0, 1.0)
        tree = PYDiffusionTree("tree", c, theta, alpha, 6)
        sigma2 = pm.InverseGamma("sigma2", 1.0, 1.0)
        DiffusionTreeGaussian("X", tree, sigma2, 2)
    ip = model.initial_point()
    assert ip["tree"].shape == (11, 2)
    DiffusionTree.from_packed(ip["tree"])  # a valid tree
    assert np.isfinite(model.compile_logp()(ip))
    tree_draw, x_draw = pm.draw([model["tree"], model["X"]], random_seed=2)
    DiffusionTree.from_packed(tree_draw)
    assert x_draw.shape == (6, 2)


def test_prior_draw_attributes_and_times():
    draws = sample_prior(7, c=1.0, theta=2.0, alpha=0.3, dim=3, size=4, random_seed=0)
    assert len(draws) == 4
    for d in draws:
        d.tree.check()
        assert d.X.shape == (7, 3)
        assert d.n_leaves == 7
        assert 1 <= d.n_internal <= 6
    # small c: times pile up at 1 but stay distinct and ordered in log(1 - t)
    tiny = sample_prior(30, c=0.02, theta=1.0, alpha=0.1, dim=1, random_seed=1)[0]
    tiny.tree.check()
    assert np.all(np.isfinite(tiny.X))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_leaves": 1}, "n_leaves"),
    ({"alpha": 1.0}, "alpha"),
    ({"theta": -1.0, "alpha": 0.2}, "theta"),
    ({"c": 0.0}, "c:"),
    ({"sigma2": -1.0}, "sigma2"),
    ({"dim": -1}, "dim"),
    ({"size": 0}, "size"),
])
def test_sample_prior_bad_input(kwargs, match):
    args = {"n_leaves": 4, "c": 1.0, "theta": 1.0, "alpha": 0.1, **kwargs}
    n = args.pop("n_leaves")
    with pytest.raises(ValueError, match=match):
        sample_prior(n, **args)


@pytest.mark.parametrize(("seed", "error"), [("x", TypeError), (2.5, TypeError),
                                             (-1, ValueError)])
def test_sample_prior_bad_random_seed_is_named(seed, error):
    # before: numpy's "SeedSequence expects int or sequence of ints" or "expected
    # non-negative integer", naming no argument
    with pytest.raises(error, match="random_seed must be"):
        sample_prior(4, c=1.0, theta=1.0, alpha=0.1, random_seed=seed)


def test_distribution_bad_input():
    with pytest.raises(ValueError, match="n_leaves"):
        PYDiffusionTree.dist(1.0, 1.0, 0.0, 1)
    with pytest.raises(TypeError, match="n_leaves"):
        PYDiffusionTree.dist(1.0, 1.0, 0.0, 4.0)
    with pytest.raises(ValueError, match="dim"):
        DiffusionTreeGaussian.dist(np.zeros((7, 2)), 1.0, 0)
    with pytest.raises(ValueError, match="alpha"):
        pm.logp(PYDiffusionTree.dist(1.0, 1.0, 1.5, 4), np.zeros((7, 2))).eval()
