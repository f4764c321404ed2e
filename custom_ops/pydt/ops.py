"""Pitman-Yor diffusion tree: joint log density of a tree, its divergence times and
Gaussian data at its leaves, as a PyTensor Op with exact reverse-mode gradients.

Knowles (2012) ch. 4 (digest ``knowles-nsfa-pydt.md`` §3). The tree representation,
the prior (Eqs. 4.23-4.28) and the Gaussian message recursion of the likelihood
(Eq. 4.26, digest §3.9) are written out once, in :mod:`custom_ops.pydt.density`, beside
the code that computes them.

Valid parameters (§4.4.2): ``c > 0``, ``sigma2 > 0``, ``alpha < 1`` and either
``alpha >= 0, theta >= -2 alpha`` (``theta = -2 alpha`` is the binary family, the DDT at
``theta = alpha = 0``), or ``alpha < 0, theta = -kappa alpha`` for an integer
``kappa >= 2`` (at most ``kappa`` children per node; ``kappa = 2`` is binary).
Outside them, or for an invalid tree, the Op returns ``-inf`` (and NaN gradients);
:func:`pydt_logp` raises ``ValueError`` for numeric bad input before building anything.

The prior draws (the sequential generative process) are in :mod:`custom_ops.pydt.draws`;
the cached-message MCMC sweep and greedy build in :mod:`custom_ops.pydt.messages`,
:mod:`custom_ops.pydt.sweep` and :mod:`custom_ops.pydt.greedy`.

The kernels (prior, likelihood, their gradients, parameter and tree checks) are in
:mod:`custom_ops.pydt.density`; this module holds the Ops, their Numba registrations and
:func:`pydt_logp`, and re-exports the kernels' public names.
"""

from __future__ import annotations

import functools

import numpy as np
import pytensor.tensor as pt
from numba import carray, types
from pytensor.gradient import DisconnectedType, grad_undefined
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.jit import c_entry_points, register_numba_op
from custom_ops.pydt.density import (
    PARAMETER_ERRORS,
    Cotangents,
    PYDTParameters,
    check_parameters,
    check_tree,
    choose_branch,
    edge_length,
    h_table,
    log_split_prob,
    log_structure_prob,
    parameter_code,
    pydt_forward,
    pydt_forward_inline,
    pydt_value_and_grad,
    pydt_value_and_grad_flagged,
    pydt_value_and_grad_into,
)

__all__ = [
    "PARAMETER_ERRORS",
    "Cotangents",
    "PYDTLogProb",
    "PYDTLogProbGrad",
    "PYDTParameters",
    "check_parameters",
    "check_tree",
    "choose_branch",
    "edge_length",
    "h_table",
    "log_split_prob",
    "log_structure_prob",
    "parameter_code",
    "pydt_forward",
    "pydt_logp",
    "pydt_logp_terms",
    "pydt_value_and_grad",
]


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------
def _float_scalar(x, name):
    x = pt.as_tensor_variable(x)
    if x.ndim != 0:
        raise ValueError(f"{name}: must be a scalar, got ndim {x.ndim}")
    return pt.cast(x, "float64") if x.dtype != "float64" else x


