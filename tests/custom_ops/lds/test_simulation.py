"""The simulation smoother's draws against the exact joint posterior of the path (dense
Gaussian conditioning of the stacked vector), with a planted bug caught by the same
test (:func:`tests.oracles.lds.whitened_p_values`, false-failure rate at
most ``ALPHA``)."""

import numpy as np

from custom_ops.lds.kalman import kalman_filter_kernel
from custom_ops.lds.simulation import simulation_smoother_kernel
from pp_models import lds
from tests.custom_ops.lds.twins import filtered_covariance_kernel
from tests.oracles.lds import dense_conditioning, random_lds, whitened_p_values

N_DRAWS = 4000
ALPHA = 1e-4


def _case():
    rng = np.random.default_rng(21)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 2)
    y = rng.normal(size=(4, 2))
    y[1, 0] = np.nan
    y[2] = np.nan
    return y, A, C, Q, R, m0, P0


def _p_values(kernel, seed):
    y, A, C, Q, R, m0, P0 = _case()
    _, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
    rng = np.random.default_rng(seed)
    T, n = mf.shape
    draws = np.stack(
        [kernel(A, mf, Pf, mp, Pp, rng.standard_normal((T, n))) for _ in range(N_DRAWS)]
    )
    _, mean, cov = dense_conditioning(*_case())
    return whitened_p_values(draws, mean, cov)


def test_draws_match_the_exact_joint_posterior():
    p = _p_values(simulation_smoother_kernel, seed=1)
    assert p.min() > ALPHA / p.size, p.min()


def test_the_filtered_covariance_twin_is_caught():
    p = _p_values(filtered_covariance_kernel(), seed=1)
    assert p.min() < ALPHA / p.size


def test_public_function_draws_the_path():
    y, *params = _case()
    x = lds.simulation_smoother(y, *params, size=3, random_seed=0)
    assert x.shape == (3, 4, 2)
    np.testing.assert_array_equal(x, lds.simulation_smoother(y, *params, size=3, random_seed=0))
