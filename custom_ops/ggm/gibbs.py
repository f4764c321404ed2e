"""Numba kernels for Bayesian Gaussian graphical models with shrinkage priors.

Priors on a precision matrix ``Omega`` (p x p, positive definite):

- Bayesian graphical lasso (Wang 2012, Eq. 2): ``prod_{i<j} DE(omega_ij | lam)
  prod_i Exp(omega_ii | lam / 2) 1[Omega > 0]``, with ``DE(x | lam) = lam/2
  exp(-lam |x|)`` and the exponential by its rate. As a scale mixture, ``omega_ij |
  tau_ij ~ N(0, tau_ij)`` with ``tau_ij ~ Exp(rate lam^2 / 2)``.
- Stochastic-search structure learning (Wang 2015, Eq. 3): ``omega_ij | z_ij ~ N(0,
  v1^2)`` if ``z_ij = 1`` else ``N(0, v0^2)``, ``z_ij ~ Bern(pi)``, the same exponential
  diagonal, jointly truncated to ``Omega > 0`` (the normaliser does not depend on z).

Both are sampled by the column-wise block Gibbs sampler of Wang (2012, §2.4): for
column ``j``, with ``w = omega_{-j,j}`` (Wang's beta), ``gamma = omega_jj - w' Omega11^{-1}
w``, ``S = X'X`` and ``D = diag(tau_{-j,j})`` (the slab/spike variances for SSSL)::

    gamma | rest ~ Gamma(n/2 + 1, rate (s_jj + lam) / 2)
    w     | rest ~ N(-C s_12, C),   C = ((s_jj + lam) Omega11^{-1} + D^{-1})^{-1}.

``Sigma = Omega^{-1}`` is carried along so that ``Omega11^{-1} = Sigma11 - sigma12
sigma12' / sigma22`` costs O(p^2), and updated by the partitioned inverse.

**Tempering.** The sweep takes an inverse temperature ``beta`` in [0, 1] and samples the
power posterior ``p(Omega) p(X | Omega)^beta``. The likelihood (Wang 2012 Eq. 1, the
observed ``X``'s normal density) is, as a function of ``Omega``,

    p(X | Omega)^beta ∝ det(Omega)^(beta n / 2) exp(-tr(beta S Omega) / 2),

the Wishart form of ``n`` observations with Gram matrix ``S`` at ``(beta n, beta S)``.
Column ``j``'s derivation (Wang 2012 §2.4) goes through with those: ``det(Omega) =
det(Omega11) gamma`` gives ``gamma^(beta n / 2)``, and ``tr(beta S Omega) = 2 beta s12'
omega12 + beta s22 omega22 + const``, so::

    gamma | rest ~ Gamma(beta n/2 + 1, rate (beta s_jj + lam) / 2)
    w     | rest ~ N(-C beta s12, C),   C = ((beta s_jj + lam) Omega11^{-1} + D^{-1})^{-1}.

The latent variances (Park & Casella's ``tau``, SSSL's ``z``) and the lasso's ``lam``
depend on ``Omega`` through the prior only and are not tempered. At ``beta = 0`` the
sweep samples the prior: ``gamma ~ Exp(rate lam/2)``, ``w ~ N(0, (lam Omega11^{-1} +
D^{-1})^{-1})``.

Every sampling kernel takes a ``numpy.random.Generator`` and draws from it inside the
compiled code.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact
from custom_ops.spd_kernels import cholesky_lower

__all__ = [
    "ColumnPrior",
    "Precision",
    "WishartData",
    "bglasso_latent_variances",
    "column_sweep",
    "column_update",
    "draw_bglasso_prior",
    "draw_spike_slab_prior",
    "gram",
    "inverse_gaussian",
    "packed_cholesky_backward",
    "packed_cholesky_forward",
    "spike_slab_inclusion_probability",
    "sssl_latent_variances",
]


class Precision(NamedTuple):
    """The sampler's state, updated in place by the sweeps: the precision ``omega`` and
    its inverse ``sigma`` (float64, (p, p))."""

    omega: np.ndarray
    sigma: np.ndarray


class WishartData(NamedTuple):
    """The (mean-zero) data as the likelihood reads them: ``S = X'X`` (float64, (p, p))
    and the number of observations ``n`` (a float)."""

    S: np.ndarray
    n: float


class ColumnPrior(NamedTuple):
    """The prior given the latent variables: ``lam`` (the diagonal's exponential rate is
    ``lam / 2``), ``tau`` (float64, (p, p)) the off-diagonal entries' prior variances,
    and ``gamma_shape_offset``: 1.0 for the correct conditional ``Gamma(beta n/2 + 1,
    ...)`` of the Schur complement (the ``+ 1`` from the diagonal's prior), a test hook."""

    lam: float
    tau: np.ndarray
    gamma_shape_offset: float


@njit_exact
def _is_pd(A):
    """Whether the Cholesky factorisation of ``A`` succeeds (:func:`cholesky_lower`)."""
    return A.shape[0] == 0 or not np.isnan(cholesky_lower(A)[0, 0])


@njit_exact
def draw_bglasso_prior(rng, lam, p, max_tries):
    """A draw from the Bayesian-graphical-lasso prior by rejection (accept if PD).

    Returns ``(Omega, tries)``; ``tries == max_tries + 1`` signals failure (the
    acceptance rate falls quickly with p: use it for small p, e.g. in tests).
    """
    omega = np.zeros((p, p))
    for t in range(max_tries):
        for i in range(p):
            omega[i, i] = rng.exponential(2.0 / lam)
            for j in range(i):
                v = rng.laplace(0.0, 1.0 / lam)
                omega[i, j] = v
                omega[j, i] = v
        if _is_pd(omega):
            return omega, t + 1
    return omega, max_tries + 1


@njit_exact
def draw_spike_slab_prior(rng, v0, v1, pi, lam, p, max_tries):
    """A draw of ``(Omega, Z)`` from the SSSL joint prior by rejection of whole pairs.

    Rejecting ``(Z, Omega)`` together gives the density proportional to ``Bern(Z)
    N(Omega | Z) Exp(diag) 1[Omega > 0]``, Wang's (2015) joint (Z's marginal is not
    Bernoulli once truncated). Returns ``(Omega, Z, tries)``.
    """
    omega = np.zeros((p, p))
    z = np.zeros((p, p), dtype=np.int8)
    for t in range(max_tries):
        for i in range(p):
            omega[i, i] = rng.exponential(2.0 / lam)
            for j in range(i):
                zij = 1 if rng.random() < pi else 0
                v = rng.normal(0.0, v1 if zij == 1 else v0)
                omega[i, j] = v
                omega[j, i] = v
                z[i, j] = zij
                z[j, i] = zij
        if _is_pd(omega):
            return omega, z, t + 1
    return omega, z, max_tries + 1


@njit_exact
def inverse_gaussian(rng, mean, shape):
    """An inverse-Gaussian draw (Michael, Schucany & Haas 1976), stable for large means.

    The two roots of the method's quadratic multiply to ``mean^2``; computing the large
    one (no cancellation) and dividing avoids the catastrophic cancellation that makes
    ``Generator.wald`` return 0 when ``mean`` is huge.
    """
    y = rng.standard_normal()
    y *= y
    my = mean * y
    large = mean + mean * my / (2.0 * shape) + mean / (2.0 * shape) * np.sqrt(
        4.0 * shape * my + my * my
    )
    small = mean * mean / large
    if rng.random() * (mean + small) <= mean:
        return small
    return large


@njit_exact
def bglasso_latent_variances(rng, omega, lam):
    """``tau_ij | omega_ij``: ``1/tau_ij ~ InvGaussian(lam / |omega_ij|, lam^2)``."""
    p = omega.shape[0]
    tau = np.ones((p, p))
    lam2 = lam * lam
    for i in range(p):
        for j in range(i):
            a = abs(omega[i, j])
            if a * 1e12 < 1.0 / lam:
                # omega_ij ~ 0: the inverse-Gaussian mean lam/|omega| overflows; the
                # conditional tends to tau ~ Gamma(1/2, rate lam^2/2)
                t = rng.gamma(0.5, 2.0 / lam2)
            else:
                t = 1.0 / inverse_gaussian(rng, lam / a, lam2)
            tau[i, j] = t
            tau[j, i] = t
    return tau


@njit_exact
def spike_slab_inclusion_probability(omega, v0, v1, pi):
    """``P(z_ij = 1 | omega_ij)`` (Wang 2015 Eq. 7), a symmetric (p, p) matrix, 0 diagonal."""
    p = omega.shape[0]
    out = np.zeros((p, p))
    log_odds0 = np.log(pi) - np.log(1.0 - pi) - np.log(v1) + np.log(v0)
    for i in range(p):
        for j in range(i):
            w2 = omega[i, j] * omega[i, j]
            lo = log_odds0 - 0.5 * w2 / (v1 * v1) + 0.5 * w2 / (v0 * v0)
            if lo > 0:
                q = 1.0 / (1.0 + np.exp(-lo))
            else:
                e = np.exp(lo)
                q = e / (1.0 + e)
            out[i, j] = q
            out[j, i] = q
    return out


@njit_exact
def sssl_latent_variances(rng, omega, v0, v1, pi):
    """Draw ``Z | Omega`` and return ``(variances, Z)`` with ``v1^2`` / ``v0^2`` entries."""
    prob = spike_slab_inclusion_probability(omega, v0, v1, pi)
    p = omega.shape[0]
    tau = np.ones((p, p))
    z = np.zeros((p, p), dtype=np.int8)
    for i in range(p):
        for j in range(i):
            on = rng.random() < prob[i, j]
            t = v1 * v1 if on else v0 * v0
            tau[i, j] = t
            tau[j, i] = t
            z[i, j] = 1 if on else 0
            z[j, i] = z[i, j]
    return tau, z


@njit_exact
def column_sweep(rng, state, data, prior, beta):
    """One column-wise block Gibbs sweep of the power posterior at ``beta`` (module
    docstring), in place on ``state.omega`` and ``state.sigma = omega^-1``.

    Parameters
    ----------
    rng : numpy.random.Generator
    state : Precision
        Current precision and its inverse (updated in place).
    data : WishartData
        ``X'X`` of the (mean-zero) data and the number of observations.
    prior : ColumnPrior
        ``lam``, the off-diagonal prior variances ``tau`` given the latent variables and
        the Schur complement's shape offset.
    beta : float
        Inverse temperature of the likelihood in [0, 1] (1: the posterior).
    """
    for j in range(state.omega.shape[0]):
        column_update(rng, state, data, prior, beta, j)


@njit_exact
def column_update(rng, state, data, prior, beta, j):
    """Draw column ``j`` of ``state.omega`` from its conditional at inverse temperature
    ``beta`` (module docstring), in place (``state.sigma`` follows)."""
    omega, sigma = state
    S, n = data
    lam, tau, gamma_shape_offset = prior
    p = omega.shape[0]
    m = p - 1
    idx = np.empty(m, dtype=np.int64)
    o11inv = np.empty((m, m))
    cinv = np.empty((m, m))
    s12 = np.empty(m)
    c = 0
    for k in range(p):
        if k != j:
            idx[c] = k
            c += 1
    # the likelihood at beta is the Wishart form at (beta n, beta S)
    s22 = beta * S[j, j]
    sjj = sigma[j, j]
    for a in range(m):
        ia = idx[a]
        s12[a] = beta * S[ia, j]
        for b in range(m):
            ib = idx[b]
            o11inv[a, b] = sigma[ia, ib] - sigma[ia, j] * sigma[ib, j] / sjj
    for a in range(m):
        for b in range(m):
            cinv[a, b] = (s22 + lam) * o11inv[a, b]
        cinv[a, a] += 1.0 / tau[idx[a], j]
    L = cholesky_lower(cinv)
    # mean = -cinv^{-1} s12 ; draw = mean + L^{-T} z
    y = np.empty(m)
    for a in range(m):  # forward: L y = -s12
        s = -s12[a]
        for b in range(a):
            s -= L[a, b] * y[b]
        y[a] = s / L[a, a]
    rhs = np.empty(m)
    for a in range(m):
        rhs[a] = y[a] + rng.standard_normal()
    w = np.empty(m)
    for a in range(m - 1, -1, -1):  # backward: L' w = y + z
        s = rhs[a]
        for b in range(a + 1, m):
            s -= L[b, a] * w[b]
        w[a] = s / L[a, a]
    gamma = rng.gamma(0.5 * beta * n + gamma_shape_offset, 2.0 / (s22 + lam))
    ob = np.zeros(m)
    for a in range(m):
        for b in range(m):
            ob[a] += o11inv[a, b] * w[b]
    quad = 0.0
    for a in range(m):
        quad += w[a] * ob[a]
    for a in range(m):
        omega[idx[a], j] = w[a]
        omega[j, idx[a]] = w[a]
    omega[j, j] = gamma + quad
    for a in range(m):
        ia = idx[a]
        for b in range(m):
            sigma[ia, idx[b]] = o11inv[a, b] + ob[a] * ob[b] / gamma
        sigma[ia, j] = -ob[a] / gamma
        sigma[j, ia] = -ob[a] / gamma
    sigma[j, j] = 1.0 / gamma


@njit_exact
def packed_cholesky_forward(omega):
    """``omega`` -> PyMC's ``CholeskyCovTransform`` value: the row-major lower triangle
    of its Cholesky factor with the diagonal logged."""
    p = omega.shape[0]
    L = cholesky_lower(omega)
    out = np.empty(p * (p + 1) // 2)
    c = 0
    for i in range(p):
        for j in range(i + 1):
            out[c] = np.log(L[i, i]) if i == j else L[i, j]
            c += 1
    return out


@njit_exact
def packed_cholesky_backward(value, p):
    """Inverse of :func:`packed_cholesky_forward`: ``L L'`` from the packed vector."""
    L = np.zeros((p, p))
    c = 0
    for i in range(p):
        for j in range(i + 1):
            L[i, j] = np.exp(value[c]) if i == j else value[c]
            c += 1
    out = np.empty((p, p))
    for i in range(p):
        for j in range(i + 1):
            s = 0.0
            for k in range(j + 1):
                s += L[i, k] * L[j, k]
            out[i, j] = s
            out[j, i] = s
    return out


@njit_exact
def gram(X):
    """``X' X`` by plain loops (see the note above)."""
    n, p = X.shape
    out = np.zeros((p, p))
    for r in range(n):
        for i in range(p):
            xi = X[r, i]
            for j in range(i + 1):
                out[i, j] += xi * X[r, j]
    for i in range(p):
        for j in range(i):
            out[j, i] = out[i, j]
    return out