class PYDTLogProb(Op):
    """``(parent, log1m_t, X, c, theta, alpha, sigma2) -> (log prior, log likelihood)``.

    ``log prior`` = log p(structure, times | c, theta, alpha) (Eqs. 4.23 x 4.25);
    ``log likelihood`` = log p(X | tree, sigma2) (Eq. 4.26, internal locations integrated
    out). ``X`` with zero columns gives the prior alone. Differentiable in ``log1m_t``,
    ``X``, ``c``, ``theta``, ``alpha``, ``sigma2``; ``parent`` is discrete.
    """

    __props__ = ()

    def make_node(self, parent, log1m_t, X, c, theta, alpha, sigma2):
        parent = pt.as_tensor_variable(parent)
        if parent.ndim != 1 or not parent.dtype.startswith(("int", "uint")):
            raise TypeError(f"parent: must be a 1-D integer tensor, got {parent.type}")
        parent = pt.cast(parent, "int64") if parent.dtype != "int64" else parent
        log1m_t = pt.as_tensor_variable(log1m_t)
        if log1m_t.ndim != 1:
            raise ValueError(f"log1m_t: must be 1-D, got ndim {log1m_t.ndim}")
        log1m_t = pt.cast(log1m_t, "float64") if log1m_t.dtype != "float64" else log1m_t
        X = pt.as_tensor_variable(X)
        if X.ndim != 2:
            raise ValueError(f"X: must be 2-D (n leaves, D dimensions), got ndim {X.ndim}")
        X = pt.cast(X, "float64") if X.dtype != "float64" else X
        c, theta, alpha, sigma2 = (
            _float_scalar(v, nm)
            for v, nm in ((c, "c"), (theta, "theta"), (alpha, "alpha"), (sigma2, "sigma2"))
        )
        if all(isinstance(v, Constant) for v in (c, theta, alpha, sigma2)):
            check_parameters(c.data, theta.data, alpha.data, sigma2.data)
        if isinstance(parent, Constant) and isinstance(log1m_t, Constant):
            n_static = X.type.shape[0]
            check_tree(parent.data, log1m_t.data, n_static)
        return Apply(
            self,
            [parent, log1m_t, X, c, theta, alpha, sigma2],
            [pt.dscalar("log_prior"), pt.dscalar("log_lik")],
        )

    def perform(self, node, inputs, output_storage):
        parent, log1m_t, X, c, theta, alpha, sigma2 = inputs
        lp, ll = pydt_forward(
            np.ascontiguousarray(parent, dtype=np.int64),
            np.ascontiguousarray(log1m_t, dtype=np.float64),
            np.ascontiguousarray(X, dtype=np.float64),
            float(c), float(theta), float(alpha), float(sigma2),
        )
        output_storage[0][0] = np.asarray(lp, dtype=np.float64)
        output_storage[1][0] = np.asarray(ll, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        return [(), ()]

    def pullback(self, inputs, outputs, cotangents):
        parent, log1m_t, X, c, theta, alpha, sigma2 = inputs
        g_prior, g_lik = cotangents
        if isinstance(g_prior.type, DisconnectedType):
            g_prior = pt.constant(0.0, dtype="float64")
        if isinstance(g_lik.type, DisconnectedType):
            g_lik = pt.constant(0.0, dtype="float64")
        if isinstance(X, Constant):
            # constant data (observed X in a PyMC model): its gradient is never taken,
            # so the gradient Op skips the leaves' adjoints
            g_l, *g_params = PYDTLogProbGrad(wrt_data=False)(
                parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik)
            grads = [g_l, pt.zeros_like(X), *g_params]
        else:
            grads = PYDTLogProbGrad()(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior,
                                      g_lik)
        return [grad_undefined(self, 0, parent, "parent (the tree) is discrete"), *grads]

    if not hasattr(Op, "pullback"):  # pytensor < 3
        L_op = pullback


class PYDTLogProbGrad(Op):
    """Gradient of :class:`PYDTLogProb` given the cotangents of both outputs:
    ``(d log1m_t, d X, d c, d theta, d alpha, d sigma2)``; without ``d X`` when
    ``wrt_data=False`` (data held constant, as observed data in a PyMC model: the
    adjoints of the leaves are then neither stored nor returned)."""

    __props__ = ("wrt_data",)

    def __init__(self, wrt_data=True):
        self.wrt_data = bool(wrt_data)

    def make_node(self, parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik):
        g_prior = _float_scalar(g_prior, "g_prior")
        g_lik = _float_scalar(g_lik, "g_lik")
        inputs = [parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik]
        outputs = [log1m_t.type(), *([X.type()] if self.wrt_data else []), c.type(),
                   theta.type(), alpha.type(), sigma2.type()]
        return Apply(self, inputs, outputs)

    def perform(self, node, inputs, output_storage):
        parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik = inputs
        out = pydt_value_and_grad_flagged(
            np.ascontiguousarray(parent, dtype=np.int64),
            np.ascontiguousarray(log1m_t, dtype=np.float64),
            np.ascontiguousarray(X, dtype=np.float64),
            PYDTParameters(float(c), float(theta), float(alpha), float(sigma2)),
            Cotangents(float(g_prior), float(g_lik)), self.wrt_data,
        )
        output_storage[0][0] = out[2]
        k0 = 1
        if self.wrt_data:
            output_storage[1][0] = out[3]
            k0 = 2
        for k in range(4):
            output_storage[k0 + k][0] = np.asarray(out[4 + k], dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        data = [input_shapes[2]] if self.wrt_data else []
        return [input_shapes[1], *data, (), (), (), ()]


# --------------------------------------------------------------------------------------
# Numba registrations: the graph calls the kernels through C entry points.
#
# PyTensor's Numba backend links the code of every function a graph calls into that
# graph's LLVM module and optimises it again there, so each distinct graph holding these
# Ops (every model variant, every gradient graph) would re-generate the whole tree
# recursion. Instead the kernels are compiled once as C entry points
# (``custom_ops.jit.c_entry_points``, cached on disk) and the graph holds only a thin wrapper
# calling them; the gradient writes straight into the wrapper's output arrays: less
# compiling, the same warm speed (docs/development.md). The kernels raise nothing for
# bad input (an invalid tree or parameters give -inf and NaN gradients); any exception
# escaping them (a C callback cannot raise) becomes a status, raised by the thin wrapper
# as a RuntimeError naming the Op.
# --------------------------------------------------------------------------------------
_TREE_AND_DATA = (
    types.CPointer(types.int64),  # parent, C-contiguous
    types.int64,  # len(parent)
    types.CPointer(types.float64),  # log1m_t, C-contiguous
    types.int64,  # len(log1m_t)
    types.CPointer(types.float64),  # X, C-contiguous
    types.int64,  # rows of X (leaves)
    types.int64,  # columns of X
    types.float64,  # c
    types.float64,  # theta
    types.float64,  # alpha
    types.float64,  # sigma2
)
_FORWARD_SIG = types.int64(
    *_TREE_AND_DATA,
    types.CPointer(types.float64),  # out: (log prior, log likelihood)
)
_GRAD_SIG = types.int64(
    *_TREE_AND_DATA,
    types.float64,  # w_prior: cotangent of the log prior
    types.float64,  # w_lik: cotangent of the log likelihood
    types.int64,  # wrt_data: 1 to write d/dX
    types.CPointer(types.float64),  # out: d/d log1m_t, len(log1m_t)
    types.CPointer(types.float64),  # out: d/dX, rows x columns of X (if wrt_data)
    types.CPointer(types.float64),  # out: (lp, ll, d/dc, d/dtheta, d/dalpha, d/dsigma2)
)
_KERNEL_FAILED = 1
_FORWARD_FAILED = ("PYDTLogProb: the Numba kernel raised an exception; the same inputs "
                   "through pydt_forward() or the Op's perform show it")
_GRAD_FAILED = ("PYDTLogProbGrad: the Numba kernel raised an exception; the same inputs "
                "through pydt_value_and_grad() or the Op's perform show it")


# Vectorised: the sums over the D dimensions (``qw += diff * diff``) are vectorised by
# LLVM only if it may reassociate, which makes the value markedly faster at large D, so the
# entry points allow it. Not 'nnan'/'ninf': the checks for NaN and the -inf of an
# invalid tree stay (and error_model="numpy", as for every kernel here). The bodies are
# inlined into the entry points, so the exact pydt_forward the samplers call is another
# compiled function, and the recursion is compiled once more per process, not twice (a
# jitted function in between would be compiled, then linked into the entry point and
# optimised again).
_ENTRY_OPTIONS = {"fastmath": {"reassoc", "contract", "nsz", "arcp"}, "error_model": "numpy"}


def _forward_entry(pp, n_nodes, lp_, n_int, xp, n, d, c, theta, alpha, sigma2, outp):
    try:
        out = carray(outp, (2,))
        out[0], out[1] = pydt_forward_inline(
            carray(pp, (n_nodes,)), carray(lp_, (n_int,)), carray(xp, (n, d)), c, theta,
            alpha, sigma2)
    except Exception:  # nopython mode catches no narrower class
        return _KERNEL_FAILED
    return 0


def _grad_entry(pp, n_nodes, lp_, n_int, xp, n, d, c, theta, alpha, sigma2, w_prior,
                w_lik, wrt_data, glp, gxp, outp):
    try:
        g_x = carray(gxp, (n, d)) if wrt_data else carray(gxp, (0, 0))
        out = carray(outp, (6,))
        out[:] = pydt_value_and_grad_into(
            carray(pp, (n_nodes,)), carray(lp_, (n_int,)), carray(xp, (n, d)),
            PYDTParameters(c, theta, alpha, sigma2), Cotangents(w_prior, w_lik),
            wrt_data != 0, carray(glp, (n_int,)), g_x)
    except Exception:
        return _KERNEL_FAILED
    return 0


@functools.cache
def _entry_points():
    (forward,) = c_entry_points("pydt", _FORWARD_SIG, cfunc_options=_ENTRY_OPTIONS,
                                forward=_forward_entry)
    (grad,) = c_entry_points("pydt", _GRAD_SIG, cfunc_options=_ENTRY_OPTIONS,
                             grad=_grad_entry)
    return forward, grad


@register_numba_op(PYDTLogProb)
def _numba_pydt_logprob(op, node, **kwargs):
    forward, _ = _entry_points()

    @nb.numba_njit
    def f(parent, log1m_t, X, c, theta, alpha, sigma2):
        parent = np.ascontiguousarray(parent)
        log1m_t = np.ascontiguousarray(log1m_t)
        X = np.ascontiguousarray(X)
        out = np.empty(2)
        # .ctypes (not .ctypes.data) holds a reference: a copy made above stays alive
        status = forward(parent.ctypes, parent.shape[0], log1m_t.ctypes, log1m_t.shape[0],
                         X.ctypes, X.shape[0], X.shape[1], c.item(), theta.item(),
                         alpha.item(), sigma2.item(), out.ctypes)
        if status != 0:
            raise RuntimeError(_FORWARD_FAILED)
        return np.asarray(out[0]), np.asarray(out[1])

    return f


@register_numba_op(PYDTLogProbGrad)
def _numba_pydt_logprob_grad(op, node, **kwargs):
    _, grad = _entry_points()
    wrt_data = 1 if op.wrt_data else 0

    @nb.numba_njit
    def gradients(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik):
        parent = np.ascontiguousarray(parent)
        log1m_t = np.ascontiguousarray(log1m_t)
        X = np.ascontiguousarray(X)
        g_l = np.empty(log1m_t.shape[0])
        g_x = np.empty((X.shape[0], X.shape[1]) if wrt_data else (0, 0))
        out = np.empty(6)
        status = grad(parent.ctypes, parent.shape[0], log1m_t.ctypes, log1m_t.shape[0],
                      X.ctypes, X.shape[0], X.shape[1], c.item(), theta.item(),
                      alpha.item(), sigma2.item(), g_prior.item(), g_lik.item(), wrt_data,
                      g_l.ctypes, g_x.ctypes, out.ctypes)
        if status != 0:
            raise RuntimeError(_GRAD_FAILED)
        return g_l, g_x, out

    if op.wrt_data:
        @nb.numba_njit
        def f(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik):
            g_l, g_x, out = gradients(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior,
                                      g_lik)
            return (g_l, g_x, np.asarray(out[2]), np.asarray(out[3]), np.asarray(out[4]),
                    np.asarray(out[5]))
    else:
        @nb.numba_njit
        def f(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior, g_lik):
            g_l, _, out = gradients(parent, log1m_t, X, c, theta, alpha, sigma2, g_prior,
                                    g_lik)
            return (g_l, np.asarray(out[2]), np.asarray(out[3]), np.asarray(out[4]),
                    np.asarray(out[5]))

    return f


# --------------------------------------------------------------------------------------
# user-facing functions
# --------------------------------------------------------------------------------------
def _prepare(parent, log1m_t, X, c, theta, alpha, sigma2):
    """Eager validation of numeric inputs (ValueError naming the argument)."""
    if not isinstance(X, pt.TensorVariable):
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2:
            raise ValueError(f"X: must be a 2-D array (n leaves, D dimensions), got ndim "
                             f"{X.ndim}")
        if X.shape[0] < 2:
            raise ValueError(f"X: a diffusion tree needs n >= 2 leaves, got n = {X.shape[0]}")
        if not np.all(np.isfinite(X)):
            raise ValueError("X: contains NaN or infinite values")
    if not any(isinstance(v, pt.TensorVariable) for v in (c, theta, alpha, sigma2)):
        check_parameters(c, theta, alpha, sigma2)
    if not isinstance(parent, pt.TensorVariable) and not isinstance(
        log1m_t, pt.TensorVariable
    ):
        n = X.shape[0] if isinstance(X, np.ndarray) else None
        parent, log1m_t = check_tree(parent, log1m_t, n)
        if n is not None and parent.shape[0] != 2 * n - 1:
            raise ValueError(f"tree: parent has {parent.shape[0]} slots but X has n = {n} "
                             f"rows (need 2 n - 1)")
    return parent, log1m_t, X


def pydt_logp_terms(parent, log1m_t, X, c, theta, alpha, sigma2):
    """Symbolic ``(log prior, log likelihood)`` of a Pitman-Yor diffusion tree.

    Parameters
    ----------
    parent : (2 n - 1,) int array or tensor
        Parent of each node (leaves 0..n-1, internal slots n..2n-2; -1 root, -2 unused).
    log1m_t : (n - 1,) float array or tensor
        log(1 - t) of each internal slot (entries of unused slots are ignored).
    X : (n, D) array or tensor
        Data at the leaves (row i at leaf i); ``D = 0`` gives the prior alone.
    c, theta, alpha : scalars
        Divergence function ``a(t) = c / (1 - t)``; Pitman-Yor concentration and
        discount (ranges in the module docstring).
    sigma2 : scalar
        Brownian-motion variance per unit time.
    """
    parent, log1m_t, X = _prepare(parent, log1m_t, X, c, theta, alpha, sigma2)
    return PYDTLogProb()(parent, log1m_t, X, c, theta, alpha, sigma2)


def pydt_logp(parent, log1m_t, X, c, theta, alpha, sigma2):
    """log p(structure, times | c, theta, alpha) + log p(X | tree, sigma2) (symbolic);
    parameters as in :func:`pydt_logp_terms`."""
    lp, ll = pydt_logp_terms(parent, log1m_t, X, c, theta, alpha, sigma2)
    return lp + ll
