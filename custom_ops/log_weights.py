"""Unnormalised log weights inside Numba kernels: drawing an index, and their log-sum.

Every collapsed Gibbs sweep in the zoo ends a site update the same way: scores
``log w_a`` for the candidate values, then one draw with probability
``w_a / sum_b w_b``; a mixture density sums ``w_k p_k(x)`` given as logs. Subtracting the
largest score before exponentiating keeps the weights finite when the scores span
hundreds of nats.
"""

from __future__ import annotations

import math

from custom_ops.jit import njit_exact

__all__ = ["log_sum_exp", "sample_log_weights"]


@njit_exact
def sample_log_weights(log_weights, m, rng):
    """Index in ``[0, m)`` with probability proportional to ``exp(log_weights[:m])``.

    ``log_weights[:m]`` is overwritten with the unnormalised weights. ``rng`` is a NumPy
    ``Generator`` (passed into Numba), so a seeded caller gets a reproducible draw.
    """
    top = log_weights[0]
    for a in range(1, m):
        if log_weights[a] > top:
            top = log_weights[a]
    total = 0.0
    for a in range(m):
        log_weights[a] = math.exp(log_weights[a] - top)
        total += log_weights[a]
    u = rng.random() * total
    acc = 0.0
    for a in range(m):
        acc += log_weights[a]
        if u < acc:
            return a
    return m - 1


@njit_exact
def log_sum_exp(log_weights):
    """``log sum_a exp(log_weights[a])`` of a 1-D array; ``-inf`` when every weight is
    zero."""
    top = log_weights[0]
    for t in log_weights:
        top = max(top, t)
    if top == -math.inf:
        return top
    acc = 0.0
    for t in log_weights:
        acc += math.exp(t - top)
    return top + math.log(acc)
