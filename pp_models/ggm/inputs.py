"""Turning what a user hands a GGM estimator into a checked covariance matrix.

Every estimator of the family accepts either a data matrix ``X`` (n x p) or an
empirical covariance ``S`` (p x p). ``kind="auto"`` treats a square symmetric matrix as
a covariance, rejects a square non-symmetric one (a broken covariance, or n = p data:
say ``kind="data"``) and reads anything else as data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pp_models.validation import as_data_matrix, check_real

__all__ = ["CovarianceInput", "as_covariance", "check_graph", "check_penalty"]


@dataclass(frozen=True)
class CovarianceInput:
    """A checked empirical covariance.

    Attributes
    ----------
    S : float64 (p, p)
        Symmetric positive semidefinite. From data: ``(1/n) sum (x_i - xbar)(x_i -
        xbar)'`` (the maximum-likelihood scaling of Murphy Eq. 26.66).
    n : int or None
        Number of observations, when data were given.
    """

    S: np.ndarray
    n: int | None

    @property
    def p(self) -> int:
        return self.S.shape[0]


def as_covariance(S_or_X, name: str = "S_or_X", *, kind: str = "auto") -> CovarianceInput:
    """Validate ``S_or_X`` and return the empirical covariance (see module docstring)."""
    if kind not in ("auto", "covariance", "data"):
        raise ValueError(f"kind must be 'auto', 'covariance' or 'data', got {kind!r}")
    arr = as_data_matrix(S_or_X, name, min_rows=1)
    square = arr.shape[0] == arr.shape[1]
    symmetric = square and np.allclose(arr, arr.T, rtol=1e-10, atol=1e-12 * np.abs(arr).max())
    if kind == "auto" and square and not symmetric:
        raise ValueError(
            f"{name}: a square matrix that is not symmetric is neither a covariance nor "
            "(unambiguously) data; pass kind='data' for n = p observations"
        )
    if kind == "covariance" or (kind == "auto" and symmetric):
        if not square:
            raise ValueError(f"{name}: a covariance matrix must be square, got {arr.shape}")
        if not symmetric:
            raise ValueError(f"{name}: the covariance matrix is not symmetric")
        S = 0.5 * (arr + arr.T)
        eig_min = float(np.linalg.eigvalsh(S)[0])
        scale = max(float(np.abs(np.diag(S)).max()), np.finfo(float).tiny)
        if eig_min < -1e-10 * scale:
            raise ValueError(
                f"{name}: the covariance matrix is not positive semidefinite (smallest "
                f"eigenvalue {eig_min:.3g})"
            )
        return CovarianceInput(S=S, n=None)
    if arr.shape[0] < 2:
        raise ValueError(f"{name}: data need at least 2 observations (rows), got {arr.shape[0]}")
    centred = arr - arr.mean(axis=0)
    S = centred.T @ centred / arr.shape[0]
    return CovarianceInput(S=0.5 * (S + S.T), n=arr.shape[0])


def check_penalty(lam, name: str = "lam") -> float:
    """``lam`` as a finite float >= 0."""
    return check_real(lam, name, minimum=0.0)


def check_graph(graph, p: int, name: str = "graph") -> np.ndarray:
    """``graph`` as a symmetric (p, p) bool adjacency matrix with an empty diagonal."""
    arr = np.asarray(graph)
    if arr.shape != (p, p):
        raise ValueError(f"{name} must be a ({p}, {p}) adjacency matrix, got shape {arr.shape}")
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all(np.isin(arr, (0, 1))):
            raise ValueError(f"{name} must hold only 0/1 (or bool) entries")
        arr = arr.astype(bool)
    if np.any(np.diag(arr)):
        raise ValueError(f"{name} must have a zero diagonal (no self-loops)")
    if not np.array_equal(arr, arr.T):
        raise ValueError(f"{name} must be symmetric (an undirected graph)")
    return arr
