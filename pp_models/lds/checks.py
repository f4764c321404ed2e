"""Argument checks of the LDS functions: the data and the parameters' shapes, and
symmetric positive semi-definite covariances, each error naming the argument."""

from __future__ import annotations

import numpy as np

from pp_models.validation import as_data_matrix

__all__ = ["LDSParameters", "as_series", "check_parameters"]


def as_series(y, name: str = "y") -> np.ndarray:
    """``y`` as a float64 ``T x p`` array (a 1-D series becomes one column); NaN marks a
    missing entry, infinite values are refused."""
    if hasattr(y, "to_numpy"):
        y = y.to_numpy()
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array: {err}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    arr = as_data_matrix(
        arr, name, min_rows=1, allow_nan=True, axes="T time steps, p observed dimensions"
    )
    return np.ascontiguousarray(arr)


def _matrix(value, name: str, shape: tuple[int, int]) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a numeric array: {err}") from None
    if arr.ndim == 0 and shape == (1, 1):
        arr = arr.reshape(1, 1)
    if arr.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} has non-finite entries")
    return arr


def _covariance(value, name: str, size: int) -> np.ndarray:
    arr = _matrix(value, name, (size, size))
    scale = max(float(np.max(np.abs(arr))), 1e-300)
    if not np.allclose(arr, arr.T, rtol=0.0, atol=1e-10 * scale):
        raise ValueError(
            f"{name} must be symmetric; max |{name} - {name}'| = "
            f"{float(np.max(np.abs(arr - arr.T))):.3g}"
        )
    smallest = float(np.linalg.eigvalsh(arr)[0])
    if smallest < -1e-10 * scale:
        raise ValueError(
            f"{name} must be positive semi-definite; its smallest eigenvalue is {smallest:.3g}"
        )
    return 0.5 * (arr + arr.T)


class LDSParameters:
    """Checked parameters ``A, C, Q, R, m0, P0`` of an LDS with state dimension ``n``
    and observation dimension ``p`` (plain attributes, float64 arrays)."""

    __slots__ = ("A", "C", "P0", "Q", "R", "m0")

    def __init__(self, A, C, Q, R, m0, P0):
        self.A, self.C, self.Q, self.R, self.m0, self.P0 = A, C, Q, R, m0, P0


def check_parameters(y: np.ndarray, A, C, Q, R, m0, P0) -> LDSParameters:
    """Check the shapes against ``y`` (``T x p``) and ``A`` (``n x n``), and that ``Q``,
    ``R`` and ``P0`` are symmetric positive semi-definite."""
    try:
        A_arr = np.asarray(A, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"A must be a numeric array: {err}") from None
    if A_arr.ndim == 0:
        A_arr = A_arr.reshape(1, 1)
    if A_arr.ndim != 2 or A_arr.shape[0] != A_arr.shape[1]:
        raise ValueError(f"A must be a square 2-D array (n x n), got shape {A_arr.shape}")
    n = A_arr.shape[0]
    p = y.shape[1]
    A = _matrix(A, "A", (n, n))
    C = _matrix(C, "C", (p, n))
    Q = _covariance(Q, "Q", n)
    R = _covariance(R, "R", p)
    P0 = _covariance(P0, "P0", n)
    try:
        m0_arr = np.asarray(m0, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as err:
        raise TypeError(f"m0 must be a numeric vector: {err}") from None
    if m0_arr.shape != (n,):
        raise ValueError(
            f"m0 must have {n} entries (the state dimension), got shape {np.shape(m0)}"
        )
    if not np.all(np.isfinite(m0_arr)):
        raise ValueError("m0 has non-finite entries")
    # One memory layout, so that each kernel compiles once.
    return LDSParameters(*(np.ascontiguousarray(a) for a in (A, C, Q, R, m0_arr, P0)))
