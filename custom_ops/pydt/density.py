"""Pitman-Yor diffusion tree kernels: the joint log density of a tree, its divergence
times and Gaussian data at its leaves, and its exact reverse-mode gradient (the Op
:class:`custom_ops.pydt.ops.PYDTLogProb` calls them; so do the samplers).

Knowles (2012) ch. 4 (digest ``knowles-nsfa-pydt.md`` §3). A tree over ``n`` leaves is
stored as in :mod:`custom_ops.trees.diffusion`: ``parent`` (2n - 1 node slots, -1 root,
-2 unused)
and ``log1m_t`` = log(1 - t) of each internal slot, with the divergence function
``a(t) = c / (1 - t)``, ``A(t) = -c log(1 - t)``.

Prior (structure and times), the product over internal nodes ``v`` with ``K_v``
children holding ``n_1..n_K`` leaves (``m(v) = sum n_k``):

* Eq. 4.23  ``a(t_v) prod_{k=3}^{K_v} [theta + (k-1) alpha] prod_l Gamma(n_l - alpha)
  / (Gamma(m(v) + theta) Gamma(1 - alpha)^(K_v - 1))``;
* Eq. 4.25  ``exp[(A(t_u) - A(t_v)) H_{m(v)-1}]`` over every edge ``[uv]`` into an
  internal node (the root's from the origin, ``A(0) = 0``), with
  ``H_n = sum_{i=1}^n Gamma(i - alpha) / Gamma(i + 1 + theta)`` (Eq. 4.24);

together Eq. 4.28 per node. The structure alone (times integrated out) is Markov
branching: :func:`log_structure_prob` is the product over nodes of Eq. 4.23 without
``a(t_v)`` divided by ``H_{m(v)-1}`` (the time-change ``u = A(t)`` makes each subtree an
independent diffusion tree; digest §7 item 20), the split distribution of the
multifurcating Gibbs fragmentation tree (§4.4.4).

Likelihood: Brownian motion ``x(t) ~ N(0, sigma2 t I)`` along the tree observed at the
leaves at ``t = 1`` (Eq. 4.26) with the internal locations integrated out by the upward
Gaussian message recursion of digest §3.9 in O(n D): child ``k`` sends
``N(x_u; mu_k, r_k)`` with ``r_k = s_k + sigma2 (t_k - t_u)``; the node combines
``1/s_u = sum 1/r_k``, ``mu_u = s_u sum mu_k / r_k`` and collects
``-(K-1)/2 log 2 pi - 1/2 sum log r_k + 1/2 log s_u - 1/2 sum (mu_k - mu_u)^2 / r_k``
per dimension; the root adds ``log N(0; mu_root, s_root + sigma2 t_root)``. This equals
the dense ``sum_d log N(X[:, d]; 0, sigma2 C)`` with ``C_ij`` the divergence time of the
pair's most recent common ancestor and ``C_ii = 1``
(:func:`custom_ops.trees.diffusion.diffusion_tree_mrca_times`).

Valid parameters (§4.4.2): ``c > 0``, ``sigma2 > 0``, ``alpha < 1`` and either
``alpha >= 0, theta >= -2 alpha`` (``theta = -2 alpha`` is the binary family, the DDT at
``theta = alpha = 0``), or ``alpha < 0, theta = -kappa alpha`` for an integer
``kappa >= 2`` (at most ``kappa`` children per node; ``kappa = 2`` is binary).
Outside them, or for an invalid tree, the Op returns ``-inf`` (and NaN gradients);
:func:`custom_ops.pydt.ops.pydt_logp` raises ``ValueError`` for numeric bad input before
building anything.

Why one module of ~500 lines: the forward recursion and its reverse-mode gradient share
the tree-layout helpers and the ``h_table``/Gamma tables, and the gradient is the forward
recursion run backwards; splitting them apart would make those private helpers API.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from custom_ops.conjugate import digamma
from custom_ops.jit import njit_exact_numpy
from custom_ops.trees.diffusion import (
    DIFFUSION_TREE_ERRORS,
    diffusion_tree_structure,
    diffusion_tree_topology,
)

__all__ = [
    "MIN_VARIANCE",
    "PARAMETER_ERRORS",
    "Cotangents",
    "PYDTParameters",
    "StructuredTree",
    "check_parameters",
    "check_tree",
    "choose_branch",
    "edge_length",
    "h_table",
    "log_split_prob",
    "log_structure_prob",
    "parameter_code",
    "pydt_forward",
    "pydt_forward_inline",
    "pydt_value_and_grad",
    "pydt_value_and_grad_flagged",
    "pydt_value_and_grad_into",
]

# Kernels are @njit_exact_numpy. error_model="numpy": a zero or infinite variance (sigma2
# or the times at an extreme) gives an infinite or NaN density, which the samplers
# reject, instead of raising.
# fastmath=False said explicitly: Numba compiles a kernel that sets no flags with its
# caller's, and its cache does not record them, so these kernels would get PyTensor's
# fastmath whenever a graph compiled them first (faster, through vectorised sums) and be
# exact otherwise. The samplers need them exact: with
# reassociation the sweeps' comparisons of cached and full densities at alpha < 0 fail
# (tests/custom_ops/pydt/test_sweep.py, test_branch.py).
# The recursion's bodies, inlined into their callers and compiled with the callers' flags:
# pydt_forward and pydt_value_and_grad_flagged (exact), and the Op's C entry points
# (vectorised; custom_ops.pydt.ops).
_inline = numba.njit(inline="always", error_model="numpy")
_LOG_2PI = math.log(2.0 * math.pi)
#: Floor of a message's variance ``s + sigma2 * edge length``: a zero-length leaf edge
#: would give a zero variance (the recursion's and the cached messages' one floor).
MIN_VARIANCE = 1e-300

PARAMETER_ERRORS = {
    1: "c: the divergence-function scale must be finite and > 0",
    2: "alpha: the discount must be finite and < 1",
    3: "theta: must be finite and >= -2 alpha when 0 <= alpha < 1 (theta = -2 alpha is "
    "the binary family)",
    4: "theta: with alpha < 0 it must equal -kappa alpha for an integer kappa >= 2 "
    "(at most kappa children per node)",
    5: "sigma2: the Brownian-motion variance must be finite and > 0",
}


class PYDTParameters(NamedTuple):
    """The model's parameters and the inverse temperature ``beta`` in [0, 1] of the
    likelihood (1: the posterior), as the samplers' entry kernels take them (floats)."""

    c: float
    theta: float
    alpha: float
    sigma2: float
    beta: float = 1.0


