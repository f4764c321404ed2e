"""EM for an LDS: the log-likelihood never decreases, fixed parameters stay, and on the
Nile local-level model it reaches statsmodels' maximum likelihood."""

import numpy as np
import pytest

from pp_models import lds
from tests.oracles.lds import random_lds


def _simulate(rng, T, A, C, Q, R, m0, P0):
    n, p = A.shape[0], C.shape[0]
    x = rng.multivariate_normal(m0, P0)
    y = np.empty((T, p))
    for t in range(T):
        y[t] = C @ x + rng.multivariate_normal(np.zeros(p), R)
        x = A @ x + rng.multivariate_normal(np.zeros(n), Q)
    return y


def test_em_log_likelihood_is_monotone_with_missing_entries():
    rng = np.random.default_rng(11)
    params = random_lds(rng, 2, 3)
    y = _simulate(rng, 80, *params)
    y[rng.random(y.shape) < 0.15] = np.nan
    y[5] = np.nan
    res = lds.em(y, 2, max_iter=40, tol=0.0, random_seed=1)
    trace = res.log_likelihood_trace
    assert trace.shape == (41,)
    assert np.all(np.diff(trace) >= -1e-8 * np.abs(trace[1:])), np.diff(trace).min()
    assert trace[-1] > trace[0] + 1.0
    # The returned log-likelihood is the filter's at the returned parameters.
    np.testing.assert_allclose(
        lds.kalman_filter(y, **res.parameters).total_log_likelihood,
        res.log_likelihood,
        rtol=1e-12,
    )


def test_fixed_parameters_stay_and_the_rest_is_monotone():
    rng = np.random.default_rng(12)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 2)
    y = _simulate(rng, 60, A, C, Q, R, m0, P0)
    res = lds.em(
        y, 2, init={"A": A, "m0": m0, "P0": P0}, fixed=("A", "m0", "P0"), max_iter=25, tol=0.0
    )
    np.testing.assert_array_equal(res.A, A)
    np.testing.assert_array_equal(res.m0, m0)
    np.testing.assert_array_equal(res.P0, P0)
    assert np.all(np.diff(res.log_likelihood_trace) >= -1e-8 * 200)


def test_em_reaches_statsmodels_maximum_on_the_nile_local_level():
    from statsmodels.datasets import nile
    from statsmodels.tsa.statespace.structural import UnobservedComponents

    y = nile.load_pandas().data["volume"].to_numpy(dtype=float)
    start = {"A": 1.0, "C": 1.0, "m0": [y[0]], "P0": 1e4, "Q": 1000.0, "R": 10000.0}
    res = lds.em(y, 1, init=start, fixed=("A", "C", "m0", "P0"), max_iter=5000, tol=1e-12)
    assert res.converged
    mod = UnobservedComponents(y, "llevel")
    # The same known initialisation, every observation counted (no burn-in).
    mod.ssm.initialize_known(np.array([y[0]]), np.array([[1e4]]))
    mod.loglikelihood_burn = 0
    mod.ssm.loglikelihood_burn = 0
    theirs = mod.fit(disp=False, method="nm", maxiter=5000)
    sigma2_irregular, sigma2_level = theirs.params
    np.testing.assert_allclose(res.R[0, 0], sigma2_irregular, rtol=2e-3)
    np.testing.assert_allclose(res.Q[0, 0], sigma2_level, rtol=2e-3)
    np.testing.assert_allclose(res.log_likelihood, theirs.llf, rtol=0, atol=1e-6)
    np.testing.assert_allclose(mod.loglike(theirs.params), theirs.llf, rtol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"state_dim": 0}, ValueError, "state_dim"),
        ({"fixed": ("B",)}, ValueError, "fixed has unknown"),
        ({"fixed": ("A",)}, ValueError, "init must then give"),
        ({"init": {"Z": 1.0}}, ValueError, "init has unknown"),
        ({"init": {"Q": -np.eye(2)}}, ValueError, "Q must be positive semi-definite"),
        ({"init": {"A": np.eye(3)}}, ValueError, "C must have shape|state_dim"),
        ({"max_iter": 0}, ValueError, "max_iter"),
    ],
)
def test_em_bad_input_names_the_argument(kwargs, error, match):
    y = np.random.default_rng(0).normal(size=(10, 2))
    args = {"state_dim": 2, **kwargs}
    with pytest.raises(error, match=match):
        lds.em(y, **args)
    with pytest.raises(ValueError, match="at least 2 time steps"):
        lds.em(y[:1], 2)
