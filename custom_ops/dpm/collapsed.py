"""Collapsed conjugate log-likelihood of data given a partition: a PyTensor Op.

For labels ``z`` (n,) and data ``X`` (n, d), with each block's component parameters
integrated out under a conjugate prior (Heller 2007 §2.1.1, Eqs. 2.12-2.14; Murphy 2012
Eq. 25.36-25.38)::

    log p(X | z, hyper) = sum over blocks k of log p(X[z == k] | hyper)

where each term is the conjugate marginal likelihood of ``custom_ops.conjugate``.
Families and their hyperparameter inputs (in this order, after ``z`` and ``X``):

==================  ==================================================================
``"bernoulli"``     ``a`` (d,), ``b`` (d,): Beta(a_j, b_j) per binary column
``"multinomial"``   ``concentration`` (K,): Dirichlet over the K count columns
``"gaussian"``      ``m0`` (d,), ``kappa0`` (), ``nu0`` (), ``S0`` (d, d): Normal-
                    Inverse-Wishart, full covariance
``diag_gaussian``   ``m0``, ``kappa0``, ``a0``, ``b0``, each (d,): Normal-Gamma per column
==================  ==================================================================

Labels may be any non-negative integers (blocks are the sets of equal labels); a
negative label or invalid hyperparameters give ``-inf``; legal NIW hyperparameters at
which a block's posterior scale is numerically not positive definite (an extreme kappa0
or S0, :mod:`custom_ops.conjugate.gaussian`) give NaN, value and gradient. Gradients:
with respect to every hyperparameter (``custom_ops.conjugate`` ``*_log_marginal_grad``
summed over blocks); ``z`` is discrete (undefined) and ``X`` is data (not implemented).
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytensor.tensor as pt
from numba import carray, types
from pytensor.gradient import grad_not_implemented, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops import conjugate as cj
from custom_ops.dpm.crp import canonicalize
from custom_ops.jit import c_entry_points, njit_exact, register_numba_op

__all__ = [
    "CollapsedLogLik",
    "CollapsedLogLikGrad",
    "collapsed_loglik",
    "collapsed_loglik_value",
    "draw_bernoulli",
    "draw_diag_gaussian",
    "draw_gaussian",
    "draw_multinomial",
]



# --------------------------------------------------------------------------------------
# grouped sums over the blocks, for every family through the custom_ops.conjugate
# dispatchers (a family code and one flat hyperparameter vector)
# --------------------------------------------------------------------------------------
@njit_exact
def _nonnegative(z):
    for i in range(z.shape[0]):
        if z[i] < 0:
            return False
    return True


@njit_exact
def _block_stats(fam, z, X):
    labels, K = canonicalize(z)
    S = np.zeros((K, cj.stats_size(fam, X.shape[1])))
    for i in range(X.shape[0]):
        cj.add(fam, S[labels[i]], X[i])
    return S


@njit_exact
def _value(fam, z, X, hp):
    """Σ_k log p(X[z == k] | hp); ``-inf`` for a negative label or invalid ``hp``."""
    if cj.hyper_error(fam, hp, X.shape[1], False) != 0 or not _nonnegative(z):
        return -np.inf
    S = _block_stats(fam, z, X)
    out = 0.0
    for k in range(S.shape[0]):
        out += cj.log_marginal(fam, S[k], hp)
    return out


@njit_exact
def _grad(fam, z, X, hp):
    """∂ :func:`_value` / ∂ hp (flat layout; zero where the value is ``-inf``)."""
    g = np.zeros(hp.shape[0])
    if cj.hyper_error(fam, hp, X.shape[1], False) != 0 or not _nonnegative(z):
        return g
    S = _block_stats(fam, z, X)
    for k in range(S.shape[0]):
        cj.log_marginal_grad(fam, S[k], hp, g, 1.0)
    return g


def collapsed_loglik_value(family, z, X, hyper) -> float:
    """``log p(X | z, hyper)`` in plain NumPy/Numba (no PyTensor)."""
    fam = cj.family_code(family)
    z = np.ascontiguousarray(z, dtype=np.int64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    return float(_value(fam, z, X, cj.pack_hyper(family, hyper)))


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------
def _make_inputs(family, z, X, hyper):
    cj.family_code(family)
    ndims = cj.HYPER_NDIMS[family]
    if len(hyper) != len(ndims):
        raise TypeError(f"{family}: expected {len(ndims)} hyperparameters, got {len(hyper)}")
    z = pt.as_tensor_variable(z)
    if z.ndim != 1 or not z.dtype.startswith(("int", "uint")):
        raise TypeError(f"z must be a 1-D integer tensor, got ndim={z.ndim}, dtype={z.dtype}")
    X = pt.as_tensor_variable(X)
    if X.ndim != 2:
        raise TypeError(f"X must be a 2-D tensor, got ndim={X.ndim}")
    hyper_vars = []
    names = cj.FAMILIES[family].hyper_names
    for name, h, nd in zip(names, hyper, ndims, strict=True):
        h = pt.as_tensor_variable(h)
        if h.ndim != nd:
            raise TypeError(f"{name} must have ndim {nd}, got {h.ndim}")
        hyper_vars.append(pt.cast(h, "float64"))
    return [pt.cast(z, "int64"), pt.cast(X, "float64"), *hyper_vars]


class CollapsedLogLik(Op):
    """``log p(X | z, hyper)`` with block parameters integrated out (see module doc)."""

    __props__ = ("family",)

    def __init__(self, family: str):
        cj.family_code(family)
        self.family = family

    def make_node(self, z, X, *hyper):
        inputs = _make_inputs(self.family, z, X, hyper)
        return Apply(self, inputs, [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        z, X, *hyper = inputs
        value = _value(
            cj.FAMILY_CODES[self.family],
            np.ascontiguousarray(z, dtype=np.int64),
            np.ascontiguousarray(X, dtype=np.float64),
            cj.pack_hyper(self.family, hyper),
        )
        output_storage[0][0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        z, X, *hyper = inputs
        (g,) = cotangents
        flat = CollapsedLogLikGrad(self.family)(z, X, *hyper)
        return [
            grad_undefined(self, 0, z, "z is a discrete partition"),
            grad_not_implemented(self, 1, X, "gradient with respect to the data"),
            *(g * gh for gh in cj.split_like(flat, hyper)),
        ]


class CollapsedLogLikGrad(Op):
    """Gradient of :class:`CollapsedLogLik` with respect to the hyperparameters, flat in
    :func:`custom_ops.conjugate.pack_hyper` layout (the ``pullback`` splits it)."""

    __props__ = ("family",)

    def __init__(self, family: str):
        cj.family_code(family)
        self.family = family

    def make_node(self, z, X, *hyper):
        inputs = _make_inputs(self.family, z, X, hyper)
        return Apply(self, inputs, [pt.dvector()])

    def perform(self, node, inputs, output_storage):
        z, X, *hyper = inputs
        output_storage[0][0] = _grad(
            cj.FAMILY_CODES[self.family],
            np.ascontiguousarray(z, dtype=np.int64),
            np.ascontiguousarray(X, dtype=np.float64),
            cj.pack_hyper(self.family, hyper),
        )

    def infer_shape(self, node, input_shapes):
        size = 0
        for shape in input_shapes[2:]:
            size = size + math.prod(shape) if shape else size + 1
        return [(size,)]


def collapsed_loglik(family: str, z, X, *hyper):
    """Symbolic ``log p(X | z, hyper)`` (see :class:`CollapsedLogLik`)."""
    return CollapsedLogLik(family)(z, X, *hyper)


# --------------------------------------------------------------------------------------
# Numba registrations: the graph calls the kernels through C entry points.
#
# PyTensor's Numba backend links the code of every function a graph calls into that
# graph's LLVM module and optimises it again there, so each distinct graph containing
# these Ops would re-generate the whole conjugate-marginal code. Instead the kernels are
# compiled once, for every family (the code is a run-time argument), as C entry points
# (``custom_ops.jit.c_entry_points``), and the graph holds only a thin wrapper that calls
# them: less compiling, the same warm speed (docs/development.md). A C callback cannot
# raise: it returns a status, the wrapper raises.
# --------------------------------------------------------------------------------------
_ENTRY_SIG = types.int64(
    types.int64,  # family code
    types.CPointer(types.int64),  # z, C-contiguous
    types.int64,  # len(z)
    types.CPointer(types.float64),  # X, C-contiguous
    types.int64,  # rows of X
    types.int64,  # columns of X
    types.CPointer(types.float64),  # hp, flat (pack_hyper layout)
    types.int64,  # len(hp)
    types.CPointer(types.float64),  # out: the value (1) or the gradient (len(hp))
)
_KERNEL_FAILED = 1
_FAILED = ("collapsed log-likelihood: the Numba kernel raised an exception; the same "
           "inputs through collapsed_loglik_value() or the Op's perform show it")


def _value_entry(fam, zp, nz, Xp, nx, d, hpp, nh, outp):
    try:
        out = carray(outp, (1,))
        out[0] = _value(fam, carray(zp, (nz,)), carray(Xp, (nx, d)), carray(hpp, (nh,)))
    except Exception:  # nopython mode catches no narrower class
        return _KERNEL_FAILED
    return 0


def _grad_entry(fam, zp, nz, Xp, nx, d, hpp, nh, outp):
    try:
        out = carray(outp, (nh,))
        out[:] = _grad(fam, carray(zp, (nz,)), carray(Xp, (nx, d)), carray(hpp, (nh,)))
    except Exception:
        return _KERNEL_FAILED
    return 0


@functools.cache
def _entry_points():
    return c_entry_points("collapsed", _ENTRY_SIG, value=_value_entry, grad=_grad_entry)


@register_numba_op(CollapsedLogLik)
def _numba_collapsed_loglik(op, node, **kwargs):
    fam = cj.FAMILY_CODES[op.family]
    value_entry, _ = _entry_points()

    @nb.numba_njit
    def f(z, X, *hyper):
        hp = cj.flatten_hyper(hyper)
        z = np.ascontiguousarray(z)
        X = np.ascontiguousarray(X)
        out = np.empty(1)
        # .ctypes (not .ctypes.data) holds a reference: a copy made above stays alive
        status = value_entry(fam, z.ctypes, z.shape[0], X.ctypes, X.shape[0], X.shape[1],
                             hp.ctypes, hp.shape[0], out.ctypes)
        if status != 0:
            raise RuntimeError(_FAILED)
        return np.asarray(out[0])

    return f


@register_numba_op(CollapsedLogLikGrad)
def _numba_collapsed_loglik_grad(op, node, **kwargs):
    fam = cj.FAMILY_CODES[op.family]
    _, grad_entry = _entry_points()

    @nb.numba_njit
    def g(z, X, *hyper):
        hp = cj.flatten_hyper(hyper)
        z = np.ascontiguousarray(z)
        X = np.ascontiguousarray(X)
        out = np.empty(hp.shape[0])
        status = grad_entry(fam, z.ctypes, z.shape[0], X.ctypes, X.shape[0], X.shape[1],
                            hp.ctypes, hp.shape[0], out.ctypes)
        if status != 0:
            raise RuntimeError(_FAILED)
        return out

    return g


# --------------------------------------------------------------------------------------
# Prior-predictive draws of X given z: per block, draw the component parameters from the
# conjugate prior, then the block's rows (used by the distributions' forward sampling).
# --------------------------------------------------------------------------------------
@njit_exact
def draw_bernoulli(rng, z, a, b, out):
    labels, K = canonicalize(z)
    d = a.shape[0]
    p = np.empty((K, d))
    for k in range(K):
        for j in range(d):
            p[k, j] = rng.beta(a[j], b[j])
    for i in range(z.shape[0]):
        for j in range(d):
            out[i, j] = 1.0 if rng.random() < p[labels[i], j] else 0.0


@njit_exact
def draw_multinomial(rng, z, concentration, n_trials, out):
    labels, K = canonicalize(z)
    C = concentration.shape[0]
    p = np.empty((K, C))
    for k in range(K):
        tot = 0.0
        for c in range(C):
            p[k, c] = rng.gamma(concentration[c], 1.0)
            tot += p[k, c]
        for c in range(C):
            p[k, c] /= tot
    for i in range(z.shape[0]):
        remaining = int(n_trials[i])
        rest = 1.0
        pk = p[labels[i]]
        for c in range(C):
            out[i, c] = 0.0
        for c in range(C - 1):
            if remaining <= 0:
                break
            q = min(1.0, max(0.0, pk[c] / rest)) if rest > 0.0 else 1.0
            draw = rng.binomial(remaining, q)
            out[i, c] = draw
            remaining -= draw
            rest -= pk[c]
        if remaining > 0:
            out[i, C - 1] = remaining


@njit_exact
def draw_gaussian(rng, z, m0, kappa0, nu0, S0, out):
    """Sigma ~ IW(nu0, S0) by Bartlett (Sigma = L (A Aᵀ)⁻¹ Lᵀ, S0 = L Lᵀ), mu ~ N(m0,
    Sigma/kappa0), rows ~ N(mu, Sigma)."""
    labels, K = canonicalize(z)
    d = m0.shape[0]
    L = np.linalg.cholesky(0.5 * (S0 + S0.T))
    roots = np.empty((K, d, d))
    mus = np.empty((K, d))
    for k in range(K):
        A = np.zeros((d, d))
        for j in range(d):
            A[j, j] = math.sqrt(2.0 * rng.gamma(0.5 * (nu0 - j), 1.0))
            for i in range(j):
                A[j, i] = rng.standard_normal()
        # M Mᵀ = Sigma with M = L A⁻ᵀ
        M = L @ np.linalg.inv(A).T
        roots[k] = M
        eps = np.empty(d)
        for j in range(d):
            eps[j] = rng.standard_normal()
        mus[k] = m0 + (M @ eps) / math.sqrt(kappa0)
    eps = np.empty(d)
    for i in range(z.shape[0]):
        for j in range(d):
            eps[j] = rng.standard_normal()
        out[i] = mus[labels[i]] + roots[labels[i]] @ eps


@njit_exact
def draw_diag_gaussian(rng, z, m0, k0, a0, b0, out):
    labels, K = canonicalize(z)
    d = m0.shape[0]
    mu = np.empty((K, d))
    sd = np.empty((K, d))
    for k in range(K):
        for j in range(d):
            tau = rng.gamma(a0[j], 1.0 / b0[j])
            mu[k, j] = m0[j] + rng.standard_normal() / math.sqrt(k0[j] * tau)
            sd[k, j] = 1.0 / math.sqrt(tau)
    for i in range(z.shape[0]):
        for j in range(d):
            out[i, j] = mu[labels[i], j] + sd[labels[i], j] * rng.standard_normal()
