"""The cluster-parameter sweep of the IOMM sampler (Heller 2007 Algorithm 7.1,
"Resample Theta | Z, X using MH proposal", Eq. 7.13).

The product likelihood is not conjugate to any prior on one expert's parameters, so each
parameter of each used cluster gets one Metropolis-Hastings move with the others fixed;
only the points in that cluster see the change, so a move costs O(m_k). The acceptance
ratio is Eq. 7.13 with the likelihood to the power ``beta`` (1: the posterior)::

    a = p(x_d | Z, theta'_d)^beta p(theta'_d) T(theta_kd | theta'_kd)
        / (p(x_d | Z, theta_d)^beta p(theta_d) T(theta'_kd | theta_kd))

- **Bernoulli** ``theta_kd ~ Beta(a_d, b_d)``: the thesis's proposal ``theta' ~
  Beta(omega theta, omega (1 - theta))`` (mean ``theta``; larger ``omega`` is narrower),
  with its Hastings term. A proposal that rounds to 0 or 1 is rejected.
- **Gaussian** (diagonal experts) ``mu_kd ~ N(m_d, s_d^2)``, ``tau_kd ~ Gamma(shape_d,
  rate_d)``: a random walk ``mu' = mu + eps / sqrt(omega tau)`` (the expert's own scale,
  symmetric), then ``log tau' = log tau + eps / sqrt(omega)`` (Hastings term
  ``tau' / tau``).

A slot no point uses enters no likelihood term: its parameters are drawn from the prior
(exact Gibbs), which keeps them the prior draws the membership sweep proposes new
clusters from.

Kernels: :func:`bernoulli_parameter_sweep`, :func:`gaussian_parameter_sweep` (whole
sweeps, in place), the single-coordinate moves :func:`bernoulli_coordinate_move`,
:func:`gaussian_mean_move`, :func:`gaussian_precision_move` (each keeps the members'
natural sums cached, with their sigmoids for Bernoulli and their log densities for
Gaussian experts, so a move evaluates only the proposed terms), :func:`cluster_members`,
:func:`bernoulli_sweep_state` and :func:`gaussian_sweep_state`. The moves take their
arguments in named tuples: a column's cached state (:class:`BernoulliColumn`,
:class:`GaussianColumn`), the coordinate's prior (:class:`BetaPrior`,
:class:`GaussianPrior`) and the proposal's settings (:class:`MoveSettings`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.iomm.experts import dim_loglik, log_product_step, sigmoid_pair
from custom_ops.jit import njit_exact

__all__ = [
    "BernoulliColumn",
    "BetaPrior",
    "GaussianColumn",
    "GaussianPrior",
    "MoveSettings",
    "bernoulli_coordinate_move",
    "bernoulli_parameter_sweep",
    "bernoulli_sweep_state",
    "beta_logpdf",
    "cluster_members",
    "gamma_logpdf",
    "gaussian_mean_move",
    "gaussian_parameter_sweep",
    "gaussian_precision_move",
    "gaussian_sweep_state",
]


class BernoulliColumn(NamedTuple):
    """Column ``d`` of the Bernoulli experts' cached state, each (N,) float64: the data
    ``x``, the points' natural sums ``eta`` (including ``logit theta``) and their
    sigmoids ``p = sigmoid(eta)``, ``q = sigmoid(-eta)`` (``eta``, ``p`` and ``q`` updated
    in place by :func:`bernoulli_coordinate_move`)."""

    x: np.ndarray
    eta: np.ndarray
    p: np.ndarray
    q: np.ndarray


class GaussianColumn(NamedTuple):
    """Column ``d`` of the Gaussian experts' cached state, each (N,) float64: the data
    ``x``, the points' precision sums ``P``, precision-weighted mean sums ``H`` and log
    densities ``ll`` (updated in place by :func:`gaussian_mean_move` and
    :func:`gaussian_precision_move`)."""

    x: np.ndarray
    P: np.ndarray
    H: np.ndarray
    ll: np.ndarray


class BetaPrior(NamedTuple):
    """``theta ~ Beta(a, b)``: numbers for one coordinate."""

    a: float
    b: float


class GaussianPrior(NamedTuple):
    """``mu ~ N(mean, sd^2)``, ``tau ~ Gamma(shape, rate)``: (D,) float64 arrays, one
    entry per dimension, for a sweep; numbers for one coordinate's move."""

    mean: np.ndarray
    sd: np.ndarray
    shape: np.ndarray
    rate: np.ndarray


