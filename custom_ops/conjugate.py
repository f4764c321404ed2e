"""Conjugate-exponential-family kernels: sufficient statistics, marginal likelihoods,
posterior predictives and hyperparameter gradients, jitted with Numba.

Shared by Bayesian hierarchical clustering (``custom_ops.bhc``) and the collapsed
samplers of Dirichlet-process mixtures. Formulas: Heller (2007) §2.1.1 (Eqs. 2.12-2.14)
and the standard forms given in ``specs/heller-bhc.md`` §1.2.

Families
--------
======================  ==========================  ======================================
name                    data row ``x``              hyperparameter tuple ``hyper``
======================  ==========================  ======================================
``"bernoulli"``         binary vector, length d     ``(a, b)``: Beta(a_j, b_j) per dim,
                                                    both float64 arrays (d,)
``"multinomial"``       count vector, length K      ``(concentration,)``: Dirichlet
                        (one-hot = categorical)     parameters, float64 array (K,)
``"gaussian"``          real vector, length d       ``(m0, kappa0, nu0, S0)``: Normal-
                        (full covariance)           Inverse-Wishart; m0 (d,), kappa0 > 0,
                                                    nu0 > d - 1 (floats), S0 (d, d) SPD
                                                    inverse-Wishart scale
``"diag_gaussian"``     real vector, length d       ``(m0, kappa0, a0, b0)``: independent
                        (independent dims)          Normal-Gamma per dim, all arrays (d,):
                                                    mu|tau ~ N(m0, 1/(kappa0 tau)),
                                                    tau ~ Gamma(shape a0, rate b0)
======================  ==========================  ======================================

Build ``hyper`` with the validating constructors ``bernoulli_hyper(d, a, b)``,
``multinomial_hyper(K, concentration)``, ``gaussian_hyper(d, m0, kappa0, nu0, S0)``,
``diag_gaussian_hyper(d, m0, kappa0, a0, b0)`` (scalars broadcast; a bad value raises
``ValueError`` naming the argument). Validate data with ``check_data(family, X)``.
The jitted kernels below do **not** validate: they trust their inputs.

Kernels (``F`` = ``bernoulli`` | ``multinomial`` | ``gaussian`` | ``diag_gaussian``),
all ``@numba.njit`` and callable from Python or from other jitted code:

``F_stats(X) -> stats``
    Sufficient statistics of the rows of ``X`` (n, d) as one float64 vector. Statistics
    are **additive**: ``stats(A ∪ B) == stats(A) + stats(B)``, and ``stats[0]`` is the
    number of points. The empty set has all-zero statistics (``np.zeros(F_stats_size(d))``).
    Layouts: bernoulli ``[n, m_1..m_d]``; multinomial ``[n, Σ_i log multinomial
    coefficient(x_i), m_1..m_K]``; gaussian ``[n, Σx (d), Σxxᵀ (d*d, row-major)]``;
    diag_gaussian ``[n, Σx (d), Σx² (d)]``.
``F_point_stats(X) -> (n, S)``
    One row of statistics per data point (BHC leaves).
``F_add(stats, x)`` / ``F_remove(stats, x)``
    In-place update by one point: O(d) (O(d^2) for gaussian).
``F_log_marginal(stats, hyper) -> float``
    log p(D) of the set, θ integrated out; exact, in log space (lgamma throughout).
    O(d) except gaussian, O(d^3) (two Cholesky factorisations).
``F_log_marginal_grad(stats, hyper) -> (value, grads)``
    ``grads`` is a tuple shaped like ``hyper`` holding ∂ log p(D) / ∂ each hyperparameter
    (for gaussian ``S0`` the gradient of the symmetrised matrix, so it is symmetric).
``F_log_predictive(x, stats, hyper) -> float``
    log p(x | D) of one new point: O(d) except gaussian, O(d^3) from raw statistics.

The multinomial model scores count vectors *with* their multinomial coefficients, so a
single count vector's marginal equals ``scipy.stats.dirichlet_multinomial``; for one-hot
rows the coefficient is 1 and the model is the Dirichlet-categorical.

Gaussian (NIW) incremental posterior, for O(d^2) collapsed Gibbs updates:

``gaussian_state(stats, hyper) -> state``
    Packed posterior ``[n, kappa_n, nu_n, m_n (d), L_n (d*d)]`` where ``L_n`` is the lower
    Cholesky factor of the posterior scale S_n. O(d^3) once.
``gaussian_state_add(state, x)`` / ``gaussian_state_remove(state, x)``
    In place, O(d^2) by a rank-1 Cholesky update / downdate.
``gaussian_state_log_predictive(x, state) -> float``
    Multivariate Student-t log density, O(d^2) (one triangular solve).
``gaussian_state_log_marginal(state, hyper) -> float``
    log p(D) from a state, O(d) plus one O(d^3) factorisation of S0.
``gaussian_state_size(d)``.

For generic code, ``FAMILIES[name]`` is a :class:`ConjugateFamily` record of these
functions (Numba accepts jitted functions as arguments, so a sampler kernel can be written
once and specialised per family).

Raw-moment statistics lose precision when the data sit far from the origin relative to
their spread (cancellation in Σxxᵀ - n x̄x̄ᵀ); centre or standardise Gaussian data first.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

__all__ = [
    "FAMILIES",
    "ConjugateFamily",
    "bernoulli_add",
    "bernoulli_hyper",
    "bernoulli_log_marginal",
    "bernoulli_log_marginal_grad",
    "bernoulli_log_predictive",
    "bernoulli_point_stats",
    "bernoulli_remove",
    "bernoulli_stats",
    "bernoulli_stats_size",
    "check_data",
    "diag_gaussian_add",
    "diag_gaussian_hyper",
    "diag_gaussian_log_marginal",
    "diag_gaussian_log_marginal_grad",
    "diag_gaussian_log_predictive",
    "diag_gaussian_point_stats",
    "diag_gaussian_remove",
    "diag_gaussian_stats",
    "diag_gaussian_stats_size",
    "digamma",
    "gaussian_add",
    "gaussian_hyper",
    "gaussian_log_marginal",
    "gaussian_log_marginal_grad",
    "gaussian_log_predictive",
    "gaussian_point_stats",
    "gaussian_remove",
    "gaussian_state",
    "gaussian_state_add",
    "gaussian_state_log_marginal",
    "gaussian_state_log_predictive",
    "gaussian_state_remove",
    "gaussian_state_size",
    "gaussian_stats",
    "gaussian_stats_size",
    "multinomial_add",
    "multinomial_hyper",
    "multinomial_log_marginal",
    "multinomial_log_marginal_grad",
    "multinomial_log_predictive",
    "multinomial_point_stats",
    "multinomial_remove",
    "multinomial_stats",
    "multinomial_stats_size",
]

_LOG_PI = math.log(math.pi)
_jit = numba.njit(cache=True)


# --------------------------------------------------------------------------------------
# special functions
# --------------------------------------------------------------------------------------
@_jit
def digamma(x):
    """ψ(x) for x > 0: recurrence up to x >= 10, then the asymptotic series (|err| < 1e-13)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return (
        r
        + math.log(x)
        - 0.5 / x
        - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    )


