"""The Kalman filter and RTS smoother against dense Gaussian conditioning and
statsmodels, and their argument checks."""

import numpy as np
import pytest

from pp_models import lds
from tests.oracles.lds import dense_conditioning, random_lds, steady_state_case


def _data(rng, T, p, missing):
    y = rng.normal(size=(T, p))
    if missing:
        y[1, 0] = np.nan
        y[3, :] = np.nan
        if p > 1:
            y[4, p - 1] = np.nan
    return y


@pytest.mark.parametrize(("n", "p", "missing"), [(1, 1, False), (2, 3, True), (3, 2, True)])
def test_filter_and_smoother_match_dense_conditioning(n, p, missing):
    rng = np.random.default_rng(100 * n + p)
    A, C, Q, R, m0, P0 = random_lds(rng, n, p)
    y = _data(rng, 6, p, missing)
    cumulative, mean, cov = dense_conditioning(y, A, C, Q, R, m0, P0)
    res = lds.rts_smoother(y, A, C, Q, R, m0, P0)
    np.testing.assert_allclose(np.cumsum(res.log_likelihood), cumulative, rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.smoothed_mean, mean, rtol=0, atol=1e-8)
    T = y.shape[0]
    for t in range(T):
        np.testing.assert_allclose(res.smoothed_cov[t], cov[t, :, t, :], rtol=0, atol=1e-8)
    for t in range(T - 1):
        np.testing.assert_allclose(
            res.smoothed_cross_cov[t], cov[t + 1, :, t, :], rtol=0, atol=1e-8
        )
    filt = lds.kalman_filter(y, A, C, Q, R, m0, P0)
    np.testing.assert_array_equal(filt.log_likelihood, res.log_likelihood)
    # The last filtered moments are the last smoothed ones.
    np.testing.assert_allclose(filt.filtered_mean[-1], mean[-1], rtol=0, atol=1e-8)
    np.testing.assert_allclose(filt.filtered_cov[-1], cov[-1, :, -1, :], rtol=0, atol=1e-8)


def test_reused_fixed_point_matches_dense_conditioning():
    args = steady_state_case()
    res = lds.rts_smoother(*args)
    Pp, Ps = res.filter.predicted_cov, res.smoothed_cov
    # the reuse is exercised: repeated covariances before and after the missing block
    repeats = [t for t in range(1, 150) if np.array_equal(Pp[t], Pp[t - 1])]
    assert min(repeats) < 60 and max(repeats) > 100
    assert any(np.array_equal(Ps[t], Ps[t + 1]) for t in range(149))
    total, mean, cov = dense_conditioning(*args, cumulative=False)
    np.testing.assert_allclose(res.filter.total_log_likelihood, total[0], rtol=0, atol=1e-8)
    np.testing.assert_allclose(res.smoothed_mean, mean, rtol=0, atol=1e-8)
    idx = np.arange(150)
    np.testing.assert_allclose(Ps, cov[idx, :, idx, :], rtol=0, atol=1e-8)
    np.testing.assert_allclose(
        res.smoothed_cross_cov, cov[idx[1:], :, idx[:-1], :], rtol=0, atol=1e-8
    )


def test_filtered_moments_match_dense_conditioning_on_the_past():
    rng = np.random.default_rng(7)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 2)
    y = _data(rng, 5, 2, True)
    filt = lds.kalman_filter(y, A, C, Q, R, m0, P0)
    for t in range(5):
        _, mean, cov = dense_conditioning(y[: t + 1], A, C, Q, R, m0, P0)
        np.testing.assert_allclose(filt.filtered_mean[t], mean[t], rtol=0, atol=1e-8)
        np.testing.assert_allclose(filt.filtered_cov[t], cov[t, :, t, :], rtol=0, atol=1e-8)


def _statsmodels_loglike(y, A, C, Q, R, m0, P0):
    from statsmodels.tsa.statespace.mlemodel import MLEModel

    n = A.shape[0]
    mod = MLEModel(y, k_states=n, initialization="known", initial_state=m0, initial_state_cov=P0)
    mod["design"] = C
    mod["transition"] = A
    mod["selection"] = np.eye(n)
    mod["state_cov"] = Q
    mod["obs_cov"] = R
    return mod.ssm.loglike()


def test_log_likelihood_matches_statsmodels_on_the_nile_local_level():
    from statsmodels.datasets import nile

    y = nile.load_pandas().data["volume"].to_numpy(dtype=float)
    A, C = np.eye(1), np.eye(1)
    Q, R = np.array([[1469.1]]), np.array([[15099.0]])
    m0, P0 = np.array([y[0]]), np.array([[1e4]])
    ours = lds.kalman_filter(y, A, C, Q, R, m0, P0).total_log_likelihood
    theirs = _statsmodels_loglike(y, A, C, Q, R, m0, P0)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10)


def test_log_likelihood_matches_statsmodels_with_missing_entries():
    rng = np.random.default_rng(3)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 3)
    y = _data(rng, 40, 3, True)
    y[10:13, 1] = np.nan
    ours = lds.kalman_filter(y, A, C, Q, R, m0, P0).total_log_likelihood
    np.testing.assert_allclose(ours, _statsmodels_loglike(y, A, C, Q, R, m0, P0), rtol=1e-10)


def test_joseph_form_keeps_covariances_symmetric_psd_with_tiny_noise():
    rng = np.random.default_rng(5)
    A, C, Q, _, m0, P0 = random_lds(rng, 3, 3)
    R = 1e-10 * np.eye(3)
    y = rng.normal(size=(200, 3))
    res = lds.rts_smoother(y, A, C, Q, R, m0, 1e6 * P0)
    for cov in (res.filter.filtered_cov, res.smoothed_cov):
        np.testing.assert_array_equal(cov, np.swapaxes(cov, 1, 2))
        assert np.linalg.eigvalsh(cov).min() > -1e-9


def _good():
    rng = np.random.default_rng(0)
    return rng.normal(size=(5, 2)), random_lds(rng, 2, 2)


@pytest.mark.parametrize(
    ("position", "value", "match"),
    [
        (0, np.ones((2, 3)), "A must be a square"),
        (1, np.ones((3, 2)), "C must have shape"),
        (2, np.array([[1.0, 0.5], [0.0, 1.0]]), "Q must be symmetric"),
        (3, np.array([[1.0, 2.0], [2.0, 1.0]]), "R must be positive semi-definite"),
        (4, np.zeros(3), "m0 must have 2 entries"),
        (5, -np.eye(2), "P0 must be positive semi-definite"),
        (2, np.array([[np.inf, 0.0], [0.0, 1.0]]), "Q has non-finite"),
    ],
)
def test_bad_parameters_name_the_argument(position, value, match):
    y, params = _good()
    params = list(params)
    params[position] = value
    for function in (lds.kalman_filter, lds.rts_smoother):
        with pytest.raises(ValueError, match=match):
            function(y, *params)


def test_bad_data_names_y():
    _, params = _good()
    with pytest.raises(ValueError, match="y has 1 infinite"):
        lds.kalman_filter(np.array([[0.0, np.inf]]), *params)
    with pytest.raises(ValueError, match="y must be 2-D"):
        lds.kalman_filter(np.zeros((2, 2, 2)), *params)
    with pytest.raises(TypeError, match="y must be a numeric"):
        lds.kalman_filter([["a", "b"]], *params)
