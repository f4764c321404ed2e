"""Univariate slice sampling by stepping out and shrinkage (Neal 2003, §4, Figs. 3 and 5):
the one slice-sampling routine of the package, used by the PYDT's divergence times
(:mod:`custom_ops.pydt.sweep`), its hyperparameters given the tree
(:mod:`custom_ops.pydt.hyper`) and, through its Python function, the hyperparameter
updates whose density is a compiled PyTensor graph (``inference.gibbs.pydt``).

The log density is a callable ``log_density(x, target)``: a Numba kernel in a kernel,
any Python callable from Python (``slice_sample.py_func``, the same code run by the
interpreter). ``target`` is passed through untouched: the state the density reads (and
may update, see the contract). :func:`slice_sample` is inlined into its caller
(``inline="always"``), where the density becomes a call of the kernel the caller names:
called through an argument with arrays or a structref in ``target``, Numba refused to
cache the caller ("dynamic globals").
"""

from __future__ import annotations

import math
from typing import NamedTuple

from custom_ops.jit import njit_exact

__all__ = ["SliceSettings", "slice_sample", "slice_sample_python"]


class SliceSettings(NamedTuple):
    """How :func:`slice_sample` brackets the slice: the initial ``width`` of the interval
    (stepping out), at most ``max_steps`` widths in all when stepping out (Neal's ``m``),
    and at most ``max_shrink`` shrinkage draws before it gives up and stays put."""

    width: float
    max_steps: int
    max_shrink: int


@njit_exact(inline="always")
def slice_sample(rng, log_density, target, x0, f0, lo, hi, settings):
    """One slice-sampling update of ``x0`` (Neal 2003: the level ``log y = f0 + log u``,
    then an interval found by stepping out (his Fig. 3, with the limit ``m`` split
    at random between the two sides) and a point drawn by shrinkage (his Fig. 5)).

    Parameters
    ----------
    rng : numpy.random.Generator
        The uniforms, in this order: the level, then (stepping out) the interval's
        position and the split of ``max_steps``, then one per shrinkage draw.
    log_density : callable ``(x, target) -> float``
        The log density, up to a constant; ``-inf`` (or NaN) outside the support.
    target
        Passed to ``log_density`` unchanged.
    x0, f0 : float
        The current value and its log density (not recomputed).
    lo, hi : float
        The support is the open interval ``(lo, hi)`` (infinite ends allowed). When both
        are finite the interval is the whole support (no stepping out); otherwise the
        stepped-out interval is clipped to it.
    settings : SliceSettings

    Returns
    -------
    (x, f)
        The new value and its log density; ``(x0, f0)`` when ``f0`` is not finite or
        ``max_shrink`` draws all fell outside the slice.

    Notes
    -----
    Contract with a ``log_density`` that caches state in ``target``: on return, the last
    value it was called at is the returned ``x`` (it is called at ``x0`` again when the
    update gives up), so the caches describe the returned state.
    """
    if not math.isfinite(f0):
        return x0, f0
    log_y = f0 + math.log(rng.random())
    if math.isfinite(lo) and math.isfinite(hi):
        left = lo
        right = hi
    else:
        width = settings.width
        left = max(x0 - width * rng.random(), lo)
        right = min(left + width, hi)
        j = int(settings.max_steps * rng.random())
        k = settings.max_steps - 1 - j
        while j > 0 and left > lo:
            if not log_density(left, target) > log_y:
                break
            left = max(left - width, lo)
            j -= 1
        while k > 0 and right < hi:
            if not log_density(right, target) > log_y:
                break
            right = min(right + width, hi)
            k -= 1
    for _ in range(settings.max_shrink):
        x1 = left + (right - left) * rng.random()
        if not lo < x1 < hi:
            continue
        f1 = log_density(x1, target)
        if f1 > log_y:
            return x1, f1
        if x1 < x0:
            left = x1
        else:
            right = x1
    # the bracket collapsed in floating point without hitting the slice: stay put
    log_density(x0, target)
    return x0, f0


#: :func:`slice_sample` run by the interpreter (the same code), for a ``log_density``
#: that is a Python callable (a compiled PyTensor graph, say)
slice_sample_python = getattr(slice_sample, "py_func", slice_sample)
