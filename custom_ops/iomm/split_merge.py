"""A split-merge move on the IOMM's memberships that proposes the new cluster's expert
with its members (Jain & Neal 2004's sequential allocation, in the overlapping-cluster
form of Meeds et al. 2007, with a data-driven expert).

The single-site sweep (:mod:`custom_ops.iomm.memberships`) changes one entry of ``Z`` at
a time, so a cluster of hundreds of points appears or goes only through hundreds of
improbable intermediate states. :func:`split_merge_move` changes a whole cluster at once
and, when it opens a cluster, draws that cluster's expert parameters from a distribution
fitted to the members it proposes (a prior-drawn expert almost never fits a whole group
of points). It is a Metropolis-Hastings move on ``(Z, Theta)`` in the slot representation
of the IBP (:class:`pp_models.distributions.IndianBuffet`), where an unused slot's
parameters are a draw from the prior:

1. draw an ordered pair of distinct points ``(i, j)`` and a cluster ``k`` uniformly from
   the ``|S_i|`` clusters of ``i``;
2. **split** when ``j`` is in ``k`` too: a slot ``k'`` uniformly from the ``L`` unused
   ones; ``i`` stays in ``k`` only, ``j`` moves to ``k'`` only, and the other members of
   ``k``, in a uniformly random order, go each to ``k`` only, ``k'`` only or both with
   probabilities proportional to their likelihood under each, to the power ``beta``,
   where the expert of ``k'`` is :func:`expert_estimate` of the members given to ``k'``
   so far (``j`` first); then ``theta_k'`` is drawn from :func:`expert_draw` fitted to
   all of ``k'``'s members (``theta_k`` is kept);
3. **merge** when ``j`` is not in ``k``: ``k'`` uniformly from the ``|A|`` clusters of
   ``j`` that ``i`` is not in (no move when there is none); every member of ``k'`` joins
   ``k`` (the union), ``k'`` becomes unused and its parameters a draw from the prior.

Each split has exactly one merge that undoes it (same ``i, j``; the union restores
``k``; ``k'`` unused again) and vice versa. The members' order is drawn the same way both
ways (the same set, ``k``'s members but ``i`` and ``j``), so its probability cancels; the
merge evaluates the probability of the split that would undo it by replaying its
allocations in its own random order from the merged state. With ``P`` the slot IBP prior,
``p`` the parameter prior, ``L`` the likelihood, ``q_a`` the allocations' probability
and ``q`` the density of the expert drawn (:func:`expert_log_density`), a split from
``(Z, theta_k' = u)`` to ``(Z', theta_k' = v)`` is accepted with probability::

    min(1, P(Z') p(v) L(Z', v)^beta  (1 / (|A| + 1)) p(u)
           -------------------------------------------------------------------
           P(Z) p(u) L(Z, u)^beta    (1 / L) q_a q(v | members of k'))

where ``P(Z') / P(Z) = alpha f(m_a) f(m_b) / (f(n) (C - K+))``, ``f(m) = (N - m)! (m -
1)! / N!`` (Griffiths & Ghahramani 2011 Eq. 2.12 with the slot arrangement's ``(C -
K+)! / C!``). ``C - K+ = L`` cancels the ``1 / L`` of the slot's choice and the prior
density ``p(u)`` of the unused slot's old parameters cancels the merge's prior draw of
them, leaving ``alpha f(m_a) f(m_b) p(v) L^beta ratio / (f(n) (|A| + 1) q_a q(v))``. A
merge is accepted with the reciprocal of the split that undoes it. ``beta`` (1: the
posterior) is the power of the likelihood, for a tempered run; the allocations and the
expert's fit use it too, their probabilities entering the ratio as made.
:func:`split_merge_log_ratio` combines the terms and :func:`expert_log_density` is the
expert's proposal density (planted-bug twins under ``tests/`` replace them).

The experts' state is one :class:`Experts` named tuple: ``E`` and ``params``, every
slot's natural parameters and its parameters on the model's scale (``theta``, or ``mu``
and ``tau``), are updated in place when a move is accepted.

Cost per move: O(n (C + D)) for a cluster of ``n`` points.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.iomm.experts import dim_loglik, row_loglik, row_sums
from custom_ops.iomm.parameters import beta_logpdf, gamma_logpdf
from custom_ops.jit import njit_exact

__all__ = [
    "ESTIMATE_BOUND",
    "LAPLACE_ITERATIONS",
    "LAPLACE_WIDTH",
    "SPLIT_MERGE_STATS",
    "Experts",
    "expert_draw",
    "expert_estimate",
    "expert_fit",
    "expert_log_density",
    "expert_log_prior",
    "expert_prior_draw",
    "split_merge_log_ratio",
    "split_merge_move",
    "split_merge_moves",
]

#: Entries of the counts array :func:`split_merge_move` adds to.
SPLIT_MERGE_STATS = (
    "splits_proposed",
    "splits_accepted",
    "merges_proposed",
    "merges_accepted",
    "no_free_slot",
)

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)

#: Newton iterations of the Bernoulli expert's Laplace fit (:func:`expert_fit`; it stops
#: earlier once a step is below 1e-8) and the factor on its sd (a proposal a little wider
#: than the conditional it approximates).
LAPLACE_ITERATIONS = 30
LAPLACE_WIDTH = 1.2
#: Bound on the allocation's Bernoulli estimate ``|eta|`` (:func:`expert_estimate`).
ESTIMATE_BOUND = 8.0


class Experts(NamedTuple):
    """The experts' state the move reads, and updates in place when it accepts.

    ``code``: ``BERNOULLI`` or ``GAUSSIAN`` (:mod:`custom_ops.iomm.experts`); ``X`` (N, D)
    float64; ``E`` (C, D, S) float64 every slot's natural parameters (unused slots: prior
    draws); ``params`` (C, D, S) float64 the same on the model's scale (``theta``, or
    ``(mu, tau)``); ``prior`` (D, 4) float64 the parameters' prior (Bernoulli: Beta ``a,
    b``, then unused; Gaussian: ``mu ~ N(mean, sd^2)``, ``tau ~ Gamma(shape, rate)``);
    ``background`` (D, 2) float64 mean and sd of a point in no cluster (Gaussian).
    """

    code: int
    X: np.ndarray
    E: np.ndarray
    params: np.ndarray
    prior: np.ndarray
    background: np.ndarray


@njit_exact
def split_merge_log_ratio(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    """Log Metropolis-Hastings ratio: prior ratio (memberships and parameters),
    likelihood ratio to the power ``beta`` and the proposal's reverse over forward
    probability (density)."""
    return log_prior_ratio + beta * log_lik_ratio + log_q_reverse - log_q_forward


@njit_exact
def _log_f(N, m):
    """``log((N - m)! (m - 1)! / N!)``, a used column's factor of the IBP prior."""
    return math.lgamma(N - m + 1.0) + math.lgamma(m) - math.lgamma(N + 1.0)