@_jit
def _log_mvgamma(x, d):
    """log Γ_d(x) = d(d-1)/4 log π + Σ_j log Γ(x + (1 - j)/2)."""
    out = 0.25 * d * (d - 1) * _LOG_PI
    for j in range(d):
        out += math.lgamma(x - 0.5 * j)
    return out


@_jit
def _mvdigamma(x, d):
    """d/dx log Γ_d(x)."""
    out = 0.0
    for j in range(d):
        out += digamma(x - 0.5 * j)
    return out


# --------------------------------------------------------------------------------------
# Beta-Bernoulli (Heller 2007 §2.1.1, Bernoulli-Beta marginal)
# --------------------------------------------------------------------------------------
def bernoulli_stats_size(d):
    return 1 + d


@_jit
def bernoulli_stats(X):
    n, d = X.shape
    s = np.zeros(1 + d)
    s[0] = n
    for i in range(n):
        for j in range(d):
            s[1 + j] += X[i, j]
    return s


@_jit
def bernoulli_point_stats(X):
    n, d = X.shape
    s = np.empty((n, 1 + d))
    for i in range(n):
        s[i, 0] = 1.0
        for j in range(d):
            s[i, 1 + j] = X[i, j]
    return s


@_jit
def bernoulli_add(stats, x):
    stats[0] += 1.0
    for j in range(x.shape[0]):
        stats[1 + j] += x[j]


