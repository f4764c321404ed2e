"""The resolution to which each column of a data matrix was recorded.

Measurements are written down to a finite number of decimals (iris: 0.1 cm), so equal
values are common and a Gaussian component can fit a set of them with a standard
deviation of 0. The resolution says how small a spread the data can resolve; the
mixture factories use it as the floor of their scale prior
(:class:`pp_models.distributions.FlooredHalfNormal`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["recording_resolution"]

#: Most decimals a column is tested for; a column needing more is read as continuous.
MAX_DECIMALS = 6


def recording_resolution(X) -> np.ndarray:
    """Per column of ``X`` (2-D, finite), the step of the grid its values lie on.

    ``10**-p`` for the fewest decimals ``p <= 6`` that write every value of the column
    exactly (up to floating-point rounding); for a column needing more (values computed
    rather than recorded), the smallest positive gap between its distinct values; 1 for
    a constant column that is not decimal.

    Examples
    --------
    >>> recording_resolution([[5.1, 3.0], [4.9, 12.0]])
    array([0.1, 1. ])
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D, got shape {X.shape}")
    out = np.empty(X.shape[1])
    for j in range(X.shape[1]):
        out[j] = _column_resolution(X[:, j])
    return out


def _column_resolution(values: np.ndarray) -> float:
    values = values[np.isfinite(values)]
    for p in range(MAX_DECIMALS + 1):
        scaled = values * 10.0**p
        if np.allclose(scaled, np.round(scaled), rtol=1e-9, atol=1e-6):
            return 10.0**-p
    distinct = np.unique(values)
    gaps = np.diff(distinct)
    gaps = gaps[gaps > 1e-12 * np.maximum(1.0, np.abs(distinct[1:]))]
    return float(gaps.min()) if gaps.size else 1.0