class MoveSettings(NamedTuple):
    """A move's proposal concentration ``omega`` (larger is narrower) and the power
    ``beta`` of the likelihood (1: the posterior)."""

    omega: float
    beta: float


@njit_exact
def beta_logpdf(y, a, b):
    """``log Beta(y; a, b)`` for ``0 < y < 1``."""
    return ((a - 1.0) * math.log(y) + (b - 1.0) * math.log1p(-y)
            + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b))


@njit_exact
def gamma_logpdf(x, shape, rate):
    """``log Gamma(x; shape, rate)`` for ``x > 0``."""
    return shape * math.log(rate) - math.lgamma(shape) + (shape - 1.0) * math.log(x) - rate * x


@njit_exact
def cluster_members(Z):
    """The points of each slot as CSR arrays ``(start (C + 1,), rows)``: slot ``k``'s
    points are ``rows[start[k]:start[k + 1]]``, in increasing order."""
    N, C = Z.shape
    start = np.zeros(C + 1, dtype=np.int64)
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                start[k + 1] += 1
    for k in range(C):
        start[k + 1] += start[k]
    fill = start[:C].copy()
    rows = np.empty(start[C], dtype=np.int64)
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                rows[fill[k]] = i
                fill[k] += 1
    return start, rows


@njit_exact
def bernoulli_coordinate_move(rng, column, rows, theta, prior, settings):
    """One MH move of ``theta_kd`` (Eq. 7.13, Beta proposal); returns the new value.

    ``column`` is the :class:`BernoulliColumn` of dimension ``d`` (its ``eta``, ``p`` and
    ``q`` updated in place on acceptance), ``rows`` the cluster's points, ``prior`` the
    coordinate's :class:`BetaPrior`, ``settings`` the :class:`MoveSettings`. A member's
    log density changes by ``x s - log(q + p exp(s))`` for the shift ``s`` of its natural
    sum (:func:`custom_ops.iomm.experts.bernoulli_shift_gain`), so a move takes one ``log``
    per ~100 orders of magnitude of the members' product, not two transcendental
    functions per member."""
    x, eta, p, q = column
    a, b = prior
    omega, beta = settings
    proposal = rng.beta(omega * theta, omega * (1.0 - theta))
    if not 0.0 < proposal < 1.0:
        return theta
    shift = (math.log(proposal) - math.log1p(-proposal)) - (math.log(theta)
                                                            - math.log1p(-theta))
    delta = 0.0
    if abs(shift) < _LARGEST_SHIFT:
        odds = math.exp(shift)
        hits = 0.0
        prod = 1.0
        acc = 0.0
        for j in range(rows.shape[0]):
            i = rows[j]
            hits += x[i]
            prod, acc = log_product_step(prod, acc, q[i] + p[i] * odds)
        delta = shift * hits - (acc + math.log(prod))
    else:
        # exp(shift) would overflow: the members' densities one by one
        for j in range(rows.shape[0]):
            i = rows[j]
            delta += (dim_loglik(0, x[i], eta[i] + shift, 0.0, False, 0.0, 1.0)
                      - dim_loglik(0, x[i], eta[i], 0.0, False, 0.0, 1.0))
    log_ratio = (beta * delta
                 + (a - 1.0) * (math.log(proposal) - math.log(theta))
                 + (b - 1.0) * (math.log1p(-proposal) - math.log1p(-theta))
                 + beta_logpdf(theta, omega * proposal, omega * (1.0 - proposal))
                 - beta_logpdf(proposal, omega * theta, omega * (1.0 - theta)))
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            i = rows[j]
            eta[i] += shift
            p[i], q[i] = sigmoid_pair(eta[i])
        return proposal
    return theta


#: Shifts of a natural parameter beyond this are scored without ``exp(shift)``.
_LARGEST_SHIFT = 700.0


