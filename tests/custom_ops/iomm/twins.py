"""Planted-bug twins of the IOMM kernels, each a realistic mistake in Algorithm 7.1
(test-only copies of the shipped kernels with the one line changed; the steps running
them are in ``tests/inference/gibbs/iomm/twins.py``).

- :func:`without_proposal_terms`: the split-merge move's acceptance ratio without the
  proposal probabilities (planted in
  :func:`custom_ops.iomm.split_merge.split_merge_moves` by ``twin_kernel``).
- :func:`without_reverse_proposal`: the split-merge ratio without the reverse move's
  probability.
- :func:`no_hastings_coordinate_move`, :func:`no_hastings_sweep`: the Bernoulli
  parameter move without the Hastings term ``T(theta | theta') / T(theta' | theta)`` of
  Eq. 7.13 (the Beta proposal is not symmetric).
- :func:`no_jacobian_precision_move`, :func:`no_jacobian_sweep`: the Gaussian
  precision's random walk on ``log tau`` without its Hastings term ``tau' / tau``.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.iomm.experts import dim_loglik, sigmoid_pair
from custom_ops.iomm.parameters import (
    BernoulliColumn,
    BetaPrior,
    GaussianColumn,
    GaussianPrior,
    MoveSettings,
    bernoulli_sweep_state,
    cluster_members,
    gaussian_mean_move,
    gaussian_sweep_state,
)
from custom_ops.jit import njit_exact

__all__ = [
    "no_hastings_coordinate_move",
    "no_hastings_sweep",
    "no_jacobian_precision_move",
    "no_jacobian_sweep",
    "without_proposal_terms",
    "without_reverse_proposal",
]


@njit_exact
def without_proposal_terms(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    """The split-merge ratio with the proposal's reverse and forward probabilities left
    out."""
    return log_prior_ratio + beta * log_lik_ratio


@njit_exact
def without_reverse_proposal(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    """The split-merge ratio with the reverse move's probability (density) left out."""
    return log_prior_ratio + beta * log_lik_ratio - log_q_forward


@njit_exact
def no_hastings_coordinate_move(rng, column, rows, theta, prior, settings):
    x, eta, p, q = column
    a, b = prior
    omega, beta = settings
    proposal = rng.beta(omega * theta, omega * (1.0 - theta))
    if not 0.0 < proposal < 1.0:
        return theta
    shift = (math.log(proposal) - math.log1p(-proposal)) - (math.log(theta) - math.log1p(-theta))
    delta = 0.0
    for j in range(rows.shape[0]):
        i = rows[j]
        delta += dim_loglik(0, x[i], eta[i] + shift, 0.0, False, 0.0, 1.0) - dim_loglik(
            0, x[i], eta[i], 0.0, False, 0.0, 1.0
        )
    log_ratio = (
        beta * delta
        + (a - 1.0) * (math.log(proposal) - math.log(theta))
        + (b - 1.0) * (math.log1p(-proposal) - math.log1p(-theta))
    )
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            i = rows[j]
            eta[i] += shift
            p[i], q[i] = sigmoid_pair(eta[i])
        return proposal
    return theta


@njit_exact
def no_hastings_sweep(rng, X, Z, theta, prior_a, prior_b, omega, beta):
    C = Z.shape[1]
    D = X.shape[1]
    eta, p, q, Xt = bernoulli_sweep_state(X, Z, theta)
    start, rows = cluster_members(Z)
    settings = MoveSettings(omega, beta)
    for k in range(C):
        members = rows[start[k] : start[k + 1]]
        for d in range(D):
            if members.shape[0] == 0:
                theta[k, d] = rng.beta(prior_a[d], prior_b[d])
                continue
            theta[k, d] = no_hastings_coordinate_move(
                rng,
                BernoulliColumn(Xt[d], eta[d], p[d], q[d]),
                members,
                theta[k, d],
                BetaPrior(prior_a[d], prior_b[d]),
                settings,
            )
    return 0, 1


@njit_exact
def no_jacobian_precision_move(rng, column, rows, mu, tau, prior, settings, buf):
    x, P, H, ll = column
    shape0 = prior.shape
    rate0 = prior.rate
    omega, beta = settings
    proposal = tau * math.exp(rng.standard_normal() / math.sqrt(omega))
    dP = proposal - tau
    dH = dP * mu
    delta = 0.0
    for j in range(rows.shape[0]):
        i = rows[j]
        buf[j] = dim_loglik(1, x[i], P[i] + dP, H[i] + dH, False, 0.0, 1.0)
        delta += buf[j] - ll[i]
    log_ratio = (
        beta * delta
        + (shape0 - 1.0) * (math.log(proposal) - math.log(tau))
        - rate0 * (proposal - tau)
    )
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            P[rows[j]] += dP
            H[rows[j]] += dH
            ll[rows[j]] = buf[j]
        return proposal
    return tau


@njit_exact
def no_jacobian_sweep(rng, X, Z, mu, tau, prior, omega, beta):
    mean0, sd0, shape0, rate0 = prior
    C = Z.shape[1]
    D = X.shape[1]
    P, H, ll, Xt = gaussian_sweep_state(X, Z, mu, tau)
    start, rows = cluster_members(Z)
    buf = np.empty(Z.shape[0])
    settings = MoveSettings(omega, beta)
    for k in range(C):
        members = rows[start[k] : start[k + 1]]
        for d in range(D):
            if members.shape[0] == 0:
                mu[k, d] = mean0[d] + sd0[d] * rng.standard_normal()
                tau[k, d] = rng.gamma(shape0[d], 1.0 / rate0[d])
                continue
            column = GaussianColumn(Xt[d], P[d], H[d], ll[d])
            coordinate = GaussianPrior(mean0[d], sd0[d], shape0[d], rate0[d])
            mu[k, d] = gaussian_mean_move(
                rng, column, members, mu[k, d], tau[k, d], coordinate, settings, buf
            )
            tau[k, d] = no_jacobian_precision_move(
                rng, column, members, mu[k, d], tau[k, d], coordinate, settings, buf
            )
    return 0, 1
