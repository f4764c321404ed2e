"""Normal-Inverse-Wishart conjugate family, full covariance (Heller 2007 Eqs. 2.13-2.14;
the standard form in the Heller digest §1.2).

Data rows are real vectors of length d; ``hyper = (m0, kappa0, nu0, S0)``: m0 (d,),
kappa0 > 0 and nu0 > d - 1 floats, S0 (d, d) symmetric positive definite inverse-Wishart
scale. Statistics ``[n, Σx (d), Σxxᵀ (d*d, row-major)]``. Jitted kernels
``gaussian_stats`` ... ``gaussian_log_predictive`` (signatures in
:mod:`custom_ops.conjugate`), ``gaussian_log_predictive_columns`` (the predictive's
marginal on some columns at many points), ``gaussian_posterior`` (the posterior
parameters, also used by :mod:`custom_ops.mixture_of_trees.gaussian`), and the incremental
posterior for O(d^2) collapsed Gibbs updates: ``gaussian_state`` (posterior ``[n,
kappa_n, nu_n, m_n (d), L_n (d*d)]`` with L_n the lower Cholesky factor of S_n),
``gaussian_state_add`` / ``gaussian_state_remove`` (rank-1 Cholesky update / downdate),
``gaussian_state_log_predictive`` (multivariate Student-t, one triangular solve) and
``gaussian_state_log_marginal``.

Raw-moment statistics lose precision when the data sit far from the origin relative to
their spread (cancellation in Σxxᵀ - n x̄x̄ᵀ); centre or standardise the data first.

The posterior scale S_n is positive definite whenever S0 is, but computed in floating
point it can lose that at extreme legal hyperparameters (kappa0 ~ e^100 cancels
κ0 m0 m0ᵀ against κn mn mnᵀ; S0 ~ e^-30 is below the rounding of the data's scatter),
points a sampler's long trajectory proposes. There ``gaussian_log_marginal`` and
``gaussian_log_marginal_grad`` return NaN (value and every gradient), and the
predictives ``gaussian_log_predictive(_columns)`` NaN, instead of raising: a C entry
point cannot raise, the callers' samplers treat a non-finite log density as a divergence
or a rejection and go on, and the BHC estimators refuse a tree whose evidence is NaN with
a message naming the hyperparameters. The Cholesky factors come from
:func:`custom_ops.spd_kernels.cholesky_lower` (NaN, not an exception, when not positive
definite). The incremental state (``gaussian_state``, used by the collapsed Gibbs sweeps)
still raises: a Gibbs sweep has no rejection, and a NaN state would give garbage
assignment weights.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.conjugate.special import LOG_PI, log_mvgamma, mvdigamma
from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower

__all__ = [
    "gaussian_add",
    "gaussian_log_marginal",
    "gaussian_log_marginal_grad",
    "gaussian_log_predictive",
    "gaussian_log_predictive_columns",
    "gaussian_point_stats",
    "gaussian_posterior",
    "gaussian_remove",
    "gaussian_state",
    "gaussian_state_add",
    "gaussian_state_log_marginal",
    "gaussian_state_log_predictive",
    "gaussian_state_remove",
    "gaussian_state_size",
    "gaussian_stats",
    "gaussian_stats_size",
]



def gaussian_stats_size(d):
    return 1 + d + d * d


def gaussian_state_size(d):
    return 3 + d + d * d


@njit_exact
def gaussian_stats(X):
    n, d = X.shape
    s = np.zeros(1 + d + d * d)
    s[0] = n
    for i in range(n):
        for j in range(d):
            xj = X[i, j]
            s[1 + j] += xj
            base = 1 + d + j * d
            for k in range(d):
                s[base + k] += xj * X[i, k]
    return s


@njit_exact
def gaussian_point_stats(X):
    n, d = X.shape
    s = np.empty((n, 1 + d + d * d))
    for i in range(n):
        s[i, 0] = 1.0
        for j in range(d):
            xj = X[i, j]
            s[i, 1 + j] = xj
            base = 1 + d + j * d
            for k in range(d):
                s[i, base + k] = xj * X[i, k]
    return s


@njit_exact
def gaussian_add(stats, x):
    d = x.shape[0]
    stats[0] += 1.0
    for j in range(d):
        stats[1 + j] += x[j]
        base = 1 + d + j * d
        for k in range(d):
            stats[base + k] += x[j] * x[k]


@njit_exact
def gaussian_remove(stats, x):
    d = x.shape[0]
    stats[0] -= 1.0
    for j in range(d):
        stats[1 + j] -= x[j]
        base = 1 + d + j * d
        for k in range(d):
            stats[base + k] -= x[j] * x[k]


@njit_exact
def gaussian_posterior(stats, m0, kappa0, nu0, S0):
    """(kappa_n, nu_n, m_n, S_n); S_n = S0 + Σxxᵀ + κ0 m0 m0ᵀ - κn mn mnᵀ."""
    d = m0.shape[0]
    n = stats[0]
    kn = kappa0 + n
    nn = nu0 + n
    mn = np.empty(d)
    for j in range(d):
        mn[j] = (kappa0 * m0[j] + stats[1 + j]) / kn
    Sn = np.empty((d, d))
    for j in range(d):
        for k in range(d):
            Sn[j, k] = (
                0.5 * (S0[j, k] + S0[k, j])
                + stats[1 + d + j * d + k]
                + kappa0 * m0[j] * m0[k]
                - kn * mn[j] * mn[k]
            )
    return kn, nn, mn, Sn


@njit_exact
def _sym(S):
    return 0.5 * (S + S.T)


@njit_exact
def _logdet_chol(L):
    out = 0.0
    for j in range(L.shape[0]):
        out += math.log(L[j, j])
    return 2.0 * out


@njit_exact
def _not_positive_definite(L):
    """True if :func:`cholesky_lower` found its matrix not positive definite (NaN factor)."""
    return L.shape[0] > 0 and np.isnan(L[0, 0])


@njit_exact
def gaussian_log_marginal(stats, hyper):
    """``π^{-nd/2} (κ0/κn)^{d/2} |S0|^{ν0/2} |Sn|^{-νn/2} Γ_d(νn/2) / Γ_d(ν0/2)``; NaN
    where S0 or Sn is numerically not positive definite (module docstring)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = stats[0]
    kn, nn, _mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
    # a NaN factor gives a NaN log-determinant, hence a NaN value
    ld0 = _logdet_chol(cholesky_lower(_sym(S0)))
    ldn = _logdet_chol(cholesky_lower(Sn))
    return (
        -0.5 * n * d * LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * ldn
        + log_mvgamma(0.5 * nn, d)
        - log_mvgamma(0.5 * nu0, d)
    )


