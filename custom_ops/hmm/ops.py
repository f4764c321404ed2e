"""The forward algorithm's log evidence as a PyTensor Op, with its gradient.

``hmm_log_evidence(log_pi0, log_P, log_lik, offsets)`` is ``log p(y | theta)`` with the
state path summed out, summed over the sequences ``offsets`` delimits
(:mod:`custom_ops.hmm.forward_backward`). Its gradient is analytic: ``log p(y)`` is
``log sum_s exp(score(s))`` with ``score(s) = log_pi0[s_1] + sum_t log_P[s_{t-1}, s_t] +
sum_t log_lik[t, s_t]``, so the derivative in each term is its posterior expectation
(Ghahramani & Roweis 1999, the E step's statistics)::

    d log p(y) / d log_lik[t, k] = gamma_t(k)              (smoothed marginals)
    d log p(y) / d log_P[i, j]   = sum_t xi_t(i, j)        (expected transitions)
    d log p(y) / d log_pi0[k]    = sum_seq gamma_first(k)  (expected initial states)

which one forward-backward pass gives (:class:`HMMLogEvidenceGrad`). ``offsets`` is
integer data: no gradient. The derivatives hold for unnormalised inputs too, so PyMC's
transformed simplex parameters reach them through ``log``.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.hmm.forward_backward import forward_backward_kernel
from custom_ops.jit import register_numba_op

__all__ = ["HMMLogEvidence", "HMMLogEvidenceGrad", "hmm_log_evidence"]


def _inputs(log_pi0, log_P, log_lik, offsets):
    log_pi0 = pt.as_tensor_variable(log_pi0)
    log_P = pt.as_tensor_variable(log_P)
    log_lik = pt.as_tensor_variable(log_lik)
    offsets = pt.as_tensor_variable(offsets)
    for name, var, ndim in (("log_pi0", log_pi0, 1), ("log_P", log_P, 2), ("log_lik", log_lik, 2)):
        if var.ndim != ndim:
            raise TypeError(f"{name} must be a {ndim}-D tensor, got ndim={var.ndim}")
        if not var.dtype.startswith("float"):
            raise TypeError(f"{name} must be a float tensor, got dtype {var.dtype}")
    if offsets.ndim != 1 or not offsets.dtype.startswith(("int", "uint")):
        raise TypeError(
            f"offsets must be a 1-D integer tensor, got ndim={offsets.ndim}, dtype={offsets.dtype}"
        )
    K = [
        s
        for s in (log_pi0.type.shape[0], *log_P.type.shape, log_lik.type.shape[1])
        if s is not None
    ]
    if len(set(K)) > 1:
        raise ValueError(
            f"log_pi0 (K,), log_P (K, K) and log_lik (T, K) disagree on the "
            f"number of states: {sorted(set(K))}"
        )
    return [
        pt.cast(log_pi0, "float64"),
        pt.cast(log_P, "float64"),
        pt.cast(log_lik, "float64"),
        pt.cast(offsets, "int64"),
    ]


def _check_offsets(offsets, T):
    if offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != T or np.any(np.diff(offsets) <= 0):
        raise ValueError(f"offsets must rise strictly from 0 to T = {T}, got {offsets}")


class HMMLogEvidence(Op):
    """``log p(y | log_pi0, log_P, log_lik)``, the path summed out, summed over sequences.

    Inputs ``(log_pi0 (K,), log_P (K, K), log_lik (T, K), offsets (n_seq + 1,))``; output
    a float64 scalar (``-inf`` for data impossible under the parameters).
    """

    __props__ = ()

    def make_node(self, log_pi0, log_P, log_lik, offsets):
        inputs = _inputs(log_pi0, log_P, log_lik, offsets)
        return Apply(self, inputs, [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        log_pi0, log_P, log_lik, offsets = inputs
        _check_offsets(offsets, log_lik.shape[0])
        evidence = forward_backward_kernel(log_pi0, log_P, log_lik, offsets)[0]
        output_storage[0][0] = np.asarray(evidence.sum())

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        log_pi0, log_P, log_lik, offsets = inputs
        (g,) = cotangents
        d_pi0, d_P, d_lik = HMMLogEvidenceGrad()(log_pi0, log_P, log_lik, offsets)
        return [
            g * d_pi0,
            g * d_P,
            g * d_lik,
            grad_undefined(self, 3, offsets, "offsets are the sequences' boundaries"),
        ]


class HMMLogEvidenceGrad(Op):
    """The gradient of :class:`HMMLogEvidence` in ``(log_pi0, log_P, log_lik)``: the
    expected initial states, the expected transitions and the smoothed marginals."""

    __props__ = ()

    def make_node(self, log_pi0, log_P, log_lik, offsets):
        inputs = _inputs(log_pi0, log_P, log_lik, offsets)
        return Apply(self, inputs, [inputs[0].type(), inputs[1].type(), inputs[2].type()])

    def perform(self, node, inputs, output_storage):
        log_pi0, log_P, log_lik, offsets = inputs
        _check_offsets(offsets, log_lik.shape[0])
        _evidence, gamma, xi, initial = forward_backward_kernel(log_pi0, log_P, log_lik, offsets)
        output_storage[0][0] = initial
        output_storage[1][0] = xi
        output_storage[2][0] = gamma

    def infer_shape(self, node, input_shapes):
        return [input_shapes[0], input_shapes[1], input_shapes[2]]


def hmm_log_evidence(log_pi0, log_P, log_lik, offsets):
    """Symbolic ``log p(y | theta)`` of an HMM, the paths summed out (:class:`HMMLogEvidence`)."""
    return HMMLogEvidence()(log_pi0, log_P, log_lik, offsets)


@register_numba_op(HMMLogEvidence)
def _numba_hmm_log_evidence(op, node, **kwargs):
    @nb.numba_njit
    def hmm_log_evidence_numba(log_pi0, log_P, log_lik, offsets):
        # one array type for the kernel whatever the graph hands over (read-only inputs)
        evidence = forward_backward_kernel(
            np.ascontiguousarray(log_pi0),
            np.ascontiguousarray(log_P),
            np.ascontiguousarray(log_lik),
            np.ascontiguousarray(offsets),
        )[0]
        return np.asarray(evidence.sum())

    return hmm_log_evidence_numba


@register_numba_op(HMMLogEvidenceGrad)
def _numba_hmm_log_evidence_grad(op, node, **kwargs):
    @nb.numba_njit
    def hmm_log_evidence_grad_numba(log_pi0, log_P, log_lik, offsets):
        _evidence, gamma, xi, initial = forward_backward_kernel(
            np.ascontiguousarray(log_pi0),
            np.ascontiguousarray(log_P),
            np.ascontiguousarray(log_lik),
            np.ascontiguousarray(offsets),
        )
        return initial, xi, gamma

    return hmm_log_evidence_grad_numba
