"""The simulation smoother's draws against the exact joint posterior of the path (dense
Gaussian conditioning of the stacked vector), with a planted bug caught by the same
test.

The draws are whitened by the exact posterior, ``z = L^{-1}(x - mu)``, i.i.d.
``N(0, I_d)`` when the smoother is right. Tests, each at level ``ALPHA / n_tests``
(Bonferroni, so a right smoother fails with probability at most ``ALPHA``):
``N |mean z|^2 ~ chi2_d``; ``sum_n z_ni^2 ~ chi2_N`` per coordinate; and
``sum_n z_ni z_nj / sqrt(N)``, approximately ``N(0, 1)`` per pair (CLT, ``N`` = 4000).
"""

import numpy as np
from scipy import stats

from custom_ops.lds.kalman import kalman_filter_kernel
from custom_ops.lds.simulation import simulation_smoother_kernel
from pp_models import lds
from tests.inference.gibbs.lds.twins import filtered_covariance_kernel
from tests.pp_models.lds.reference import dense_conditioning, random_lds

N_DRAWS = 4000
ALPHA = 1e-4


def _case():
    rng = np.random.default_rng(21)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 2)
    y = rng.normal(size=(4, 2))
    y[1, 0] = np.nan
    y[2] = np.nan
    return y, A, C, Q, R, m0, P0


def _draws(kernel, seed):
    y, A, C, Q, R, m0, P0 = _case()
    _, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
    rng = np.random.default_rng(seed)
    T, n = mf.shape
    return np.stack(
        [kernel(A, mf, Pf, mp, Pp, rng.standard_normal((T, n))) for _ in range(N_DRAWS)]
    )


def _p_values(draws):
    _, mean, cov = dense_conditioning(*_case())
    d = mean.size
    L = np.linalg.cholesky(cov.reshape(d, d))
    z = np.linalg.solve(L, (draws.reshape(N_DRAWS, d) - mean.reshape(-1)).T).T
    p = [stats.chi2.sf(N_DRAWS * np.sum(z.mean(axis=0) ** 2), d)]
    ss = np.sum(z**2, axis=0)
    p += list(2 * np.minimum(stats.chi2.sf(ss, N_DRAWS), stats.chi2.cdf(ss, N_DRAWS)))
    i, j = np.triu_indices(d, 1)
    cross = np.sum(z[:, i] * z[:, j], axis=0) / np.sqrt(N_DRAWS)
    p += list(2 * stats.norm.sf(np.abs(cross)))
    return np.array(p)


def test_draws_match_the_exact_joint_posterior():
    p = _p_values(_draws(simulation_smoother_kernel, seed=1))
    assert p.min() > ALPHA / p.size, p.min()


def test_the_filtered_covariance_twin_is_caught():
    p = _p_values(_draws(filtered_covariance_kernel(), seed=1))
    assert p.min() < ALPHA / p.size


def test_public_function_draws_the_path():
    y, *params = _case()
    x = lds.simulation_smoother(y, *params, size=3, random_seed=0)
    assert x.shape == (3, 4, 2)
    again = lds.simulation_smoother(y, *params, size=3, random_seed=0)
    np.testing.assert_array_equal(x, again)
