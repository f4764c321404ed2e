"""Tree-consistent evidence of Bayesian hierarchical clustering as a PyTensor Op.

Heller (2007) §3.2-3.4. For a fixed binary tree ``T`` over the rows of ``data`` (a merge
list in scipy-linkage order: row ``t`` joins clusters ``merges[t, 0]`` and
``merges[t, 1]`` into cluster ``n + t``; leaves are ``0..n-1``) the evidence obeys

* Alg. 3.3: ``d_i = α`` at leaves, ``d_k = α Γ(n_k) + d_left d_right``,
  ``π_k = α Γ(n_k) / d_k``;
* Eq. 3.2: ``p(D_k | T_k) = π_k p(D_k | H1) + (1 - π_k) p(D_i | T_i) p(D_j | T_j)``;
* Eq. 3.3: ``r_k = π_k p(D_k | H1) / p(D_k | T_k)``,

all evaluated here in log space (``log d`` by ``logaddexp``: Γ(n) overflows at n ≈ 171).
``p(D_k | H1)`` is the conjugate marginal likelihood of :mod:`custom_ops.conjugate`.

:func:`bhc_log_evidence` returns ``log p(D | T)`` and the per-merge ``log r_k`` (in merge
order). Gradients (``pullback``) with respect to ``alpha`` and every continuous
hyperparameter of the conjugate prior are exact reverse-mode derivatives of the recursion
(the §3.4.1 recursion generalised to both outputs); ``data`` has no gradient
(``grad_not_implemented``) and ``merges`` is discrete (``grad_undefined``).

The Numba kernels (:func:`tree_forward`, :func:`tree_grad`) take a family code and the
flat hyperparameter vector of :mod:`custom_ops.conjugate` (``FAMILY_CODES``,
``pack_hyper``), whose dispatchers evaluate the marginals, so one cached compilation
serves every family; :mod:`pp_models.bhc` builds trees with them.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
import pytensor.tensor as pt
from numba import carray, types
from pytensor.gradient import DisconnectedType, grad_not_implemented, grad_undefined
from pytensor.graph.basic import Apply, Constant
from pytensor.graph.op import Op

from custom_ops import conjugate as cj
from custom_ops.jit import c_entry_points, njit_exact, register_numba_op
from custom_ops.trees import merges_error, validate_merges

__all__ = [
    "BHCEvidence",
    "BHCEvidenceGrad",
    "bhc_dpm_lower_bound",
    "bhc_log_evidence",
    "check_hyper_values",
    "tree_forward",
    "tree_grad",
]



@njit_exact
def logaddexp(a, b):
    if a == -np.inf:
        return b
    if b == -np.inf:
        return a
    if a > b:
        return a + math.log1p(math.exp(b - a))
    return b + math.log1p(math.exp(a - b))


# --------------------------------------------------------------------------------------
# validation kernels (return an error code so jitted callers can raise static messages)
# --------------------------------------------------------------------------------------
@njit_exact
def _hyper_error(fam, alpha, hp, d):
    """0, or 1 for a bad alpha, or a :data:`custom_ops.conjugate.HYPER_ERRORS` code."""
    if not (np.isfinite(alpha) and alpha > 0.0):
        return 1
    return cj.hyper_error(fam, hp, d, True)


def check_hyper_values(family, alpha, hp, d):
    """Raise ``ValueError`` unless ``alpha`` > 0 and the packed ``hp`` suit ``d`` columns."""
    code = _hyper_error(cj.family_code(family, "likelihood"), float(alpha), hp, d)
    if code == 1:
        raise ValueError("alpha: the DP concentration must be finite and > 0")
    if code:
        raise ValueError(cj.HYPER_ERRORS[code])


# --------------------------------------------------------------------------------------
# the recursion
# --------------------------------------------------------------------------------------
@njit_exact
def tree_forward(fam, pstats, merges, alpha, hp):
    """Evaluate Heller (2007) Alg. 3.3 and Eqs. 3.2-3.3 bottom-up over a merge list.

    Returns per node (0..2n-2; leaves first, then merge t at n + t):
    ``(log_p, log_r, log_q, log_d, log_ml, node_stats)`` with log_p = log p(D_k | T_k),
    log_r = log r_k, log_q = log(1 - r_k) (``-inf`` at leaves), log_d = log d_k.
    """
    n = pstats.shape[0]
    S = pstats.shape[1]
    m = 2 * n - 1
    la = math.log(alpha)
    stats = np.empty((m, S))
    size = np.empty(m)
    log_p = np.empty(m)
    log_r = np.zeros(m)
    log_q = np.full(m, -np.inf)
    log_d = np.empty(m)
    lml = np.empty(m)
    for i in range(n):
        stats[i] = pstats[i]
        size[i] = 1.0
        log_d[i] = la
        lml[i] = cj.log_marginal(fam, stats[i], hp)
        log_p[i] = lml[i]
    for t in range(n - 1):
        k = n + t
        i = merges[t, 0]
        j = merges[t, 1]
        for s in range(S):
            stats[k, s] = stats[i, s] + stats[j, s]
        size[k] = size[i] + size[j]
        prior_one = la + math.lgamma(size[k])
        log_d[k] = logaddexp(prior_one, log_d[i] + log_d[j])
        log_pi = prior_one - log_d[k]
        log_1mpi = log_d[i] + log_d[j] - log_d[k]
        lml[k] = cj.log_marginal(fam, stats[k], hp)
        A = log_pi + lml[k]
        B = log_1mpi + log_p[i] + log_p[j]
        log_p[k] = logaddexp(A, B)
        log_r[k] = A - log_p[k]
        log_q[k] = B - log_p[k]
    return log_p, log_r, log_q, log_d, lml, stats


@njit_exact
def tree_grad(fam, pstats, merges, alpha, hp, g_logp, g_logr, g_logd):
    """Reverse-mode gradient of ``g_logp log p(D|T) + Σ_t g_logr[t] log r_{n+t}
    + g_logd log d_root``.

    Returns ``(d/d alpha, d/d hp)``, the latter in the flat layout of ``hp``
    (:func:`custom_ops.conjugate.pack_hyper`). With
    A_k = log π_k + log p(D_k|H1), B_k = log(1-π_k) + log p_i + log p_j and
    log p_k = logaddexp(A_k, B_k): ∂ log p_k / ∂A_k = r_k, ∂ log p_k / ∂B_k = 1 - r_k,
    and log r_k = A_k - log p_k (Heller 2007 §3.4.1, in log space).
    """
    n = pstats.shape[0]
    m = 2 * n - 1
    _log_p, log_r, log_q, log_d, _lml, stats = tree_forward(fam, pstats, merges, alpha, hp)
    # forward-mode ∂ log d_k / ∂α (scalar, cheap): π_k/α + (1 - π_k)(∂ log d_i + ∂ log d_j)
    dld = np.empty(m)
    for i in range(n):
        dld[i] = 1.0 / alpha
    la = math.log(alpha)
    for t in range(n - 1):
        k = n + t
        i = merges[t, 0]
        j = merges[t, 1]
        log_pi = la + math.lgamma(stats[k, 0]) - log_d[k]
        pi = math.exp(log_pi)
        dld[k] = pi / alpha + math.exp(log_d[i] + log_d[j] - log_d[k]) * (dld[i] + dld[j])
    pbar = np.zeros(m)
    pbar[m - 1] = g_logp
    g_alpha = 0.0
    g_h = np.zeros(hp.shape[0])
    for t in range(n - 2, -1, -1):
        k = n + t
        i = merges[t, 0]
        j = merges[t, 1]
        pk = pbar[k] - g_logr[t]
        a_bar = pk * math.exp(log_r[k]) + g_logr[t]
        b_bar = pk * math.exp(log_q[k])
        dlogpi = 1.0 / alpha - dld[k]
        dlog1mpi = dld[i] + dld[j] - dld[k]
        g_alpha += a_bar * dlogpi + b_bar * dlog1mpi
        if a_bar != 0.0:
            cj.log_marginal_grad(fam, stats[k], hp, g_h, a_bar)
        pbar[i] += b_bar
        pbar[j] += b_bar
    for i in range(n):
        if pbar[i] != 0.0:
            cj.log_marginal_grad(fam, stats[i], hp, g_h, pbar[i])
    g_alpha += g_logd * dld[m - 1]
    return g_alpha, g_h


# --------------------------------------------------------------------------------------
# kernels the Op (perform and Numba) calls: validate, then evaluate
# --------------------------------------------------------------------------------------
# What the Op's kernels raise for invalid fixed inputs (perform and Numba alike).
N_TOO_SMALL = "data: BHC needs at least 2 points"
BAD_MERGES = "merges: not a valid binary tree over the n data points"
BAD_DATA = "data: invalid values for this likelihood (NaN, non-binary, bad counts)"


@njit_exact
def _op_input_error(fam, data, merges):
    """0 if the Op can evaluate ``data`` and ``merges``, else 1 (fewer than 2 points),
    2 (not a binary tree over them) or 3 (data outside the family's support): a code,
    not an exception, so that a C entry point can report it."""
    n = data.shape[0]
    if n < 2:
        return 1
    if merges_error(merges, n) != 0:
        return 2
    if cj.data_error(fam, data) != 0:
        return 3
    return 0


@njit_exact
def _raise_input_error(code):
    """Raise the ``ValueError`` of an :func:`_op_input_error` code (nothing for 0)."""
    if code == 1:
        raise ValueError(N_TOO_SMALL)
    if code == 2:
        raise ValueError(BAD_MERGES)
    if code == 3:
        raise ValueError(BAD_DATA)


@njit_exact
def _check_op_inputs(fam, data, merges):
    _raise_input_error(_op_input_error(fam, data, merges))


# Data and tree are fixed inputs: invalid ones raise. alpha and the hyperparameters are
# what samplers move: outside their range (alpha <= 0, S0 not SPD, nu0 <= d - 1, which
# an exp() under- or overflowing in a long NUTS trajectory produces) the evidence is
# -inf, as PyMC's own densities give, so the sampler rejects the point instead of
# stopping. Inside the range, where the NIW posterior scale is numerically not positive
# definite (kappa0 ~ e^100, S0 ~ e^-30), the conjugate kernel's NaN marginal makes the
# value and the gradient NaN: a divergence for NUTS, not an exception (one place:
# custom_ops.conjugate.gaussian). The model factories validate fixed values before
# sampling.
@njit_exact
def _forward(fam, data, merges, alpha, hp):
    """The Op's value for checked ``data`` and ``merges``."""
    n = data.shape[0]
    if _hyper_error(fam, alpha, hp, data.shape[1]) != 0:
        return -np.inf, np.full(n - 1, np.nan), -np.inf
    log_p, log_r, _q, log_d, _ml, _s = tree_forward(
        fam, cj.point_stats(fam, data), merges, alpha, hp
    )
    return log_p[2 * n - 2], log_r[n:].copy(), log_d[2 * n - 2]


@njit_exact
def _grad(fam, data, merges, alpha, hp, g_logp, g_logr, g_logd):
    """The Op's gradient for checked ``data`` and ``merges``."""
    if _hyper_error(fam, alpha, hp, data.shape[1]) != 0:
        return 0.0, np.zeros_like(hp)  # zero where the value is -inf
    return tree_grad(fam, cj.point_stats(fam, data), merges, alpha, hp, g_logp, g_logr, g_logd)


@njit_exact
def _op_forward(fam, data, merges, alpha, hp):
    _check_op_inputs(fam, data, merges)
    return _forward(fam, data, merges, alpha, hp)


@njit_exact
def _op_grad(fam, data, merges, alpha, hp, g_logp, g_logr, g_logd):
    _check_op_inputs(fam, data, merges)
    return _grad(fam, data, merges, alpha, hp, g_logp, g_logr, g_logd)


# --------------------------------------------------------------------------------------
# Ops
# --------------------------------------------------------------------------------------
def _as_float(x, ndim, name):
    v = pt.as_tensor_variable(x)
    if v.ndim != ndim:
        raise ValueError(f"{name}: expected a {ndim}-d tensor, got {v.ndim}-d")
    if v.dtype != "float64":
        v = pt.cast(v, "float64")
    return v


class BHCEvidence(Op):
    """``(data, merges, alpha, *hyper) -> (log p(D | T), log r_k per merge, log d_root)``.

    ``hyper`` are the conjugate prior's hyperparameters in :mod:`custom_ops.conjugate`
    order: bernoulli ``a (d,), b (d,)``; multinomial ``concentration (K,)``; gaussian
    ``m0 (d,), kappa0 (), nu0 (), S0 (d, d)``; diag_gaussian ``m0, kappa0, a0, b0 (d,)``.
    """

    __props__ = ("likelihood",)

    def __init__(self, likelihood):
        cj.family_code(likelihood, "likelihood")
        self.likelihood = likelihood
        super().__init__()

    def _inputs(self, data, merges, alpha, hyper):
        ndims = cj.HYPER_NDIMS[self.likelihood]
        if len(hyper) != len(ndims):
            raise ValueError(
                f"hyper: the {self.likelihood} likelihood takes {len(ndims)} hyperparameters "
                f"{cj.FAMILIES[self.likelihood].hyper_names}, got {len(hyper)}"
            )
        data = _as_float(data, 2, "data")
        merges = pt.as_tensor_variable(merges)
        if merges.ndim != 2 or not merges.dtype.startswith(("int", "uint")):
            raise ValueError(f"merges: expected a 2-d integer tensor, got {merges.type}")
        if merges.dtype != "int64":
            merges = pt.cast(merges, "int64")
        alpha = _as_float(alpha, 0, "alpha")
        names = cj.FAMILIES[self.likelihood].hyper_names
        hyper = [_as_float(h, nd, nm) for h, nd, nm in zip(hyper, ndims, names, strict=True)]
        return data, merges, alpha, hyper

    def make_node(self, data, merges, alpha, *hyper):
        data, merges, alpha, hyper = self._inputs(data, merges, alpha, hyper)
        # validate whatever is known now, so bad input fails before any sampling
        if isinstance(data, Constant):
            cj.check_data(self.likelihood, data.data, "data")
            n = data.data.shape[0]
            if n < 2:
                raise ValueError(f"data: BHC needs at least 2 points, got n = {n}")
            if isinstance(merges, Constant):
                validate_merges(merges.data, n)
        if isinstance(alpha, Constant) and not (np.isfinite(alpha.data) and float(alpha.data) > 0):
            raise ValueError(
                f"alpha: the DP concentration must be finite and > 0, got {alpha.data}"
            )
        if isinstance(data, Constant) and all(isinstance(h, Constant) for h in hyper):
            hp = cj.pack_hyper(self.likelihood, [h.data for h in hyper])
            a = float(alpha.data) if isinstance(alpha, Constant) else 1.0
            check_hyper_values(self.likelihood, a, hp, data.data.shape[1])
        return Apply(
            self, [data, merges, alpha, *hyper], [pt.dscalar(), pt.dvector(), pt.dscalar()]
        )

    def perform(self, node, inputs, output_storage):
        data, merges, alpha, *hyper = inputs
        lp, lr, ld = _op_forward(
            cj.FAMILY_CODES[self.likelihood],
            np.ascontiguousarray(data, dtype=np.float64),
            np.ascontiguousarray(merges, dtype=np.int64),
            float(alpha),
            cj.pack_hyper(self.likelihood, hyper),
        )
        output_storage[0][0] = np.asarray(lp, dtype=np.float64)
        output_storage[1][0] = np.asarray(lr, dtype=np.float64)
        output_storage[2][0] = np.asarray(ld, dtype=np.float64)

    def infer_shape(self, node, input_shapes):
        n = input_shapes[0][0]
        return [(), (n - 1,), ()]

    def pullback(self, inputs, outputs, cotangents):
        data, merges, alpha, *hyper = inputs
        g_logp, g_logr, g_logd = cotangents
        if isinstance(g_logp.type, DisconnectedType):
            g_logp = pt.constant(0.0, dtype="float64")
        if isinstance(g_logr.type, DisconnectedType):
            g_logr = pt.zeros_like(outputs[1])
        if isinstance(g_logd.type, DisconnectedType):
            g_logd = pt.constant(0.0, dtype="float64")
        g_alpha, g_flat = BHCEvidenceGrad(self.likelihood)(
            data, merges, alpha, g_logp, g_logr, g_logd, *hyper
        )
        return [
            grad_not_implemented(self, 0, data, "BHC evidence is not differentiated in the data"),
            grad_undefined(self, 1, merges, "merges (the tree) are discrete"),
            g_alpha,
            *cj.split_like(g_flat, hyper),
        ]


class BHCEvidenceGrad(Op):
    """``(data, merges, alpha, g_logp, g_logr, g_logd, *hyper)``: the gradient of
    :class:`BHCEvidence` given the cotangents of its three outputs:
    ``(d/d alpha, d/d hyper)``, the latter flat in :func:`custom_ops.conjugate.pack_hyper`
    layout (:meth:`BHCEvidence.pullback` splits it)."""

    __props__ = ("likelihood",)

    def __init__(self, likelihood):
        self.likelihood = likelihood
        super().__init__()

    def make_node(self, data, merges, alpha, g_logp, g_logr, g_logd, *hyper):
        inputs = [
            data,
            merges,
            alpha,
            _as_float(g_logp, 0, "g_logp"),
            _as_float(g_logr, 1, "g_logr"),
            _as_float(g_logd, 0, "g_logd"),
            *hyper,
        ]
        return Apply(self, inputs, [alpha.type(), pt.dvector()])

    def perform(self, node, inputs, output_storage):
        data, merges, alpha, g_logp, g_logr, g_logd, *hyper = inputs
        g_alpha, flat = _op_grad(
            cj.FAMILY_CODES[self.likelihood],
            np.ascontiguousarray(data, dtype=np.float64),
            np.ascontiguousarray(merges, dtype=np.int64),
            float(alpha),
            cj.pack_hyper(self.likelihood, hyper),
            float(g_logp),
            np.ascontiguousarray(g_logr, dtype=np.float64),
            float(g_logd),
        )
        output_storage[0][0] = np.asarray(g_alpha, dtype=np.float64)
        output_storage[1][0] = flat

    def infer_shape(self, node, input_shapes):
        size = 0
        for shape in input_shapes[6:]:
            size = size + math.prod(shape) if shape else size + 1
        return [input_shapes[2], (size,)]


# --------------------------------------------------------------------------------------
# Numba registrations: the graph calls the kernels through C entry points.
#
# PyTensor's Numba backend links the code of every function a graph calls into that
# graph's LLVM module and optimises it again there, so each distinct graph containing
# these Ops would re-generate the whole recursion and conjugate-marginal code. Instead
# the kernels are compiled once, for every family (the code is a run-time argument), as
# C entry points (``custom_ops.jit.c_entry_points``, cached on disk), and the graph holds
# only a thin wrapper that calls them: much less compiling, about the same warm speed
# (docs/development.md). A C callback cannot raise: it returns an
# :func:`_op_input_error` code (or _KERNEL_FAILED), the wrapper raises.
# --------------------------------------------------------------------------------------
_KERNEL_FAILED = 4
_FORWARD_FAILED = ("BHCEvidence: the Numba kernel raised an exception; the same inputs "
                   "through bhc_log_evidence() in mode=Mode(linker='py') (the Op's perform) "
                   "show it")
_GRAD_FAILED = ("BHCEvidenceGrad: the Numba kernel raised an exception; the same inputs "
                "through pytensor.grad of bhc_log_evidence() in mode=Mode(linker='py') "
                "(the Op's perform) show it")

_I64, _F64 = types.int64, types.float64
_F64P, _I64P = types.CPointer(types.float64), types.CPointer(types.int64)
# family, data (n, d) C-contiguous, merges (rows, columns) C-contiguous, alpha, hp (flat,
# pack_hyper layout) and its length
_TREE_ARGS = (_I64, _F64P, _I64, _I64, _I64P, _I64, _I64, _F64, _F64P, _I64)
# out: log p(D|T), the n - 1 log r_k, log d_root
_FORWARD_SIG = _I64(*_TREE_ARGS, _F64P)
# then g_logp, g_logr and its length, g_logd; out: d/d alpha, then d/d hp
_GRAD_SIG = _I64(*_TREE_ARGS, _F64, _F64P, _I64, _F64, _F64P)


def _forward_entry(fam, datap, n, d, mergesp, rows, cols, alpha, hpp, nh, outp):
    try:
        data = carray(datap, (n, d))
        merges = carray(mergesp, (rows, cols))
        code = _op_input_error(fam, data, merges)
        if code != 0:
            return code
        out = carray(outp, (n + 1,))
        log_p, log_r, log_d = _forward(fam, data, merges, alpha, carray(hpp, (nh,)))
        out[0] = log_p
        out[1:n] = log_r
        out[n] = log_d
    except Exception:  # nopython mode catches no narrower class
        return _KERNEL_FAILED
    return 0


def _grad_entry(fam, datap, n, d, mergesp, rows, cols, alpha, hpp, nh,
                g_logp, g_logrp, n_logr, g_logd, outp):
    try:
        data = carray(datap, (n, d))
        merges = carray(mergesp, (rows, cols))
        code = _op_input_error(fam, data, merges)
        if code != 0:
            return code
        if n_logr != n - 1:
            return _KERNEL_FAILED
        out = carray(outp, (nh + 1,))
        g_alpha, g_h = _grad(fam, data, merges, alpha, carray(hpp, (nh,)), g_logp,
                             carray(g_logrp, (n_logr,)), g_logd)
        out[0] = g_alpha
        out[1:] = g_h
    except Exception:
        return _KERNEL_FAILED
    return 0


@functools.cache
def _entry_points():
    forward, = c_entry_points("bhc", _FORWARD_SIG, forward=_forward_entry)
    grad, = c_entry_points("bhc", _GRAD_SIG, grad=_grad_entry)
    return forward, grad


@register_numba_op(BHCEvidence)
def _numba_bhc_evidence(op, node, **kwargs):
    fam = cj.FAMILY_CODES[op.likelihood]
    forward_entry, _ = _entry_points()

    @numba.njit
    def f(data, merges, alpha, *hyper):
        hp = cj.flatten_hyper(hyper)
        data = np.ascontiguousarray(data)
        merges = np.ascontiguousarray(merges)
        n = data.shape[0]
        out = np.empty(n + 1)
        # .ctypes (not .ctypes.data) holds a reference: a copy made above stays alive
        status = forward_entry(fam, data.ctypes, n, data.shape[1], merges.ctypes,
                               merges.shape[0], merges.shape[1], alpha.item(), hp.ctypes,
                               hp.shape[0], out.ctypes)
        _raise_input_error(status)
        if status != 0:
            raise RuntimeError(_FORWARD_FAILED)
        return np.asarray(out[0]), out[1:n].copy(), np.asarray(out[n])

    return f


@register_numba_op(BHCEvidenceGrad)
def _numba_bhc_evidence_grad(op, node, **kwargs):
    fam = cj.FAMILY_CODES[op.likelihood]
    _, grad_entry = _entry_points()

    @numba.njit
    def f(data, merges, alpha, g_logp, g_logr, g_logd, *hyper):
        hp = cj.flatten_hyper(hyper)
        data = np.ascontiguousarray(data)
        merges = np.ascontiguousarray(merges)
        g_logr = np.ascontiguousarray(g_logr)
        out = np.empty(hp.shape[0] + 1)
        status = grad_entry(fam, data.ctypes, data.shape[0], data.shape[1], merges.ctypes,
                            merges.shape[0], merges.shape[1], alpha.item(), hp.ctypes,
                            hp.shape[0], g_logp.item(), g_logr.ctypes, g_logr.shape[0],
                            g_logd.item(), out.ctypes)
        _raise_input_error(status)
        if status != 0:
            raise RuntimeError(_GRAD_FAILED)
        return np.asarray(out[0]), out[1:].copy()

    return f


# --------------------------------------------------------------------------------------
# user-facing function
# --------------------------------------------------------------------------------------
def _default_hyper(likelihood, d):
    """Symbolic-friendly defaults (flat priors) matching custom_ops.conjugate's constructors."""
    if likelihood == "bernoulli":
        return {"a": 1.0, "b": 1.0}
    if likelihood == "multinomial":
        return {"concentration": 1.0}
    if likelihood == "gaussian":
        return {"m0": 0.0, "kappa0": 1.0, "nu0": None, "S0": 1.0}
    return {"m0": 0.0, "kappa0": 1.0, "a0": 1.0, "b0": 1.0}


def bhc_log_evidence(data, merges, alpha=1.0, *, likelihood="bernoulli", **hyper):
    """log p(D | T) and per-merge log r_k of Bayesian hierarchical clustering.

    See :func:`_bhc_apply` for the parameters. Returns ``(log_evidence, log_rk)``:
    log p(D | T) (Heller 2007 Eq. 3.2 at the root) and the (n - 1,) log r_k (Eq. 3.3) of
    each merge, in merge order.
    """
    lp, lr, _ld = _bhc_apply(data, merges, alpha, likelihood, hyper)
    return lp, lr


def bhc_dpm_lower_bound(data, merges, alpha=1.0, *, likelihood="bernoulli", **hyper):
    """Heller (2007) Corollary 3.1: log[d_root Γ(α) / Γ(n + α)] + log p(D | T), a lower
    bound on the Dirichlet-process-mixture marginal likelihood log p(D | α, hyper) for
    any tree; differentiable in alpha and the hyperparameters like
    :func:`bhc_log_evidence` (same parameters)."""
    lp, _lr, ld = _bhc_apply(data, merges, alpha, likelihood, hyper)
    alpha_t = lp.owner.inputs[2]
    n = lp.owner.inputs[0].shape[0]
    # log Γ(α)/Γ(n + α) = -Σ_{i<n} log(α + i), not gammaln(α) - gammaln(n + α): those
    # two are ~α log α and cancel (every digit lost by α ~ e^36, where the Numba graph's
    # fast-math reassociation returned 0 for the whole bound); these n terms cancel only
    # against log d_root ~ n log α
    log_gamma_ratio = -pt.sum(pt.log(alpha_t + pt.arange(n, dtype="float64")))
    return ld + log_gamma_ratio + lp


def _bhc_apply(data, merges, alpha, likelihood, hyper):
    """Validate and build the :class:`BHCEvidence` node: (log p(D|T), log r_k, log d_root).

    Parameters
    ----------
    data : (n, d) array or tensor
        Binary rows (bernoulli), count rows (multinomial), real rows (gaussian,
        diag_gaussian).
    merges : (n - 1, 2) integer array or tensor, or a scipy linkage matrix
        Row ``t`` merges clusters ``merges[t]`` into cluster ``n + t``.
    alpha : scalar
        DP concentration (Heller 2007 Alg. 3.3).
    likelihood : {"bernoulli", "multinomial", "gaussian", "diag_gaussian"}
    **hyper
        The conjugate prior's hyperparameters by name (:mod:`custom_ops.conjugate`):
        ``a, b`` | ``concentration`` | ``m0, kappa0, nu0, S0`` | ``m0, kappa0, a0, b0``.
        Scalars broadcast to per-dimension vectors (``S0`` scalar: times the identity;
        ``nu0`` defaults to d + 2). Missing ones take flat defaults.

    """
    cj.family_code(likelihood, "likelihood")
    names = cj.FAMILIES[likelihood].hyper_names
    unknown = set(hyper) - set(names)
    if unknown:
        raise ValueError(f"hyper: unknown {sorted(unknown)} for {likelihood}; expected {names}")
    if not isinstance(data, pt.TensorVariable):
        data = cj.check_data(likelihood, data, "data")
        if data.shape[0] < 2:
            raise ValueError(f"data: BHC needs at least 2 points, got n = {data.shape[0]}")
    if not isinstance(merges, pt.TensorVariable):
        n_static = data.shape[0] if isinstance(data, np.ndarray) else None
        if n_static is not None:
            merges = validate_merges(merges, n_static)
        else:
            merges = np.asarray(merges)
            if merges.ndim == 2 and merges.shape[1] == 4:
                merges = merges[:, :2]
            merges = merges.astype(np.int64)
    if not isinstance(alpha, pt.TensorVariable):
        a = np.asarray(alpha, dtype=np.float64)
        if a.ndim != 0 or not np.isfinite(a) or a <= 0:
            raise ValueError(
                f"alpha: the DP concentration must be a finite scalar > 0, got {alpha}"
            )
    data_t = pt.as_tensor_variable(data)
    d = data_t.shape[1] if data_t.type.shape[1] is None else data_t.type.shape[1]
    vals = {**_default_hyper(likelihood, d), **hyper}
    # numeric hyperparameters: validate eagerly through the conjugate constructors
    if isinstance(d, int) and not any(isinstance(v, pt.TensorVariable) for v in vals.values()):
        checked = cj.FAMILIES[likelihood].make_hyper(d, **vals)
        return BHCEvidence(likelihood)(data_t, merges, alpha, *checked)
    if likelihood == "gaussian" and vals["nu0"] is None:
        vals["nu0"] = pt.cast(d, "float64") + 2.0
    args = []
    for name, nd in zip(names, cj.HYPER_NDIMS[likelihood], strict=True):
        v = pt.as_tensor_variable(vals[name])
        v = pt.cast(v, "float64") if v.dtype != "float64" else v
        if nd == 1 and v.ndim == 0:
            v = pt.broadcast_to(v, (d,))
        elif nd == 2 and v.ndim == 0:
            v = v * pt.eye(d)
        elif nd == 2 and v.ndim == 1:
            v = pt.diag(v)
        args.append(v)
    return BHCEvidence(likelihood)(data_t, merges, alpha, *args)