class Cotangents(NamedTuple):
    """The weights of the log prior and the log likelihood in the differentiated total
    ``prior * log prior + likelihood * log likelihood`` (the cotangents of the Op's two
    outputs)."""

    prior: float
    likelihood: float


class StructuredTree(NamedTuple):
    """A tree (``parent``, ``log1m_t``) with its structure from
    :func:`~custom_ops.trees.diffusion.diffusion_tree_structure` (``order``,
    ``child_ptr``, ``child_idx``, ``n_below``): what the recursions read."""

    parent: np.ndarray
    log1m_t: np.ndarray
    order: np.ndarray
    child_ptr: np.ndarray
    child_idx: np.ndarray
    n_below: np.ndarray


@njit_exact_numpy
def parameter_code(c, theta, alpha, sigma2):
    """0 if the parameters are in range (module docstring), else a PARAMETER_ERRORS key."""
    if not (math.isfinite(c) and c > 0.0):
        return 1
    if not (math.isfinite(alpha) and alpha < 1.0):
        return 2
    if not math.isfinite(theta):
        return 3
    if alpha >= 0.0:
        if theta < -2.0 * alpha:
            return 3
    else:
        kappa = -theta / alpha
        k = round(kappa)
        if k < 2 or abs(kappa - k) > 1e-9 * max(1.0, kappa):
            return 4
    if not (math.isfinite(sigma2) and sigma2 > 0.0):
        return 5
    return 0


