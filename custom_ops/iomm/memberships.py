"""The membership sweep of the IOMM sampler (Heller 2007 Algorithm 7.1, the loop over
points).

The memberships are a binary ``N x C`` matrix ``Z`` with an Indian buffet prior over the
``N`` points (§7.3): ``C`` slots, a slot with an all-zero column unused. With the
cluster parameters fixed, :func:`membership_sweep` visits each point ``i`` in turn and

1. Gibbs-samples ``z_ik`` for every cluster ``k`` that other points belong to
   (``m_-ik > 0``): prior odds ``m_-ik / (N - m_-ik)`` (Eq. 7.12 and its complement),
   times the likelihood ratio of the product densities (Eq. 7.10; to the power
   ``beta``);
2. makes one Metropolis-Hastings move on the point's own clusters (those no other point
   belongs to), following Meeds et al. (2007) as §7.4 says: propose ``kappa' ~
   Poisson(birth_rate)`` new clusters (``alpha / N`` under the IBP) whose parameters are
   those of ``kappa'`` slots drawn uniformly from the ``L`` slots no other point uses,
   which replace the point's current own clusters. The unused slots' parameters are
   draws from the prior (the parameter sweep redraws them), so this is the thesis's
   "new parameters drawn from the prior". In the slot representation of the IBP
   (:class:`pp_models.distributions.IndianBuffet`: ``P(Z) = alpha^K+ exp(-alpha H_N)
   prod_k (N - m_k)! (m_k - 1)! / N! (C - K+)! / C!``) the prior ratio, the Poisson
   proposal and the ``binomial(L, kappa)`` choice of slots cancel exactly, leaving the
   likelihood ratio (to the power ``beta``) as the acceptance ratio. More new clusters
   than ``L`` slots is a rejected proposal, counted apart.

The prior odds arrive as a table ``log_odds[m] = log(m / (N - m))`` and the birth rate
as a number, together a :class:`MembershipPrior`: the caller computes both from the IBP
(so one kernel serves every prior the caller may derive them from). ``beta`` (1: the
posterior) is the power of the likelihood in both conditionals, for a tempered run.

Cost per sweep: O(N K+ D) for the Gibbs part and O(N (C + kappa D)) for the moves. For
Bernoulli experts the Gibbs part's likelihood ratios take no transcendental function per
entry (:func:`custom_ops.iomm.experts.bernoulli_shift_gain` on the point's cached
sigmoids), and the point's current log density is computed only when a move on its own
clusters is proposed.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.iomm.experts import (
    bernoulli_shift_gain,
    product_is_bounded,
    row_loglik,
    row_loglik_shift,
    row_sums,
    sigmoid_pair,
)
from custom_ops.jit import njit_exact

__all__ = ["MembershipPrior", "ibp_log_odds", "membership_sweep"]


class MembershipPrior(NamedTuple):
    """The memberships' prior as :func:`membership_sweep` reads it.

    ``log_odds`` (N + 1,) float64: the prior log odds of ``z_ik = 1`` given ``m_-ik``
    (:func:`ibp_log_odds`); ``birth_rate``: the mean of the Poisson proposal of a point's
    own clusters (``alpha / N`` under the IBP)."""

    log_odds: np.ndarray
    birth_rate: float


@njit_exact
def ibp_log_odds(N):
    """``log(m / (N - m))`` for ``m = 0..N`` (``-inf`` at 0, ``+inf`` at ``N``): the
    IBP's prior log odds of joining a cluster that ``m`` other points belong to."""
    out = np.empty(N + 1)
    for m in range(N + 1):
        if m == 0:
            out[m] = -np.inf
        elif m == N:
            out[m] = np.inf
        else:
            out[m] = math.log(m) - math.log(N - m)
    return out


@njit_exact
def membership_sweep(rng, code, X, Z, E, background, prior, beta):
    """One pass of Algorithm 7.1's loop over the points; ``Z`` (N, C) int8 is updated in
    place.

    Parameters
    ----------
    rng : numpy.random.Generator
    code : int
        ``BERNOULLI`` or ``GAUSSIAN`` (:mod:`custom_ops.iomm.experts`).
    X : (N, D) float64
    Z : (N, C) int8
    E : (C, D, S) float64
        Every slot's natural parameters (unused slots: prior draws).
    background : (D, 2) float64
        Mean and sd of a point in no cluster (Gaussian; unused for Bernoulli).
    prior : MembershipPrior
        The prior log odds of ``z_ik = 1`` given ``m_-ik`` and the mean of the Poisson
        proposal of a point's own clusters.
    beta : float
        Power of the likelihood (1: the posterior).

    Returns
    -------
    (moves_accepted, moves_proposed, capacity_rejections, gibbs_flips)
        The counts of the sweep; a move proposing the current state (no own clusters,
        ``kappa' = 0``) is not counted.
    """
    log_odds, birth_rate = prior
    N, C = Z.shape
    D, S = E.shape[1], E.shape[2]
    m = np.zeros(C, dtype=np.int64)
    for i in range(N):
        for k in range(C):
            if Z[i, k] != 0:
                m[k] += 1
    bernoulli = code == 0
    if bernoulli:
        # an expert's odds and inverse odds, for the gains of adding and removing it
        # without a transcendental function per entry (experts.bernoulli_shift_gain)
        logits = np.ascontiguousarray(E[:, :, 0])
        odds = np.exp(logits)
        inverse_odds = np.exp(-logits)
        negated = -logits
        bounded_on = np.empty(C, dtype=np.bool_)
        bounded_off = np.empty(C, dtype=np.bool_)
        for k in range(C):
            bounded_on[k] = product_is_bounded(logits[k])
            bounded_off[k] = product_is_bounded(negated[k])
    else:
        logits = odds = inverse_odds = negated = np.empty((0, D))
        bounded_on = bounded_off = np.empty(0, dtype=np.bool_)
    p = np.empty(D)
    q = np.empty(D)
    T = np.empty((D, S))
    T_new = np.empty((D, S))
    free = np.empty(C, dtype=np.int64)
    own = np.empty(C, dtype=np.int64)
    accepted = proposed = overflow = flips = 0
    current = ll_on = ll_off = 0.0
    for i in range(N):
        x = X[i]
        # the point's sums afresh: no drift from adding and removing experts
        count = row_sums(Z[i], E, T)
        if bernoulli:
            _fill_sigmoids(T, p, q)
        else:
            current = row_loglik(code, x, T, count, background)
        # 1. Gibbs on the clusters that other points belong to
        for k in range(C):
            others = m[k] - Z[i, k]
            if others <= 0:
                continue
            if bernoulli:
                # ll_on - ll_off, from whichever side the point is on
                if Z[i, k] != 0:
                    gain = -bernoulli_shift_gain(x, negated[k], inverse_odds[k], p, q,
                                                 bounded_off[k])
                else:
                    gain = bernoulli_shift_gain(x, logits[k], odds[k], p, q, bounded_on[k])
            else:
                if Z[i, k] != 0:
                    ll_on = current
                    ll_off = row_loglik_shift(code, x, T, E[k], -1, count, background)
                else:
                    ll_off = current
                    ll_on = row_loglik_shift(code, x, T, E[k], 1, count, background)
                gain = ll_on - ll_off
            logit = log_odds[others] + beta * gain
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
                if bernoulli:
                    _fill_sigmoids(T, p, q)
                else:
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
        if bernoulli:
            current = row_loglik(code, x, T, count, background)
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
def _fill_sigmoids(T, p, q):
    for d in range(T.shape[0]):
        p[d], q[d] = sigmoid_pair(T[d, 0])
