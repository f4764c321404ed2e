"""The graphical-lasso kernels against NumPy references."""

import numpy as np

from custom_ops.ggm.glasso import glasso_sweeps, kkt_violation, precision_from_regressions


def _spd(p, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p, p))
    return A @ A.T / p + 0.1 * np.eye(p)


def test_partitioned_inverse_equals_inverse_for_exact_regressions():
    W = _spd(7, 0)
    B = np.zeros_like(W)
    for j in range(7):
        rest = np.delete(np.arange(7), j)
        B[rest, j] = np.linalg.solve(W[np.ix_(rest, rest)], W[rest, j])
    omega, ok = precision_from_regressions(W, B)
    assert ok
    np.testing.assert_allclose(omega, np.linalg.inv(W), rtol=1e-10, atol=1e-12)


def test_sweeps_keep_w_positive_definite_even_with_one_inner_pass():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(5, 30))  # n << p: S is singular
    S = np.cov(X, rowvar=False, bias=True)
    lam = 0.01
    W = S + lam * np.eye(30)
    B = np.zeros_like(S)
    for _ in range(20):
        glasso_sweeps(S, W, B, lam, 0.0, 1, 1)  # one sweep, one inner pass: inexact
        assert np.linalg.eigvalsh(W)[0] > 0
        np.testing.assert_allclose(np.diag(W), np.diag(S) + lam)


def test_kkt_violation_by_hand():
    S = np.array([[1.0, 0.5], [0.5, 1.0]])
    omega = np.array([[2.0, -0.3], [-0.3, 2.0]])
    W = np.linalg.inv(omega)
    lam = 0.2
    expected = max(abs(W[0, 0] - 1.2), abs(W[1, 1] - 1.2), abs(W[1, 0] - 0.5 + lam))
    assert kkt_violation(W, S, omega, lam, True) == np.float64(expected)
    zero = np.diag([2.0, 2.0])
    Wz = np.linalg.inv(zero)
    assert kkt_violation(Wz, S, zero, 0.6, False) == np.float64(max(abs(0.5 - 1.0), 0.0))
    assert kkt_violation(Wz, S, zero, 0.4, False) == np.float64(max(0.5, 0.1))
