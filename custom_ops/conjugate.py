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

One interface over the families (what BHC, the CRP samplers and the collapsed Ops call):
an integer code ``fam`` (:data:`FAMILY_CODES`) and all hyperparameters in one float64
vector ``hp`` (:func:`pack_hyper`; :func:`unpack_hyper`, :func:`flatten_hyper` inside
Numba, :func:`split_like` for symbolic gradients). Jitted dispatchers ``stats_size``,
``point_stats``, ``add``, ``remove``, ``log_marginal``, ``log_marginal_grad`` (flat
gradient, same layout as ``hp``), ``log_predictive``, ``data_error`` and ``hyper_error``
(error codes, messages in :data:`DATA_ERRORS` / :data:`HYPER_ERRORS`); block states for
collapsed samplers ``state_size``, ``state_table``, ``state_init``, ``state_add``,
``state_remove``, ``state_log_predictive``, ``state_log_marginal`` (the NIW state keeps
its Cholesky factor and Student-t constants, O(d^2) per update); in NumPy,
:func:`posterior_parameters` and :func:`student_t_predictive`.

Adding a family: one section with its kernels (``F_stats`` ... ``F_log_predictive``), a
``F_hyper`` constructor, a :class:`ConjugateFamily` record, a code in
:data:`FAMILY_CODES` with its :data:`HYPER_NDIMS`, and one branch in each dispatcher (and
in :func:`posterior_parameters`); every Op and sampler then accepts it. Tests:
``tests/custom_ops/test_conjugate.py`` (values against scipy / brute force, gradients).
This module is longer than the others on purpose: it is the one owner of the conjugate
families, so every family's section lives here.

Raw-moment statistics lose precision when the data sit far from the origin relative to
their spread (cancellation in Σxxᵀ - n x̄x̄ᵀ); centre or standardise Gaussian data first.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np
from numba import literal_unroll

from custom_ops.spd_kernels import cholesky_lower

__all__ = [
    "DATA_ERRORS",
    "FAMILIES",
    "FAMILY_CODES",
    "HYPER_ERRORS",
    "HYPER_NDIMS",
    "ConjugateFamily",
    "add",
    "bernoulli_add",
    "bernoulli_hyper",
    "bernoulli_log_marginal",
    "bernoulli_log_marginal_grad",
    "bernoulli_log_predictive",
    "bernoulli_point_stats",
    "bernoulli_remove",
    "bernoulli_stats",
    "bernoulli_stats_size",
    "bernoulli_view",
    "check_data",
    "data_error",
    "diag_gaussian_add",
    "diag_gaussian_hyper",
    "diag_gaussian_log_marginal",
    "diag_gaussian_log_marginal_grad",
    "diag_gaussian_log_predictive",
    "diag_gaussian_point_stats",
    "diag_gaussian_remove",
    "diag_gaussian_stats",
    "diag_gaussian_stats_size",
    "diag_gaussian_view",
    "digamma",
    "family_code",
    "flatten_hyper",
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
    "gaussian_view",
    "hyper_error",
    "log_marginal",
    "log_marginal_grad",
    "log_predictive",
    "multinomial_add",
    "multinomial_hyper",
    "multinomial_log_marginal",
    "multinomial_log_marginal_grad",
    "multinomial_log_predictive",
    "multinomial_point_stats",
    "multinomial_remove",
    "multinomial_stats",
    "multinomial_stats_size",
    "pack_hyper",
    "point_stats",
    "posterior_parameters",
    "remove",
    "split_like",
    "state_add",
    "state_init",
    "state_log_marginal",
    "state_log_predictive",
    "state_remove",
    "state_size",
    "state_table",
    "stats_size",
    "student_t_predictive",
    "unpack_hyper",
]

_LOG_PI = math.log(math.pi)
_jit = numba.njit(cache=True)


