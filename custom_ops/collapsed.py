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
negative label or invalid hyperparameters give ``-inf``. Gradients: with respect to every
hyperparameter (``custom_ops.conjugate`` ``*_log_marginal_grad`` summed over blocks);
``z`` is discrete (undefined) and ``X`` is data (not implemented).
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_not_implemented, grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops import conjugate as cj
from custom_ops.crp import canonicalize

__all__ = [
    "HYPER_NDIMS",
    "CollapsedLogLik",
    "CollapsedLogLikGrad",
    "collapsed_loglik",
    "collapsed_loglik_value",
    "draw_bernoulli",
    "draw_diag_gaussian",
    "draw_gaussian",
    "draw_multinomial",
    "hyper_tuple",
    "valid_hyper",
]

#: ndim of each hyperparameter input, per family.
HYPER_NDIMS: dict[str, tuple[int, ...]] = {
    "bernoulli": (1, 1),
    "multinomial": (1,),
    "gaussian": (1, 0, 0, 2),
    "diag_gaussian": (1, 1, 1, 1),
}

_jit = numba.njit(cache=True)


# --------------------------------------------------------------------------------------
# hyperparameter validity (kernels trust their inputs; the Op must not)
# --------------------------------------------------------------------------------------
@_jit
def _all_positive(v):
    for j in range(v.shape[0]):
        if not (v[j] > 0.0 and math.isfinite(v[j])):
            return False
    return True


@_jit
def _all_finite(v):
    for j in range(v.shape[0]):
        if not math.isfinite(v[j]):
            return False
    return True


@_jit
def _is_spd(S):
    """Whether the symmetric part of S is positive definite (the kernels use it)."""
    d = S.shape[0]
    L = np.zeros((d, d))
    for j in range(d):
        for k in range(d):
            if not math.isfinite(S[j, k]):
                return False
    for j in range(d):
        acc = S[j, j]
        for k in range(j):
            acc -= L[j, k] * L[j, k]
        if acc <= 0.0:
            return False
        L[j, j] = math.sqrt(acc)
        for i in range(j + 1, d):
            acc = 0.5 * (S[i, j] + S[j, i])
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            L[i, j] = acc / L[j, j]
    return True


@_jit
def _valid_bernoulli(hyper):
    a, b = hyper
    return _all_positive(a) and _all_positive(b)


@_jit
def _valid_multinomial(hyper):
    (alpha,) = hyper
    return _all_positive(alpha)


@_jit
def _valid_gaussian(hyper):
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    return (
        _all_finite(m0)
        and kappa0 > 0.0
        and math.isfinite(kappa0)
        and nu0 > d - 1.0
        and math.isfinite(nu0)
        and _is_spd(S0)
    )


@_jit
def _valid_diag_gaussian(hyper):
    m0, k0, a0, b0 = hyper
    return _all_finite(m0) and _all_positive(k0) and _all_positive(a0) and _all_positive(b0)


def valid_hyper(family, hyper) -> bool:
    """Whether ``hyper`` is a valid hyperparameter tuple for ``family``."""
    return bool(_VALID[family](hyper))


_VALID = {
    "bernoulli": _valid_bernoulli,
    "multinomial": _valid_multinomial,
    "gaussian": _valid_gaussian,
    "diag_gaussian": _valid_diag_gaussian,
}


# --------------------------------------------------------------------------------------
# grouped sums. One function per family, written out: passing jitted kernels as values
# inside jitted code would make Numba refuse to cache them ("dynamic globals").
# --------------------------------------------------------------------------------------
@_jit
def _nonnegative(z):
    for i in range(z.shape[0]):
        if z[i] < 0:
            return False
    return True


@_jit
def _stats_bernoulli(z, X):
    labels, K = canonicalize(z)
    S = np.zeros((K, 1 + X.shape[1]))
    for i in range(X.shape[0]):
        cj.bernoulli_add(S[labels[i]], X[i])
    return S


@_jit
def _stats_multinomial(z, X):
    labels, K = canonicalize(z)
    S = np.zeros((K, 2 + X.shape[1]))
    for i in range(X.shape[0]):
        cj.multinomial_add(S[labels[i]], X[i])
    return S


@_jit
def _stats_gaussian(z, X):
    d = X.shape[1]
    labels, K = canonicalize(z)
    S = np.zeros((K, 1 + d + d * d))
    for i in range(X.shape[0]):
        cj.gaussian_add(S[labels[i]], X[i])
    return S


@_jit
def _stats_diag_gaussian(z, X):
    labels, K = canonicalize(z)
    S = np.zeros((K, 1 + 2 * X.shape[1]))
    for i in range(X.shape[0]):
        cj.diag_gaussian_add(S[labels[i]], X[i])
    return S


