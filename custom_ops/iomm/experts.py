"""Products of exponential-family experts (Heller 2007 §7.2) in natural parameters.

A point ``x_i`` in the clusters ``{k : z_ik = 1}`` has the normalised product density
(Eq. 7.2) ``p(x_i | z_i, Theta) = prod_k p_k(x_i | theta_k)^{z_ik} / c``. For experts in
one exponential family the product is in the same family with natural parameters
``phi~_i = sum_k z_ik phi(theta_k)`` (Eq. 7.4), so ``c`` is the family's normaliser at
``phi~_i``. The kernels keep, per slot ``k`` and dimension ``d``, the expert's natural
parameters ``E[k, d, :]`` and, per point, their sum over its clusters ``T[i, d, :]``:

- **Bernoulli** (``BERNOULLI``, one parameter): ``E[k, d, 0] = logit theta_kd`` and
  ``theta~_id = sigmoid(T[i, d, 0])``, which is Eq. 7.7::

      theta~_d = prod_k theta_kd^z_k / (prod_k (1 - theta_kd)^z_k + prod_k theta_kd^z_k).

  A point in no cluster has ``T = 0``, ``theta~ = 1/2``: the empty product of Eq. 7.7,
  the uniform distribution on ``{0, 1}^D``.
- **Gaussian** with diagonal covariances (``GAUSSIAN``, two parameters): ``E[k, d] =
  (tau_kd, tau_kd mu_kd)`` (precision, precision times mean); the product has precision
  ``P = T[i, d, 0]`` and the precision-weighted mean ``T[i, d, 1] / P`` (Eq. 7.5 with
  diagonal ``Sigma_k``). The empty product is the improper flat density, so a point in no
  cluster gets the background ``N(background[d, 0], background[d, 1]^2)``: the broad
  Gaussian that stands for the uniform in the thesis's footnote to Eq. 7.14.

Kernels (``@njit_exact``): :func:`point_sums` (``T`` from ``Z`` and ``E``),
:func:`row_sums` (one point's), :func:`dim_loglik` and :func:`row_loglik` (the log
density of one entry / one point at given sums), :func:`row_loglik_shift` (one point's
log density with one expert's parameters added or removed, without a copy).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "BERNOULLI",
    "GAUSSIAN",
    "N_NATURAL",
    "bernoulli_shift_gain",
    "dim_loglik",
    "log_product_step",
    "point_sums",
    "product_is_bounded",
    "row_loglik",
    "row_loglik_shift",
    "row_sums",
    "sigmoid_pair",
]

#: Likelihood codes, and the number of natural parameters per dimension of each.
BERNOULLI, GAUSSIAN = 0, 1
N_NATURAL = (1, 2)

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@njit_exact
def dim_loglik(code, x, t0, t1, empty, bg_mean, bg_sd):
    """Log density of one entry ``x`` under the product with natural sums ``(t0, t1)``
    (``t1`` unused for Bernoulli); ``empty``: the point is in no cluster."""
    if code == 0:
        # x eta - log(1 + e^eta), stable for large |eta|
        if t0 > 0.0:
            return x * t0 - t0 - math.log1p(math.exp(-t0))
        return x * t0 - math.log1p(math.exp(t0))
    if empty:
        z = (x - bg_mean) / bg_sd
        return -0.5 * z * z - math.log(bg_sd) - _HALF_LOG_2PI
    # log N(x; t1 / t0, 1 / t0) = 0.5 log t0 - (x t0 - t1)^2 / (2 t0) - 0.5 log 2 pi
    r = x * t0 - t1
    return 0.5 * math.log(t0) - 0.5 * r * r / t0 - _HALF_LOG_2PI


@njit_exact
def row_loglik(code, x, T, count, background):
    """``log p(x_i | z_i, Theta)`` for one point: ``x`` (D,), ``T`` (D, S) its natural
    sums, ``count`` its number of clusters, ``background`` (D, 2) mean and sd."""
    D = x.shape[0]
    empty = count == 0
    out = 0.0
    for d in range(D):
        t1 = T[d, 1] if code == 1 else 0.0
        out += dim_loglik(code, x[d], T[d, 0], t1, empty, background[d, 0],
                          background[d, 1])
    return out


@njit_exact
def row_loglik_shift(code, x, T, E_k, sign, count, background):
    """:func:`row_loglik` at ``T + sign * E_k`` with ``count + sign`` clusters (one expert
    added, ``sign = 1``, or removed, ``sign = -1``)."""
    D = x.shape[0]
    new_count = count + sign
    empty = new_count == 0
    out = 0.0
    for d in range(D):
        t0 = T[d, 0] + sign * E_k[d, 0]
        t1 = T[d, 1] + sign * E_k[d, 1] if code == 1 else 0.0
        out += dim_loglik(code, x[d], t0, t1, empty, background[d, 0], background[d, 1])
    return out


@njit_exact
def row_sums(Z_i, E, out):
    """Write ``sum_k Z_i[k] E[k]`` into ``out`` (D, S) and return the number of clusters
    (summed in slot order, so the same memberships give the same bits)."""
    C, D, S = E.shape
    for d in range(D):
        for s in range(S):
            out[d, s] = 0.0
    count = 0
    for k in range(C):
        if Z_i[k] != 0:
            count += 1
            for d in range(D):
                for s in range(S):
                    out[d, s] += E[k, d, s]
    return count


@njit_exact
def point_sums(Z, E):
    """``T`` (N, D, S) and the clusters per point ``counts`` (N,) from ``Z`` (N, C) and
    ``E`` (C, D, S)."""
    N = Z.shape[0]
    D, S = E.shape[1], E.shape[2]
    T = np.empty((N, D, S))
    counts = np.empty(N, dtype=np.int64)
    for i in range(N):
        counts[i] = row_sums(Z[i], E, T[i])
    return T, counts


@njit_exact
def sigmoid_pair(t):
    """``(sigmoid(t), sigmoid(-t))``, each to full relative precision."""
    if t >= 0.0:
        e = math.exp(-t)
        return 1.0 / (1.0 + e), e / (1.0 + e)
    e = math.exp(t)
    return e / (1.0 + e), 1.0 / (1.0 + e)


#: A running product is logged and reset once it leaves ``[1 / _BOUND, _BOUND]``; a factor
#: outside that range is logged alone, so no product under- or overflows.
_BOUND = 1e100


@njit_exact
def log_product_step(prod, acc, factor):
    """Multiply ``factor > 0`` into ``exp(acc) * prod``; returns the new ``(prod, acc)``
    (``acc + log(prod)`` is the log of the product so far)."""
    if factor < 1.0 / _BOUND or factor > _BOUND:
        return prod, acc + math.log(factor)
    prod *= factor
    if prod < 1.0 / _BOUND or prod > _BOUND:
        return 1.0, acc + math.log(prod)
    return prod, acc


@njit_exact
def bernoulli_shift_gain(x, e, odds, p, q, bounded):
    """``log p(x | t + e) - log p(x | t)`` for one point's Bernoulli entries (D,): ``e``
    the added natural parameters, ``odds = exp(e)``, ``p`` and ``q`` the sigmoids of
    ``t`` and ``-t`` (:func:`sigmoid_pair`); Eq. 7.7 in natural parameters.

    Each factor ``q + p odds`` lies between 1 and ``odds``, so the product lies between
    ``exp(sum min(e, 0))`` and ``exp(sum max(e, 0))``; ``bounded`` says the caller found
    both inside the normal floating-point range (:func:`product_is_bounded`), and the
    factors are then multiplied without guards, else through :func:`log_product_step`."""
    dot = 0.0
    prod = 1.0
    if bounded:
        for d in range(x.shape[0]):
            dot += x[d] * e[d]
            prod *= q[d] + p[d] * odds[d]
        return dot - math.log(prod)
    acc = 0.0
    for d in range(x.shape[0]):
        dot += x[d] * e[d]
        prod, acc = log_product_step(prod, acc, q[d] + p[d] * odds[d])
    return dot - (acc + math.log(prod))


#: Natural log of the largest product taken without guards (well inside the range of
#: normal doubles, ~1e+-308).
_LOG_SAFE = 690.0


@njit_exact
def product_is_bounded(e):
    """Whether every product of factors between 1 and ``exp(e[d])`` stays within
    ``exp(+-690)`` (:func:`bernoulli_shift_gain`'s ``bounded``)."""
    low = 0.0
    high = 0.0
    for d in range(e.shape[0]):
        if e[d] < 0.0:
            low += e[d]
        else:
            high += e[d]
    return low > -_LOG_SAFE and high < _LOG_SAFE
