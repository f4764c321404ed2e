"""The Bernoulli sweeps as they were before the likelihood ratios moved to cached
sigmoids (per-entry ``log1p(exp(.))`` for every ratio): the reference the shipped kernels
must match draw for draw, given the same generator (test-only copies).

The two paths compute the same ratios with different rounding, so their draws part only
where a uniform falls within rounding of an acceptance threshold (probability of the
order 1e-13 per decision).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.iomm.experts import dim_loglik, row_loglik, row_loglik_shift, row_sums
from custom_ops.iomm.parameters import beta_logpdf, cluster_members
from custom_ops.jit import njit_exact

__all__ = ["previous_bernoulli_parameter_sweep", "previous_membership_sweep"]


@njit_exact
def previous_membership_sweep(rng, code, X, Z, E, background, prior, beta):
    # the shipped kernel's signature (a MembershipPrior), for a draw-for-draw comparison
    log_odds, birth_rate = prior
    N, C = Z.shape
    D, S = E.shape[1], E.shape[2]
    m = np.zeros(C, dtype=np.int64)
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                m[k] += 1
    T = np.empty((D, S))
    T_new = np.empty((D, S))
    free = np.empty(C, dtype=np.int64)
    own = np.empty(C, dtype=np.int64)
    accepted = proposed = overflow = flips = 0
    for i in range(N):
        x = X[i]
        # the point's sums afresh: no drift from adding and removing experts
        count = row_sums(Z[i], E, T)
        current = row_loglik(code, x, T, count, background)
        # 1. Gibbs on the clusters that other points belong to
        for k in range(C):
            others = m[k] - Z[i, k]
            if others <= 0:
                continue
            if Z[i, k] != 0:
                ll_on = current
                ll_off = row_loglik_shift(code, x, T, E[k], -1, count, background)
            else:
                ll_off = current
                ll_on = row_loglik_shift(code, x, T, E[k], 1, count, background)
            logit = log_odds[others] + beta * (ll_on - ll_off)
            if logit >= 0.0:
                p_on = 1.0 / (1.0 + math.exp(-logit))
            else:
                e = math.exp(logit)
                p_on = e / (1.0 + e)
            on = rng.random() < p_on
            if on != (Z[i, k] != 0):
                flips += 1
                sign = 1 if on else -1
                for d in range(D):
                    for s in range(S):
                        T[d, s] += sign * E[k, d, s]
                count += sign
                m[k] += sign
                Z[i, k] = 1 if on else 0
                current = ll_on if on else ll_off
        # 2. Metropolis-Hastings on the point's own clusters
        n_free = 0
        n_own = 0
        for k in range(C):
            if m[k] - Z[i, k] == 0:
                free[n_free] = k
                n_free += 1
                if Z[i, k] != 0:
                    own[n_own] = k
                    n_own += 1
        kappa = rng.poisson(birth_rate)
        if kappa == 0 and n_own == 0:
            continue  # proposes the current state
        proposed += 1
        if kappa > n_free:
            overflow += 1
            continue
        # kappa slots uniformly from the free ones (partial Fisher-Yates)
        for j in range(kappa):
            r = j + int(rng.random() * (n_free - j))
            if r >= n_free:
                r = n_free - 1
            free[j], free[r] = free[r], free[j]
        for d in range(D):
            for s in range(S):
                T_new[d, s] = T[d, s]
        for j in range(n_own):
            k = own[j]
            for d in range(D):
                for s in range(S):
                    T_new[d, s] -= E[k, d, s]
        for j in range(kappa):
            k = free[j]
            for d in range(D):
                for s in range(S):
                    T_new[d, s] += E[k, d, s]
        new_count = count - n_own + kappa
        proposal = row_loglik(code, x, T_new, new_count, background)
        log_ratio = beta * (proposal - current)
        if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
            accepted += 1
            for j in range(n_own):
                Z[i, own[j]] = 0
                m[own[j]] -= 1
            for j in range(kappa):
                Z[i, free[j]] = 1
                m[free[j]] += 1
    return accepted, proposed, overflow, flips


@njit_exact
def _previous_coordinate_move(rng, x, eta, ll, rows, theta, a, b, omega, beta, buf):
    proposal = rng.beta(omega * theta, omega * (1.0 - theta))
    if not 0.0 < proposal < 1.0:
        return theta
    shift = (math.log(proposal) - math.log1p(-proposal)) - (math.log(theta)
                                                            - math.log1p(-theta))
    delta = 0.0
    for j in range(rows.shape[0]):
        i = rows[j]
        buf[j] = dim_loglik(0, x[i], eta[i] + shift, 0.0, False, 0.0, 1.0)
        delta += buf[j] - ll[i]
    log_ratio = (beta * delta
                 + (a - 1.0) * (math.log(proposal) - math.log(theta))
                 + (b - 1.0) * (math.log1p(-proposal) - math.log1p(-theta))
                 + beta_logpdf(theta, omega * proposal, omega * (1.0 - proposal))
                 - beta_logpdf(proposal, omega * theta, omega * (1.0 - theta)))
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        for j in range(rows.shape[0]):
            eta[rows[j]] += shift
            ll[rows[j]] = buf[j]
        return proposal
    return theta


@njit_exact
def _previous_sweep_state(X, Z, theta):
    N, C = Z.shape
    D = X.shape[1]
    eta = np.zeros((D, N))
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                for d in range(D):
                    eta[d, i] += math.log(theta[k, d]) - math.log1p(-theta[k, d])
    Xt = np.ascontiguousarray(X.T)
    ll = np.empty((D, N))
    for d in range(D):
        for i in range(N):
            ll[d, i] = dim_loglik(0, Xt[d, i], eta[d, i], 0.0, False, 0.0, 1.0)
    return eta, ll, Xt


@njit_exact
def previous_bernoulli_parameter_sweep(rng, X, Z, theta, prior_a, prior_b, omega, beta):
    N, C = Z.shape
    D = X.shape[1]
    eta, ll, Xt = _previous_sweep_state(X, Z, theta)
    start, rows = cluster_members(Z)
    buf = np.empty(N)
    accepted = proposed = 0
    for k in range(C):
        members = rows[start[k]:start[k + 1]]
        for d in range(D):
            if members.shape[0] == 0:
                theta[k, d] = _previous_prior_draw(rng, prior_a[d], prior_b[d])
                continue
            new = _previous_coordinate_move(rng, Xt[d], eta[d], ll[d], members,
                                            theta[k, d], prior_a[d], prior_b[d], omega,
                                            beta, buf)
            proposed += 1
            if new != theta[k, d]:
                accepted += 1
            theta[k, d] = new
    return accepted, proposed


@njit_exact
def _previous_prior_draw(rng, a, b):
    # a draw that rounds to 0 or 1 has no finite natural parameter: draw again
    while True:
        v = rng.beta(a, b)
        if 0.0 < v < 1.0:
            return v