# ---------------------------------------------------------------------------------------
# the new expert: a fit to its members' sufficient statistics (n, sum x, sum x^2 per
# dimension), each point's likelihood to the power beta as if the expert were its only one
# ---------------------------------------------------------------------------------------


@njit_exact
def expert_estimate(code, prior, beta, n, s1, s2, out):
    """The natural parameters (D, S) of the expert that the allocation of a split uses
    for its new cluster of ``n`` members with the statistics ``s1``, ``s2`` (D,) of
    :func:`_add_stats`: one Newton step of :func:`expert_fit`'s Laplace fit from ``eta =
    0``, bounded by :data:`ESTIMATE_BOUND` (Bernoulli); the mean of the proposal's
    ``tau`` and ``mu``'s mean given it (Gaussian)."""
    D = prior.shape[0]
    for d in range(D):
        if code == 0:
            # one Newton step from eta = 0 on the prior and the members' likelihoods
            # given their other clusters (the start of expert_fit's iterations)
            a, b = prior[d, 0], prior[d, 1]
            eta = (0.5 * (a - b) + beta * s1[d]) / (0.25 * (a + b) + beta * s2[d])
            out[d, 0] = min(max(eta, -ESTIMATE_BOUND), ESTIMATE_BOUND)
        else:
            ss = s2[d] - s1[d] * s1[d] / n
            ss = ss if ss > 0.0 else 0.0
            tau = (prior[d, 2] + 0.5 * beta * n) / (prior[d, 3] + 0.5 * beta * ss)
            p0 = 1.0 / (prior[d, 1] * prior[d, 1])
            mean = (p0 * prior[d, 0] + beta * tau * s1[d]) / (p0 + beta * n * tau)
            out[d, 0] = tau
            out[d, 1] = tau * mean


