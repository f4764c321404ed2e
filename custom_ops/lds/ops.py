"""The Kalman log-likelihood of an LDS as a PyTensor Op, with its gradient.

``kalman_log_likelihood(y, A, C, Q, R, m0, P0)`` is ``log p(y_{1:T})`` under
``x_1 ~ N(m0, P0)``, ``x_t = A x_{t-1} + N(0, Q)``, ``y_t = C x_t + N(0, R)`` (Ghahramani
& Roweis 1999, "LDS Pseudocode": ``log P(y) = sum_t log rho_t``), NaN entries of ``y``
missing, computed by :func:`custom_ops.lds.kalman.kalman_filter_kernel`. It is
``-inf`` where an innovation covariance is not positive definite.

The gradient (:class:`KalmanLogLikelihoodGrad`) is exact and analytic, by Fisher's
identity ``d log p(y) / d theta = E[d log p(x, y | theta) / d theta | y]`` on the RTS
smoother's moments (:func:`custom_ops.lds.kalman.kalman_gradient_kernel`): one filter
and one smoother pass, no reverse-mode tape. The Op reads only the symmetric parts of
``Q``, ``R`` and ``P0``, and its gradient in them is the symmetric one; it needs ``Q``,
``R`` (each observed block) and ``P0`` positive definite. The gradient in a missing
entry of ``y`` is 0.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.jit import register_numba_op
from custom_ops.lds.kalman import (
    kalman_filter_kernel,
    kalman_gradient_kernel,
    rts_smoother_kernel,
)

__all__ = ["KalmanLogLikelihood", "KalmanLogLikelihoodGrad", "kalman_log_likelihood"]

_INPUTS = (("y", 2), ("A", 2), ("C", 2), ("Q", 2), ("R", 2), ("m0", 1), ("P0", 2))


def _as_inputs(args):
    out = []
    for (name, ndim), value in zip(_INPUTS, args, strict=True):
        var = pt.as_tensor_variable(value)
        if var.ndim != ndim:
            raise TypeError(f"{name} must be a {ndim}-D tensor, got ndim={var.ndim}")
        if not (var.dtype.startswith("float") or var.dtype.startswith("int")):
            raise TypeError(f"{name} must be a real tensor, got dtype={var.dtype}")
        out.append(pt.cast(var, "float64"))
    return out


def _check_shapes(y, A, C, Q, R, m0, P0):
    """Runtime shape check (the symbolic shapes may be unknown at ``make_node``)."""
    n = A.shape[0]
    p = y.shape[1]
    expected = {"A": (n, n), "C": (p, n), "Q": (n, n), "R": (p, p), "m0": (n,), "P0": (n, n)}
    for name, value in zip(("A", "C", "Q", "R", "m0", "P0"), (A, C, Q, R, m0, P0), strict=True):
        if value.shape != expected[name]:
            raise ValueError(
                f"{name} must have shape {expected[name]} for y of shape "
                f"{y.shape} and A of shape {A.shape}, got {value.shape}"
            )


def _contiguous(args):
    return [np.ascontiguousarray(a, dtype=np.float64) for a in args]


class KalmanLogLikelihood(Op):
    """``log p(y)`` of an LDS (see the module docstring). Inputs ``(y, A, C, Q, R, m0,
    P0)``: float64 ``(T, p)``, ``(n, n)``, ``(p, n)``, ``(n, n)``, ``(p, p)``, ``(n,)``,
    ``(n, n)``. Output: a float64 scalar."""

    __props__ = ()

    def make_node(self, y, A, C, Q, R, m0, P0):
        inputs = _as_inputs((y, A, C, Q, R, m0, P0))
        return Apply(self, inputs, [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        _check_shapes(*inputs)
        log_lik = kalman_filter_kernel(*_contiguous(inputs))[0]
        total = log_lik.sum()
        output_storage[0][0] = np.asarray(-np.inf if np.isnan(total) else total)

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        (g,) = cotangents
        return [g * grad for grad in KalmanLogLikelihoodGrad()(*inputs)]


class KalmanLogLikelihoodGrad(Op):
    """The gradient of :class:`KalmanLogLikelihood` in each of its seven inputs (same
    shapes as the inputs), by Fisher's identity on the smoothed moments."""

    __props__ = ()

    def make_node(self, y, A, C, Q, R, m0, P0):
        inputs = _as_inputs((y, A, C, Q, R, m0, P0))
        return Apply(self, inputs, [v.type() for v in inputs])

    def perform(self, node, inputs, output_storage):
        _check_shapes(*inputs)
        y, A, C, Q, R, m0, P0 = _contiguous(inputs)
        _, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
        ms, Ps, cross = rts_smoother_kernel(A, mf, Pf, mp, Pp)
        grads = kalman_gradient_kernel(y, A, C, Q, R, m0, P0, ms, Ps, cross)
        # The gradient kernel's order is (A, C, Q, R, m0, P0, y).
        ordered = (grads[6], *grads[:6])
        for storage, value in zip(output_storage, ordered, strict=True):
            storage[0] = value

    def infer_shape(self, node, input_shapes):
        return list(input_shapes)


def kalman_log_likelihood(y, A, C, Q, R, m0, P0):
    """Symbolic ``log p(y)`` of an LDS (see :class:`KalmanLogLikelihood`)."""
    return KalmanLogLikelihood()(y, A, C, Q, R, m0, P0)


@register_numba_op(KalmanLogLikelihood)
def _numba_kalman_log_likelihood(op, node, **kwargs):
    @nb.numba_njit
    def kalman_log_likelihood_numba(y, A, C, Q, R, m0, P0):
        log_lik = kalman_filter_kernel(
            np.ascontiguousarray(y),
            np.ascontiguousarray(A),
            np.ascontiguousarray(C),
            np.ascontiguousarray(Q),
            np.ascontiguousarray(R),
            np.ascontiguousarray(m0),
            np.ascontiguousarray(P0),
        )[0]
        total = log_lik.sum()
        if np.isnan(total):
            total = -np.inf
        return np.asarray(total)

    return kalman_log_likelihood_numba


@register_numba_op(KalmanLogLikelihoodGrad)
def _numba_kalman_log_likelihood_grad(op, node, **kwargs):
    @nb.numba_njit
    def kalman_log_likelihood_grad_numba(y, A, C, Q, R, m0, P0):
        y = np.ascontiguousarray(y)
        A = np.ascontiguousarray(A)
        C = np.ascontiguousarray(C)
        Q = np.ascontiguousarray(Q)
        R = np.ascontiguousarray(R)
        m0 = np.ascontiguousarray(m0)
        P0 = np.ascontiguousarray(P0)
        _, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
        ms, Ps, cross = rts_smoother_kernel(A, mf, Pf, mp, Pp)
        g_A, g_C, g_Q, g_R, g_m0, g_P0, g_y = kalman_gradient_kernel(
            y, A, C, Q, R, m0, P0, ms, Ps, cross
        )
        return g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0

    return kalman_log_likelihood_grad_numba
