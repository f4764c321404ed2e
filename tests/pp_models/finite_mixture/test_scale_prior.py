"""The finite mixture's scale prior (FlooredHalfNormal) and the resolution it is floored at."""

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import integrate, stats

from pp_models.distributions import FlooredHalfNormal, FlooredHalfNormalRV
from pp_models.resolution import recording_resolution
from tests.helpers.backends import PYTHON_MODE


def _logp_fn():
    value, sigma, floor = pt.dscalars("value", "sigma", "floor")
    logp = pm.logp(FlooredHalfNormal.dist(sigma=sigma, floor=floor), value)
    return pytensor.function([value, sigma, floor], logp, mode=PYTHON_MODE)


def _reference_logpdf(x, sigma, floor):
    """From the Wald precision (scipy's invgauss, an independent parameterisation):
    tau = x^-2 ~ Wald(mean 1/(sigma floor), shape 1/sigma^2), |d tau / d x| = 2 x^-3."""
    mean, shape = 1 / (sigma * floor), 1 / sigma**2
    tau = x**-2.0
    return stats.invgauss(mu=mean / shape, scale=shape).logpdf(tau) + np.log(2 * x**-3.0)


def test_logp_is_the_wald_precision_transformed_and_normalised():
    logp = _logp_fn()
    for sigma, floor in ((0.5, 0.1), (2.0, 0.05), (0.3, 0.4)):
        for x in (0.02, 0.1, 0.5, 3.0):
            np.testing.assert_allclose(logp(x, sigma, floor),
                                       _reference_logpdf(x, sigma, floor), rtol=1e-9)
        total, _ = integrate.quad(lambda v, s=sigma, c=floor: np.exp(logp(v, s, c)), 0, np.inf)
        np.testing.assert_allclose(total, 1.0, rtol=1e-7)


def test_floor_zero_is_the_half_normal_and_the_density_vanishes_below_the_floor():
    logp = _logp_fn()
    for x in (0.0, 0.01, 0.7, 2.0):
        np.testing.assert_allclose(logp(x, 0.8, 0.0), stats.halfnorm(scale=0.8).logpdf(x),
                                   rtol=1e-12)
    # exp(-floor^2 / (2 x^2)) beats any power of x: x^-150 p(x) still -> 0
    tiny = np.array([1e-3, 1e-4, 1e-5])
    values = np.array([logp(x, 0.5, 0.1) for x in tiny]) - 150 * np.log(tiny)
    assert np.all(np.diff(values) < 0) and values[-1] < -1e7
    assert logp(-0.1, 0.5, 0.1) == -np.inf and logp(0.0, 0.5, 0.1) == -np.inf


def test_gradient():
    rng = np.random.default_rng(0)
    pytensor.gradient.verify_grad(
        lambda v, s, c: pm.logp(FlooredHalfNormal.dist(sigma=s, floor=c), v),
        [np.array(0.3), np.array(0.6), np.array(0.1)], rng=rng, mode=PYTHON_MODE)


@pytest.mark.parametrize(("sigma", "floor"), [(0.5, 0.1), (2.0, 1e-9), (1.0, 3.0)])
def test_draws_follow_the_density(sigma, floor):
    # Numba (pm.draw) and Python (rng_fn) draws against the CDF P(x <= t) = P(tau >= t^-2)
    # of the Wald precision; a floor far below sigma is where the textbook Wald draw loses
    # every digit
    mean, shape = 1 / (sigma * floor), 1 / sigma**2
    precision = stats.invgauss(mu=mean / shape, scale=shape)

    def cdf(t):
        return precision.sf(np.asarray(t, dtype=float) ** -2.0)

    numba = pm.draw(FlooredHalfNormal.dist(sigma=sigma, floor=floor, size=4000),
                    random_seed=1)
    python = FlooredHalfNormalRV.rng_fn(np.random.default_rng(2), sigma, floor, (4000,))
    for draws in (numba, python):
        assert stats.kstest(draws, cdf).pvalue > 1e-3


def test_bad_parameters():
    with pytest.raises(ValueError, match="floor must be >= 0"):
        FlooredHalfNormal.dist(sigma=1.0, floor=-0.1)
    with pytest.raises(ValueError, match="sigma must be > 0"):
        FlooredHalfNormal.dist(sigma=0.0, floor=0.1)


def test_recording_resolution():
    from pp_models.datasets import load

    np.testing.assert_array_equal(recording_resolution(load("iris").data), [0.1] * 4)
    X = np.column_stack([[12.0, 7.0, 3.0], [0.25, 0.5, 1.125], [1 / 3, 2 / 3, 2.0]])
    # integers; three decimals; not decimal: the smallest gap between distinct values
    np.testing.assert_allclose(recording_resolution(X), [1.0, 0.001, 1 / 3])
    with pytest.raises(ValueError, match="2-D"):
        recording_resolution(np.ones(3))