@njit_exact
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


@njit_exact
def expert_fit(code, prior, beta, X, members, offsets, sums, out):
    """The proposal of a new cluster's expert given its members (rows ``members`` of
    ``X``, the natural sums of their other clusters ``offsets`` (N, D, S) by row, the
    sums of their points and of their squares ``sums`` (2, D)), written into ``out`` (D,
    4) for :func:`expert_draw` and :func:`expert_log_density`.

    - Bernoulli: per dimension, ``eta = logit theta`` is proposed from the Laplace
      approximation of its conditional, the ``Beta(a, b)`` prior (``theta^a (1 -
      theta)^b`` in ``eta``) times the members' likelihoods to the power ``beta`` given
      their other experts (a product expert only adds ``eta`` to a point's sums, so a
      member already explained by its other clusters asks for ``eta`` near 0): ``out[d]
      = (mode, sd)``, the sd :data:`LAPLACE_WIDTH` times the curvature's.
    - Gaussian: ``tau ~ Gamma(shape + beta n / 2, rate + beta SS / 2)`` with ``SS`` the
      members' sum of squared deviations, then ``mu | tau`` the Normal posterior of the
      prior and ``n`` points of precision ``beta tau`` (as if the expert were the
      members' only one): ``out[d] = (shape', rate', beta n, beta s1)``.
    """
    D = prior.shape[0]
    n = members.shape[0]
    s1, s2 = sums[0], sums[1]
    for d in range(D):
        if code == 0:
            a, b = prior[d, 0], prior[d, 1]
            eta = 0.0
            h = 1.0
            for _ in range(LAPLACE_ITERATIONS):
                g = a - (a + b) * _sigmoid(eta)
                h = (a + b) * _sigmoid(eta) * _sigmoid(-eta)
                for t in range(n):
                    p = members[t]
                    q = _sigmoid(eta + offsets[p, d, 0])
                    g += beta * (X[p, d] - q)
                    h += beta * q * (1.0 - q)
                step = g / h
                if step > 2.0:
                    step = 2.0
                elif step < -2.0:
                    step = -2.0
                eta += step
                if abs(step) < 1e-8:
                    break
            out[d, 0] = eta
            out[d, 1] = LAPLACE_WIDTH / math.sqrt(h)
        else:
            ss = s2[d] - s1[d] * s1[d] / n
            ss = ss if ss > 0.0 else 0.0
            out[d, 0] = prior[d, 2] + 0.5 * beta * n
            out[d, 1] = prior[d, 3] + 0.5 * beta * ss
            out[d, 2] = beta * n
            out[d, 3] = beta * s1[d]


@njit_exact
def _gaussian_mean_given(prior_d, fit_d, tau):
    """Mean and sd of the proposal's ``mu | tau``."""
    p0 = 1.0 / (prior_d[1] * prior_d[1])
    precision = p0 + fit_d[2] * tau
    mean = (p0 * prior_d[0] + tau * fit_d[3]) / precision
    return mean, 1.0 / math.sqrt(precision)


@njit_exact
def expert_draw(rng, code, prior, fit, out):
    """Draw a new cluster's parameters (D, S) into ``out`` from the proposal
    :func:`expert_fit` made. Returns False when a draw has no finite natural parameter
    (the move is then rejected)."""
    D = prior.shape[0]
    for d in range(D):
        if code == 0:
            v = _sigmoid(fit[d, 0] + fit[d, 1] * rng.standard_normal())
            if not 0.0 < v < 1.0:
                return False
            out[d, 0] = v
        else:
            tau = rng.gamma(fit[d, 0], 1.0 / fit[d, 1])
            if not 0.0 < tau < np.inf:
                return False
            mean, sd = _gaussian_mean_given(prior[d], fit[d], tau)
            out[d, 0] = mean + sd * rng.standard_normal()
            out[d, 1] = tau
    return True