def check_parameters(c, theta, alpha, sigma2=1.0):
    """Raise ``ValueError`` naming the argument if the PYDT parameters are out of range."""
    vals = {}
    for name, v in (("c", c), ("theta", theta), ("alpha", alpha), ("sigma2", sigma2)):
        a = np.asarray(v)
        if a.ndim != 0 or not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
            raise ValueError(f"{name}: must be a real scalar, got {v!r}")
        vals[name] = float(a)
    code = parameter_code(vals["c"], vals["theta"], vals["alpha"], vals["sigma2"])
    if code:
        raise ValueError(f"{PARAMETER_ERRORS[code]}; got c={vals['c']}, "
                         f"theta={vals['theta']}, alpha={vals['alpha']}, "
                         f"sigma2={vals['sigma2']}")


def check_tree(parent, log1m_t, n_leaves=None):
    """Validate a tree given as arrays; return (parent int64, log1m_t float64)."""
    parent = np.asarray(parent)
    if parent.ndim != 1 or not (
        np.issubdtype(parent.dtype, np.integer)
        or (np.issubdtype(parent.dtype, np.floating) and np.all(parent == np.round(parent)))
    ):
        raise ValueError("tree: parent must be a 1-D array of integer node indices")
    if n_leaves is None:
        n_leaves = (parent.shape[0] + 1) // 2
    parent = np.ascontiguousarray(parent, dtype=np.int64)
    log1m_t = np.ascontiguousarray(np.asarray(log1m_t, dtype=np.float64))
    if log1m_t.ndim != 1:
        raise ValueError("tree: log1m_t must be a 1-D array (one entry per internal slot)")
    code = diffusion_tree_structure(parent, log1m_t, int(n_leaves))[0]
    if code:
        raise ValueError(DIFFUSION_TREE_ERRORS[code])
    return parent, log1m_t


# --------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------
@njit_exact_numpy
def h_table(n_max, theta, alpha):
    """``H_j`` (Eq. 4.24) for j = 0..n_max and its derivatives in theta and alpha.

    Terms ``Gamma(i - alpha) / Gamma(i + 1 + theta)`` by the recurrence
    ``term_{i+1} = term_i (i - alpha) / (i + 1 + theta)`` (no overflow at large i).
    """
    H = np.zeros(n_max + 1)
    Ht = np.zeros(n_max + 1)
    Ha = np.zeros(n_max + 1)
    if n_max < 1:
        return H, Ht, Ha
    term = math.exp(math.lgamma(1.0 - alpha) - math.lgamma(2.0 + theta))
    psi_a = digamma(1.0 - alpha)  # psi(i - alpha) at i = 1
    psi_t = digamma(2.0 + theta)  # psi(i + 1 + theta) at i = 1
    for i in range(1, n_max + 1):
        H[i] = H[i - 1] + term
        Ht[i] = Ht[i - 1] - term * psi_t
        Ha[i] = Ha[i - 1] - term * psi_a
        term *= (i - alpha) / (i + 1.0 + theta)
        psi_a += 1.0 / (i - alpha)
        psi_t += 1.0 / (i + 1.0 + theta)
    return H, Ht, Ha


@njit_exact_numpy
def _gamma_tables(n, theta, alpha):
    """lgamma(j - alpha), psi(j - alpha), lgamma(j + theta), psi(j + theta), j = 0..n
    (entries that are not needed, e.g. j = 0, are left at 0)."""
    lga = np.zeros(n + 1)
    pga = np.zeros(n + 1)
    lgt = np.zeros(n + 1)
    pgt = np.zeros(n + 1)
    lga[1] = math.lgamma(1.0 - alpha)
    pga[1] = digamma(1.0 - alpha)
    for j in range(1, n):
        lga[j + 1] = lga[j] + math.log(j - alpha)
        pga[j + 1] = pga[j] + 1.0 / (j - alpha)
    if n >= 2:
        lgt[2] = math.lgamma(2.0 + theta)
        pgt[2] = digamma(2.0 + theta)
        for j in range(2, n):
            lgt[j + 1] = lgt[j] + math.log(j + theta)
            pgt[j + 1] = pgt[j] + 1.0 / (j + theta)
    return lga, pga, lgt, pgt