@njit_exact
def bernoulli_sweep_state(X, Z, theta):
    """The points' natural sums ``eta`` and their sigmoids ``p = sigmoid(eta)``, ``q =
    sigmoid(-eta)``, each (D, N), and ``X`` transposed, for
    :func:`bernoulli_coordinate_move`."""
    N, C = Z.shape
    D = X.shape[1]
    logits = np.empty((C, D))
    for k in range(C):
        for d in range(D):
            logits[k, d] = math.log(theta[k, d]) - math.log1p(-theta[k, d])
    eta = np.zeros((D, N))
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                for d in range(D):
                    eta[d, i] += logits[k, d]
    Xt = np.ascontiguousarray(X.T)
    p = np.empty((D, N))
    q = np.empty((D, N))
    for d in range(D):
        for i in range(N):
            p[d, i], q[d, i] = sigmoid_pair(eta[d, i])
    return eta, p, q, Xt


@njit_exact
def bernoulli_parameter_sweep(rng, X, Z, theta, prior_a, prior_b, omega, beta):
    """Every ``theta_kd`` of a used slot by :func:`bernoulli_coordinate_move`, then the
    unused slots' from the prior; ``theta`` (C, D) is updated in place. Returns
    ``(accepted, proposed)``."""
    C = Z.shape[1]
    D = X.shape[1]
    eta, p, q, Xt = bernoulli_sweep_state(X, Z, theta)
    start, rows = cluster_members(Z)
    settings = MoveSettings(omega, beta)
    accepted = proposed = 0
    for k in range(C):
        members = rows[start[k]:start[k + 1]]
        for d in range(D):
            if members.shape[0] == 0:
                theta[k, d] = _beta_prior_draw(rng, prior_a[d], prior_b[d])
                continue
            new = bernoulli_coordinate_move(
                rng, BernoulliColumn(Xt[d], eta[d], p[d], q[d]), members, theta[k, d],
                BetaPrior(prior_a[d], prior_b[d]), settings)
            proposed += 1
            if new != theta[k, d]:
                accepted += 1
            theta[k, d] = new
    return accepted, proposed


@njit_exact
def _beta_prior_draw(rng, a, b):
    # a draw that rounds to 0 or 1 has no finite natural parameter: draw again
    while True:
        v = rng.beta(a, b)
        if 0.0 < v < 1.0:
            return v


@njit_exact
def _gaussian_members_delta(x, P, H, ll, rows, dP, dH, buf):
    """``sum_i [log N(x_i; (H_i + dH)/(P_i + dP), .) - ll_i]`` over ``rows``, the new
    terms written to ``buf``."""
    delta = 0.0
    for j in range(rows.shape[0]):
        i = rows[j]
        buf[j] = dim_loglik(1, x[i], P[i] + dP, H[i] + dH, False, 0.0, 1.0)
        delta += buf[j] - ll[i]
    return delta


@njit_exact
def gaussian_mean_move(rng, column, rows, mu, tau, prior, settings, buf):
    """One MH move of ``mu_kd`` (random walk with sd ``1 / sqrt(omega tau)``); returns
    the new value.

    ``column`` is the :class:`GaussianColumn` of dimension ``d`` (its ``H`` and ``ll``
    updated in place on acceptance), ``rows`` the cluster's points, ``prior`` the
    coordinate's :class:`GaussianPrior` (numbers; its ``mean`` and ``sd`` enter),
    ``settings`` the :class:`MoveSettings`, ``buf`` scratch of at least ``len(rows)``."""
    x, P, H, ll = column
    mean0 = prior.mean
    sd0 = prior.sd
    omega, beta = settings
    proposal = mu + rng.standard_normal() / math.sqrt(omega * tau)
    dH = tau * (proposal - mu)
    delta = _gaussian_members_delta(x, P, H, ll, rows, 0.0, dH, buf)
    z_new = (proposal - mean0) / sd0
    z_old = (mu - mean0) / sd0
    log_ratio = beta * delta - 0.5 * (z_new * z_new - z_old * z_old)
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            H[rows[j]] += dH
            ll[rows[j]] = buf[j]
        return proposal
    return mu