@njit_exact
def expert_log_density(code, prior, fit, params_k):
    """``log q(params_k)``: the density of :func:`expert_draw` at ``params_k`` (D, S), on
    the model's scale (``theta``: the logit-normal's, with its Jacobian ``1 / (theta (1
    - theta))``)."""
    D = prior.shape[0]
    out = 0.0
    for d in range(D):
        if code == 0:
            theta = params_k[d, 0]
            eta = math.log(theta) - math.log1p(-theta)
            z = (eta - fit[d, 0]) / fit[d, 1]
            out += (
                -0.5 * z * z
                - math.log(fit[d, 1])
                - _HALF_LOG_2PI
                - math.log(theta)
                - math.log1p(-theta)
            )
        else:
            tau = params_k[d, 1]
            out += gamma_logpdf(tau, fit[d, 0], fit[d, 1])
            mean, sd = _gaussian_mean_given(prior[d], fit[d], tau)
            z = (params_k[d, 0] - mean) / sd
            out += -0.5 * z * z - math.log(sd) - _HALF_LOG_2PI
    return out


@njit_exact
def expert_log_prior(code, prior, params_k):
    """``log p(params_k)``: the model's prior density of one slot's parameters (D, S)."""
    D = prior.shape[0]
    out = 0.0
    for d in range(D):
        if code == 0:
            out += beta_logpdf(params_k[d, 0], prior[d, 0], prior[d, 1])
        else:
            z = (params_k[d, 0] - prior[d, 0]) / prior[d, 1]
            out += -0.5 * z * z - math.log(prior[d, 1]) - _HALF_LOG_2PI
            out += gamma_logpdf(params_k[d, 1], prior[d, 2], prior[d, 3])
    return out


@njit_exact
def expert_prior_draw(rng, code, prior, out):
    """A prior draw of one slot's parameters (D, S) into ``out`` (a Beta draw that rounds
    to 0 or 1, or a precision that underflows, is drawn again)."""
    D = prior.shape[0]
    for d in range(D):
        if code == 0:
            v = 0.0
            while not 0.0 < v < 1.0:
                v = rng.beta(prior[d, 0], prior[d, 1])
            out[d, 0] = v
        else:
            out[d, 0] = prior[d, 0] + prior[d, 1] * rng.standard_normal()
            tau = 0.0
            while not tau > 0.0:
                tau = rng.gamma(prior[d, 2], 1.0 / prior[d, 3])
            out[d, 1] = tau


@njit_exact
def _natural(code, params_k, out):
    """Natural parameters (D, S) of one slot's parameters: ``logit theta`` or ``(tau, tau
    mu)``."""
    D = params_k.shape[0]
    for d in range(D):
        if code == 0:
            out[d, 0] = math.log(params_k[d, 0]) - math.log1p(-params_k[d, 0])
        else:
            out[d, 0] = params_k[d, 1]
            out[d, 1] = params_k[d, 1] * params_k[d, 0]


@njit_exact
def _record_member(p, T, E_k, option, members, n, offsets):
    """Make ``p`` the ``n``-th member of the new cluster, the natural sums of its other
    clusters in ``offsets[p]``: ``T`` (its sums in ``k``) less ``E_k`` when it leaves
    ``k`` (option 1)."""
    members[n] = p
    for d in range(T.shape[0]):
        for s in range(T.shape[1]):
            offsets[p, d, s] = T[d, s] - E_k[d, s] if option == 1 else T[d, s]


@njit_exact
def _add_stats(code, x, offset, n, s1, s2):
    """Add a member to the new cluster's statistics and return their count: Bernoulli,
    the gradient and curvature of its log density in ``eta`` at ``eta = 0`` given its
    other clusters' sums ``offset`` (D, S); Gaussian, ``x`` and ``x^2``."""
    for d in range(x.shape[0]):
        if code == 0:
            q = _sigmoid(offset[d, 0])
            s1[d] += x[d] - q
            s2[d] += q * (1.0 - q)
        else:
            s1[d] += x[d]
            s2[d] += x[d] * x[d]
    return n + 1


