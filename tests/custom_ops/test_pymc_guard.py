"""Collapsed likelihoods refuse PyMC's posterior functions (``custom_ops.pymc_guard``):
the identity Op around a symbolic draw, and each collapsed distribution inside
``pm.sample_posterior_predictive`` / ``pm.compute_log_likelihood`` on draws made up
without sampling, in both backends; elsewhere nothing changes."""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
import xarray as xr

from custom_ops.pymc_guard import CollapsedLikelihoodError, ForwardDrawGuard, forward_draw_guard
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python


def test_forward_draw_guard_is_the_identity_outside_pymc():
    x = pt.lvector("x")
    y = forward_draw_guard(x, "D")
    value = np.array([3, 0, 7], dtype=np.int64)
    assert_numba_matches_python([x], y, [value], op=ForwardDrawGuard, rtol=0, atol=0)
    np.testing.assert_array_equal(pytensor.function([x], y, mode=PYTHON_MODE)(value), value)
    assert tuple(y.shape.eval({x: value})) == (3,)  # infer_shape
    with pytest.raises(TypeError, match="integer"):
        forward_draw_guard(pt.dvector("v"), "D")
    with pytest.raises(TypeError, match="distribution"):
        ForwardDrawGuard("")


def _guarded_model():
    def dist(p, size):
        return forward_draw_guard(pm.Categorical.dist(p=p, shape=(4,)), "Guarded")

    with pm.Model() as m:
        p = pm.Dirichlet("p", a=np.ones(3))
        pm.CustomDist("y", p, dist=dist, observed=np.array([0, 1, 2, 1]), dtype="int64")
    return m


@pytest.mark.parametrize("mode", [None, PYTHON_MODE], ids=["numba", "python"])
def test_a_guarded_symbolic_draw_refuses_pm_sample_posterior_predictive(mode):
    m = _guarded_model()
    tree = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"p": (("chain", "draw", "p_dim_0"), np.full((1, 2, 3), 1 / 3))})}
    )
    with warnings.catch_warnings(), pytensor.config.change_flags(mode=mode or pytensor.config.mode):
        # the Numba backend falls back to object mode when the compile-time refusal is
        # caught, and then refuses at run time
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(CollapsedLikelihoodError, match="inference.sample_posterior_predictive"):
            pm.sample_posterior_predictive(tree, model=m, progressbar=False)
    # prior draws are untouched
    assert pm.draw(m["y"], random_seed=1).shape == (4,)


def _dpm_like(likelihood):
    from pp_models.distributions import (
        CollapsedBernoulli,
        CollapsedDiagGaussian,
        CollapsedGaussian,
        CollapsedMultinomial,
    )

    rng = np.random.default_rng(0)
    n, d = 6, 2
    with pm.Model(coords={"obs": np.arange(n)}) as m:
        z = pm.Categorical("z", p=np.full(3, 1 / 3), dims="obs")
        if likelihood == "gaussian":
            CollapsedGaussian(
                "X",
                z,
                m0=np.zeros(d),
                kappa0=1.0,
                nu0=d + 1.0,
                S0=np.eye(d),
                observed=rng.normal(size=(n, d)),
            )
        elif likelihood == "diag_gaussian":
            CollapsedDiagGaussian("X", z, d=d, observed=rng.normal(size=(n, d)))
        elif likelihood == "bernoulli":
            CollapsedBernoulli("X", z, d=d, observed=rng.integers(0, 2, size=(n, d)))
        else:
            CollapsedMultinomial(
                "X",
                z,
                concentration=np.ones(d),
                observed=np.eye(d, dtype=np.int64)[rng.integers(0, d, n)],
            )
    tree = xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset(
                {"z": (("chain", "draw", "obs"), rng.integers(0, 3, size=(1, 2, n)))},
                coords={"obs": np.arange(n)},
            )
        }
    )
    return m, tree


@pytest.mark.parametrize("likelihood", ["gaussian", "diag_gaussian", "bernoulli", "multinomial"])
def test_collapsed_likelihoods_refuse_pymc_posterior_functions(likelihood):
    m, tree = _dpm_like(likelihood)
    with warnings.catch_warnings(), pytensor.config.change_flags(mode=PYTHON_MODE):
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(CollapsedLikelihoodError, match="inference.sample_posterior_predictive"):
            pm.sample_posterior_predictive(tree, model=m, progressbar=False)
        with pytest.raises(CollapsedLikelihoodError, match="inference.compute_log_likelihood"):
            pm.compute_log_likelihood(tree, model=m, progressbar=False)
        # elsewhere: the forward draw and the joint logp as before
        assert pm.draw(m["X"], random_seed=1).shape == (6, 2)
        assert np.isfinite(m.compile_logp()(m.initial_point()))
