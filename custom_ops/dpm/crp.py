"""Chinese-restaurant-process partition probabilities: Numba kernels and a PyTensor Op.

A partition of ``n`` items is stored as an integer label vector ``z`` in **canonical
form**: ``z[0] == 0`` and each new block gets the next integer in order of first
appearance (``z[i] <= max(z[:i]) + 1``). Every partition has exactly one canonical label
vector, so a probability mass function on partitions is a probability mass function on
canonical label vectors; non-canonical vectors get probability zero.

Exchangeable partition probability function (EPPF) of the two-parameter
(Pitman-Yor / Ewens-Pitman) Chinese restaurant with concentration ``alpha`` and discount
``0 <= d < 1`` (``alpha > -d``), for blocks of sizes ``n_1..n_K`` (Pitman 2006, Eq. 3.6;
for ``d = 0`` the Ewens formula, Murphy 2012 Eq. 25.60 / Heller 2007 Eq. 3.9)::

    p(z) = [prod_{k=1}^{K-1} (alpha + k d)] / [prod_{i=1}^{n-1} (alpha + i)]
           * prod_k Gamma(n_k - d) / Gamma(1 - d)

Kernels (``@numba.njit``)
-------------------------
``canonicalize(z) -> (labels, K)``
    Relabel any non-negative label vector in order of first appearance.
``is_canonical(z) -> bool``
    Whether ``z`` is in canonical form.
``block_sizes(z) -> counts``
    Block sizes of a canonical ``z`` (length ``K``).
``log_eppf(counts, alpha, discount) -> float``
    The log EPPF; ``log_eppf_grad`` returns ``(value, d/dalpha, d/ddiscount)``.
``crp_logp(z, alpha, discount) -> float``
    ``log p(z)``; ``-inf`` for a non-canonical or negative ``z`` or invalid parameters.
``crp_draw(rng, alpha, discount, n, out)``
    One partition by the sequential restaurant (Pitman 2006 §3.1; Murphy Eq. 25.28).

Op
--
``crp_logp_op(z, alpha, discount)``: the scalar ``log p(z)`` with gradients with respect
to ``alpha`` and ``discount`` (``z`` is discrete: no gradient).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.conjugate import digamma
from custom_ops.jit import njit_exact, register_numba_op

__all__ = [
    "CRPLogp",
    "CRPLogpGrad",
    "block_sizes",
    "canonicalize",
    "crp_draw",
    "crp_logp",
    "crp_logp_op",
    "is_canonical",
    "log_eppf",
    "log_eppf_grad",
]



@njit_exact
def canonicalize(z):
    """Relabel ``z`` (non-negative ints) by order of first appearance; return (labels, K)."""
    n = z.shape[0]
    out = np.empty(n, dtype=np.int64)
    if n == 0:
        return out, 0
    top = 0
    for i in range(n):
        if z[i] > top:
            top = z[i]
    K = 0
    if top < 8 * n + 64:
        mapping = np.full(top + 1, -1, dtype=np.int64)
        for i in range(n):
            v = z[i]
            if mapping[v] < 0:
                mapping[v] = K
                K += 1
            out[i] = mapping[v]
        return out, K
    # Huge label values: sort-based relabelling keeps memory O(n).
    order = np.argsort(z, kind="mergesort")
    first = np.empty(n, dtype=np.int64)
    group = np.empty(n, dtype=np.int64)
    g = -1
    for r in range(n):
        i = order[r]
        if r == 0 or z[i] != z[order[r - 1]]:
            g += 1
            first[g] = i
        group[i] = g
    n_groups = g + 1
    # rank groups by the position of their first member
    rank = np.empty(n_groups, dtype=np.int64)
    by_first = np.argsort(first[:n_groups])
    for r in range(n_groups):
        rank[by_first[r]] = r
    for i in range(n):
        out[i] = rank[group[i]]
    return out, n_groups


@njit_exact
def is_canonical(z):
    top = -1
    for i in range(z.shape[0]):
        v = z[i]
        if v < 0 or v > top + 1:
            return False
        if v == top + 1:
            top = v
    return True


@njit_exact
def block_sizes(z):
    """Sizes of the blocks of a canonical ``z``."""
    K = 0
    for i in range(z.shape[0]):
        if z[i] + 1 > K:
            K = z[i] + 1
    counts = np.zeros(K, dtype=np.int64)
    for i in range(z.shape[0]):
        counts[z[i]] += 1
    return counts


@njit_exact
def valid_parameters(alpha, discount):
    return (
        math.isfinite(alpha)
        and math.isfinite(discount)
        and 0.0 <= discount < 1.0
        and alpha > -discount
    )


@njit_exact
def log_eppf(counts, alpha, discount):
    """log EPPF of blocks with sizes ``counts`` (Pitman 2006 Eq. 3.6)."""
    K = counts.shape[0]
    n = 0
    for k in range(K):
        n += counts[k]
    out = 0.0
    if discount == 0.0:
        out += (K - 1) * math.log(alpha)
        for k in range(K):
            out += math.lgamma(counts[k])
    else:
        for k in range(1, K):
            out += math.log(alpha + k * discount)
        g1 = math.lgamma(1.0 - discount)
        for k in range(K):
            out += math.lgamma(counts[k] - discount) - g1
    # prod_{i=1}^{n-1} (alpha + i) = Gamma(alpha + n) / Gamma(alpha + 1)
    out -= math.lgamma(alpha + n) - math.lgamma(alpha + 1.0)
    return out


@njit_exact
def log_eppf_grad(counts, alpha, discount):
    """(log EPPF, d/dalpha, d/ddiscount)."""
    K = counts.shape[0]
    n = 0
    for k in range(K):
        n += counts[k]
    g_alpha = -(digamma(alpha + n) - digamma(alpha + 1.0))
    g_disc = 0.0
    for k in range(1, K):
        w = 1.0 / (alpha + k * discount)
        g_alpha += w
        g_disc += k * w
    d1 = digamma(1.0 - discount)
    for k in range(K):
        g_disc += d1 - digamma(counts[k] - discount)
    return log_eppf(counts, alpha, discount), g_alpha, g_disc


@njit_exact
def crp_logp(z, alpha, discount):
    if not valid_parameters(alpha, discount) or not is_canonical(z):
        return -np.inf
    if z.shape[0] == 0:
        return 0.0
    return log_eppf(block_sizes(z), alpha, discount)


@njit_exact
def crp_logp_grad(z, alpha, discount):
    if not valid_parameters(alpha, discount) or not is_canonical(z) or z.shape[0] == 0:
        return 0.0, 0.0
    _v, ga, gd = log_eppf_grad(block_sizes(z), alpha, discount)
    return ga, gd


@njit_exact
def crp_draw(rng, alpha, discount, n, out):
    """Sequential restaurant: item i joins block k w.p. (n_k - d)/(alpha + i), a new block
    w.p. (alpha + K d)/(alpha + i) (Pitman 2006 §3.1)."""
    counts = np.zeros(n, dtype=np.int64)
    K = 0
    for i in range(n):
        u = rng.random() * (alpha + i)
        acc = alpha + K * discount
        if u < acc or i == 0:
            out[i] = K
            counts[K] = 1
            K += 1
            continue
        choice = K - 1
        for k in range(K):
            acc += counts[k] - discount
            if u < acc:
                choice = k
                break
        out[i] = choice
        counts[choice] += 1


# --------------------------------------------------------------------------------------
# PyTensor Op
# --------------------------------------------------------------------------------------
def _as_labels(z):
    z = pt.as_tensor_variable(z)
    if z.ndim != 1 or not z.dtype.startswith(("int", "uint")):
        raise TypeError(f"z must be a 1-D integer tensor, got ndim={z.ndim}, dtype={z.dtype}")
    return pt.cast(z, "int64")


def _as_scalar(x, name):
    x = pt.as_tensor_variable(x)
    if x.ndim != 0:
        raise TypeError(f"{name} must be a scalar, got ndim={x.ndim}")
    return pt.cast(x, "float64")


class CRPLogp(Op):
    """``log p(z | alpha, discount)`` of the two-parameter Chinese restaurant process.

    Inputs ``(z, alpha, discount)``: canonical int labels (n,), scalars. Output: float64
    scalar, ``-inf`` outside the support or for invalid parameters.
    """

    __props__ = ()

    def make_node(self, z, alpha, discount):
        z = _as_labels(z)
        alpha = _as_scalar(alpha, "alpha")
        discount = _as_scalar(discount, "discount")
        return Apply(self, [z, alpha, discount], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        z, alpha, discount = inputs
        output_storage[0][0] = np.asarray(crp_logp(z, float(alpha), float(discount)))

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        z, alpha, discount = inputs
        (g,) = cotangents
        g_alpha, g_disc = CRPLogpGrad()(z, alpha, discount)
        return [grad_undefined(self, 0, z, "z is a discrete partition"), g * g_alpha,
                g * g_disc]


class CRPLogpGrad(Op):
    """(d/dalpha, d/ddiscount) of :class:`CRPLogp`."""

    __props__ = ()

    def make_node(self, z, alpha, discount):
        z = _as_labels(z)
        alpha = _as_scalar(alpha, "alpha")
        discount = _as_scalar(discount, "discount")
        return Apply(
            self, [z, alpha, discount], [pt.scalar(dtype="float64"), pt.scalar(dtype="float64")]
        )

    def perform(self, node, inputs, output_storage):
        z, alpha, discount = inputs
        ga, gd = crp_logp_grad(z, float(alpha), float(discount))
        output_storage[0][0] = np.asarray(ga)
        output_storage[1][0] = np.asarray(gd)

    def infer_shape(self, node, input_shapes):
        return [(), ()]


def crp_logp_op(z, alpha, discount=0.0):
    """Symbolic ``log p(z | alpha, discount)`` (see :class:`CRPLogp`)."""
    return CRPLogp()(z, alpha, discount)


@register_numba_op(CRPLogp)
def _numba_crp_logp(op, node, **kwargs):
    @nb.numba_njit
    def crp_logp_numba(z, alpha, discount):
        return np.asarray(crp_logp(z, alpha.item(), discount.item()))

    return crp_logp_numba


@register_numba_op(CRPLogpGrad)
def _numba_crp_logp_grad(op, node, **kwargs):
    @nb.numba_njit
    def crp_logp_grad_numba(z, alpha, discount):
        ga, gd = crp_logp_grad(z, alpha.item(), discount.item())
        return np.asarray(ga), np.asarray(gd)

    return crp_logp_grad_numba