@_jit
def bernoulli_remove(stats, x):
    stats[0] -= 1.0
    for j in range(x.shape[0]):
        stats[1 + j] -= x[j]


@_jit
def bernoulli_log_marginal(stats, hyper):
    """Π_j Γ(a+b)Γ(a+m)Γ(b+N-m) / (Γ(a)Γ(b)Γ(a+b+N)) (Heller 2007 §2.1.1)."""
    a, b = hyper
    n = stats[0]
    out = 0.0
    for j in range(a.shape[0]):
        m = stats[1 + j]
        aj = a[j]
        bj = b[j]
        out += (
            math.lgamma(aj + bj)
            - math.lgamma(aj)
            - math.lgamma(bj)
            + math.lgamma(aj + m)
            + math.lgamma(bj + n - m)
            - math.lgamma(aj + bj + n)
        )
    return out


@_jit
def bernoulli_log_marginal_grad(stats, hyper):
    a, b = hyper
    n = stats[0]
    ga = np.empty_like(a)
    gb = np.empty_like(b)
    for j in range(a.shape[0]):
        m = stats[1 + j]
        common = digamma(a[j] + b[j]) - digamma(a[j] + b[j] + n)
        ga[j] = common + digamma(a[j] + m) - digamma(a[j])
        gb[j] = common + digamma(b[j] + n - m) - digamma(b[j])
    return bernoulli_log_marginal(stats, hyper), (ga, gb)


@_jit
def bernoulli_log_predictive(x, stats, hyper):
    """p(x_j = 1 | D) = (a_j + m_j) / (a_j + b_j + N), independently per dimension."""
    a, b = hyper
    n = stats[0]
    out = 0.0
    for j in range(a.shape[0]):
        m = stats[1 + j]
        tot = math.log(a[j] + b[j] + n)
        if x[j] > 0.5:
            out += math.log(a[j] + m) - tot
        else:
            out += math.log(b[j] + n - m) - tot
    return out


# --------------------------------------------------------------------------------------
# Dirichlet-multinomial (Heller 2007 Eq. 2.12, with per-point multinomial coefficients)
# --------------------------------------------------------------------------------------
def multinomial_stats_size(K):
    return 2 + K


@_jit
def _log_multinomial_coefficient(x):
    tot = 0.0
    out = 0.0
    for k in range(x.shape[0]):
        tot += x[k]
        out -= math.lgamma(x[k] + 1.0)
    return out + math.lgamma(tot + 1.0)


@_jit
def multinomial_stats(X):
    n, K = X.shape
    s = np.zeros(2 + K)
    s[0] = n
    for i in range(n):
        s[1] += _log_multinomial_coefficient(X[i])
        for k in range(K):
            s[2 + k] += X[i, k]
    return s


@_jit
def multinomial_point_stats(X):
    n, K = X.shape
    s = np.empty((n, 2 + K))
    for i in range(n):
        s[i, 0] = 1.0
        s[i, 1] = _log_multinomial_coefficient(X[i])
        for k in range(K):
            s[i, 2 + k] = X[i, k]
    return s


@_jit
def multinomial_add(stats, x):
    stats[0] += 1.0
    stats[1] += _log_multinomial_coefficient(x)
    for k in range(x.shape[0]):
        stats[2 + k] += x[k]


@_jit
def multinomial_remove(stats, x):
    stats[0] -= 1.0
    stats[1] -= _log_multinomial_coefficient(x)
    for k in range(x.shape[0]):
        stats[2 + k] -= x[k]


@_jit
def multinomial_log_marginal(stats, hyper):
    """Γ(A) Π_k Γ(α_k + m_k) / (Γ(A + M) Π_k Γ(α_k)) × Π_i multinomial coefficients."""
    (alpha,) = hyper
    A = 0.0
    M = 0.0
    out = stats[1]
    for k in range(alpha.shape[0]):
        A += alpha[k]
        M += stats[2 + k]
        out += math.lgamma(alpha[k] + stats[2 + k]) - math.lgamma(alpha[k])
    return out + math.lgamma(A) - math.lgamma(A + M)


