"""The jitted dispatchers: one interface over the conjugate families.

BHC, the CRP samplers and the collapsed-likelihood Ops call these with ``fam`` (an
integer code, :data:`custom_ops.conjugate.FAMILY_CODES`) and ``hp`` (the family's
hyperparameters concatenated in ``hyper_names`` order, S0 row-major:
:func:`custom_ops.conjugate.pack_hyper`). Gradients use the same flat layout. Branching
on a code instead of passing jitted functions as values keeps every caller cacheable on
disk (Numba refuses to cache "dynamic globals"), so a kernel is compiled once for all
families. A new family adds one branch to each:

* statistics and marginals: ``stats_size``, ``point_stats``, ``add``, ``remove``,
  ``log_marginal``, ``log_marginal_grad`` (``out += weight * gradient``, flat),
  ``log_predictive``; ``log_predictive_columns`` (Gaussian families: the predictive's
  marginal on some columns at many points);
* support checks returning error codes (messages in :data:`DATA_ERRORS` /
  :data:`HYPER_ERRORS`, raised by the jitted callers): ``data_error``, ``hyper_error``;
* block states for collapsed samplers: ``state_size``, ``state_table``, ``state_init``,
  ``state_add``, ``state_remove``, ``state_log_predictive``, ``state_log_marginal``
  (the NIW state keeps its Cholesky factor and Student-t constants, O(d^2) per update).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate.bernoulli import (
    bernoulli_add,
    bernoulli_log_marginal,
    bernoulli_log_marginal_grad,
    bernoulli_log_predictive,
    bernoulli_point_stats,
    bernoulli_remove,
)
from custom_ops.conjugate.diag_gaussian import (
    diag_gaussian_add,
    diag_gaussian_log_marginal,
    diag_gaussian_log_marginal_grad,
    diag_gaussian_log_predictive,
    diag_gaussian_log_predictive_columns,
    diag_gaussian_point_stats,
    diag_gaussian_remove,
)
from custom_ops.conjugate.families import (
    BERNOULLI,
    DIAG_GAUSSIAN,
    GAUSSIAN,
    MULTINOMIAL,
    bernoulli_view,
    diag_gaussian_view,
    gaussian_view,
)
from custom_ops.conjugate.gaussian import (
    gaussian_add,
    gaussian_log_marginal,
    gaussian_log_marginal_grad,
    gaussian_log_predictive,
    gaussian_log_predictive_columns,
    gaussian_point_stats,
    gaussian_remove,
    gaussian_state,
    gaussian_state_log_marginal,
)
from custom_ops.conjugate.multinomial import (
    multinomial_add,
    multinomial_log_marginal,
    multinomial_log_marginal_grad,
    multinomial_log_predictive,
    multinomial_point_stats,
    multinomial_remove,
)
from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower

__all__ = [
    "DATA_ERRORS",
    "HYPER_ERRORS",
    "add",
    "data_error",
    "hyper_error",
    "log_marginal",
    "log_marginal_grad",
    "log_predictive",
    "log_predictive_columns",
    "point_stats",
    "remove",
    "state_add",
    "state_init",
    "state_log_marginal",
    "state_log_predictive",
    "state_remove",
    "state_size",
    "state_table",
    "stats_size",
]



@njit_exact
def stats_size(fam, d):
    """Length of the sufficient-statistics vector for data with ``d`` columns."""
    if fam == BERNOULLI:
        return 1 + d
    if fam == MULTINOMIAL:
        return 2 + d
    if fam == GAUSSIAN:
        return 1 + d + d * d
    return 1 + 2 * d


@njit_exact
def point_stats(fam, X):
    """One row of sufficient statistics per row of ``X``."""
    if fam == BERNOULLI:
        return bernoulli_point_stats(X)
    if fam == MULTINOMIAL:
        return multinomial_point_stats(X)
    if fam == GAUSSIAN:
        return gaussian_point_stats(X)
    return diag_gaussian_point_stats(X)


@njit_exact
def add(fam, stats, x):
    """Add the point ``x`` to ``stats`` in place."""
    if fam == BERNOULLI:
        bernoulli_add(stats, x)
    elif fam == MULTINOMIAL:
        multinomial_add(stats, x)
    elif fam == GAUSSIAN:
        gaussian_add(stats, x)
    else:
        diag_gaussian_add(stats, x)


@njit_exact
def remove(fam, stats, x):
    """Remove the point ``x`` from ``stats`` in place."""
    if fam == BERNOULLI:
        bernoulli_remove(stats, x)
    elif fam == MULTINOMIAL:
        multinomial_remove(stats, x)
    elif fam == GAUSSIAN:
        gaussian_remove(stats, x)
    else:
        diag_gaussian_remove(stats, x)


@njit_exact
def log_marginal(fam, stats, hp):
    """log p(D) of the set with statistics ``stats`` (Heller 2007 Eq. 3.1's p(D | H1));
    NaN, not an exception, where the NIW posterior scale is numerically not positive
    definite (:mod:`custom_ops.conjugate.gaussian`), as for ``log_marginal_grad`` and
    the predictives."""
    if fam == BERNOULLI:
        return bernoulli_log_marginal(stats, bernoulli_view(hp))
    if fam == MULTINOMIAL:
        return multinomial_log_marginal(stats, (hp,))
    if fam == GAUSSIAN:
        return gaussian_log_marginal(stats, gaussian_view(hp))
    return diag_gaussian_log_marginal(stats, diag_gaussian_view(hp))


@njit_exact
def log_marginal_grad(fam, stats, hp, out, weight):
    """``out += weight * ∂ log p(D) / ∂ hp`` (flat layout); returns log p(D)."""
    if fam == BERNOULLI:
        v, (ga, gb) = bernoulli_log_marginal_grad(stats, bernoulli_view(hp))
        d = ga.shape[0]
        for j in range(d):
            out[j] += weight * ga[j]
            out[d + j] += weight * gb[j]
        return v
    if fam == MULTINOMIAL:
        v, (g,) = multinomial_log_marginal_grad(stats, (hp,))
        for j in range(g.shape[0]):
            out[j] += weight * g[j]
        return v
    if fam == GAUSSIAN:
        v, (gm, gk, gn, gS) = gaussian_log_marginal_grad(stats, gaussian_view(hp))
        d = gm.shape[0]
        for j in range(d):
            out[j] += weight * gm[j]
        out[d] += weight * gk
        out[d + 1] += weight * gn
        for j in range(d):
            for k in range(d):
                out[d + 2 + j * d + k] += weight * gS[j, k]
        return v
    v, (g0, g1, g2, g3) = diag_gaussian_log_marginal_grad(stats, diag_gaussian_view(hp))
    d = g0.shape[0]
    for j in range(d):
        out[j] += weight * g0[j]
        out[d + j] += weight * g1[j]
        out[2 * d + j] += weight * g2[j]
        out[3 * d + j] += weight * g3[j]
    return v


@njit_exact
def log_predictive(fam, x, stats, hp):
    """log p(x | D) of one new point given the set with statistics ``stats``."""
    if fam == BERNOULLI:
        return bernoulli_log_predictive(x, stats, bernoulli_view(hp))
    if fam == MULTINOMIAL:
        return multinomial_log_predictive(x, stats, (hp,))
    if fam == GAUSSIAN:
        return gaussian_log_predictive(x, stats, gaussian_view(hp))
    return diag_gaussian_log_predictive(x, stats, diag_gaussian_view(hp))


@njit_exact
def log_predictive_columns(fam, points, cols, stats, hp, out):
    """``out[g]`` = log p(x_cols = points[g] | D): the posterior predictive's marginal on
    the columns ``cols`` (int64 array) at each row of ``points`` (G, len(cols)), its
    parameters computed once. Gaussian families only (the outputs of continuous mixtures
    on a grid); other codes raise."""
    if fam == GAUSSIAN:
        gaussian_log_predictive_columns(points, cols, stats, gaussian_view(hp), out)
    elif fam == DIAG_GAUSSIAN:
        diag_gaussian_log_predictive_columns(points, cols, stats, diag_gaussian_view(hp), out)
    else:
        raise ValueError("log_predictive_columns: Gaussian families only")


#: Messages of the codes :func:`data_error` returns.
DATA_ERRORS = {
    1: "data: contains NaN or infinite values",
    2: "data: the bernoulli likelihood needs binary (0/1) data",
    3: "data: the multinomial likelihood needs non-negative integer counts",
}
#: Messages of the codes :func:`hyper_error` returns.
HYPER_ERRORS = {
    2: "hyper: a Beta / Dirichlet / Gamma / kappa0 hyperparameter is not finite and > 0",
    3: "hyper: nu0 must be > d - 1",
    4: "hyper: S0 must be symmetric positive definite",
    5: "hyper: a hyperparameter has the wrong shape for the data",
    6: "hyper: m0 must be finite",
}


@njit_exact
def data_error(fam, X):
    """0 if every row of ``X`` is in the family's support, else a :data:`DATA_ERRORS` code."""
    n, d = X.shape
    for i in range(n):
        for j in range(d):
            v = X[i, j]
            if not np.isfinite(v):
                return 1
            if fam == BERNOULLI and v != 0.0 and v != 1.0:
                return 2
            if fam == MULTINOMIAL and (v < 0.0 or v != math.floor(v)):
                return 3
    return 0


@njit_exact
def _all_positive(v):
    for x in v:
        if not (np.isfinite(x) and x > 0.0):
            return False
    return True


@njit_exact
def _all_finite(v):
    for x in v:
        if not np.isfinite(x):
            return False
    return True


@njit_exact
def _spd_error(S, strict_symmetry):
    """0 if S is SPD, else 4. Without ``strict_symmetry`` only the symmetric part must be
    positive definite (the kernels symmetrise S0, and ``verify_grad`` perturbs one entry)."""
    d = S.shape[0]
    for j in range(d):
        for k in range(d):
            if not np.isfinite(S[j, k]):
                return 4
            if strict_symmetry and k < j:
                if abs(S[j, k] - S[k, j]) > 1e-8 * (abs(S[j, k]) + abs(S[k, j]) + 1e-300):
                    return 4
    # positive definiteness of the symmetric part by an explicit Cholesky (NaN if not)
    if d > 0 and np.isnan(cholesky_lower(0.5 * (S + S.T))[0, 0]):
        return 4
    return 0


@njit_exact
def hyper_error(fam, hp, d, strict_symmetry):
    """0 if ``hp`` is a valid packed hyperparameter vector for data with ``d`` columns,
    else a :data:`HYPER_ERRORS` code (the jitted callers raise the message)."""
    if fam == BERNOULLI:
        if hp.shape[0] != 2 * d:
            return 5
        return 0 if _all_positive(hp) else 2
    if fam == MULTINOMIAL:
        if hp.shape[0] != d:
            return 5
        return 0 if _all_positive(hp) else 2
    if fam == GAUSSIAN:
        if hp.shape[0] != d * d + d + 2:
            return 5
        m0, kappa0, nu0, S0 = gaussian_view(hp)
        if not _all_finite(m0):
            return 6
        if not (np.isfinite(kappa0) and kappa0 > 0.0):
            return 2
        if not (np.isfinite(nu0) and nu0 > d - 1):
            return 3
        return _spd_error(S0, strict_symmetry)
    if hp.shape[0] != 4 * d:
        return 5
    if not _all_finite(hp[:d]):
        return 6
    return 0 if _all_positive(hp[d:]) else 2


# Block states for collapsed samplers: what an item's add / remove / predictive needs.
# For every family but the NIW the state is the sufficient-statistics vector. The NIW
# state is its Cholesky-factored posterior plus three constants of the Student-t
# predictive, refreshed after every add/remove, so both an update and a predictive are
# O(d^2):
#     log t(x) = c - e * log1p(w * |L^{-1}(x - m_n)|^2),
#     c = lgamma((dof + d)/2) - lgamma(dof/2) - d/2 log(dof pi) - 1/2 log|s L Lᵀ|,
#     w = 1 / (s dof), e = (dof + d)/2, dof = nu_n - d + 1, s = (kappa_n + 1)/(kappa_n dof)
# (the multivariate Student-t of Murphy 2012 Eq. 4.215 / the Heller digest §1.2).
# Everything but log|L Lᵀ| depends only on the block size, so ``state_table`` tabulates it
# once per kernel call and a refresh costs d logarithms.
@njit_exact
def state_size(fam, d):
    """Length of one block state."""
    if fam == GAUSSIAN:
        # posterior (n, kappa_n, nu_n, m_n, L), 3 predictive constants, d scratch
        return 3 + d + d * d + 3 + d
    return stats_size(fam, d)


@njit_exact
def state_table(fam, hp, d, nmax):
    """Rows [c + log|L|, w, e] for block sizes 0..nmax (one dummy row for other families)."""
    if fam != GAUSSIAN:
        return np.zeros((1, 3))
    kappa0 = hp[d]
    nu0 = hp[d + 1]
    tab = np.empty((nmax + 1, 3))
    for nk in range(nmax + 1):
        kn = kappa0 + nk
        dof = nu0 + nk - d + 1.0
        sf = (kn + 1.0) / (kn * dof)
        tab[nk, 0] = (
            math.lgamma(0.5 * (dof + d))
            - math.lgamma(0.5 * dof)
            - 0.5 * d * math.log(dof * math.pi)
            - 0.5 * d * math.log(sf)
        )
        tab[nk, 1] = 1.0 / (sf * dof)
        tab[nk, 2] = 0.5 * (dof + d)
    return tab


@njit_exact
def _niw_refresh(state, d, tab):
    base = 3 + d + d * d
    row = int(state[0])
    logdet = 0.0
    for j in range(d):
        logdet += math.log(state[3 + d + j * d + j])
    state[base] = tab[row, 0] - logdet
    state[base + 1] = tab[row, 1]
    state[base + 2] = tab[row, 2]


@njit_exact
def _niw_update(state, x, sign, tab):
    """Add (sign = +1) or remove (sign = -1) one item from a NIW block state in place:
    :func:`gaussian_state_add` / ``_remove`` without their scratch allocation. Adding x:
    S_n += k/(k+1) (x - m_n)(x - m_n)ᵀ, m_n <- (k m_n + x)/(k+1); removing inverts it
    (rank-1 Cholesky update / downdate, O(d^2))."""
    d = x.shape[0]
    kn = state[1]
    base_l = 3 + d
    if sign > 0:
        f = math.sqrt(kn / (kn + 1.0))
        for j in range(d):
            state[base_l + d * d + 3 + j] = f * (x[j] - state[3 + j])  # scratch: v
            state[3 + j] = (kn * state[3 + j] + x[j]) / (kn + 1.0)
        new_kn = kn + 1.0
    else:
        ko = kn - 1.0
        f = math.sqrt(ko / kn)
        for j in range(d):
            mo = (kn * state[3 + j] - x[j]) / ko
            state[base_l + d * d + 3 + j] = f * (x[j] - mo)
            state[3 + j] = mo
        new_kn = ko
    # rank-1 update of the lower Cholesky factor L (row-major at base_l), v in scratch
    v0 = base_l + d * d + 3
    for k in range(d):
        lkk = state[base_l + k * d + k]
        vk = state[v0 + k]
        r2 = lkk * lkk + sign * vk * vk
        if r2 <= 0.0:
            raise ValueError("Cholesky downdate lost positive definiteness")
        r = math.sqrt(r2)
        c = r / lkk
        s_ = vk / lkk
        state[base_l + k * d + k] = r
        for i in range(k + 1, d):
            lik = (state[base_l + i * d + k] + sign * s_ * state[v0 + i]) / c
            state[base_l + i * d + k] = lik
            state[v0 + i] = c * state[v0 + i] - s_ * lik
    state[0] += sign
    state[1] = new_kn
    state[2] += sign
    _niw_refresh(state, d, tab)


@njit_exact
def state_init(fam, state, hp, d, tab):
    """The state of an empty block, in place."""
    if fam == GAUSSIAN:
        base = 3 + d + d * d
        state[:base] = gaussian_state(np.zeros(1 + d + d * d), gaussian_view(hp))
        _niw_refresh(state, d, tab)
    else:
        state[:] = 0.0


@njit_exact
def state_add(fam, state, x, tab):
    if fam == GAUSSIAN:
        _niw_update(state, x, 1.0, tab)
    else:
        add(fam, state, x)


@njit_exact
def state_remove(fam, state, x, tab):
    if fam == GAUSSIAN:
        _niw_update(state, x, -1.0, tab)
    else:
        remove(fam, state, x)


@njit_exact
def state_log_predictive(fam, x, state, hp, work):
    """log p(x | the block's items): the posterior predictive (``work``: scratch (d,))."""
    if fam == GAUSSIAN:
        d = x.shape[0]
        base = 3 + d + d * d
        # forward substitution L u = x - m_n, accumulating |u|^2
        u = work
        maha = 0.0
        for j in range(d):
            acc = x[j] - state[3 + j]
            row = 3 + d + j * d
            for k in range(j):
                acc -= state[row + k] * u[k]
            u[j] = acc / state[row + j]
            maha += u[j] * u[j]
        return state[base] - state[base + 2] * math.log1p(state[base + 1] * maha)
    return log_predictive(fam, x, state, hp)


@njit_exact
def state_log_marginal(fam, state, hp, d):
    """log p(the block's items), component parameters integrated out."""
    if fam == GAUSSIAN:
        return gaussian_state_log_marginal(state[: 3 + d + d * d], gaussian_view(hp))
    return log_marginal(fam, state, hp)