# --------------------------------------------------------------------------------------
# special functions
# --------------------------------------------------------------------------------------
@_jit
def digamma(x):
    """ψ(x) for x > 0: recurrence up to x >= 10, then the asymptotic series (``|err| < 1e-13``)."""
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
    """``π^{-nd/2} (κ0/κn)^{d/2} |S0|^{ν0/2} |Sn|^{-νn/2} Γ_d(νn/2) / Γ_d(ν0/2)``."""
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
# one interface over the families: an integer code and one flat hyperparameter vector
# --------------------------------------------------------------------------------------
# BHC, the CRP samplers and the collapsed-likelihood Ops call the dispatchers below with
# ``fam`` (an integer code, :data:`FAMILY_CODES`) and ``hp`` (the family's hyperparameters
# concatenated in ``hyper_names`` order, S0 row-major: :func:`pack_hyper`). Gradients use
# the same flat layout. Branching on a code instead of passing jitted functions as values
# keeps every caller cacheable on disk (Numba refuses to cache "dynamic globals"), so a
# kernel is compiled once for all families. A new family adds one branch to each.
BERNOULLI, MULTINOMIAL, GAUSSIAN, DIAG_GAUSSIAN = 0, 1, 2, 3
#: Integer code of each family, as the jitted dispatchers expect it.
FAMILY_CODES = {
    "bernoulli": BERNOULLI,
    "multinomial": MULTINOMIAL,
    "gaussian": GAUSSIAN,
    "diag_gaussian": DIAG_GAUSSIAN,
}
#: ndim of each hyperparameter, in ``hyper_names`` order (0: scalar, 1: (d,), 2: (d, d)).
HYPER_NDIMS = {
    "bernoulli": (1, 1),
    "multinomial": (1,),
    "gaussian": (1, 0, 0, 2),
    "diag_gaussian": (1, 1, 1, 1),
}


def family_code(family, name="family"):
    """The integer code of ``family``; ``ValueError`` naming ``name`` if it is unknown."""
    if not isinstance(family, str) or family not in FAMILY_CODES:
        raise ValueError(f"{name}: unknown {family!r}; choose one of {sorted(FAMILY_CODES)}")
    return FAMILY_CODES[family]


def pack_hyper(family, hyper, name="family"):
    """A family's hyperparameter tuple as one C-contiguous float64 vector (the layout of
    every dispatcher's ``hp`` and of the flat gradients)."""
    family_code(family, name)
    parts = [np.asarray(h, dtype=np.float64).reshape(-1) for h in hyper]
    return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0))


def unpack_hyper(family, flat, d):
    """Inverse of :func:`pack_hyper` for data with ``d`` columns: arrays shaped like the
    family's hyperparameters (scalars as 0-d arrays). Also splits flat gradients."""
    flat = np.asarray(flat, dtype=np.float64)
    out = []
    pos = 0
    for nd in HYPER_NDIMS[family]:
        size = (1, d, d * d)[nd]
        out.append(flat[pos : pos + size].reshape(((), (d,), (d, d))[nd]).copy())
        pos += size
    return tuple(out)


@_jit
def flatten_hyper(hyper):
    """:func:`pack_hyper` inside jitted code: a tuple of 0-d, 1-d and 2-d arrays (an Op's
    hyperparameter inputs, whatever the family) as one float64 vector."""
    size = 0
    for h in literal_unroll(hyper):
        size += h.size
    out = np.empty(size)
    pos = 0
    for h in literal_unroll(hyper):
        for v in np.asarray(h).ravel():
            out[pos] = v
            pos += 1
    return out


def split_like(flat, like):
    """Symbolic inverse of :func:`pack_hyper`: slices of the PyTensor vector ``flat``
    shaped like the tensors ``like`` (an Op's hyperparameter inputs). Ops return one flat
    gradient and their ``pullback`` splits it with this."""
    out = []
    pos = 0
    for h in like:
        out.append(flat[pos : pos + h.size].reshape(h.shape))
        pos = pos + h.size
    return out


