"""Special functions the conjugate families share, jitted: the digamma function ψ and
the log multivariate gamma function log Γ_d with its derivative (the Normal-Inverse-
Wishart marginal and its gradient; Heller 2007 Eqs. 2.13-2.14)."""

from __future__ import annotations

import math

from custom_ops.jit import njit_exact

__all__ = ["LOG_PI", "digamma", "log_mvgamma", "mvdigamma"]

LOG_PI = math.log(math.pi)


@njit_exact
def digamma(x):
    """ψ(x) for x > 0: recurrence up to x >= 10, then the asymptotic series (``|err| < 1e-13``)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return (
        r
        + math.log(x)
        - 0.5 / x
        - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    )


@njit_exact
def log_mvgamma(x, d):
    """log Γ_d(x) = d(d-1)/4 log π + Σ_j log Γ(x + (1 - j)/2)."""
    out = 0.25 * d * (d - 1) * LOG_PI
    for j in range(d):
        out += math.lgamma(x - 0.5 * j)
    return out


@njit_exact
def mvdigamma(x, d):
    """d/dx log Γ_d(x)."""
    out = 0.0
    for j in range(d):
        out += digamma(x - 0.5 * j)
    return out
