"""Getting-it-right (Geweke 2004) for the LDS's whole sampler in its path form: the
simulation smoother for the path and NUTS for the noise scales given it, alternated
with fresh data, on a short local-level series; and its planted-bug twin. Every draw of
the step is exact and tested against the exact path posterior (at three temperatures,
with its twin) in the default run (test_step.py), so both runs here are ``-m slow``
("What runs where", docs/architecture.md)."""

import numpy as np
import pymc as pm
import pytensor
import pytest

from inference.gibbs.lds import LDSSimulationSmoother
from inference.testing import getting_it_right
from pp_models import lds
from tests.helpers.backends import PYTHON_MODE
from tests.inference.gibbs.lds.twins import FilteredCovarianceSmoother

N_SAMPLES = 1500


def _statistics():
    return {
        "x0": lambda s: float(s["x"][0, 0]),
        "x3": lambda s: float(s["x"][3, 0]),
        "x increments": lambda s: float(np.mean(np.diff(s["x"][:, 0]) ** 2)),
        "x0 x3": lambda s: float(s["x"][0, 0] * s["x"][3, 0]),
        "sigma_state": lambda s: float(s["sigma_state"][0]),
        "sigma_obs": lambda s: float(s["sigma_obs"][0]),
        "y residual": lambda s: float(np.mean((s["y"][:, 0] - s["x"][:, 0]) ** 2)),
    }


def _gir(path=LDSSimulationSmoother, seed=0):
    m = lds.model(
        np.zeros(4),
        1,
        A=1.0,
        C=1.0,
        initial_mean=[0.0],
        initial_cov=[[1.0]],
        marginalize=False,
        state_scale=1.0,
        obs_scale=1.0,
    )
    (hint,) = m._pp_models_info.step_hints

    def build(model):
        return [
            path.from_model(model, hint.var_names, **hint.options(model)),
            pm.NUTS([model["sigma_state"], model["sigma_obs"]], model=model),
        ]

    # the Python backend: the model's forward draws are Python functions (a CustomDist's
    # random), which the Numba backend would run in object mode with a warning
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        return getting_it_right(
            m,
            data_vars=["y"],
            step=build,
            n_samples=N_SAMPLES,
            statistics=_statistics(),
            random_seed=seed,
        )


@pytest.mark.slow
def test_the_whole_sampler_gets_it_right():
    result = _gir(seed=1)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow  # planted-bug power (docs/architecture.md, "What runs where")
def test_the_filtered_covariance_twin_is_caught():
    result = _gir(path=FilteredCovarianceSmoother, seed=1)
    print(result)
    assert not result.passed(0.01)