@_jit
def bernoulli_view(hp):
    """The ``(a, b)`` tuple of a packed bernoulli ``hp`` (views, no copy)."""
    d = hp.shape[0] // 2
    return (hp[:d], hp[d : 2 * d])


@_jit
def gaussian_view(hp):
    """The ``(m0, kappa0, nu0, S0)`` tuple of a packed gaussian ``hp`` (views, no copy)."""
    d = int(math.sqrt(hp.shape[0] - 2))  # len(hp) = d^2 + d + 2
    return (hp[:d], hp[d], hp[d + 1], hp[d + 2 : d + 2 + d * d].reshape((d, d)))


@_jit
def diag_gaussian_view(hp):
    """The ``(m0, kappa0, a0, b0)`` tuple of a packed diag_gaussian ``hp`` (views)."""
    d = hp.shape[0] // 4
    return (hp[:d], hp[d : 2 * d], hp[2 * d : 3 * d], hp[3 * d : 4 * d])


@_jit
def stats_size(fam, d):
    """Length of the sufficient-statistics vector for data with ``d`` columns."""
    if fam == BERNOULLI:
        return 1 + d
    if fam == MULTINOMIAL:
        return 2 + d
    if fam == GAUSSIAN:
        return 1 + d + d * d
    return 1 + 2 * d


@_jit
def point_stats(fam, X):
    """One row of sufficient statistics per row of ``X``."""
    if fam == BERNOULLI:
        return bernoulli_point_stats(X)
    if fam == MULTINOMIAL:
        return multinomial_point_stats(X)
    if fam == GAUSSIAN:
        return gaussian_point_stats(X)
    return diag_gaussian_point_stats(X)


@_jit
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


@_jit
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


@_jit
def log_marginal(fam, stats, hp):
    """log p(D) of the set with statistics ``stats`` (Heller 2007 Eq. 3.1's p(D | H1))."""
    if fam == BERNOULLI:
        return bernoulli_log_marginal(stats, bernoulli_view(hp))
    if fam == MULTINOMIAL:
        return multinomial_log_marginal(stats, (hp,))
    if fam == GAUSSIAN:
        return gaussian_log_marginal(stats, gaussian_view(hp))
    return diag_gaussian_log_marginal(stats, diag_gaussian_view(hp))


@_jit
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


@_jit
def log_predictive(fam, x, stats, hp):
    """log p(x | D) of one new point given the set with statistics ``stats``."""
    if fam == BERNOULLI:
        return bernoulli_log_predictive(x, stats, bernoulli_view(hp))
    if fam == MULTINOMIAL:
        return multinomial_log_predictive(x, stats, (hp,))
    if fam == GAUSSIAN:
        return gaussian_log_predictive(x, stats, gaussian_view(hp))
    return diag_gaussian_log_predictive(x, stats, diag_gaussian_view(hp))


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


@_jit
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


@_jit
def _all_positive(v):
    for x in v:
        if not (np.isfinite(x) and x > 0.0):
            return False
    return True


@_jit
def _all_finite(v):
    for x in v:
        if not np.isfinite(x):
            return False
    return True


@_jit
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


@_jit
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
@_jit
def state_size(fam, d):
    """Length of one block state."""
    if fam == GAUSSIAN:
        # posterior (n, kappa_n, nu_n, m_n, L), 3 predictive constants, d scratch
        return 3 + d + d * d + 3 + d
    return stats_size(fam, d)


@_jit
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


@_jit
def _niw_refresh(state, d, tab):
    base = 3 + d + d * d
    row = int(state[0])
    logdet = 0.0
    for j in range(d):
        logdet += math.log(state[3 + d + j * d + j])
    state[base] = tab[row, 0] - logdet
    state[base + 1] = tab[row, 1]
    state[base + 2] = tab[row, 2]


@_jit
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


@_jit
def state_init(fam, state, hp, d, tab):
    """The state of an empty block, in place."""
    if fam == GAUSSIAN:
        base = 3 + d + d * d
        state[:base] = gaussian_state(np.zeros(1 + d + d * d), gaussian_view(hp))
        _niw_refresh(state, d, tab)
    else:
        state[:] = 0.0