@_jit
def multinomial_log_marginal_grad(stats, hyper):
    (alpha,) = hyper
    A = 0.0
    M = 0.0
    for k in range(alpha.shape[0]):
        A += alpha[k]
        M += stats[2 + k]
    common = digamma(A) - digamma(A + M)
    g = np.empty_like(alpha)
    for k in range(alpha.shape[0]):
        g[k] = common + digamma(alpha[k] + stats[2 + k]) - digamma(alpha[k])
    return multinomial_log_marginal(stats, hyper), (g,)


@_jit
def multinomial_log_predictive(x, stats, hyper):
    """Dirichlet-multinomial pmf of count vector x under the posterior Dir(α + m)."""
    (alpha,) = hyper
    A = 0.0
    Mx = 0.0
    out = _log_multinomial_coefficient(x)
    for k in range(alpha.shape[0]):
        ak = alpha[k] + stats[2 + k]
        A += ak
        Mx += x[k]
        if x[k] != 0.0:
            out += math.lgamma(ak + x[k]) - math.lgamma(ak)
    return out + math.lgamma(A) - math.lgamma(A + Mx)


# --------------------------------------------------------------------------------------
# Normal-Inverse-Wishart (Heller 2007 Eqs. 2.13-2.14; standard form in the digest §1.2)
# --------------------------------------------------------------------------------------
def gaussian_stats_size(d):
    return 1 + d + d * d


def gaussian_state_size(d):
    return 3 + d + d * d


@_jit
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


@_jit
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


@_jit
def gaussian_add(stats, x):
    d = x.shape[0]
    stats[0] += 1.0
    for j in range(d):
        stats[1 + j] += x[j]
        base = 1 + d + j * d
        for k in range(d):
            stats[base + k] += x[j] * x[k]


@_jit
def gaussian_remove(stats, x):
    d = x.shape[0]
    stats[0] -= 1.0
    for j in range(d):
        stats[1 + j] -= x[j]
        base = 1 + d + j * d
        for k in range(d):
            stats[base + k] -= x[j] * x[k]


@_jit
def _niw_posterior(stats, m0, kappa0, nu0, S0):
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


@_jit
def _sym(S):
    return 0.5 * (S + S.T)


@_jit
def _logdet_chol(L):
    out = 0.0
    for j in range(L.shape[0]):
        out += math.log(L[j, j])
    return 2.0 * out


@_jit
def gaussian_log_marginal(stats, hyper):
    """π^{-nd/2} (κ0/κn)^{d/2} |S0|^{ν0/2} |Sn|^{-νn/2} Γ_d(νn/2) / Γ_d(ν0/2)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = stats[0]
    kn, nn, _mn, Sn = _niw_posterior(stats, m0, kappa0, nu0, S0)
    ld0 = _logdet_chol(np.linalg.cholesky(_sym(S0)))
    ldn = _logdet_chol(np.linalg.cholesky(Sn))
    return (
        -0.5 * n * d * _LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * ldn
        + _log_mvgamma(0.5 * nn, d)
        - _log_mvgamma(0.5 * nu0, d)
    )


@_jit
def _chol_inverse(L):
    d = L.shape[0]
    Linv = np.linalg.solve(L, np.eye(d))
    return Linv.T @ Linv


@_jit
def gaussian_log_marginal_grad(stats, hyper):
    """Gradients: ∂/∂m0 = νn κ0 Sn⁻¹ (mn - m0); ∂/∂κ0 = d/2 (1/κ0 - 1/κn)
    - νn/2 (m0-mn)ᵀ Sn⁻¹ (m0-mn); ∂/∂ν0 = ½ log|S0| - ½ log|Sn| + ½ Σ_j [ψ((νn+1-j)/2)
    - ψ((ν0+1-j)/2)]; ∂/∂S0 = ν0/2 S0⁻¹ - νn/2 Sn⁻¹."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = stats[0]
    kn, nn, mn, Sn = _niw_posterior(stats, m0, kappa0, nu0, S0)
    L0 = np.linalg.cholesky(_sym(S0))
    Ln = np.linalg.cholesky(Sn)
    ld0 = _logdet_chol(L0)
    ldn = _logdet_chol(Ln)
    value = (
        -0.5 * n * d * _LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * ldn
        + _log_mvgamma(0.5 * nn, d)
        - _log_mvgamma(0.5 * nu0, d)
    )
    S0inv = _chol_inverse(L0)
    Sninv = _chol_inverse(Ln)
    diff = mn - m0
    Sd = Sninv @ diff
    g_m0 = nn * kappa0 * Sd
    g_kappa0 = 0.5 * d * (1.0 / kappa0 - 1.0 / kn) - 0.5 * nn * np.dot(diff, Sd)
    g_nu0 = 0.5 * ld0 - 0.5 * ldn + 0.5 * (_mvdigamma(0.5 * nn, d) - _mvdigamma(0.5 * nu0, d))
    g_S0 = 0.5 * nu0 * S0inv - 0.5 * nn * Sninv
    return value, (g_m0, g_kappa0, g_nu0, g_S0)