@njit_exact_numpy
def _prior(tree, n, params, g_l, want_grad):
    """log p(structure, times | c, theta, alpha) (Eqs. 4.23, 4.25) of the
    :class:`StructuredTree` ``tree`` with ``n`` leaves at ``params``
    (:class:`PYDTParameters`); adds d/d log1m_t into ``g_l`` when ``want_grad`` and
    returns (value, d/dc, d/dtheta, d/dalpha)."""
    parent, log1m_t, order, child_ptr, child_idx, n_below = tree
    c = params.c
    theta = params.theta
    alpha = params.alpha
    H, Ht, Ha = h_table(n, theta, alpha)
    lga, pga, lgt, pgt = _gamma_tables(n, theta, alpha)
    lp = 0.0
    gc = 0.0
    gth = 0.0
    gal = 0.0
    log_c = math.log(c)
    n_int = 0
    for r in range(order.shape[0]):
        v = order[r]
        if v < n:
            continue
        n_int += 1
        k_v = child_ptr[v + 1] - child_ptr[v]
        m = n_below[v]
        lv = log1m_t[v - n]
        # a(t_v) = c / (1 - t_v)
        lp += log_c - lv
        if want_grad:
            g_l[v - n] -= 1.0
        for k in range(3, k_v + 1):
            f = theta + (k - 1) * alpha
            if not f > 0.0:
                return -np.inf, np.nan, np.nan, np.nan
            lp += math.log(f)
            gth += 1.0 / f
            gal += (k - 1) / f
        for j in range(child_ptr[v], child_ptr[v + 1]):
            nb_ = n_below[child_idx[j]]
            lp += lga[nb_]
            gal -= pga[nb_]
        lp -= lgt[m] + (k_v - 1) * lga[1]
        gth -= pgt[m]
        gal += (k_v - 1) * pga[1]
        # edge into v: (A(t_u) - A(t_v)) H_{m-1} = c (lv - l_u) H_{m-1}
        p = parent[v]
        lu = 0.0 if p < 0 else log1m_t[p - n]
        e = lv - lu
        lp += c * e * H[m - 1]
        gc += e * H[m - 1]
        gth += c * e * Ht[m - 1]
        gal += c * e * Ha[m - 1]
        if want_grad:
            g_l[v - n] += c * H[m - 1]
            if p >= 0:
                g_l[p - n] -= c * H[m - 1]
    gc += n_int / c
    return lp, gc, gth, gal


@njit_exact_numpy
def edge_length(log1m_t, n, u, w):
    """t_w - t_u without cancellation (t = 1 at leaves)."""
    eu = math.exp(log1m_t[u - n])
    if w < n:
        return eu
    return -eu * math.expm1(log1m_t[w - n] - log1m_t[u - n])


