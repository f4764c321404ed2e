"""The Kalman filter and the Rauch-Tung-Striebel smoother of an LDS (Ghahramani &
Roweis 1999, "LDS Pseudocode"), and the simulation smoother's exact path draws, on the
kernels of :mod:`custom_ops.lds.kalman` and :mod:`custom_ops.lds.simulation`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from custom_ops.lds.kalman import kalman_filter_kernel, rts_smoother_kernel
from custom_ops.lds.simulation import simulation_smoother_kernel
from pp_models.lds.checks import as_series, check_parameters
from pp_models.validation import check_int, rng_from_seed

__all__ = [
    "KalmanFilterResult",
    "RTSSmootherResult",
    "kalman_filter",
    "rts_smoother",
    "simulation_smoother",
]


@dataclass(frozen=True)
class KalmanFilterResult:
    """The filter's output for ``T`` steps, state dimension ``n``.

    Attributes
    ----------
    log_likelihood : ndarray, shape (T,)
        ``log p(y_t | y_{1:t-1})``, the seed's ``log rho_t`` (0 at a step with nothing
        observed); their sum is ``log p(y_{1:T})``.
    filtered_mean, filtered_cov : ndarray, shapes (T, n), (T, n, n)
        Moments of ``x_t | y_{1:t}``.
    predicted_mean, predicted_cov : ndarray, shapes (T, n), (T, n, n)
        Moments of ``x_t | y_{1:t-1}`` (``m0, P0`` at the first step).
    """

    log_likelihood: np.ndarray
    filtered_mean: np.ndarray
    filtered_cov: np.ndarray
    predicted_mean: np.ndarray
    predicted_cov: np.ndarray

    @property
    def total_log_likelihood(self) -> float:
        """``log p(y_{1:T})``."""
        return float(np.sum(self.log_likelihood))


@dataclass(frozen=True)
class RTSSmootherResult:
    """The smoother's output, with the filter's.

    Attributes
    ----------
    smoothed_mean, smoothed_cov : ndarray, shapes (T, n), (T, n, n)
        Moments of ``x_t | y_{1:T}``.
    smoothed_cross_cov : ndarray, shape (T - 1, n, n)
        ``Cov(x_{t+1}, x_t | y_{1:T})``, the lag-one cross covariances (the seed's
        ``V^_{t+1,t}``) that EM's update of ``A`` and ``Q`` needs.
    filter : KalmanFilterResult
        The forward pass.
    """

    smoothed_mean: np.ndarray
    smoothed_cov: np.ndarray
    smoothed_cross_cov: np.ndarray
    filter: KalmanFilterResult

    @property
    def log_likelihood(self) -> np.ndarray:
        """The filter's per-step ``log p(y_t | y_{1:t-1})``."""
        return self.filter.log_likelihood


def _filter(y, params) -> KalmanFilterResult:
    out = kalman_filter_kernel(y, params.A, params.C, params.Q, params.R, params.m0, params.P0)
    if np.isnan(out[0]).any():
        t = int(np.argmax(np.isnan(out[0])))
        raise ValueError(
            f"the innovation covariance C P C' + R is not positive definite at step {t}; "
            "make R positive definite (or P0, Q large enough where R is singular)"
        )
    return KalmanFilterResult(*out)


def kalman_filter(y, A, C, Q, R, m0, P0) -> KalmanFilterResult:
    """Kalman filter of ``y`` under the LDS ``x_1 ~ N(m0, P0)``,
    ``x_t = A x_{t-1} + N(0, Q)``, ``y_t = C x_t + N(0, R)`` (the seed's "LDS
    Pseudocode", the covariance update in Joseph's form and symmetrised).

    Parameters
    ----------
    y : array_like, shape (T, p) or (T,)
        Observations; NaN entries are missing and skipped (a step conditions on its
        observed entries only).
    A : array_like, shape (n, n)
        Transition matrix.
    C : array_like, shape (p, n)
        Observation matrix.
    Q, R : array_like, shapes (n, n), (p, p)
        State and observation noise covariances, symmetric positive semi-definite.
    m0, P0 : array_like, shapes (n,), (n, n)
        Mean and covariance of the first state ``x_1``.

    Returns
    -------
    KalmanFilterResult

    Raises
    ------
    ValueError
        A shape that does not match, a covariance that is not symmetric positive
        semi-definite, infinite data, naming the argument.
    """
    y = as_series(y)
    params = check_parameters(y, A, C, Q, R, m0, P0)
    return _filter(y, params)


def rts_smoother(y, A, C, Q, R, m0, P0) -> RTSSmootherResult:
    """Rauch-Tung-Striebel smoother: the moments of each ``x_t`` given all of ``y``
    (the seed's backward recursion, ``J = V_t A' (V+)^{-1}``), with the lag-one cross
    covariances. Arguments as :func:`kalman_filter`; the predicted covariances must be
    positive definite (``Q`` or ``A`` non-singular enough), which the smoother inverts.

    Returns
    -------
    RTSSmootherResult
    """
    y = as_series(y)
    params = check_parameters(y, A, C, Q, R, m0, P0)
    filt = _filter(y, params)
    ms, Ps, cross = rts_smoother_kernel(
        params.A, filt.filtered_mean, filt.filtered_cov, filt.predicted_mean, filt.predicted_cov
    )
    if np.isnan(Ps).any():
        raise ValueError(
            "a predicted state covariance A V A' + Q is singular; the "
            "smoother needs it positive definite (make Q positive definite)"
        )
    return RTSSmootherResult(ms, Ps, cross, filt)


def simulation_smoother(y, A, C, Q, R, m0, P0, *, size: int = 1, random_seed=None) -> np.ndarray:
    """Exact draws of the whole state path from ``p(x_{1:T} | y)`` by forward filtering,
    backward sampling (Carter & Kohn 1994; :mod:`custom_ops.lds.simulation`). Arguments
    as :func:`kalman_filter`; ``Q`` must be positive definite (the backward pass
    inverts the predicted covariances).

    Parameters
    ----------
    size : int
        Number of paths.
    random_seed : int, Generator or None
        Seeds the draws.

    Returns
    -------
    ndarray, shape (size, T, n)
    """
    y = as_series(y)
    params = check_parameters(y, A, C, Q, R, m0, P0)
    size = check_int(size, "size", minimum=1)
    rng = rng_from_seed(random_seed)
    filt = _filter(y, params)
    T, n = filt.filtered_mean.shape
    out = np.empty((size, T, n))
    for s in range(size):
        out[s] = simulation_smoother_kernel(
            params.A,
            filt.filtered_mean,
            filt.filtered_cov,
            filt.predicted_mean,
            filt.predicted_cov,
            rng.standard_normal((T, n)),
        )
    if np.isnan(out).any():
        raise ValueError(
            "a predicted state covariance A V A' + Q is singular; the simulation "
            "smoother needs it positive definite (make Q positive definite)"
        )
    return out
