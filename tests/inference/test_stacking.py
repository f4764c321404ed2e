"""Chain stacking (Yao, Vehtari & Gelman 2022) on planted two-mode chains whose
log-likelihood is known in closed form."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from inference import stack_chains
from inference.stacking import chain_loo, stacking_weights


def _two_modes(y, centres, rng, n_draws=400, spread=0.05):
    """Four chains of a Normal location theta, two around each of ``centres``, with the
    log-likelihood of y_i ~ N(theta, 1)."""
    theta = np.concatenate([rng.normal(c, spread, size=(2, n_draws)) for c in centres])
    log_lik = stats.norm.logpdf(y[None, None, :], theta[..., None], 1.0)
    return xr.DataTree.from_dict(
        {
            "posterior": xr.Dataset({"theta": (("chain", "draw"), theta)}),
            "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), log_lik)}),
        }
    )


def _clusters(n_left, n_right, rng):
    # two tight groups at -3 and 3 (mirror images): the chains in the mode at -3 predict
    # the left group, those at 3 the right one; the other's predictive density there is
    # exp(-18) smaller, so the stacking weights are the groups' shares up to ~1e-7
    left = -3.0 + rng.normal(0, 0.3, size=n_left)
    right = 3.0 + rng.normal(0, 0.3, size=n_right)
    return np.concatenate([left, right])


def test_the_mode_that_predicts_more_of_the_data_gets_its_share():
    rng = np.random.default_rng(1)
    dt = _two_modes(_clusters(40, 10, rng), (-3.0, 3.0), rng)
    result = stack_chains(dt, random_seed=2)
    w = result.weights
    assert w.sum() == pytest.approx(1.0, abs=1e-12) and np.all(w >= 0)
    # the mixture weight maximising the objective is the groups' share, 0.8 / 0.2;
    # EM stops within ~1e-4 of it
    assert w[:2].sum() == pytest.approx(0.8, abs=1e-3)
    assert w[2:].sum() == pytest.approx(0.2, abs=1e-3)
    # the stacked posterior: 1600 draws, 80 % from the mode at -3 (largest remainders)
    theta = result.posterior["posterior"]["theta"]
    assert theta.sizes == {"chain": 1, "draw": 1600}
    assert int((theta < 0).sum()) == 1280
    assert result.posterior["log_likelihood"]["y"].sizes["draw"] == 1600
    assert "chain 0: weight" in str(result)


def test_equal_modes_get_equal_weights():
    rng = np.random.default_rng(3)
    y = _clusters(25, 0, rng)
    y = np.concatenate([y, -y])  # exactly mirrored groups
    w = stack_chains(_two_modes(y, (-3.0, 3.0), rng)).weights
    assert w[:2].sum() == pytest.approx(0.5, abs=1e-3)


def test_a_mode_that_fits_worse_loses():
    # y_i ~ N(0, 1), 100 of them; one mode at the posterior (theta ~ ybar), the other
    # 1.5 away. The weight of the worse one is the MLE of a mixture weight whose true
    # value is 0: 0 or about N(0, 1 / (n (exp(1.5^2) - 1))), sd 0.034; above 0.5 is
    # 14 sd away (p < 1e-40)
    rng = np.random.default_rng(4)
    y = rng.normal(size=100)
    w = stack_chains(_two_modes(y, (y.mean(), y.mean() + 1.5), rng, spread=0.1)).weights
    assert w[:2].sum() > 0.5
    assert w.sum() == pytest.approx(1.0, abs=1e-12)


def test_chain_loo_against_brute_force_importance_sampling():
    # the chains' draws are concentrated, so the raw importance-sampling estimate
    # -log mean_s 1 / p(y_i | theta_s) is the PSIS one to within its smoothing
    rng = np.random.default_rng(5)
    y = rng.normal(size=20)
    dt = _two_modes(y, (0.0, 0.5), rng, n_draws=1000, spread=0.2)
    elpd, pareto_k = chain_loo(dt)
    assert elpd.shape == pareto_k.shape == (20, 4)
    log_lik = dt["log_likelihood"]["y"].values
    for c in range(4):
        raw = -(np.logaddexp.reduce(-log_lik[c], axis=0) - np.log(1000))
        np.testing.assert_allclose(elpd[:, c], raw, atol=2e-3)
    assert np.all(pareto_k < 0.7)


def test_stacking_weights_against_a_direct_optimiser():
    from scipy.optimize import minimize

    rng = np.random.default_rng(6)
    elpd = rng.normal(size=(200, 3)) - np.array([0.0, 0.3, 1.0])

    def negative(v):
        w = np.abs(v) / np.abs(v).sum()
        return -np.sum(np.log(np.exp(elpd) @ w))

    direct = minimize(
        negative,
        np.ones(3) / 3,
        method="Nelder-Mead",
        options=dict(xatol=1e-10, fatol=1e-12, maxiter=20000),
    ).x
    direct = np.abs(direct) / np.abs(direct).sum()
    np.testing.assert_allclose(stacking_weights(elpd), direct, atol=1e-4)
    assert stacking_weights(elpd[:, :1]).tolist() == [1.0]


def test_errors_name_what_is_missing():
    posterior = xr.Dataset({"theta": (("chain", "draw"), np.zeros((2, 10)))})
    with pytest.raises(ValueError, match=r"log_likelihood=True"):
        stack_chains(xr.DataTree.from_dict({"posterior": posterior}))
    two = xr.DataTree.from_dict(
        {
            "posterior": posterior,
            "log_likelihood": xr.Dataset(
                {
                    "a": (("chain", "draw", "i"), np.zeros((2, 10, 3))),
                    "b": (("chain", "draw", "i"), np.zeros((2, 10, 3))),
                }
            ),
        }
    )
    with pytest.raises(ValueError, match="var_name: the log_likelihood group holds a, b"):
        stack_chains(two)
    with pytest.raises(ValueError, match="elpd must be finite"):
        stacking_weights(np.array([[0.0, np.nan]]))