@_inline
def _likelihood(tree, X, sigma2, want_grad, g_l, g_x, wrt_data=True):
    """log p(X | tree, sigma2) by upward Gaussian messages (digest §3.9) of the
    :class:`StructuredTree` ``tree``, and its reverse sweep: adds d/d log1m_t into
    ``g_l``, writes d/dX into ``g_x`` (with ``wrt_data``); returns (value, d/dsigma2).

    Messages and adjoints are stored for the internal nodes only (leaves read ``X``), in
    one workspace: fresh pages are expensive (a second allocation of that size per call
    would cost more than the sweep itself)."""
    parent, log1m_t, order, child_ptr, child_idx, _n_below = tree
    n, d = X.shape
    nn = parent.shape[0]
    work = np.empty((2 if want_grad else 1, nn - n, d))
    mu = work[0]
    s = np.zeros(nn)
    r = np.zeros(nn)
    delta = np.zeros(nn)
    ll = 0.0
    n_act = order.shape[0]
    for q in range(n_act - 1, -1, -1):
        v = order[q]
        if v < n:
            continue
        mv = mu[v - n]
        prec = 0.0
        mv[:] = 0.0
        sum_log_r = 0.0
        for a in range(child_ptr[v], child_ptr[v + 1]):
            w = child_idx[a]
            mw = X[w] if w < n else mu[w - n]
            delta[w] = edge_length(log1m_t, n, v, w)
            # a leaf diverging within e^-690 of t = 1 would give a zero variance: floor it
            r[w] = max(s[w] + sigma2 * delta[w], MIN_VARIANCE)
            iw = 1.0 / r[w]
            prec += iw
            sum_log_r += math.log(r[w])
            for j in range(d):
                mv[j] += iw * mw[j]
        s[v] = 1.0 / prec
        for j in range(d):
            mv[j] *= s[v]
        quad = 0.0
        for a in range(child_ptr[v], child_ptr[v + 1]):
            w = child_idx[a]
            mw = X[w] if w < n else mu[w - n]
            qw = 0.0
            for j in range(d):
                diff = mw[j] - mv[j]
                qw += diff * diff
            quad += qw / r[w]
        k_v = child_ptr[v + 1] - child_ptr[v]
        ll += -0.5 * d * (k_v - 1) * _LOG_2PI - 0.5 * d * sum_log_r + 0.5 * d * math.log(
            s[v]
        ) - 0.5 * quad
    root = order[0]
    mroot = mu[root - n]
    t_root = -math.expm1(log1m_t[root - n])
    r_root = max(s[root] + sigma2 * t_root, MIN_VARIANCE)
    q_root = 0.0
    for j in range(d):
        q_root += mroot[j] * mroot[j]
    ll += -0.5 * d * (_LOG_2PI + math.log(r_root)) - 0.5 * q_root / r_root
    if not want_grad:
        return ll, 0.0
    # reverse sweep (top-down): adjoints of s_v (sbar) and mu_v (mubar; every row is
    # written before it is read)
    g_s2 = 0.0
    sbar = np.zeros(nn)
    mubar = work[1]
    rbar = -0.5 * d / r_root + 0.5 * (q_root / r_root) / r_root
    for j in range(d):
        mubar[root - n, j] = -mroot[j] / r_root
    sbar[root] = rbar
    g_s2 += rbar * t_root
    # d t_root / d log1m_t = -(1 - t_root)
    g_l[root - n] -= rbar * sigma2 * math.exp(log1m_t[root - n])
    for q in range(n_act):
        v = order[q]
        if v < n:
            continue
        sv = s[v]
        mv = mu[v - n]
        mbv = mubar[v - n]
        for a in range(child_ptr[v], child_ptr[v + 1]):
            w = child_idx[a]
            iw = 1.0 / r[w]
            qw = 0.0
            proj = 0.0
            if w >= n:
                mw = mu[w - n]
                mbw = mubar[w - n]
            else:
                mw = X[w]
                mbw = g_x[w] if wrt_data else mubar[0]
            store = w >= n or wrt_data
            for j in range(d):
                diff = mw[j] - mv[j]
                qw += diff * diff
                proj += mbv[j] * diff
                if store:
                    mbw[j] = iw * (sv * mbv[j] - diff)
            rb = -0.5 * d * iw + iw * iw * (0.5 * d * sv + 0.5 * qw + sbar[v] * sv * sv
                                            - sv * proj)
            sbar[w] = rb
            g_s2 += rb * delta[w]
            db = rb * sigma2
            # delta = exp(l_v) - exp(l_w)  (exp(l_w) = 0 at leaves)
            g_l[v - n] += db * math.exp(log1m_t[v - n])
            if w >= n:
                g_l[w - n] -= db * math.exp(log1m_t[w - n])
    return ll, g_s2


