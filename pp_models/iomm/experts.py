"""A point's product density in closed form (Heller 2007 Eqs 7.4-7.7), in NumPy.

For a draw of the memberships ``Z`` (N x C) and the cluster parameters, the parameters
of each point's product of experts:

- :func:`bernoulli_product`: ``theta~`` of Eq. 7.7, computed as ``sigmoid(Z logit
  theta)`` (the same number, without the products' underflow); ``1/2`` for a point in no
  cluster.
- :func:`gaussian_product`: the precision ``tau~ = Z tau`` and the precision-weighted
  mean ``mu~ = Z (tau mu) / tau~`` of Eq. 7.5 (diagonal experts); a point in no cluster
  gets the background's mean and precision.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

__all__ = ["bernoulli_product", "gaussian_product"]


def _memberships(Z, C):
    Z = np.asarray(Z)
    if Z.ndim != 2 or Z.shape[1] != C:
        raise ValueError(f"Z must be (N, {C}) to match the parameters, got shape {Z.shape}")
    return (Z != 0).astype(np.float64)


def bernoulli_product(Z, theta) -> np.ndarray:
    """``theta~`` (N, D) of Eq. 7.7 for memberships ``Z`` (N, C) and ``theta`` (C, D)."""
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 2:
        raise ValueError(f"theta must be (C, D), got shape {theta.shape}")
    Zf = _memberships(Z, theta.shape[0])
    return expit(Zf @ (np.log(theta) - np.log1p(-theta)))


def gaussian_product(Z, mu, tau, background) -> tuple[np.ndarray, np.ndarray]:
    """``(mean, precision)`` (N, D) of each point's product of diagonal Gaussian experts
    (Eq. 7.5); ``background`` (D, 2) holds the mean and sd of a point in no cluster."""
    mu = np.asarray(mu, dtype=np.float64)
    tau = np.asarray(tau, dtype=np.float64)
    if mu.shape != tau.shape or mu.ndim != 2:
        raise ValueError(f"mu and tau must be (C, D) of one shape, got {mu.shape} and "
                         f"{tau.shape}")
    background = np.asarray(background, dtype=np.float64)
    if background.shape != (mu.shape[1], 2):
        raise ValueError(f"background must be (D, 2) = ({mu.shape[1]}, 2), got "
                         f"{background.shape}")
    Zf = _memberships(Z, mu.shape[0])
    precision = Zf @ tau
    weighted = Zf @ (tau * mu)
    empty = Zf.sum(axis=1) == 0
    safe = np.where(empty[:, None], 1.0, precision)
    mean = np.where(empty[:, None], background[:, 0], weighted / safe)
    precision = np.where(empty[:, None], 1.0 / background[:, 1] ** 2, precision)
    return mean, precision