@_jit
def _value_bernoulli(z, X, a, b):
    hyper = (a, b)
    if not _valid_bernoulli(hyper) or not _nonnegative(z):
        return -np.inf
    S = _stats_bernoulli(z, X)
    out = 0.0
    for k in range(S.shape[0]):
        out += cj.bernoulli_log_marginal(S[k], hyper)
    return out


@_jit
def _value_multinomial(z, X, alpha):
    hyper = (alpha,)
    if not _valid_multinomial(hyper) or not _nonnegative(z):
        return -np.inf
    S = _stats_multinomial(z, X)
    out = 0.0
    for k in range(S.shape[0]):
        out += cj.multinomial_log_marginal(S[k], hyper)
    return out


@_jit
def _value_gaussian(z, X, m0, kappa0, nu0, S0):
    hyper = (m0, kappa0, nu0, S0)
    if not _valid_gaussian(hyper) or not _nonnegative(z):
        return -np.inf
    S = _stats_gaussian(z, X)
    out = 0.0
    for k in range(S.shape[0]):
        out += cj.gaussian_log_marginal(S[k], hyper)
    return out


@_jit
def _value_diag_gaussian(z, X, m0, k0, a0, b0):
    hyper = (m0, k0, a0, b0)
    if not _valid_diag_gaussian(hyper) or not _nonnegative(z):
        return -np.inf
    S = _stats_diag_gaussian(z, X)
    out = 0.0
    for k in range(S.shape[0]):
        out += cj.diag_gaussian_log_marginal(S[k], hyper)
    return out


_VALUE = {
    "bernoulli": _value_bernoulli,
    "multinomial": _value_multinomial,
    "gaussian": _value_gaussian,
    "diag_gaussian": _value_diag_gaussian,
}


def collapsed_loglik_value(family, z, X, hyper) -> float:
    """``log p(X | z, hyper)`` in plain NumPy/Numba (no PyTensor)."""
    if family not in _VALUE:
        raise ValueError(f"family: unknown {family!r}; choose one of {sorted(_VALUE)}")
    z = np.ascontiguousarray(z, dtype=np.int64)
    X = np.ascontiguousarray(X, dtype=np.float64)
    return float(_VALUE[family](z, X, *hyper_tuple(family, hyper)))


# Gradients: per family, because the gradient tuples mix scalars and arrays.
@_jit
def _grad_bernoulli(z, X, hyper):
    a, _b = hyper
    ga = np.zeros_like(a)
    gb = np.zeros_like(a)
    if not _valid_bernoulli(hyper):
        return ga, gb
    if not _nonnegative(z):
        return ga, gb
    S = _stats_bernoulli(z, X)
    for k in range(S.shape[0]):
        _v, (g1, g2) = cj.bernoulli_log_marginal_grad(S[k], hyper)
        ga += g1
        gb += g2
    return ga, gb


@_jit
def _grad_multinomial(z, X, hyper):
    (alpha,) = hyper
    g = np.zeros_like(alpha)
    if not _valid_multinomial(hyper):
        return (g,)
    if not _nonnegative(z):
        return (g,)
    S = _stats_multinomial(z, X)
    for k in range(S.shape[0]):
        _v, (gk,) = cj.multinomial_log_marginal_grad(S[k], hyper)
        g += gk
    return (g,)


@_jit
def _grad_gaussian(z, X, hyper):
    m0 = hyper[0]
    d = m0.shape[0]
    gm = np.zeros(d)
    gk = 0.0
    gn = 0.0
    gS = np.zeros((d, d))
    if not _valid_gaussian(hyper):
        return gm, gk, gn, gS
    if not _nonnegative(z):
        return gm, gk, gn, gS
    S = _stats_gaussian(z, X)
    for k in range(S.shape[0]):
        _v, (g1, g2, g3, g4) = cj.gaussian_log_marginal_grad(S[k], hyper)
        gm += g1
        gk += g2
        gn += g3
        gS += g4
    return gm, gk, gn, gS


@_jit
def _grad_diag_gaussian(z, X, hyper):
    m0 = hyper[0]
    d = m0.shape[0]
    g1 = np.zeros(d)
    g2 = np.zeros(d)
    g3 = np.zeros(d)
    g4 = np.zeros(d)
    if not _valid_diag_gaussian(hyper):
        return g1, g2, g3, g4
    if not _nonnegative(z):
        return g1, g2, g3, g4
    S = _stats_diag_gaussian(z, X)
    for k in range(S.shape[0]):
        _v, (a1, a2, a3, a4) = cj.diag_gaussian_log_marginal_grad(S[k], hyper)
        g1 += a1
        g2 += a2
        g3 += a3
        g4 += a4
    return g1, g2, g3, g4


_GRAD = {
    "bernoulli": _grad_bernoulli,
    "multinomial": _grad_multinomial,
    "gaussian": _grad_gaussian,
    "diag_gaussian": _grad_diag_gaussian,
}


