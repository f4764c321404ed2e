"""The Kalman log-likelihood Op: value against the filter (itself checked against dense
Gaussian conditioning), gradient by finite differences in every input, Numba backend
against Python, and bad input."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.gradient import verify_grad

from custom_ops.lds.kalman import kalman_log_likelihood_kernel, kalman_value_and_gradient_kernel
from custom_ops.lds.ops import KalmanLogLikelihood, KalmanLogLikelihoodGrad, kalman_log_likelihood
from pp_models import lds
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python
from tests.oracles.lds import dense_conditioning, random_lds, steady_state_case

NAMES = ("y", "A", "C", "Q", "R", "m0", "P0")


def _args(seed=0, missing=True):
    rng = np.random.default_rng(seed)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 3)
    y = rng.normal(size=(6, 3))
    if missing:
        y[1, 0] = np.nan
        y[3] = np.nan
    return [y, A, C, Q, R, m0, P0]


def _symbols():
    return [pt.matrix(name) if name != "m0" else pt.vector(name) for name in NAMES]


def test_value_matches_the_filter_and_dense_conditioning():
    args = _args()
    value = kalman_log_likelihood(*args).eval(mode=PYTHON_MODE)
    assert np.shape(value) == ()
    np.testing.assert_allclose(value, lds.kalman_filter(*args).total_log_likelihood, rtol=1e-14)
    np.testing.assert_allclose(value, dense_conditioning(*args)[0][-1], rtol=0, atol=1e-8)


@pytest.mark.parametrize("index", range(7), ids=NAMES)
def test_gradient_by_finite_differences(index):
    # y without missing entries: its gradient is checked at every entry.
    args = _args(seed=1, missing=index != 0)
    rng = np.random.default_rng(index)

    def f(value):
        inputs = [pt.as_tensor_variable(a) for a in args]
        inputs[index] = value
        return kalman_log_likelihood(*inputs)

    verify_grad(f, [args[index]], rng=rng, mode=PYTHON_MODE, abs_tol=1e-6, rel_tol=1e-6)


def test_gradient_at_the_reused_fixed_point_by_central_differences():
    # 150 steps whose covariances reach their fixed point, with missing entries between
    args = list(steady_state_case())
    value, *grads = kalman_value_and_gradient_kernel(*args)
    assert value == kalman_log_likelihood_kernel(*args)
    rng = np.random.default_rng(3)
    h = 1e-5
    for index, (a, g) in enumerate(zip(args, grads, strict=True)):
        d = rng.normal(size=a.shape)
        if index in (3, 4, 6):  # Q, R, P0: symmetric directions
            d = d + d.T
        d[np.isnan(a)] = 0.0
        up, down = list(args), list(args)
        up[index] = a + h * d
        down[index] = a - h * d
        numeric = (kalman_log_likelihood_kernel(*up) - kalman_log_likelihood_kernel(*down)) / (
            2 * h
        )
        np.testing.assert_allclose(np.sum(g * d), numeric, rtol=1e-6, err_msg=NAMES[index])


def test_gradient_in_a_missing_entry_is_zero():
    args = _args()
    y = pt.matrix("y")
    grad = pytensor.grad(kalman_log_likelihood(y, *args[1:]), y)
    g = grad.eval({y: args[0]}, mode=PYTHON_MODE)
    assert g[1, 0] == 0.0 and np.all(g[3] == 0.0)
    assert np.all(g[0] != 0.0)


def test_infer_shape():
    symbols = _symbols()
    args = _args()
    out = kalman_log_likelihood(*symbols)
    grads = KalmanLogLikelihoodGrad()(*symbols)
    f = pytensor.function(symbols, [out.shape] + [g.shape for g in grads], mode=PYTHON_MODE)
    shapes = f(*args)
    assert tuple(shapes[0]) == ()
    for shape, a in zip(shapes[1:], args, strict=True):
        assert tuple(shape) == a.shape


def test_numba_matches_python():
    symbols = _symbols()
    out = kalman_log_likelihood(*symbols)
    grads = pytensor.grad(out, symbols[1:])
    assert_numba_matches_python(
        symbols, [out, *grads], _args(), op=KalmanLogLikelihood, rtol=1e-10, atol=1e-12
    )


def test_not_positive_definite_gives_minus_inf():
    args = _args(missing=False)
    args[4] = -10.0 * np.eye(3)  # R negative definite: the innovation covariance is too
    assert kalman_log_likelihood(*args).eval(mode=PYTHON_MODE) == -np.inf


def test_bad_input():
    args = _args()
    with pytest.raises(TypeError, match="m0 must be a 1-D tensor"):
        kalman_log_likelihood(*args[:5], np.eye(2), args[6])
    with pytest.raises(TypeError, match="y must be a 2-D tensor"):
        kalman_log_likelihood(args[0][0], *args[1:])
    bad = list(args)
    bad[2] = np.ones((3, 3))
    with pytest.raises(ValueError, match="C must have shape"):
        kalman_log_likelihood(*bad).eval(mode=PYTHON_MODE)