@_jit
def _student_t_logpdf_chol(x, loc, L, scale_factor, dof):
    """Multivariate t with shape matrix scale_factor * L Lᵀ."""
    d = x.shape[0]
    z = np.empty(d)
    # forward substitution L z = x - loc, O(d^2)
    for j in range(d):
        acc = x[j] - loc[j]
        for k in range(j):
            acc -= L[j, k] * z[k]
        z[j] = acc / L[j, j]
    maha = 0.0
    for j in range(d):
        maha += z[j] * z[j]
    maha /= scale_factor
    logdet = _logdet_chol(L) + d * math.log(scale_factor)
    return (
        math.lgamma(0.5 * (dof + d))
        - math.lgamma(0.5 * dof)
        - 0.5 * d * math.log(dof * math.pi)
        - 0.5 * logdet
        - 0.5 * (dof + d) * math.log1p(maha / dof)
    )


@_jit
def gaussian_log_predictive(x, stats, hyper):
    """Student-t_{νn-d+1}(x | mn, Sn (κn+1) / (κn (νn-d+1))), from raw stats: O(d^3)."""
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    kn, nn, mn, Sn = _niw_posterior(stats, m0, kappa0, nu0, S0)
    dof = nn - d + 1.0
    L = np.linalg.cholesky(Sn)
    return _student_t_logpdf_chol(x, mn, L, (kn + 1.0) / (kn * dof), dof)


@_jit
def gaussian_state(stats, hyper):
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    kn, nn, mn, Sn = _niw_posterior(stats, m0, kappa0, nu0, S0)
    L = np.linalg.cholesky(Sn)
    st = np.empty(3 + d + d * d)
    st[0] = stats[0]
    st[1] = kn
    st[2] = nn
    st[3 : 3 + d] = mn
    st[3 + d :] = L.ravel()
    return st


@_jit
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


@_jit
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


@_jit
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


@_jit
def gaussian_state_log_predictive(x, state):
    d = x.shape[0]
    kn = state[1]
    nn = state[2]
    mn = state[3 : 3 + d]
    L = state[3 + d :].reshape((d, d))
    dof = nn - d + 1.0
    return _student_t_logpdf_chol(x, mn, L, (kn + 1.0) / (kn * dof), dof)


@_jit
def gaussian_state_log_marginal(state, hyper):
    m0, kappa0, nu0, S0 = hyper
    d = m0.shape[0]
    n = state[0]
    kn = state[1]
    nn = state[2]
    L = state[3 + d :].reshape((d, d))
    ld0 = _logdet_chol(np.linalg.cholesky(_sym(S0)))
    return (
        -0.5 * n * d * _LOG_PI
        + 0.5 * d * (math.log(kappa0) - math.log(kn))
        + 0.5 * nu0 * ld0
        - 0.5 * nn * _logdet_chol(L)
        + _log_mvgamma(0.5 * nn, d)
        - _log_mvgamma(0.5 * nu0, d)
    )


# --------------------------------------------------------------------------------------
# Independent Normal-Gamma per dimension ("diagonal Gaussian")
# --------------------------------------------------------------------------------------
def diag_gaussian_stats_size(d):
    return 1 + 2 * d


