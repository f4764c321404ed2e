"""The Kalman log-likelihood of an LDS as a PyTensor Op, with its gradient.

``kalman_log_likelihood(y, A, C, Q, R, m0, P0)`` is ``log p(y_{1:T})`` under
``x_1 ~ N(m0, P0)``, ``x_t = A x_{t-1} + N(0, Q)``, ``y_t = C x_t + N(0, R)`` (Ghahramani
& Roweis 1999, "LDS Pseudocode": ``log P(y) = sum_t log rho_t``), NaN entries of ``y``
missing, computed by :func:`custom_ops.lds.kalman.kalman_log_likelihood_kernel`. It is
``-inf`` where an innovation covariance is not positive definite.

The gradient (:class:`KalmanLogLikelihoodGrad`) is exact and analytic, by Fisher's
identity ``d log p(y) / d theta = E[d log p(x, y | theta) / d theta | y]`` on the RTS
smoother's moments (:func:`custom_ops.lds.kalman.kalman_value_and_gradient_kernel`): one
filter pass forward and one smoother pass backward, no reverse-mode tape. The Op reads
only the symmetric parts of ``Q``, ``R`` and ``P0``, and its gradient in them is the
symmetric one; it needs ``Q``, ``R`` (each observed block) and ``P0`` positive definite.
The gradient in a missing entry of ``y`` is 0.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from numba import carray, types
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.jit import c_entry_points, register_numba_op
from custom_ops.lds.kalman import kalman_log_likelihood_kernel, kalman_value_and_gradient_kernel

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
        total = kalman_log_likelihood_kernel(*_contiguous(inputs))
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
        grads = kalman_value_and_gradient_kernel(*_contiguous(inputs))[1:]
        for storage, value in zip(output_storage, grads, strict=True):
            storage[0] = value

    def infer_shape(self, node, input_shapes):
        return list(input_shapes)


def kalman_log_likelihood(y, A, C, Q, R, m0, P0):
    """Symbolic ``log p(y)`` of an LDS (see :class:`KalmanLogLikelihood`)."""
    return KalmanLogLikelihood()(y, A, C, Q, R, m0, P0)


# --------------------------------------------------------------------------------------
# Numba registrations: the graph calls the kernels through one C entry point.
#
# PyTensor's Numba backend links the code of every function a graph calls into that
# graph's LLVM module and optimises it again there, so each distinct graph holding these
# Ops (a model's log-density, its gradient, the point functions of a sampler) would
# re-generate the filter, smoother and gradient code. Instead they are compiled once as a
# cached C entry point (``custom_ops.jit.c_entry_points``) that computes the value or,
# asked, the value and the gradient, and the graph holds only a thin wrapper that calls
# it. A C callback cannot raise: it returns a status, the wrapper raises.
# --------------------------------------------------------------------------------------
_F64P = types.CPointer(types.float64)
# want_gradient, T, p, n, then y (T, p), A, C, Q, R, m0, P0 (C-contiguous), out: the value,
# then (if asked) the gradients in y, A, C, Q, R, m0, P0, flat, in that order
_ENTRY_SIG = types.int64(
    types.int64,
    types.int64,
    types.int64,
    types.int64,
    _F64P,
    _F64P,
    _F64P,
    _F64P,
    _F64P,
    _F64P,
    _F64P,
    _F64P,
)
_KERNEL_FAILED = 1
_FAILED = (
    "Kalman log-likelihood: the Numba kernel raised an exception; the same inputs "
    "through kalman_log_likelihood() in mode=Mode(linker='py') (the Op's perform) show it"
)


def _kalman_entry(want_gradient, T, p, n, yp, Ap, Cp, Qp, Rp, m0p, P0p, outp):
    try:
        y = carray(yp, (T, p))
        A = carray(Ap, (n, n))
        C = carray(Cp, (p, n))
        Q = carray(Qp, (n, n))
        R = carray(Rp, (p, p))
        m0 = carray(m0p, (n,))
        P0 = carray(P0p, (n, n))
        size = 1 + T * p + 3 * n * n + p * n + p * p + n if want_gradient != 0 else 1
        out = carray(outp, (size,))
        if want_gradient == 0:
            total = kalman_log_likelihood_kernel(y, A, C, Q, R, m0, P0)
            out[0] = -np.inf if np.isnan(total) else total
        else:
            total, g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0 = kalman_value_and_gradient_kernel(
                y, A, C, Q, R, m0, P0
            )
            out[0] = -np.inf if np.isnan(total) else total
            # the order of the Op's inputs: y, A, C, Q, R, m0, P0
            k = 1
            for g in (
                g_y.ravel(),
                g_A.ravel(),
                g_C.ravel(),
                g_Q.ravel(),
                g_R.ravel(),
                g_m0,
                g_P0.ravel(),
            ):
                out[k : k + g.size] = g
                k += g.size
    except Exception:  # nopython mode catches no narrower class
        return _KERNEL_FAILED
    return 0


@functools.cache
def _entry_point():
    (entry,) = c_entry_points("lds", _ENTRY_SIG, kalman=_kalman_entry)
    return entry


def _kalman_runner(op_name):
    """A jitted call of the compiled Kalman entry point: the inputs made contiguous and
    their shapes checked, then ``mode`` 0 (the log-likelihood, an array of 1) or 1 (it
    and the gradients, packed in the input order)."""
    entry = _entry_point()
    mismatch = f"{op_name}: the inputs' shapes do not match"

    @nb.numba_njit
    def run(mode, y, A, C, Q, R, m0, P0):
        y = np.ascontiguousarray(y)
        A = np.ascontiguousarray(A)
        C = np.ascontiguousarray(C)
        Q = np.ascontiguousarray(Q)
        R = np.ascontiguousarray(R)
        m0 = np.ascontiguousarray(m0)
        P0 = np.ascontiguousarray(P0)
        T, p = y.shape
        n = A.shape[0]
        if (
            A.shape[1] != n
            or C.shape != (p, n)
            or Q.shape != (n, n)
            or R.shape != (p, p)
            or m0.shape[0] != n
            or P0.shape != (n, n)
        ):
            raise ValueError(mismatch)
        out = np.empty(1 if mode == 0 else 1 + T * p + 3 * n * n + p * n + p * p + n)
        # .ctypes (not .ctypes.data) holds a reference: a copy made above stays alive
        status = entry(
            np.int64(mode),
            T,
            p,
            n,
            y.ctypes,
            A.ctypes,
            C.ctypes,
            Q.ctypes,
            R.ctypes,
            m0.ctypes,
            P0.ctypes,
            out.ctypes,
        )
        if status != 0:
            raise RuntimeError(_FAILED)
        return out

    return run


@register_numba_op(KalmanLogLikelihood)
def _numba_kalman_log_likelihood(op, node, **kwargs):
    run = _kalman_runner("KalmanLogLikelihood")

    @nb.numba_njit
    def kalman_log_likelihood_numba(y, A, C, Q, R, m0, P0):
        return np.asarray(run(0, y, A, C, Q, R, m0, P0)[0])

    return kalman_log_likelihood_numba


@register_numba_op(KalmanLogLikelihoodGrad)
def _numba_kalman_log_likelihood_grad(op, node, **kwargs):
    run = _kalman_runner("KalmanLogLikelihoodGrad")

    @nb.numba_njit
    def kalman_log_likelihood_grad_numba(y, A, C, Q, R, m0, P0):
        out = run(1, y, A, C, Q, R, m0, P0)
        T, p = y.shape
        n = A.shape[0]
        k = 1
        g_y = out[k : k + T * p].copy().reshape((T, p))
        k += T * p
        g_A = out[k : k + n * n].copy().reshape((n, n))
        k += n * n
        g_C = out[k : k + p * n].copy().reshape((p, n))
        k += p * n
        g_Q = out[k : k + n * n].copy().reshape((n, n))
        k += n * n
        g_R = out[k : k + p * p].copy().reshape((p, p))
        k += p * p
        g_m0 = out[k : k + n].copy()
        k += n
        g_P0 = out[k : k + n * n].copy().reshape((n, n))
        return g_y, g_A, g_C, g_Q, g_R, g_m0, g_P0

    return kalman_log_likelihood_grad_numba
