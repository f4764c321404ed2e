"""Indian buffet process probabilities: Numba kernels and a PyTensor Op.

A feature allocation of ``D`` rows (the "customers"; the observed dimensions in sparse
factor analysis) is stored as a binary ``D x C`` matrix ``Z`` with ``C`` slots; a column
that is all zero is an inactive slot. ``m_k = sum_d Z_dk`` and ``K+`` is the number of
non-zero columns.

Two probabilities are computed:

- **the left-ordered-form class** (Knowles 2012 Eq. 2.12; Griffiths & Ghahramani 2011
  Eq. 14), the probability the buffet process gives to the equivalence class of ``Z``
  under column permutations::

      P([Z]) = alpha^K+ / prod_{h>0} K_h! * exp(-alpha H_D)
               * prod_{k: m_k>0} (D - m_k)! (m_k - 1)! / D!

  with ``H_D = sum_{j<=D} 1/j`` and ``K_h`` the number of columns whose D-bit history is
  ``h`` (the thesis prints "rows": erratum 2 of the spec digest). Summed over all
  classes it is 1.
- **the matrix** ``Z`` itself, when the ``K+`` active columns of a class drawn by the
  buffet are placed in ``C`` slots uniformly at random (what :func:`ibp_draw` does). A
  class has ``C! / ((C - K+)! prod_h K_h!)`` distinct arrangements, all equally likely,
  so ``K_h!`` cancels::

      P(Z) = P([Z]) (C - K+)! prod_h K_h! / C!
           = alpha^K+ exp(-alpha H_D) prod_k (D - m_k)! (m_k - 1)! / D! * (C - K+)! / C!

  This is a probability mass function over binary ``D x C`` matrices (it sums to
  ``P(K+ <= C)``, which is 1 up to the truncation the slots impose), invariant to
  permuting the columns.

Both have the same derivative in ``alpha``: ``K+ / alpha - H_D``.

Kernels (``@numba.njit``)
-------------------------
``feature_counts(Z) -> m``, ``n_active(Z) -> K+``, ``harmonic(D) -> H_D``,
``log_history_multiplicity(Z) -> sum_h log K_h!``,
``ibp_log_lof(Z, alpha)``, ``ibp_log_matrix(Z, alpha)``, ``ibp_dlogp_dalpha(Z, alpha)``,
``ibp_draw(rng, alpha, C, out)``: one draw by the buffet (Knowles §2.6.3) placed in
random slots; raises ``ValueError`` when it needs more than ``C`` columns.

Op
--
``ibp_logp_op(Z, alpha, lof_class=False)``: the scalar log probability with its gradient
in ``alpha`` (``Z`` is discrete: no gradient).
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.jit import njit_exact, register_numba_op

__all__ = [
    "IBPLogp",
    "IBPLogpGrad",
    "feature_counts",
    "harmonic",
    "ibp_dlogp_dalpha",
    "ibp_draw",
    "ibp_log_lof",
    "ibp_log_matrix",
    "ibp_logp_op",
    "is_binary",
    "log_history_multiplicity",
    "n_active",
]


#: Message of the error a draw raises when the buffet needs more columns than slots.
OVERFLOW_MESSAGE = (
    "IndianBuffet draw needs more active columns than k_max slots; raise k_max (e.g. "
    "IndianBuffet(..., k_max=...) or ibp_fa.model(..., capacity=...)) to well above "
    "alpha * H_n + 5 sqrt(alpha * H_n), where H_n = 1 + 1/2 + ... + 1/n_rows"
)


@njit_exact
def harmonic(D):
    out = 0.0
    for j in range(1, D + 1):
        out += 1.0 / j
    return out


@njit_exact
def is_binary(Z):
    D, C = Z.shape
    for d in range(D):
        for k in range(C):
            if Z[d, k] != 0 and Z[d, k] != 1:
                return False
    return True


@njit_exact
def feature_counts(Z):
    D, C = Z.shape
    m = np.zeros(C, dtype=np.int64)
    for d in range(D):
        for k in range(C):
            if Z[d, k] != 0:
                m[k] += 1
    return m


@njit_exact
def n_active(Z):
    m = feature_counts(Z)
    K = 0
    for k in range(m.shape[0]):
        if m[k] > 0:
            K += 1
    return K


@njit_exact
def _columns_equal(Z, a, b):
    for d in range(Z.shape[0]):
        if (Z[d, a] != 0) != (Z[d, b] != 0):
            return False
    return True


@njit_exact
def log_history_multiplicity(Z):
    """``sum_{h>0} log K_h!``: ``K_h`` counts the active columns with history ``h``."""
    D, C = Z.shape
    m = feature_counts(Z)
    active = np.empty(C, dtype=np.int64)
    keys = np.empty(C, dtype=np.uint64)
    K = 0
    for k in range(C):
        if m[k] > 0:
            # FNV-style hash of the column; equal hashes are verified exactly below
            h = np.uint64(1469598103934665603)
            for d in range(D):
                h = (h ^ np.uint64(1 if Z[d, k] != 0 else 2)) * np.uint64(1099511628211)
            active[K] = k
            keys[K] = h
            K += 1
    order = np.argsort(keys[:K])
    out = 0.0
    used = np.zeros(K, dtype=np.bool_)
    start = 0
    while start < K:
        stop = start + 1
        while stop < K and keys[order[stop]] == keys[order[start]]:
            stop += 1
        for i in range(start, stop):
            if used[i]:
                continue
            used[i] = True
            multiplicity = 1
            for j in range(i + 1, stop):
                if not used[j] and _columns_equal(Z, active[order[i]], active[order[j]]):
                    used[j] = True
                    multiplicity += 1
            out += math.lgamma(multiplicity + 1.0)
        start = stop
    return out


@njit_exact
def _log_common(Z, alpha):
    """``K+ log alpha - alpha H_D + sum_k log[(D - m_k)! (m_k - 1)! / D!]`` and ``K+``."""
    D = Z.shape[0]
    m = feature_counts(Z)
    log_fact_D = math.lgamma(D + 1.0)
    out = -alpha * harmonic(D)
    K = 0
    for k in range(m.shape[0]):
        if m[k] > 0:
            K += 1
            out += math.lgamma(D - m[k] + 1.0) + math.lgamma(m[k]) - log_fact_D
    out += K * math.log(alpha)
    return out, K


@njit_exact
def ibp_log_lof(Z, alpha):
    """log P([Z] | alpha), Eq. 2.12; ``-inf`` for a non-binary Z or ``alpha <= 0``."""
    # the helpers see one array type (C-contiguous, writable) whatever the caller passes
    # (PyTensor's read-only inputs, a column-permuted F-ordered view): one compile each
    Z_c = np.ascontiguousarray(Z)
    if not (alpha > 0.0 and math.isfinite(alpha)) or not is_binary(Z_c):
        return -np.inf
    value, _K = _log_common(Z_c, alpha)
    return value - log_history_multiplicity(Z_c)


@njit_exact
def ibp_log_matrix(Z, alpha):
    """log P(Z | alpha) of the matrix with uniformly arranged slots (module docstring)."""
    Z_c = np.ascontiguousarray(Z)  # one type for the helpers (see ibp_log_lof)
    if not (alpha > 0.0 and math.isfinite(alpha)) or not is_binary(Z_c):
        return -np.inf
    C = Z_c.shape[1]
    value, K = _log_common(Z_c, alpha)
    return value + math.lgamma(C - K + 1.0) - math.lgamma(C + 1.0)


@njit_exact
def ibp_dlogp_dalpha(Z, alpha):
    Z_c = np.ascontiguousarray(Z)  # one type for the helpers (see ibp_log_lof)
    if not (alpha > 0.0 and math.isfinite(alpha)) or not is_binary(Z_c):
        return 0.0
    return n_active(Z_c) / alpha - harmonic(Z_c.shape[0])


@njit_exact
def ibp_draw(rng, alpha, C, out):
    """One draw into ``out`` (D x C): the buffet (customer ``i`` takes dish ``k`` w.p.
    ``m_k / i``, then Poisson(alpha / i) new dishes), columns placed in uniformly random
    slots. Raises ``ValueError`` when more than ``C`` dishes are needed."""
    D = out.shape[0]
    dishes = np.zeros((D, C), dtype=np.int8)
    m = np.zeros(C, dtype=np.int64)
    K = 0
    for i in range(D):
        for k in range(K):
            if rng.random() * (i + 1) < m[k]:
                dishes[i, k] = 1
                m[k] += 1
        new = rng.poisson(alpha / (i + 1))
        if K + new > C:
            raise ValueError(OVERFLOW_MESSAGE)
        for _ in range(new):
            dishes[i, K] = 1
            m[K] = 1
            K += 1
    slots = np.arange(C)
    for i in range(C - 1, 0, -1):
        j = int(rng.random() * (i + 1))
        if j > i:
            j = i
        slots[i], slots[j] = slots[j], slots[i]
    for d in range(D):
        for k in range(C):
            out[d, k] = 0
    for k in range(K):
        s = slots[k]
        for d in range(D):
            out[d, s] = dishes[d, k]


# --------------------------------------------------------------------------------------
# PyTensor Op
# --------------------------------------------------------------------------------------
def _as_binary_matrix(Z):
    Z = pt.as_tensor_variable(Z)
    if Z.ndim != 2 or not Z.dtype.startswith(("int", "uint", "bool")):
        raise TypeError(f"Z must be a 2-D integer (binary) tensor, got ndim={Z.ndim}, "
                        f"dtype={Z.dtype}")
    return pt.cast(Z, "int8")


def _as_alpha(alpha):
    alpha = pt.as_tensor_variable(alpha)
    if alpha.ndim != 0:
        raise TypeError(f"alpha must be a scalar, got ndim={alpha.ndim}")
    return pt.cast(alpha, "float64")


class IBPLogp(Op):
    """``log P(Z | alpha)`` of the Indian buffet process.

    ``lof_class=False`` (default): the probability of the matrix with uniformly arranged
    slots; ``True``: the probability of its left-ordered-form class (Eq. 2.12). Inputs
    ``(Z, alpha)``: binary int8 ``(D, C)`` and a scalar. Output: float64 scalar, ``-inf``
    for a non-binary ``Z`` or ``alpha <= 0``.
    """

    __props__ = ("lof_class",)

    def __init__(self, lof_class: bool = False):
        self.lof_class = bool(lof_class)

    def make_node(self, Z, alpha):
        Z = _as_binary_matrix(Z)
        alpha = _as_alpha(alpha)
        return Apply(self, [Z, alpha], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        Z, alpha = inputs
        fn = ibp_log_lof if self.lof_class else ibp_log_matrix
        output_storage[0][0] = np.asarray(fn(Z, float(alpha)))

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        Z, alpha = inputs
        (g,) = cotangents
        return [grad_undefined(self, 0, Z, "Z is a discrete feature allocation"),
                g * IBPLogpGrad()(Z, alpha)]


class IBPLogpGrad(Op):
    """``d log P(Z | alpha) / d alpha = K+ / alpha - H_D`` (both forms of :class:`IBPLogp`)."""

    __props__ = ()

    def make_node(self, Z, alpha):
        Z = _as_binary_matrix(Z)
        alpha = _as_alpha(alpha)
        return Apply(self, [Z, alpha], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        Z, alpha = inputs
        output_storage[0][0] = np.asarray(ibp_dlogp_dalpha(Z, float(alpha)))

    def infer_shape(self, node, input_shapes):
        return [()]


def ibp_logp_op(Z, alpha, lof_class: bool = False):
    """Symbolic ``log P(Z | alpha)`` (see :class:`IBPLogp`)."""
    return IBPLogp(lof_class)(Z, alpha)


@register_numba_op(IBPLogp)
def _numba_ibp_logp(op, node, **kwargs):
    if op.lof_class:

        @nb.numba_njit
        def ibp_lof_numba(Z, alpha):
            return np.asarray(ibp_log_lof(Z, alpha.item()))

        return ibp_lof_numba

    @nb.numba_njit
    def ibp_matrix_numba(Z, alpha):
        return np.asarray(ibp_log_matrix(Z, alpha.item()))

    return ibp_matrix_numba


@register_numba_op(IBPLogpGrad)
def _numba_ibp_logp_grad(op, node, **kwargs):
    @nb.numba_njit
    def ibp_grad_numba(Z, alpha):
        return np.asarray(ibp_dlogp_dalpha(Z, alpha.item()))

    return ibp_grad_numba