@njit_exact_numpy
def choose_branch(u01, v, m, theta, alpha, first, nxt, n_below):
    """The branch a point passing branch point ``v`` (``m`` points through it before,
    ``K`` branches) takes, Eqs. 4.10-4.11: existing branch ``k`` with
    probability ``(b_k - alpha) / (m + theta)``, a new one with probability
    ``(theta + alpha K) / (m + theta)``. ``u01`` is a uniform draw; children are the
    linked list ``first[v], nxt[...]`` with leaf counts ``n_below``. Returns the chosen
    child, or -1 for a new branch.
    """
    n_children = 0
    w = first[v]
    while w >= 0:
        n_children += 1
        w = nxt[w]
    x = u01 * (m + theta)
    acc = theta + alpha * n_children
    if x < acc:
        return -1
    chosen = first[v]
    w = first[v]
    while w >= 0:
        acc += n_below[w] - alpha
        chosen = w
        if x < acc:
            break
        w = nxt[w]
    return chosen


@njit_exact_numpy
def pydt_forward(parent, log1m_t, X, c, theta, alpha, sigma2):
    """(log prior, log likelihood); ``-inf`` for an invalid tree or parameters."""
    return pydt_forward_inline(parent, log1m_t, X, c, theta, alpha, sigma2)


@_inline
def pydt_forward_inline(parent, log1m_t, X, c, theta, alpha, sigma2):
    """The body of :func:`pydt_forward`, inlined into its callers (the Op's C entry point
    calls it directly)."""
    # one specialisation of the heavy kernels: C-contiguous data (a no-op for C input;
    # sliced data would otherwise compile them again for layout 'A') and run-time flags
    # (np.bool_(...) keeps a constant from becoming a Literal[bool], a compile of its own)
    X_c = np.ascontiguousarray(X)
    n = X_c.shape[0]
    code, order, child_ptr, child_idx, n_below = diffusion_tree_structure(parent, log1m_t, n)
    if code != 0 or parameter_code(c, theta, alpha, sigma2) != 0:
        return -np.inf, -np.inf
    g_l = np.zeros(0)
    g_x = np.zeros((0, 0))
    tree = StructuredTree(parent, log1m_t, order, child_ptr, child_idx, n_below)
    lp = _prior(tree, n, PYDTParameters(c, theta, alpha, sigma2), g_l, np.bool_(False))[0]
    ll = _likelihood(tree, X_c, sigma2, np.bool_(False), g_l, g_x, np.bool_(True))[0]
    return lp, ll


@_inline
def pydt_value_and_grad_into(parent, log1m_t, X, params, weights, wrt_data, g_l, g_x):
    """:func:`pydt_value_and_grad` at ``params`` (:class:`PYDTParameters`) with
    ``weights`` (:class:`Cotangents`), writing the gradients into ``g_l`` (n - 1,) and,
    with ``wrt_data``, ``g_x`` (n, d) (the C entry point's out buffers, so the leaves'
    adjoints are never copied); returns ``(lp, ll, g_c, g_theta, g_alpha, g_sigma2)``."""
    c, theta, alpha, sigma2 = params.c, params.theta, params.alpha, params.sigma2
    w_prior, w_lik = weights
    n, d = X.shape
    g_l[:] = 0.0
    g_x[:] = 0.0
    g_lp = np.zeros(log1m_t.shape[0])
    code, order, child_ptr, child_idx, n_below = diffusion_tree_structure(parent, log1m_t, n)
    if code != 0 or parameter_code(c, theta, alpha, sigma2) != 0:
        g_l[:] = np.nan
        g_x[:] = np.nan
        return -np.inf, -np.inf, np.nan, np.nan, np.nan, np.nan
    tree = StructuredTree(parent, log1m_t, order, child_ptr, child_idx, n_below)
    lp, gc, gth, gal = _prior(tree, n, params, g_lp, np.bool_(True))
    ll, gs2 = _likelihood(tree, X, sigma2, np.bool_(True), g_l, g_x, wrt_data)
    for k in range(g_l.shape[0]):
        g_l[k] = w_prior * g_lp[k] + w_lik * g_l[k]
    if wrt_data:
        for i in range(n):
            for j in range(d):
                g_x[i, j] *= w_lik
    return lp, ll, w_prior * gc, w_prior * gth, w_prior * gal, w_lik * gs2