@njit_exact
def _chol_inverse(L):
    d = L.shape[0]
    Linv = np.linalg.solve(L, np.eye(d))
    return Linv.T @ Linv


@njit_exact
def gaussian_log_marginal_grad(stats, hyper):
    """Gradients: ∂/∂m0 = νn κ0 Sn⁻¹ (mn - m0); ∂/∂κ0 = d/2 (1/κ0 - 1/κn)
    - νn/2 (m0-mn)ᵀ Sn⁻¹ (m0-mn); ∂/∂ν0 = ½ log|S0| - ½ log|Sn| + ½ Σ_j [ψ((νn+1-j)/2)
    - ψ((ν0+1-j)/2)]; ∂/∂S0 = ν0/2 S0⁻¹ - νn/2 Sn⁻¹. All NaN where S0 or Sn is
    numerically not positive definite (module docstring)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = stats[0]
    kn, nn, mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
    L0 = cholesky_lower(_sym(S0))
    Ln = cholesky_lower(Sn)
    if _not_positive_definite(L0) or _not_positive_definite(Ln):
        # before the inverses: LAPACK's solve raises on a NaN factor
        return np.nan, (np.full(d, np.nan), np.nan, np.nan, np.full((d, d), np.nan))
    ld0 = _logdet_chol(L0)
    ldn = _logdet_chol(Ln)
    value = (
        -0.5 * n * d * LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * ldn
        + log_mvgamma(0.5 * nn, d)
        - log_mvgamma(0.5 * nu0, d)
    )
    S0inv = _chol_inverse(L0)
    Sninv = _chol_inverse(Ln)
    diff = mn - m0
    Sd = Sninv @ diff
    g_m0 = nn * kappa0 * Sd
    g_kappa0 = 0.5 * d * (1.0 / kappa0 - 1.0 / kn) - 0.5 * nn * np.dot(diff, Sd)
    g_nu0 = 0.5 * ld0 - 0.5 * ldn + 0.5 * (mvdigamma(0.5 * nn, d) - mvdigamma(0.5 * nu0, d))
    g_S0 = 0.5 * nu0 * S0inv - 0.5 * nn * Sninv
    return value, (g_m0, g_kappa0, g_nu0, g_S0)


@njit_exact
def _student_t_log_normaliser(L, scale_factor, dof):
    """The x-free part of :func:`_student_t_logpdf_chol`'s log density."""
    d = L.shape[0]
    logdet = _logdet_chol(L) + d * math.log(scale_factor)
    return (
        math.lgamma(0.5 * (dof + d))
        - math.lgamma(0.5 * dof)
        - 0.5 * d * math.log(dof * math.pi)
        - 0.5 * logdet
    )