def hyper_tuple(family, values):
    """Input arrays -> the tuple the conjugate kernels expect (0-d -> float)."""
    if family == "gaussian":
        m0, k0, nu0, S0 = values
        return (np.ascontiguousarray(m0, dtype=np.float64), float(k0), float(nu0),
                np.ascontiguousarray(S0, dtype=np.float64))
    return tuple(np.ascontiguousarray(v, dtype=np.float64) for v in values)


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------
def _make_inputs(family, z, X, hyper):
    if family not in HYPER_NDIMS:
        raise ValueError(f"family: unknown {family!r}; choose one of {sorted(HYPER_NDIMS)}")
    ndims = HYPER_NDIMS[family]
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
        if family not in HYPER_NDIMS:
            raise ValueError(f"family: unknown {family!r}; choose one of {sorted(HYPER_NDIMS)}")
        self.family = family

    def make_node(self, z, X, *hyper):
        inputs = _make_inputs(self.family, z, X, hyper)
        return Apply(self, inputs, [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        z, X, *hyper = inputs
        value = _VALUE[self.family](z, X, *hyper_tuple(self.family, hyper))
        output_storage[0][0] = np.asarray(value, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        z, X, *hyper = inputs
        (g,) = cotangents
        grads = CollapsedLogLikGrad(self.family)(z, X, *hyper)
        grads = grads if isinstance(grads, list | tuple) else [grads]
        return [
            grad_undefined(self, 0, z, "z is a discrete partition"),
            grad_not_implemented(self, 1, X, "gradient with respect to the data"),
            *(g * gh for gh in grads),
        ]


class CollapsedLogLikGrad(Op):
    """Gradients of :class:`CollapsedLogLik` with respect to each hyperparameter."""

    __props__ = ("family",)

    def __init__(self, family: str):
        if family not in HYPER_NDIMS:
            raise ValueError(f"family: unknown {family!r}; choose one of {sorted(HYPER_NDIMS)}")
        self.family = family

    def make_node(self, z, X, *hyper):
        inputs = _make_inputs(self.family, z, X, hyper)
        return Apply(self, inputs, [h.type() for h in inputs[2:]])

    def perform(self, node, inputs, output_storage):
        z, X, *hyper = inputs
        grads = _GRAD[self.family](z, X, hyper_tuple(self.family, hyper))
        for store, gval in zip(output_storage, grads, strict=True):
            store[0] = np.asarray(gval, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        return list(input_shapes[2:])


def collapsed_loglik(family: str, z, X, *hyper):
    """Symbolic ``log p(X | z, hyper)`` (see :class:`CollapsedLogLik`)."""
    return CollapsedLogLik(family)(z, X, *hyper)


# --------------------------------------------------------------------------------------
# Numba registrations (one kernel per family: the hyperparameter tuples differ)
# --------------------------------------------------------------------------------------
@nb.register_funcify_default_op_cache_key(CollapsedLogLik)
def _numba_collapsed_loglik(op, node, **kwargs):
    family = op.family
    if family == "bernoulli":

        @nb.numba_njit
        def f(z, X, a, b):
            return np.asarray(_value_bernoulli(z, X, a, b))

    elif family == "multinomial":

        @nb.numba_njit
        def f(z, X, alpha):
            return np.asarray(_value_multinomial(z, X, alpha))

    elif family == "gaussian":

        @nb.numba_njit
        def f(z, X, m0, kappa0, nu0, S0):
            return np.asarray(_value_gaussian(z, X, m0, kappa0.item(), nu0.item(), S0))

    else:

        @nb.numba_njit
        def f(z, X, m0, k0, a0, b0):
            return np.asarray(_value_diag_gaussian(z, X, m0, k0, a0, b0))

    return f


@nb.register_funcify_default_op_cache_key(CollapsedLogLikGrad)
def _numba_collapsed_loglik_grad(op, node, **kwargs):
    family = op.family
    if family == "bernoulli":

        @nb.numba_njit
        def g(z, X, a, b):
            return _grad_bernoulli(z, X, (a, b))

    elif family == "multinomial":

        @nb.numba_njit
        def g(z, X, alpha):
            return _grad_multinomial(z, X, (alpha,))[0]

    elif family == "gaussian":

        @nb.numba_njit
        def g(z, X, m0, kappa0, nu0, S0):
            gm, gk, gn, gS = _grad_gaussian(z, X, (m0, kappa0.item(), nu0.item(), S0))
            return gm, np.asarray(gk), np.asarray(gn), gS

    else:

        @nb.numba_njit
        def g(z, X, m0, k0, a0, b0):
            return _grad_diag_gaussian(z, X, (m0, k0, a0, b0))

    return g


# --------------------------------------------------------------------------------------
# Prior-predictive draws of X given z: per block, draw the component parameters from the
# conjugate prior, then the block's rows (used by the distributions' forward sampling).
# --------------------------------------------------------------------------------------
@_jit
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


@_jit
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


@_jit
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


@_jit
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