@_jit
def diag_gaussian_stats(X):
    n, d = X.shape
    s = np.zeros(1 + 2 * d)
    s[0] = n
    for i in range(n):
        for j in range(d):
            s[1 + j] += X[i, j]
            s[1 + d + j] += X[i, j] * X[i, j]
    return s


@_jit
def diag_gaussian_point_stats(X):
    n, d = X.shape
    s = np.empty((n, 1 + 2 * d))
    for i in range(n):
        s[i, 0] = 1.0
        for j in range(d):
            s[i, 1 + j] = X[i, j]
            s[i, 1 + d + j] = X[i, j] * X[i, j]
    return s


@_jit
def diag_gaussian_add(stats, x):
    d = x.shape[0]
    stats[0] += 1.0
    for j in range(d):
        stats[1 + j] += x[j]
        stats[1 + d + j] += x[j] * x[j]


@_jit
def diag_gaussian_remove(stats, x):
    d = x.shape[0]
    stats[0] -= 1.0
    for j in range(d):
        stats[1 + j] -= x[j]
        stats[1 + d + j] -= x[j] * x[j]


@_jit
def _ng_post(n, s, q, m0, k0, a0, b0):
    kn = k0 + n
    mn = (k0 * m0 + s) / kn
    an = a0 + 0.5 * n
    bn = b0 + 0.5 * (q + k0 * m0 * m0 - kn * mn * mn)
    return kn, mn, an, bn


@_jit
def diag_gaussian_log_marginal(stats, hyper):
    """Per dim: Γ(an)/Γ(a0) b0^a0 / bn^an (κ0/κn)^½ (2π)^{-n/2}."""
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    out = -0.5 * n * d * math.log(2.0 * math.pi)
    for j in range(d):
        kn, _mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
        out += (
            math.lgamma(an)
            - math.lgamma(a0[j])
            + a0[j] * math.log(b0[j])
            - an * math.log(bn)
            + 0.5 * (math.log(k0[j]) - math.log(kn))
        )
    return out


@_jit
def diag_gaussian_log_marginal_grad(stats, hyper):
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    gm = np.empty(d)
    gk = np.empty(d)
    ga = np.empty(d)
    gb = np.empty(d)
    for j in range(d):
        kn, mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
        diff = m0[j] - mn
        # ∂bn/∂m0 = κ0 (m0 - mn); ∂bn/∂κ0 = ½ (m0 - mn)^2
        gm[j] = -an / bn * k0[j] * diff
        gk[j] = 0.5 * (1.0 / k0[j] - 1.0 / kn) - an / bn * 0.5 * diff * diff
        ga[j] = digamma(an) - digamma(a0[j]) + math.log(b0[j]) - math.log(bn)
        gb[j] = a0[j] / b0[j] - an / bn
    return diag_gaussian_log_marginal(stats, hyper), (gm, gk, ga, gb)


@_jit
def diag_gaussian_log_predictive(x, stats, hyper):
    """Per dim Student-t_{2an}(x | mn, bn (κn+1) / (an κn))."""
    m0, k0, a0, b0 = hyper
    d = m0.shape[0]
    n = stats[0]
    out = 0.0
    for j in range(d):
        kn, mn, an, bn = _ng_post(n, stats[1 + j], stats[1 + d + j], m0[j], k0[j], a0[j], b0[j])
        dof = 2.0 * an
        scale2 = bn * (kn + 1.0) / (an * kn)
        z = x[j] - mn
        out += (
            math.lgamma(0.5 * (dof + 1.0))
            - math.lgamma(0.5 * dof)
            - 0.5 * math.log(dof * math.pi * scale2)
            - 0.5 * (dof + 1.0) * math.log1p(z * z / (dof * scale2))
        )
    return out


# --------------------------------------------------------------------------------------
# validation (Python level)
# --------------------------------------------------------------------------------------
def _positive_vector(value, size, name):
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name}: expected a scalar or shape ({size},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name}: must be finite and > 0, got {arr}")
    return np.ascontiguousarray(arr)


