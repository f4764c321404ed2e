"""The GGM Gibbs kernels against SciPy references."""

import numpy as np
import pytest
from scipy import stats

from custom_ops.ggm.gibbs import (
    ColumnPrior,
    Precision,
    WishartData,
    column_sweep,
    column_update,
    gram,
    inverse_gaussian,
    packed_cholesky_backward,
    packed_cholesky_forward,
)
from custom_ops.spd_kernels import cholesky_lower, spd_inverse


@pytest.mark.parametrize(("mean", "shape"), [(0.7, 2.0), (3.0, 0.5), (1e6, 1.0)])
def test_inverse_gaussian_matches_scipy(mean, shape):
    rng = np.random.default_rng(0)
    draws = np.array([inverse_gaussian(rng, mean, shape) for _ in range(4000)])
    assert np.all(draws > 0)
    # scipy's invgauss(mu / shape, scale=shape) has mean `mean` and shape `shape`
    ref = stats.invgauss(mean / shape, scale=shape)
    assert stats.kstest(draws, ref.cdf).pvalue > 0.001
    # 1/x has finite moments even for a huge mean: E[1/x] = 1/mean + 1/shape
    assert np.mean(1 / draws) == pytest.approx(1 / mean + 1 / shape, rel=0.1)


def test_column_sweep_keeps_sigma_the_inverse_of_omega():
    rng = np.random.default_rng(1)
    p, n = 6, 30
    X = rng.normal(size=(n, p))
    omega = np.eye(p)
    sigma = np.eye(p)
    tau = np.full((p, p), 0.5)
    for _ in range(5):
        column_sweep(rng, Precision(omega, sigma), WishartData(X.T @ X, float(n)),
                     ColumnPrior(1.0, tau, 1.0), 1.0)
        np.testing.assert_allclose(sigma @ omega, np.eye(p), atol=1e-8)
        np.testing.assert_allclose(omega, omega.T)
        assert np.linalg.eigvalsh(omega)[0] > 0


@pytest.mark.parametrize("temperature", [1.0, 0.3, 0.0])
def test_column_update_draws_the_stated_conditional(temperature):
    """p = 3, column 0: beta ~ N(-C s12, C), C = ((s00 + lam) Omega11^-1 + D^-1)^-1 and
    gamma = omega00 - beta' Omega11^-1 beta ~ Gamma(n/2 + 1, rate (s00 + lam)/2); at an
    inverse temperature the same with (n, S) -> (temperature n, temperature S)."""
    rng = np.random.default_rng(3)
    S_data = np.array([[5.0, 2.0, -1.0], [2.0, 4.0, 0.5], [-1.0, 0.5, 3.0]])
    n_data, lam = 10.0, 1.5
    S, n = temperature * S_data, temperature * n_data
    tau = np.array([[1.0, 0.8, 0.3], [0.8, 1.0, 0.6], [0.3, 0.6, 1.0]])
    start = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, 0.2], [0.1, 0.2, 1.5]])
    o11inv = np.linalg.inv(start[1:, 1:])
    C = np.linalg.inv((S[0, 0] + lam) * o11inv + np.diag(1 / tau[0, 1:]))
    mean = -C @ S[1:, 0]
    betas, gammas = [], []
    for _ in range(5000):
        omega = start.copy()
        sigma = np.linalg.inv(omega)
        column_update(rng, Precision(omega, sigma), WishartData(S_data, n_data),
                      ColumnPrior(lam, tau, 1.0), temperature, 0)
        beta = omega[1:, 0]
        betas.append(beta)
        gammas.append(omega[0, 0] - beta @ o11inv @ beta)
        np.testing.assert_allclose(omega[1:, 1:], start[1:, 1:])
    betas = np.array(betas)
    assert np.all(np.abs(betas.mean(0) - mean) < 4 * np.sqrt(np.diag(C) / 5000))
    # sample covariance of 5000 normal draws: se of entry ij is sqrt((C_ii C_jj + C_ij^2) / n)
    se = np.sqrt((np.outer(np.diag(C), np.diag(C)) + C ** 2) / 5000)
    assert np.all(np.abs(np.cov(betas, rowvar=False) - C) < 4 * se)
    ref = stats.gamma(n / 2 + 1, scale=2 / (S[0, 0] + lam))
    assert stats.kstest(gammas, ref.cdf).pvalue > 0.001


def test_dense_helpers_match_numpy_and_pymc_transform():
    import pytensor.tensor as pt
    from pymc.distributions.transforms import CholeskyCovTransform

    rng = np.random.default_rng(4)
    A = rng.normal(size=(7, 7))
    A = A @ A.T + 0.5 * np.eye(7)
    np.testing.assert_allclose(cholesky_lower(A), np.linalg.cholesky(A), atol=1e-12)
    np.testing.assert_allclose(spd_inverse(A), np.linalg.inv(A), rtol=1e-10, atol=1e-12)
    assert np.isnan(cholesky_lower(-A)).all()
    np.testing.assert_allclose(gram(A[:5]), A[:5].T @ A[:5], rtol=1e-12)
    transform = CholeskyCovTransform(n=7)
    value = transform.forward(pt.as_tensor(A)).eval()
    np.testing.assert_allclose(packed_cholesky_forward(A), value, atol=1e-12)
    np.testing.assert_allclose(packed_cholesky_backward(value, 7),
                               transform.backward(pt.as_tensor(value)).eval(), atol=1e-12)