@njit_exact
def _option_logliks(code, x, T, E_k, E_new, count, background, out):
    """One member's log densities in ``k`` only (natural sums ``T``, ``count``
    clusters), in the new cluster only (``T - E_k + E_new``) and in both (``T + E_new``)."""
    D = x.shape[0]
    for o in range(3):
        out[o] = 0.0
    for d in range(D):
        t1 = T[d, 1] if code == 1 else 0.0
        k1 = E_k[d, 1] if code == 1 else 0.0
        n1 = E_new[d, 1] if code == 1 else 0.0
        bg0, bg1 = background[d, 0], background[d, 1]
        out[0] += dim_loglik(code, x[d], T[d, 0], t1, count == 0, bg0, bg1)
        out[1] += dim_loglik(
            code, x[d], T[d, 0] - E_k[d, 0] + E_new[d, 0], t1 - k1 + n1, count == 0, bg0, bg1
        )
        out[2] += dim_loglik(code, x[d], T[d, 0] + E_new[d, 0], t1 + n1, False, bg0, bg1)


@njit_exact
def _allocation_weights(ll3, beta, m_a, m_b, t_seen, out):
    """Log weights of a member's three options: its log densities to the power ``beta``
    plus the log predictive probability of the two columns' entries given the ``t_seen``
    entries allocated before it (``m_a`` ones in ``k``'s column, ``m_b`` in the new
    one): ``P(1) = m / (t + 1)``, ``P(0) = (t + 1 - m) / (t + 1)``, the IBP column's
    urn (the Beta(alpha / K, 1) predictive as K grows), so that a proposal's prior
    probability is close to the IBP's and the allocations do not make columns the prior
    rules out."""
    t1 = t_seen + 1.0
    out[0] = beta * ll3[0] + math.log(m_a) + math.log(t1 - m_b)
    out[1] = beta * ll3[1] + math.log(t1 - m_a) + math.log(m_b)
    out[2] = beta * ll3[2] + math.log(m_a) + math.log(m_b)


@njit_exact
def _log_choice(logw, chosen, n):
    """``log(w[chosen] / sum(w[:n]))`` for log weights ``logw``."""
    top = -np.inf
    for s in range(n):
        if logw[s] > top:
            top = logw[s]
    total = 0.0
    for s in range(n):
        total += math.exp(logw[s] - top)
    return logw[chosen] - top - math.log(total)


@njit_exact
def _draw(rng, logw, n):
    top = -np.inf
    for s in range(n):
        if logw[s] > top:
            top = logw[s]
    total = 0.0
    for s in range(n):
        total += math.exp(logw[s] - top)
    u = rng.random() * total
    acc = 0.0
    for s in range(n):
        acc += math.exp(logw[s] - top)
        if u < acc:
            return s
    return n - 1


@njit_exact
def _pick(rng, n):
    """A uniform integer in ``0..n-1``."""
    r = int(rng.random() * n)
    return n - 1 if r >= n else r


@njit_exact
def _shuffle(rng, a, n):
    """Fisher-Yates on ``a[:n]``."""
    for t in range(n - 1, 0, -1):
        r = _pick(rng, t + 1)
        a[t], a[r] = a[r], a[t]


