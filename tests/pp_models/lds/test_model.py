"""``lds.model``: its log-density (the priors plus the Kalman log-likelihood, or the
path's Gaussian transitions), its forward draws, its bad input, and ``ppzoo fit lds`` on
the Nile series (the family's one fit and its picture)."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats

from custom_ops.pymc_guard import CollapsedLikelihoodError
from pp_models import lds
from pp_models.lds.distributions import lds_observations, lds_state_path
from tests.helpers.backends import PYTHON_MODE
from tests.oracles.lds import prior_moments, random_lds, whitened_p_values


def _y():
    y = np.random.default_rng(0).normal(size=(6, 2))
    y[2, 1] = np.nan
    return y


def test_marginal_log_density_is_the_priors_plus_the_kalman_log_likelihood():
    y = _y()
    m = lds.model(y, 2)
    point = {k: v + 0.1 for k, v in m.initial_point().items()}
    logp = m.compile_logp(jacobian=False, mode=PYTHON_MODE)(point)
    A = point["A"]
    C = point["C"]
    ss, so = np.exp(point["sigma_state_log__"]), np.exp(point["sigma_obs_log__"])
    spec = lds.get_spec(m)
    expected = (
        stats.norm(np.eye(2), 0.5).logpdf(A).sum()
        + stats.norm(0, spec.obs_scale).logpdf(C).sum()
        + stats.halfnorm(scale=spec.state_scale).logpdf(ss).sum()
        + stats.halfnorm(scale=spec.obs_scale).logpdf(so).sum()
        + lds.kalman_filter(
            y, A, C, np.diag(ss**2), np.diag(so**2), spec.initial_mean, spec.initial_cov
        ).total_log_likelihood
    )
    np.testing.assert_allclose(logp, expected, rtol=1e-8)
    assert spec.marginalize and m._pp_models_info.preferred_method == "nuts"


def test_path_form_log_density_is_the_gaussian_chain():
    y = np.nan_to_num(_y())
    m = lds.model(y, 2, A=0.5 * np.eye(2), C=np.ones((2, 2)), marginalize=False)
    point = m.initial_point()
    point["x"] = np.random.default_rng(1).normal(size=(6, 2))
    x = point["x"]
    ss = np.exp(point["sigma_state_log__"])
    spec = lds.get_spec(m)
    logp = m.compile_logp(vars=[m["x"]], jacobian=False, mode=PYTHON_MODE)(point)
    expected = stats.multivariate_normal(spec.initial_mean, spec.initial_cov).logpdf(x[0])
    expected += stats.norm(0.5 * x[:-1], ss).logpdf(x[1:]).sum()
    np.testing.assert_allclose(logp, expected, rtol=1e-10)
    (hint,) = m._pp_models_info.step_hints
    assert hint.step == lds.STEP_PATH and hint.var_names == ("x",)


def test_forward_draws_have_the_data_shape():
    m = lds.model(_y(), 2, A=np.eye(2), C=np.eye(2))
    draw = pm.draw(m["y"], random_seed=1, mode=PYTHON_MODE)
    assert draw.shape == (6, 2) and np.all(np.isfinite(draw))
    mp = lds.model(np.nan_to_num(_y()), 2, marginalize=False)
    assert pm.draw(mp["x"], random_seed=1, mode=PYTHON_MODE).shape == (6, 2)


def test_forward_draws_match_the_exact_moments():
    # The path and the observations against their exact prior moments, whitened,
    # Bonferroni over both at a false-failure rate of 1e-4. The same kernels run in the
    # Numba backend's draws (test_prior_predictive_compiles_without_object_mode); here
    # through the random variables' Python draws, one Numba graph fewer to compile.
    A, C, Q, R, m0, P0 = random_lds(np.random.default_rng(5), 2, 2)
    length = np.zeros(4)
    N = 4000
    rngs = [pt.random.shared_rng(seed=None) for _ in range(2)]
    _, x = lds_state_path(A, Q, m0, P0, length, rng=rngs[0], return_next_rng=True)
    _, y = lds_observations(A, C, Q, R, m0, P0, length, rng=rngs[1], return_next_rng=True)
    x, y = pm.draw([x, y], draws=N, random_seed=1, mode=PYTHON_MODE)
    assert x.shape == (N, 4, 2) and y.shape == (N, 4, 2)
    mean_x, cov_x, mean_y, cov_y = prior_moments(A, C, Q, R, m0, P0, 4)
    p = np.concatenate([whitened_p_values(x, mean_x, cov_x), whitened_p_values(y, mean_y, cov_y)])
    assert p.min() > 1e-4 / p.size


def test_prior_predictive_compiles_without_object_mode():
    # the Numba backend: a draw in object mode would warn (an error in the tests)
    m = lds.model(_y(), 2, A=0.5 * np.eye(2))
    with m:
        prior = pm.sample_prior_predictive(draws=5, random_seed=1)
    assert prior["prior_predictive"]["y"].shape == (1, 5, 6, 2)
    # the collapsed likelihood's draw refuses PyMC's posterior predictive
    with m, pytensor.config.change_flags(mode=PYTHON_MODE):
        with pytest.raises(CollapsedLikelihoodError, match="inference.sample_posterior_predictive"):
            pm.sample_posterior_predictive(prior["prior"], progressbar=False)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"state_dim": 0}, ValueError, "state_dim"),
        ({"A": np.eye(3)}, ValueError, "A must have shape"),
        ({"C": np.ones((2, 3))}, ValueError, "C must have shape"),
        ({"C": [[np.inf, 0.0], [0.0, 1.0]]}, ValueError, "C has non-finite"),
        ({"initial_cov": -np.eye(2)}, ValueError, "P0 must be positive semi-definite"),
        ({"initial_mean": np.zeros(3)}, ValueError, "m0 must have 2 entries"),
        ({"marginalize": False}, ValueError, "missing entries"),
        ({"marginalize": 1}, TypeError, "marginalize"),
        ({"obs_scale": -1.0}, ValueError, "obs_scale"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    args = {"state_dim": 2, **kwargs}
    with pytest.raises(error, match=match):
        lds.model(_y(), **args)
    with pytest.raises(ValueError, match="y has 1 infinite"):
        lds.model(np.array([1.0, np.inf, 2.0]))


def test_ppzoo_fit_lds_on_the_nile_draws_the_states(tmp_path):
    import pytensor
    import xarray as xr

    from inference.cli import main

    out = tmp_path / "out"
    # PyTensor's Python backend: the Numba backend of the Kalman Op is checked in
    # tests/custom_ops/lds/test_ops.py; compiling the sampler's graphs with Numba here
    # cost most of this test's cold time
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        code = main(
            [
                "fit",
                "lds",
                "--draws",
                "30",
                "--tune",
                "30",
                "--chains",
                "1",
                "--seed",
                "1",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    assert (out / "states.png").stat().st_size > 0
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    post = dt["posterior"]
    assert post["x"].shape == (1, 30, 100, 1) and post["signal"].shape == (1, 30, 100, 1)
    # the smoothed level follows the flow (mean ~ 920, the fall near 1898)
    level = post["signal"].values.mean(axis=(0, 1))[:, 0]
    assert 700 < level.mean() < 1100 and level[:25].mean() > level[-50:].mean()