def _finite_vector(value, size, name):
    arr = np.asarray(value, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(size, float(arr))
    if arr.shape != (size,):
        raise ValueError(f"{name}: expected a scalar or shape ({size},), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: must be finite, got {arr}")
    return np.ascontiguousarray(arr)


def _check_dim(d, name="d"):
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"{name}: must be a positive integer, got {d!r}")
    return int(d)


def bernoulli_hyper(d, a=1.0, b=1.0):
    """Validated Beta-Bernoulli hyperparameters ``(a, b)``, each float64 (d,)."""
    d = _check_dim(d)
    return (_positive_vector(a, d, "a"), _positive_vector(b, d, "b"))


def multinomial_hyper(K, concentration=1.0):
    """Validated Dirichlet hyperparameters ``(concentration,)``, float64 (K,)."""
    K = _check_dim(K, "K")
    return (_positive_vector(concentration, K, "concentration"),)


def gaussian_hyper(d, m0=0.0, kappa0=1.0, nu0=None, S0=None):
    """Validated NIW hyperparameters ``(m0, kappa0, nu0, S0)``.

    Defaults: ``nu0 = d + 2`` (finite prior mean of Σ), ``S0 = I``. ``S0`` may be a
    scalar (times the identity), a (d,) diagonal or a (d, d) symmetric positive definite
    matrix.
    """
    d = _check_dim(d)
    m0 = _finite_vector(m0, d, "m0")
    kappa0 = float(kappa0)
    if not np.isfinite(kappa0) or kappa0 <= 0:
        raise ValueError(f"kappa0: must be finite and > 0, got {kappa0}")
    nu0 = float(d + 2) if nu0 is None else float(nu0)
    if not np.isfinite(nu0) or nu0 <= d - 1:
        raise ValueError(f"nu0: must be finite and > d - 1 = {d - 1}, got {nu0}")
    S0 = np.eye(d) if S0 is None else np.asarray(S0, dtype=np.float64)
    if S0.ndim == 0:
        S0 = float(S0) * np.eye(d)
    elif S0.ndim == 1 and S0.shape == (d,):
        S0 = np.diag(S0)
    if S0.shape != (d, d):
        raise ValueError(f"S0: expected a scalar, shape ({d},) or ({d}, {d}), got {S0.shape}")
    if not np.all(np.isfinite(S0)):
        raise ValueError("S0: must be finite")
    if not np.allclose(S0, S0.T, rtol=1e-10, atol=1e-12):
        raise ValueError("S0: must be symmetric")
    try:
        np.linalg.cholesky(S0)
    except np.linalg.LinAlgError:
        raise ValueError("S0: must be positive definite") from None
    return (m0, kappa0, nu0, np.ascontiguousarray(S0))


def diag_gaussian_hyper(d, m0=0.0, kappa0=1.0, a0=1.0, b0=1.0):
    """Validated Normal-Gamma hyperparameters ``(m0, kappa0, a0, b0)``, each float64 (d,)."""
    d = _check_dim(d)
    return (
        _finite_vector(m0, d, "m0"),
        _positive_vector(kappa0, d, "kappa0"),
        _positive_vector(a0, d, "a0"),
        _positive_vector(b0, d, "b0"),
    )


def check_data(family, X, name="X"):
    """Validate a data matrix for ``family``; return it as C-contiguous float64 (n, d).

    Raises ``ValueError`` naming ``name`` for: not 2-D, no columns, NaN/inf, non-binary
    values (bernoulli), negative or non-integer counts (multinomial).
    """
    if family not in FAMILIES:
        raise ValueError(f"family: unknown {family!r}; choose one of {sorted(FAMILIES)}")
    arr = np.asarray(X)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise ValueError(f"{name}: must be a numeric array, got dtype {arr.dtype}")
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name}: must be 2-D (n_points, n_dims), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name}: needs at least one column")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    if family == "bernoulli" and not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name}: the bernoulli likelihood needs binary (0/1) data")
    if family == "multinomial":
        if np.any(arr < 0):
            raise ValueError(f"{name}: the multinomial likelihood needs non-negative counts")
        if not np.all(arr == np.round(arr)):
            raise ValueError(f"{name}: the multinomial likelihood needs integer counts")
    return arr


