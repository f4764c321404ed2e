r"""A scale prior that keeps a Gaussian likelihood bounded on tied or rounded data.

:class:`FlooredHalfNormal` is the half-normal on a standard deviation with a soft floor:

.. math::

    p(x \mid s, c) = \sqrt{2/\pi}\, \frac{e^{c/s}}{s}
    \exp\!\left(-\frac{x^2}{2 s^2} - \frac{c^2}{2 x^2}\right), \qquad x > 0.

Above the floor ``c`` it is the half-normal of scale ``s`` up to the constant
``e^{c/s}``; below it the factor ``exp(-c^2 / (2 x^2))`` vanishes faster than any power
of ``x``. That is what a mixture of Gaussians needs on data recorded to a finite
resolution: ``m`` tied values in one component give a likelihood growing like
``x^{-m}`` as its standard deviation ``x -> 0`` (``x^{-(m-1)}`` with the mean
integrated out), which a prior with positive density at 0 (half-normal, half-Cauchy,
gamma of shape <= m - 1) leaves unbounded and, for ``m >= 2``, non-integrable: the
posterior is improper. With the floor the posterior is proper and its density bounded.
``c = 0`` is the half-normal.

The normaliser is :math:`\int_0^\infty e^{-a x^2 - b / x^2} dx = \tfrac12
\sqrt{\pi / a}\, e^{-2\sqrt{ab}}` (Gradshteyn & Ryzhik 3.325) at ``a = 1/(2 s^2)``,
``b = c^2 / 2``. ``x^{-2}`` is inverse-Gaussian (Wald) with mean ``1 / (s c)`` and shape
``1 / s^2``, which gives exact prior draws (:mod:`custom_ops.floored_half_normal`). The
mode is ``sqrt(s c)``.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.continuous import PositiveContinuous
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.floored_half_normal import floored_half_normal_draw
from custom_ops.jit import rv_draw_cache_key

__all__ = ["FlooredHalfNormal", "FlooredHalfNormalRV"]


class FlooredHalfNormalRV(RandomVariable):
    """Random variable of :class:`FlooredHalfNormal`: params ``(sigma, floor)``."""

    name = "floored_half_normal"
    signature = "(),()->()"
    dtype = "floatX"
    _print_name = ("FlooredHalfNormal", "\\operatorname{FlooredHalfNormal}")
    #: a continuous prior PyMC's own samplers (NUTS) take: no zoo step claims it
    zoo_step = False

    @classmethod
    def rng_fn(cls, rng, sigma, floor, size):
        sigma, floor = np.broadcast_arrays(np.asarray(sigma, dtype=np.float64),
                                           np.asarray(floor, dtype=np.float64))
        shape = tuple(size) if size is not None else sigma.shape
        sigma, floor = np.broadcast_to(sigma, shape), np.broadcast_to(floor, shape)
        out = np.empty(shape)
        for idx in np.ndindex(*shape):
            out[idx] = floored_half_normal_draw(rng, float(sigma[idx]), float(floor[idx]))
        return out


floored_half_normal = FlooredHalfNormalRV()


@numba_core_rv_funcify.register(FlooredHalfNormalRV)
def _numba_core_floored_half_normal(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, sigma, floor):
        return floored_half_normal_draw(rng, sigma, floor)

    return random_fn, rv_draw_cache_key(__file__)


class FlooredHalfNormal(PositiveContinuous):
    r"""Half-normal with a soft floor: ``p(x) ∝ exp(-x^2/(2 sigma^2) - floor^2/(2 x^2))``.

    .. math::

        \log p(x) = \tfrac12 \log\tfrac{2}{\pi} - \log\sigma + \frac{c}{\sigma}
        - \frac{x^2}{2\sigma^2} - \frac{c^2}{2x^2}

    ========  ====================================================
    Support   :math:`x > 0`
    Mode      :math:`\sqrt{\sigma c}`
    ========  ====================================================

    Parameters
    ----------
    sigma : tensor_like of float
        Scale of the half-normal, ``> 0``.
    floor : tensor_like of float
        Scale below which the density vanishes, ``>= 0`` (``0``: the half-normal).
    """

    rv_op = floored_half_normal

    @classmethod
    def dist(cls, sigma, floor, **kwargs):
        for name, v in (("sigma", sigma), ("floor", floor)):
            if isinstance(v, int | float | np.number | np.ndarray) and not np.all(
                    np.asarray(v) >= (0 if name == "floor" else np.nextafter(0, 1))):
                raise ValueError(f"{name} must be {'>= 0' if name == 'floor' else '> 0'}, "
                                 f"got {v}")
        sigma = pt.as_tensor_variable(sigma, dtype="float64")
        floor = pt.as_tensor_variable(floor, dtype="float64")
        return super().dist([sigma, floor], **kwargs)

    def support_point(rv, size, sigma, floor):
        mode = pt.sqrt(sigma * pt.maximum(floor, 1e-3 * sigma))
        if not rv_size_is_none(size):
            mode = pt.full(size, mode)
        return mode

    def logp(value, sigma, floor):
        safe = pt.switch(pt.gt(value, 0), value, 1.0)
        res = (0.5 * np.log(2.0 / np.pi) - pt.log(sigma) + floor / sigma
               - 0.5 * pt.sqr(safe / sigma) - 0.5 * pt.sqr(floor / safe))
        # at floor 0 the density is the half-normal's, positive at x = 0 too
        at_zero = pt.switch(pt.eq(floor, 0), 0.5 * np.log(2.0 / np.pi) - pt.log(sigma), -np.inf)
        res = pt.switch(pt.gt(value, 0), res, pt.switch(pt.eq(value, 0), at_zero, -np.inf))
        return check_parameters(res, sigma > 0, floor >= 0, msg="sigma > 0, floor >= 0")
