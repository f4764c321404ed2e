"""Draws of the floored half-normal scale prior (:mod:`pp_models.distributions.scale_priors`).

The density ``p(x) ∝ exp(-x^2 / (2 s^2) - c^2 / (2 x^2))`` on ``x > 0`` is that of
``x = tau^(-1/2)`` with the precision ``tau`` inverse-Gaussian (Wald) with mean
``1 / (s c)`` and shape ``1 / s^2`` (substitute ``x = tau^(-1/2)``:
``p(tau) ∝ tau^(-3/2) exp(-c^2 tau / 2 - 1 / (2 s^2 tau))``, the Wald density). The Wald
draw is Michael, Schucany & Haas (1976): ``y = N(0, 1)^2``, the smaller root ``x1`` of
the quadratic it defines, then ``x1`` with probability ``mean / (mean + x1)``, else
``mean^2 / x1``. The smaller root is written without the cancellation of the textbook
form (``mean + mean^2 y / (2 shape) - ...``), which loses every digit when the mean is
large (a floor far below the scale ``s``); at ``c = 0`` the draw is the half-normal's.
"""

from __future__ import annotations

import math

from custom_ops.jit import njit_exact

__all__ = ["floored_half_normal_draw"]


@njit_exact
def floored_half_normal_draw(rng, scale, floor):
    """One draw of ``x > 0`` with density ``∝ exp(-x^2/(2 scale^2) - floor^2/(2 x^2))``.

    ``rng`` is a numpy ``Generator``; ``scale > 0``, ``floor >= 0``.
    """
    normal = rng.standard_normal()
    if floor == 0.0:
        return scale * abs(normal)
    mean = 1.0 / (scale * floor)
    shape = 1.0 / (scale * scale)
    a = mean * normal * normal
    root = math.sqrt(a * a + 4.0 * shape * a)
    # smaller root of the MSH quadratic, mean * (root - a) / (root + a), rationalised
    ratio = 4.0 * shape * a / ((a + root) * (a + root)) if a > 0.0 else 1.0
    if rng.random() * (1.0 + ratio) <= 1.0:
        tau = mean * ratio
    else:
        tau = mean / ratio
    return 1.0 / math.sqrt(tau)