class ConjugateFamily(NamedTuple):
    """The kernels of one conjugate family (see the module docstring for signatures)."""

    name: str
    hyper_names: tuple
    make_hyper: object
    stats_size: object
    stats: object
    point_stats: object
    add: object
    remove: object
    log_marginal: object
    log_marginal_grad: object
    log_predictive: object


FAMILIES: dict[str, ConjugateFamily] = {
    "bernoulli": ConjugateFamily(
        "bernoulli",
        ("a", "b"),
        bernoulli_hyper,
        bernoulli_stats_size,
        bernoulli_stats,
        bernoulli_point_stats,
        bernoulli_add,
        bernoulli_remove,
        bernoulli_log_marginal,
        bernoulli_log_marginal_grad,
        bernoulli_log_predictive,
    ),
    "multinomial": ConjugateFamily(
        "multinomial",
        ("concentration",),
        multinomial_hyper,
        multinomial_stats_size,
        multinomial_stats,
        multinomial_point_stats,
        multinomial_add,
        multinomial_remove,
        multinomial_log_marginal,
        multinomial_log_marginal_grad,
        multinomial_log_predictive,
    ),
    "gaussian": ConjugateFamily(
        "gaussian",
        ("m0", "kappa0", "nu0", "S0"),
        gaussian_hyper,
        gaussian_stats_size,
        gaussian_stats,
        gaussian_point_stats,
        gaussian_add,
        gaussian_remove,
        gaussian_log_marginal,
        gaussian_log_marginal_grad,
        gaussian_log_predictive,
    ),
    "diag_gaussian": ConjugateFamily(
        "diag_gaussian",
        ("m0", "kappa0", "a0", "b0"),
        diag_gaussian_hyper,
        diag_gaussian_stats_size,
        diag_gaussian_stats,
        diag_gaussian_point_stats,
        diag_gaussian_add,
        diag_gaussian_remove,
        diag_gaussian_log_marginal,
        diag_gaussian_log_marginal_grad,
        diag_gaussian_log_predictive,
    ),
}


# ======================================================================================
# Dirichlet-categorical tables (mixtures of trees, BDeu structure scores)
#
# Counts of one categorical variable (or of a child per parent value: one row per parent
# configuration) under a Dirichlet prior with the same concentration in every cell, as in
# BDeu (Murphy 2012 Eqs. 26.28-26.30; Heckerman, Geiger & Chickering 1995). Counts may be
# weighted (non-integer). ``cell`` is the per-cell Dirichlet parameter.
# ======================================================================================


@_jit
def dirichlet_categorical_log_marginal(counts, cell):
    """log p(D) of categorical data with these counts, a symmetric Dirichlet(cell)
    integrated out: lgamma(K a) - lgamma(N + K a) + sum_k [lgamma(n_k + a) - lgamma(a)]
    (Murphy Eq. 26.26 corrected, §0 of the spec)."""
    K = counts.shape[0]
    n = 0.0
    out = 0.0
    lg_cell = math.lgamma(cell)
    for k in range(K):
        n += counts[k]
        out += math.lgamma(counts[k] + cell) - lg_cell
    return out + math.lgamma(K * cell) - math.lgamma(n + K * cell)


@_jit
def dirichlet_categorical_table_log_marginal(table, cell):
    """Sum of :func:`dirichlet_categorical_log_marginal` over the rows of ``table``
    (child counts per parent value: the BDeu local score, Murphy Eq. 26.28)."""
    out = 0.0
    for j in range(table.shape[0]):
        out += dirichlet_categorical_log_marginal(table[j], cell)
    return out


def dirichlet_categorical_log_predictive(counts, cell):
    """log p(x = k | D) for every k: log (n_k + a) - log (N + K a); NumPy, vectorised
    over leading axes of ``counts`` (..., K)."""
    counts = np.asarray(counts, dtype=np.float64)
    K = counts.shape[-1]
    return np.log(counts + cell) - np.log(counts.sum(axis=-1, keepdims=True) + K * cell)


def dirichlet_posterior(counts, concentration):
    """Dirichlet posterior parameters ``concentration + counts`` (broadcasting)."""
    return np.asarray(concentration, dtype=np.float64) + np.asarray(counts, dtype=np.float64)
