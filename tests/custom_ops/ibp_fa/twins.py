"""Planted-bug twins of the NSFA kernels (never switches in shipped code)."""

import math

from custom_ops.jit import njit_exact

__all__ = ["factors_apart"]


@njit_exact
def factors_apart(a11, a12, a22, b1, b2):
    """The two-feature row update's integral taken as if the two factors were
    independent given the data (the cross term ``a12`` dropped)."""
    return -0.5 * math.log(a11 * a22) + 0.5 * (b1 * b1 / a11 + b2 * b2 / a22)