@njit_exact
def _squared_mahalanobis_chol(x, loc, L, z):
    """‖L⁻¹ (x - loc)‖² by forward substitution, O(d^2); ``z`` is scratch (d,)."""
    d = x.shape[0]
    for j in range(d):
        acc = x[j] - loc[j]
        for k in range(j):
            acc -= L[j, k] * z[k]
        z[j] = acc / L[j, j]
    maha = 0.0
    for j in range(d):
        maha += z[j] * z[j]
    return maha


@njit_exact
def _student_t_logpdf_chol(x, loc, L, scale_factor, dof):
    """Multivariate t with shape matrix scale_factor * L Lᵀ."""
    d = x.shape[0]
    maha = _squared_mahalanobis_chol(x, loc, L, np.empty(d))
    maha /= scale_factor
    return _student_t_log_normaliser(L, scale_factor, dof) - 0.5 * (dof + d) * math.log1p(
        maha / dof
    )


@njit_exact
def gaussian_log_predictive(x, stats, hyper):
    """Student-t_{νn-d+1}(x | mn, Sn (κn+1) / (κn (νn-d+1))), from raw stats: O(d^3);
    NaN where Sn is numerically not positive definite (module docstring)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    kn, nn, mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
    dof = nn - d + 1.0
    L = cholesky_lower(Sn)
    return _student_t_logpdf_chol(x, mn, L, (kn + 1.0) / (kn * dof), dof)


@njit_exact
def gaussian_log_predictive_columns(points, cols, stats, hyper, out):
    """``out[g]`` = log p(points[g] | D) of the predictive's marginal on the columns
    ``cols`` (``points`` (G, len(cols))): the Student-t of :func:`gaussian_log_predictive`
    restricted to the sub-vector (same dof, location m_n[cols], shape sub-matrix). The
    normaliser and the Cholesky factor are computed once for all points. NaN where the
    shape sub-matrix is numerically not positive definite (module docstring)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    p = cols.shape[0]
    kn, nn, mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
    dof = nn - d + 1.0
    scale_factor = (kn + 1.0) / (kn * dof)
    loc = np.empty(p)
    sub = np.empty((p, p))
    for a in range(p):
        loc[a] = mn[cols[a]]
        for b in range(p):
            sub[a, b] = Sn[cols[a], cols[b]]
    L = cholesky_lower(sub)
    log_norm = _student_t_log_normaliser(L, scale_factor, dof)
    z = np.empty(p)
    for g in range(points.shape[0]):
        maha = _squared_mahalanobis_chol(points[g], loc, L, z)
        maha /= scale_factor
        out[g] = log_norm - 0.5 * (dof + p) * math.log1p(maha / dof)