@_jit
def state_add(fam, state, x, tab):
    if fam == GAUSSIAN:
        _niw_update(state, x, 1.0, tab)
    else:
        add(fam, state, x)


@_jit
def state_remove(fam, state, x, tab):
    if fam == GAUSSIAN:
        _niw_update(state, x, -1.0, tab)
    else:
        remove(fam, state, x)


@_jit
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


@_jit
def state_log_marginal(fam, state, hp, d):
    """log p(the block's items), component parameters integrated out."""
    if fam == GAUSSIAN:
        return gaussian_state_log_marginal(state[: 3 + d + d * d], gaussian_view(hp))
    return log_marginal(fam, state, hp)


def posterior_parameters(family, stats, hyper):
    """Parameters of the conjugate posterior of a set with sufficient statistics ``stats``
    (NumPy; ``hyper`` in ``hyper_names`` order, scalars broadcast).

    bernoulli: ``a, b`` = a + m, b + N - m (Beta per dimension); multinomial:
    ``concentration`` = α + m; gaussian (NIW; the standard form in the Heller digest
    §1.2): ``m, kappa, nu, S`` with S_n = S0 + Σxxᵀ + κ0 m0 m0ᵀ - κn mn mnᵀ;
    diag_gaussian (the Normal-Gamma update per dimension, as in :func:`_ng_post`):
    ``m, kappa, a, b``.
    """
    s = np.asarray(stats, dtype=np.float64)
    n = s[0]
    if family == "bernoulli":
        a, b = (np.asarray(h, dtype=np.float64) for h in hyper)
        m = s[1:]
        return {"a": a + m, "b": b + n - m}
    if family == "multinomial":
        return {"concentration": np.asarray(hyper[0], dtype=np.float64) + s[2:]}
    if family == "gaussian":
        m0, kappa0, nu0, S0 = (np.asarray(h, dtype=np.float64) for h in hyper)
        d = m0.shape[0]
        kn = kappa0 + n
        mn = (kappa0 * m0 + s[1 : 1 + d]) / kn
        Sn = S0 + s[1 + d :].reshape(d, d) + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
        return {"m": mn, "kappa": kn, "nu": nu0 + n, "S": Sn}
    if family == "diag_gaussian":
        m0, k0, a0, b0 = (np.asarray(h, dtype=np.float64) for h in hyper)
        d = (s.shape[0] - 1) // 2
        kn = k0 + n
        mn = (k0 * m0 + s[1 : 1 + d]) / kn
        bn = b0 + 0.5 * (s[1 + d :] + k0 * m0**2 - kn * mn**2)
        return {"m": mn, "kappa": kn, "a": a0 + 0.5 * n, "b": bn}
    family_code(family)
    raise NotImplementedError(family)


def student_t_predictive(family, stats, hyper):
    """``(df, loc, scale)`` of the Student-t posterior predictive of a Gaussian family.

    gaussian: multivariate t with ``df`` = nu_n - d + 1, ``loc`` = m_n and shape matrix
    ``scale`` = S_n (kappa_n + 1) / (kappa_n df) (Heller digest §1.2); diag_gaussian:
    independent t per dimension with ``df`` = 2 a_n and ``scale`` = sqrt(b_n (kappa_n +
    1) / (a_n kappa_n)) (a standard deviation; :func:`diag_gaussian_log_predictive`).
    """
    post = posterior_parameters(family, stats, hyper)
    if family == "gaussian":
        d = post["m"].shape[0]
        df = post["nu"] - d + 1
        return df, post["m"], post["S"] * (post["kappa"] + 1) / (post["kappa"] * df)
    if family == "diag_gaussian":
        kn, an = post["kappa"], post["a"]
        return 2 * an, post["m"], np.sqrt(post["b"] * (kn + 1) / (an * kn))
    raise ValueError(f"family: the Student-t predictive needs a Gaussian family, got {family!r}")


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
