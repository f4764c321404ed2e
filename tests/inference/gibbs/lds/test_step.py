"""The simulation-smoother step on a model from :func:`pp_models.lds.model`: its draws
of the path, at inverse temperatures 1, 0.3 and 0, against the exact (power) posterior
of the path by dense Gaussian conditioning, and its planted-bug twin caught by the same
test (:func:`tests.oracles.lds.whitened_p_values`, false-failure rate at
most ``ALPHA`` per test). Every draw is exact, so this replaces a getting-it-right run
of the step; the whole sampler's (the step and NUTS on the noise scales) is in
``-m slow``."""

import numpy as np
import pytensor
import pytest

from inference.gibbs.lds import LDSSimulationSmoother
from pp_models import lds
from tests.helpers.backends import PYTHON_MODE
from tests.inference.gibbs.lds.twins import FilteredCovarianceSmoother
from tests.oracles.lds import dense_conditioning, random_lds, whitened_p_values

N_DRAWS = 3000
ALPHA = 1e-4
SIGMA_STATE = np.array([0.7, 0.4])
SIGMA_OBS = np.array([0.5, 0.9])


@pytest.fixture(scope="module")
def case():
    rng = np.random.default_rng(4)
    A, C, _, _, m0, P0 = random_lds(rng, 2, 2)
    y = rng.normal(size=(4, 2))
    m = lds.model(y, 2, A=A, C=C, initial_mean=m0, initial_cov=P0, marginalize=False)
    point = m.initial_point()
    point["sigma_state_log__"] = np.log(SIGMA_STATE)
    point["sigma_obs_log__"] = np.log(SIGMA_OBS)
    return m, point, (y, A, C, np.diag(SIGMA_STATE**2), np.diag(SIGMA_OBS**2), m0, P0)


def _draws(case, step_class, beta, seed):
    m, point, _ = case
    (hint,) = m._pp_models_info.step_hints
    assert hint.step == lds.STEP_PATH
    # PyTensor's Python backend for the step's small point function (A..P0 from the
    # noise scales): a Numba graph of it was most of this file's cold time
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        step = step_class.from_model(
            m, hint.var_names, rng=np.random.default_rng(seed), **hint.options(m)
        )
    step.set_inverse_temperature(beta)
    return np.stack([step.step(point)[0]["x"] for _ in range(N_DRAWS)])


def _exact(case, beta):
    y, A, C, Q, R, m0, P0 = case[2]
    if beta == 0.0:
        y = np.full_like(y, np.nan)
    else:
        R = R / beta
    _, mean, cov = dense_conditioning(y, A, C, Q, R, m0, P0)
    return mean, cov


@pytest.mark.parametrize("beta", [1.0, 0.3, 0.0])
def test_step_draws_the_exact_power_posterior_of_the_path(case, beta):
    p = whitened_p_values(_draws(case, LDSSimulationSmoother, beta, seed=2), *_exact(case, beta))
    assert p.min() > ALPHA / p.size, p.min()


def test_the_twin_step_is_caught(case):
    p = whitened_p_values(_draws(case, FilteredCovarianceSmoother, 1.0, seed=2), *_exact(case, 1.0))
    assert p.min() < ALPHA / p.size


def test_step_refuses_a_path_in_another_term():
    import pymc as pm

    m = lds.model(np.zeros((5, 1)), 1, A=1.0, C=1.0, marginalize=False)
    with m:
        pm.Potential("extra", m["x"].sum())
    (hint,) = m._pp_models_info.step_hints
    with pytest.raises(ValueError, match="also enters"):
        LDSSimulationSmoother.from_model(m, hint.var_names, **hint.options(m))