@njit_exact
def gaussian_state(stats, hyper):
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    kn, nn, mn, Sn = gaussian_posterior(stats, m0, kappa0, nu0, S0)
    L = np.linalg.cholesky(Sn)
    st = np.empty(3 + d + d * d)
    st[0] = stats[0]
    st[1] = kn
    st[2] = nn
    st[3 : 3 + d] = mn
    st[3 + d :] = L.ravel()
    return st


@njit_exact
def _chol_rank1(L, v, sign):
    """In place: L Lᵀ ± v vᵀ (sign = +1 update, -1 downdate); v is overwritten. O(d^2)."""
    d = L.shape[0]
    for k in range(d):
        lkk = L[k, k]
        r2 = lkk * lkk + sign * v[k] * v[k]
        if r2 <= 0.0:
            raise ValueError("Cholesky downdate lost positive definiteness")
        r = math.sqrt(r2)
        c = r / lkk
        s = v[k] / lkk
        L[k, k] = r
        for i in range(k + 1, d):
            L[i, k] = (L[i, k] + sign * s * v[i]) / c
            v[i] = c * v[i] - s * L[i, k]


@njit_exact
def gaussian_state_add(state, x):
    """Add x: Sn += κn/(κn+1) (x-mn)(x-mn)ᵀ, mn ← (κn mn + x)/(κn+1), κn, νn += 1."""
    d = x.shape[0]
    kn = state[1]
    mn = state[3 : 3 + d]
    L = state[3 + d :].reshape((d, d))
    f = math.sqrt(kn / (kn + 1.0))
    v = np.empty(d)
    for j in range(d):
        v[j] = f * (x[j] - mn[j])
    _chol_rank1(L, v, 1.0)
    for j in range(d):
        mn[j] = (kn * mn[j] + x[j]) / (kn + 1.0)
    state[0] += 1.0
    state[1] = kn + 1.0
    state[2] += 1.0


@njit_exact
def gaussian_state_remove(state, x):
    """Exact inverse of :func:`gaussian_state_add` (rank-1 Cholesky downdate)."""
    d = x.shape[0]
    kn = state[1]
    mn = state[3 : 3 + d]
    L = state[3 + d :].reshape((d, d))
    ko = kn - 1.0
    f = math.sqrt(ko / kn)
    v = np.empty(d)
    for j in range(d):
        mo = (kn * mn[j] - x[j]) / ko
        v[j] = f * (x[j] - mo)
        mn[j] = mo
    _chol_rank1(L, v, -1.0)
    state[0] -= 1.0
    state[1] = ko
    state[2] -= 1.0


@njit_exact
def gaussian_state_log_predictive(x, state):
    d = x.shape[0]
    kn = state[1]
    nn = state[2]
    mn = state[3 : 3 + d]
    L = state[3 + d :].reshape((d, d))
    dof = nn - d + 1.0
    return _student_t_logpdf_chol(x, mn, L, (kn + 1.0) / (kn * dof), dof)


@njit_exact
def gaussian_state_log_marginal(state, hyper):
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = state[0]
    kn = state[1]
    nn = state[2]
    L = state[3 + d :].reshape((d, d))
    ld0 = _logdet_chol(np.linalg.cholesky(_sym(S0)))
    return (
        -0.5 * n * d * LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * _logdet_chol(L)
        + log_mvgamma(0.5 * nn, d)
        - log_mvgamma(0.5 * nu0, d)
    )