@njit_exact
def gaussian_precision_move(rng, column, rows, mu, tau, prior, settings, buf):
    """One MH move of ``tau_kd`` (random walk on ``log tau`` with sd ``1 / sqrt(omega)``,
    Hastings term ``tau' / tau``); arguments as :func:`gaussian_mean_move` (the prior's
    ``shape`` and ``rate`` enter), the column's ``P``, ``H`` and ``ll`` updated in place
    on acceptance. Returns the new value."""
    x, P, H, ll = column
    shape0 = prior.shape
    rate0 = prior.rate
    omega, beta = settings
    proposal = tau * math.exp(rng.standard_normal() / math.sqrt(omega))
    if not 0.0 < proposal < np.inf:
        return tau
    dP = proposal - tau
    dH = dP * mu
    delta = _gaussian_members_delta(x, P, H, ll, rows, dP, dH, buf)
    log_ratio = (beta * delta + shape0 * (math.log(proposal) - math.log(tau))
                 - rate0 * (proposal - tau))
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            P[rows[j]] += dP
            H[rows[j]] += dH
            ll[rows[j]] = buf[j]
        return proposal
    return tau


@njit_exact
def gaussian_sweep_state(X, Z, mu, tau):
    """The points' precision sums ``P``, precision-weighted mean sums ``H`` and log
    densities ``ll``, each (D, N), and ``X`` transposed, for the moves above (a point in
    no cluster gets ``ll = 0``: no move touches it)."""
    N, C = Z.shape
    D = X.shape[1]
    P = np.zeros((D, N))
    H = np.zeros((D, N))
    ll = np.zeros((D, N))
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                for d in range(D):
                    P[d, i] += tau[k, d]
                    H[d, i] += tau[k, d] * mu[k, d]
    Xt = np.ascontiguousarray(X.T)
    for d in range(D):
        for i in range(N):
            if P[d, i] > 0.0:
                ll[d, i] = dim_loglik(1, Xt[d, i], P[d, i], H[d, i], False, 0.0, 1.0)
    return P, H, ll, Xt


@njit_exact
def gaussian_parameter_sweep(rng, X, Z, mu, tau, prior, omega, beta):
    """Every ``mu_kd`` then ``tau_kd`` of a used slot by :func:`gaussian_mean_move` and
    :func:`gaussian_precision_move`, then the unused slots' from the prior (a
    :class:`GaussianPrior` of (D,) arrays); ``mu``, ``tau`` (C, D) updated in place.
    Returns ``(accepted, proposed)``."""
    mean0, sd0, shape0, rate0 = prior
    N, C = Z.shape
    D = X.shape[1]
    P, H, ll, Xt = gaussian_sweep_state(X, Z, mu, tau)
    start, rows = cluster_members(Z)
    buf = np.empty(N)
    settings = MoveSettings(omega, beta)
    accepted = proposed = 0
    for k in range(C):
        members = rows[start[k]:start[k + 1]]
        for d in range(D):
            if members.shape[0] == 0:
                mu[k, d] = mean0[d] + sd0[d] * rng.standard_normal()
                tau[k, d] = _gamma_prior_draw(rng, shape0[d], rate0[d])
                continue
            column = GaussianColumn(Xt[d], P[d], H[d], ll[d])
            coordinate = GaussianPrior(mean0[d], sd0[d], shape0[d], rate0[d])
            new = gaussian_mean_move(rng, column, members, mu[k, d], tau[k, d], coordinate,
                                     settings, buf)
            if new != mu[k, d]:
                accepted += 1
            mu[k, d] = new
            new = gaussian_precision_move(rng, column, members, mu[k, d], tau[k, d],
                                          coordinate, settings, buf)
            if new != tau[k, d]:
                accepted += 1
            tau[k, d] = new
            proposed += 2
    return accepted, proposed


@njit_exact
def _gamma_prior_draw(rng, shape, rate):
    # a draw that underflows to 0 is no precision: draw again
    while True:
        v = rng.gamma(shape, 1.0 / rate)
        if v > 0.0:
            return v