@njit_exact
def split_merge_move(rng, experts, Z, alpha, beta, counts):
    """One split-merge proposal on ``Z`` (N, C) int8 and the experts, updated in place
    when accepted.

    Parameters
    ----------
    rng : numpy.random.Generator
    experts : Experts
        ``E`` and ``params`` are updated in place (the slot a split fills, the slot a
        merge frees).
    Z : (N, C) int8
    alpha : float
        IBP concentration.
    beta : float
        Power of the likelihood (1: the posterior).
    counts : (5,) int64
        Added to: :data:`SPLIT_MERGE_STATS` (a split with no unused slot is rejected and
        counted in the last entry).

    Returns
    -------
    bool
        Whether the state changed.
    """
    code, X, E, params, prior = (experts.code, experts.X, experts.E, experts.params, experts.prior)
    background = experts.background
    N, C = Z.shape
    D, S = E.shape[1], E.shape[2]
    i = _pick(rng, N)
    j = _pick(rng, N - 1)
    if j >= i:
        j += 1
    n_i = 0
    for c in range(C):
        if Z[i, c] != 0:
            n_i += 1
    if n_i == 0:
        return False
    r = _pick(rng, n_i)
    k = -1
    for c in range(C):
        if Z[i, c] != 0:
            if r == 0:
                k = c
                break
            r -= 1
    m = np.zeros(C, dtype=np.int64)
    for p in range(N):
        for c in range(C):
            if Z[p, c] != 0:
                m[c] += 1
    n_a = 0  # |S_j \ S_i|: clusters of j that i is not in
    for c in range(C):
        if Z[j, c] != 0 and Z[i, c] == 0:
            n_a += 1
    split = Z[j, k] != 0
    if not split and n_a == 0:
        return False
    T = np.empty((D, S))
    E_hat = np.empty((D, S))
    ll3 = np.empty(3)
    w3 = np.empty(3)
    sums = np.zeros((2, D))
    s1, s2 = sums[0], sums[1]
    rest = np.empty(N, dtype=np.int64)
    option = np.full(N, -1, dtype=np.int64)
    members = np.empty(N, dtype=np.int64)
    offsets = np.empty((N, D, S))
    fit = np.empty((D, 4))
    log_alpha = math.log(alpha)
    if split:
        counts[0] += 1
        L = 0
        for c in range(C):
            if m[c] == 0:
                L += 1
        if L == 0:
            counts[4] += 1
            return False
        r = _pick(rng, L)
        k2 = -1
        for c in range(C):
            if m[c] == 0:
                if r == 0:
                    k2 = c
                    break
                r -= 1
        n_rest = 0
        for p in range(N):
            if Z[p, k] != 0 and p != i and p != j:
                rest[n_rest] = p
                n_rest += 1
        _shuffle(rng, rest, n_rest)
        cj = row_sums(Z[j], E, T)
        _record_member(j, T, E[k], 1, members, 0, offsets)
        n_new = _add_stats(code, X[j], offsets[j], 0, s1, s2)
        log_q = 0.0
        m_a = 1
        m_b = 1
        t_seen = N - n_rest  # the union's non-members, i and j
        for t in range(n_rest):
            p = rest[t]
            expert_estimate(code, prior, beta, n_new, s1, s2, E_hat)
            cp = row_sums(Z[p], E, T)
            _option_logliks(code, X[p], T, E[k], E_hat, cp, background, ll3)
            _allocation_weights(ll3, beta, m_a, m_b, t_seen, w3)
            t_seen += 1
            o = _draw(rng, w3, 3)
            log_q += _log_choice(w3, o, 3)
            option[p] = o
            if o != 0:
                _record_member(p, T, E[k], o, members, n_new, offsets)
                n_new = _add_stats(code, X[p], offsets[p], n_new, s1, s2)
                m_b += 1
            if o != 1:
                m_a += 1
        expert_fit(code, prior, beta, X, members[:n_new], offsets, sums, fit)
        new_params = np.empty((D, S))
        if not expert_draw(rng, code, prior, fit, new_params):
            return False
        log_q += expert_log_density(code, prior, fit, new_params)
        E_new = np.empty((D, S))
        _natural(code, new_params, E_new)
        # the likelihood change with the expert drawn: j moves, the others as allocated
        cj = row_sums(Z[j], E, T)
        _option_logliks(code, X[j], T, E[k], E_new, cj, background, ll3)
        d_ll = ll3[1] - ll3[0]
        for t in range(n_rest):
            p = rest[t]
            if option[p] == 0:
                continue
            cp = row_sums(Z[p], E, T)
            _option_logliks(code, X[p], T, E[k], E_new, cp, background, ll3)
            d_ll += ll3[option[p]] - ll3[0]
        log_prior = (
            log_alpha
            + _log_f(N, m_a)
            + _log_f(N, m_b)
            - _log_f(N, m[k])
            + expert_log_prior(code, prior, new_params)
        )
        log_ratio = split_merge_log_ratio(log_prior, d_ll, beta, -math.log(n_a + 1.0), log_q)
        if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
            counts[1] += 1
            Z[j, k] = 0
            Z[j, k2] = 1
            for t in range(n_rest):
                p = rest[t]
                if option[p] == 1:
                    Z[p, k] = 0
                if option[p] >= 1:
                    Z[p, k2] = 1
            for d in range(D):
                for s in range(S):
                    params[k2, d, s] = new_params[d, s]
                    E[k2, d, s] = E_new[d, s]
            return True
        return False
    # merge a cluster k2 of j's that i is not in into k
    counts[2] += 1
    r = _pick(rng, n_a)
    k2 = -1
    for c in range(C):
        if Z[j, c] != 0 and Z[i, c] == 0:
            if r == 0:
                k2 = c
                break
            r -= 1
    n_rest = 0
    for p in range(N):
        if (Z[p, k] != 0 or Z[p, k2] != 0) and p != i and p != j:
            rest[n_rest] = p
            n_rest += 1
    _shuffle(rng, rest, n_rest)
    # the split that would undo the merge, replayed from the merged state: each member's
    # merged sums (k in, k2 out) and its option there
    z_row = np.empty(C, dtype=np.int8)
    log_q = 0.0
    m_a = 1
    m_b = 1
    t_seen = N - n_rest
    for c in range(C):
        z_row[c] = Z[j, c]
    z_row[k] = 1
    z_row[k2] = 0
    cj = row_sums(z_row, E, T)
    _record_member(j, T, E[k], 1, members, 0, offsets)
    n_new = _add_stats(code, X[j], offsets[j], 0, s1, s2)
    d_ll = row_loglik(code, X[j], T, cj, background)
    cj = row_sums(Z[j], E, T)
    d_ll -= row_loglik(code, X[j], T, cj, background)
    for t in range(n_rest):
        p = rest[t]
        in_k = Z[p, k] != 0
        in_k2 = Z[p, k2] != 0
        o = 2 if (in_k and in_k2) else (1 if in_k2 else 0)
        for c in range(C):
            z_row[c] = Z[p, c]
        z_row[k] = 1
        z_row[k2] = 0
        cp = row_sums(z_row, E, T)
        expert_estimate(code, prior, beta, n_new, s1, s2, E_hat)
        _option_logliks(code, X[p], T, E[k], E_hat, cp, background, ll3)
        _allocation_weights(ll3, beta, m_a, m_b, t_seen, w3)
        t_seen += 1
        log_q += _log_choice(w3, o, 3)
        if o != 1:
            m_a += 1
        if o != 0:
            m_b += 1
            _record_member(p, T, E[k], o, members, n_new, offsets)
            n_new = _add_stats(code, X[p], offsets[p], n_new, s1, s2)
            # the merged state's density (ll3[0]) against the present one
            d_ll += ll3[0]
            cp = row_sums(Z[p], E, T)
            d_ll -= row_loglik(code, X[p], T, cp, background)
    expert_fit(code, prior, beta, X, members[:n_new], offsets, sums, fit)
    log_q += expert_log_density(code, prior, fit, params[k2])
    n_union = n_rest + 2
    log_prior = -(
        log_alpha
        + _log_f(N, m[k])
        + _log_f(N, m[k2])
        - _log_f(N, n_union)
        + expert_log_prior(code, prior, params[k2])
    )
    log_ratio = split_merge_log_ratio(log_prior, d_ll, beta, log_q, -math.log(n_a))
    if log_ratio >= 0.0 or rng.random() < math.exp(log_ratio):
        counts[3] += 1
        for p in range(N):
            if Z[p, k2] != 0:
                Z[p, k2] = 0
                Z[p, k] = 1
        expert_prior_draw(rng, code, prior, params[k2])
        _natural(code, params[k2], E[k2])
        return True
    return False


@njit_exact
def split_merge_moves(rng, experts, Z, alpha, beta, n_moves, counts):
    """``n_moves`` proposals of :func:`split_merge_move` in turn; returns ``counts``."""
    for _ in range(n_moves):
        split_merge_move(rng, experts, Z, alpha, beta, counts)
    return counts