@njit_exact_numpy
def pydt_value_and_grad_flagged(parent, log1m_t, X, params, weights, wrt_data):
    """:func:`pydt_value_and_grad`, with the data's gradient only when ``wrt_data`` (else
    ``g_X`` is an empty (0, 0) array)."""
    n, d = X.shape
    g_l = np.empty(log1m_t.shape[0])
    g_x = np.empty((n, d)) if wrt_data else np.empty((0, 0))
    lp, ll, gc, gth, gal, gs2 = pydt_value_and_grad_into(
        parent, log1m_t, X, params, weights, wrt_data, g_l, g_x)
    return lp, ll, g_l, g_x, gc, gth, gal, gs2


@njit_exact_numpy
def pydt_value_and_grad(parent, log1m_t, X, params, weights):
    """Value and gradient of ``weights.prior * log prior + weights.likelihood * log
    likelihood`` at ``params`` (:class:`PYDTParameters` ``c``, ``theta``, ``alpha``,
    ``sigma2``; its ``beta`` is not read), ``weights`` a :class:`Cotangents`.

    Returns ``(lp, ll, g_log1m_t, g_X, g_c, g_theta, g_alpha, g_sigma2)``; gradients are
    NaN where the density is zero (invalid tree or parameters).
    """
    return pydt_value_and_grad_flagged(parent, log1m_t, X, params, weights, np.bool_(True))


@njit_exact_numpy
def log_split_prob(counts, theta, alpha, H_m1):
    """log q(n_1..n_K | m): probability that a node over ``m = sum n_k`` labelled leaves
    splits into the given (labelled) blocks, times integrated out; ``H_m1`` is
    ``H_{m-1}`` (Eq. 4.24). Eq. 4.23 without a(t_v), divided by ``H_{m-1}``."""
    k_v = counts.shape[0]
    m = 0
    out = 0.0
    for k in range(3, k_v + 1):
        f = theta + (k - 1) * alpha
        if not f > 0.0:
            return -np.inf
        out += math.log(f)
    for j in range(k_v):
        m += counts[j]
        out += math.lgamma(counts[j] - alpha)
    out -= math.lgamma(m + theta) + (k_v - 1) * math.lgamma(1.0 - alpha)
    return out - math.log(H_m1)


@njit_exact_numpy
def _log_structure(parent, n, theta, alpha):
    code, order, child_ptr, child_idx, n_below = diffusion_tree_topology(parent, n)
    if code != 0:
        return -np.inf
    H = h_table(n, theta, alpha)[0]
    out = 0.0
    for r in range(order.shape[0]):
        v = order[r]
        if v < n:
            continue
        k_v = child_ptr[v + 1] - child_ptr[v]
        counts = np.empty(k_v, dtype=np.int64)
        for j in range(k_v):
            counts[j] = n_below[child_idx[child_ptr[v] + j]]
        out += log_split_prob(counts, theta, alpha, H[n_below[v] - 1])
    return out


def log_structure_prob(parent, theta, alpha):
    """log P(structure | theta, alpha) of a tree over labelled leaves, divergence times
    integrated out: the product over nodes of :func:`log_split_prob`. It does not depend
    on ``c`` (or on the divergence function, when ``A(1) = infinity``)."""
    parent = np.ascontiguousarray(parent, dtype=np.int64)
    n = (parent.shape[0] + 1) // 2
    check_parameters(1.0, theta, alpha, 1.0)
    return float(_log_structure(parent, n, float(theta), float(alpha)))
