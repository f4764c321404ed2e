"""Numba hot loops of the Chinese-restaurant-process Gibbs samplers.

- :func:`collapsed_sweeps`: Neal (2000) Algorithm 3, collapsed Gibbs sweeps over the items
  in random order (Murphy 2012 Algorithm 25.1 **with** the predictive-likelihood factor
  the printed algorithm drops, Eq. 25.33).
- :func:`split_merge_proposal`: one Jain & Neal (2004) split-merge proposal with a
  restricted-Gibbs launch state; returns the proposed partition and the terms of its
  Metropolis-Hastings ratio (the caller accepts or rejects).
- :func:`auxiliary_sweeps`: Neal (2000) Algorithm 8 (``m`` auxiliary components) for a
  non-conjugate mixture with explicit component parameters.
- :func:`sequential_map_partition`: a deterministic one-pass starting partition.
- :func:`kmeans_partition`: k-means++ seeding and Lloyd iterations on standardised
  columns, another starting partition.

All work for the two-parameter (Pitman-Yor) restaurant: an item joins an existing block
``k`` with weight ``n_{k,-i} - d`` and a new block with weight ``alpha + K_{-i} d``.

The MCMC kernels take an inverse temperature ``beta`` in [0, 1] and sample the power
posterior ``p(z) p(X | z)^beta`` (``beta = 1``: the posterior): every likelihood factor
(a predictive, a component density, a marginal ratio) enters raised to ``beta``, so the
conditional of one item uses the predictive ratio to the power beta. ``beta = 0`` gives
the prior (a likelihood factor is then 1 even where it is 0).

Families are selected by the integer code of :mod:`custom_ops.conjugate` (``FAMILY_CODES``)
with the hyperparameters packed in one float64 vector (``pack_hyper``); every kernel is
compiled once and cached on disk (Numba cannot cache kernels that take jitted functions
as arguments); the kernels take the rows with their likelihood as one named tuple
(:class:`ConjugateData`, :class:`ComponentData`) and the restaurant's parameters as
another (:class:`CRPPrior`). Each block keeps a *state* of ``custom_ops.conjugate``
(``state_init``, ``state_add``, ``state_log_predictive``, ...): the sufficient statistics
or, for the Normal-Inverse-Wishart family, its Cholesky-factored posterior plus three
cached constants of the Student-t predictive, so an update and a predictive are both
O(d^2).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.dpm.crp import canonicalize
from custom_ops.jit import njit_exact
from custom_ops.log_weights import sample_log_weights

__all__ = [
    "COMPONENT_CODES",
    "AuxiliaryComponents",
    "CRPPrior",
    "ComponentData",
    "ConjugateData",
    "auxiliary_sweeps",
    "collapsed_sweeps",
    "kmeans_partition",
    "sequential_map_partition",
    "split_merge_proposal",
]


class CRPPrior(NamedTuple):
    """The two-parameter restaurant: concentration ``alpha`` and discount ``discount``
    (floats; ``discount = 0`` is the Dirichlet process)."""

    alpha: float
    discount: float


class ConjugateData(NamedTuple):
    """The rows ``X`` ((n, d) float64) and their conjugate likelihood: the family ``fam``
    (an int, a :data:`custom_ops.conjugate.FAMILY_CODES` value) and its hyperparameters
    ``hp`` (float64 vector, :func:`custom_ops.conjugate.pack_hyper`)."""

    X: np.ndarray
    fam: int
    hp: np.ndarray


class ComponentData(NamedTuple):
    """The rows ``X`` ((n, d) float64) and the component density of Algorithm 8,
    ``code`` (an int, a :data:`COMPONENT_CODES` code)."""

    X: np.ndarray
    code: int


class AuxiliaryComponents(NamedTuple):
    """Algorithm 8's ``m`` auxiliary components (an int >= 1) per item, taken in order
    from ``pool`` ((B, P) float64, independent draws from the base measure H; ``B >=
    n_sweeps * n * m`` suffices)."""

    m: int
    pool: np.ndarray


class _RestrictedScan(NamedTuple):
    """A restricted scan's items and blocks: the items ``members[:n_s]`` (int64) with
    their current sides ``side`` (0: block A, 1: block B; written by the scan) and the
    sides ``target`` a forced scan moves them to; the two blocks' conjugate states ``A``
    and ``B`` (float64, updated in place) and the family's table ``tab``
    (:func:`custom_ops.conjugate.state_table`)."""

    members: np.ndarray
    side: np.ndarray
    target: np.ndarray
    n_s: int
    A: np.ndarray
    B: np.ndarray
    tab: np.ndarray


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
@njit_exact
def _shuffle(order, rng):
    for i in range(order.shape[0] - 1, 0, -1):
        j = rng.integers(0, i + 1)
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp


@njit_exact
def _tempered(beta, log_factor):
    """``beta * log_factor``, 0 at ``beta = 0`` even for a zero factor (log -inf)."""
    if beta == 0.0:
        return 0.0
    return beta * log_factor


@njit_exact
def log_split_prior_ratio(n_a, n_b, K, alpha, discount):
    """log EPPF(split) - log EPPF(merged) when a block of n_a + n_b items splits into two
    (K = number of blocks before the split; Pitman 2006 Eq. 3.6)."""
    return (
        math.log(alpha + K * discount)
        + math.lgamma(n_a - discount)
        + math.lgamma(n_b - discount)
        - math.lgamma(1.0 - discount)
        - math.lgamma(n_a + n_b - discount)
    )


@njit_exact
def _grow(states, counts, pos, active, free, K):
    """Double the slot capacity (all slots in use); return the arrays and n_free."""
    cap = states.shape[0]
    new_cap = 2 * cap
    s2 = np.empty((new_cap, states.shape[1]))
    s2[:cap] = states
    c2 = np.zeros(new_cap, dtype=np.int64)
    c2[:cap] = counts
    p2 = np.full(new_cap, -1, dtype=np.int64)
    p2[:cap] = pos
    a2 = np.empty(new_cap, dtype=np.int64)
    a2[:K] = active[:K]
    f2 = np.empty(new_cap, dtype=np.int64)
    n_free = 0
    for s in range(new_cap - 1, cap - 1, -1):
        f2[n_free] = s
        n_free += 1
    return s2, c2, p2, a2, f2, n_free


# --------------------------------------------------------------------------------------
# Algorithm 3
# --------------------------------------------------------------------------------------
@njit_exact
def collapsed_sweeps(data, z, prior, beta, rng, n_sweeps):
    """Collapsed Gibbs sweeps (Neal 2000 Algorithm 3) over the labels ``z`` of the rows.

    Parameters
    ----------
    data : ConjugateData
        The rows ``X`` (n, d), their conjugate family and its hyperparameters.
    z : (n,) int64, any non-negative labels (the block states are rebuilt from them)
    prior : CRPPrior
    beta : float in [0, 1], inverse temperature of the likelihood (module docstring)
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    (n,) int64 canonical labels
    """
    X, fam, hp = data
    alpha, discount = prior
    n, d = X.shape
    S = cj.state_size(fam, d)
    tab = cj.state_table(fam, hp, d, n)
    work = np.empty(d)
    # log(n_k - discount) for every block size
    log_size = np.empty(n + 1)
    log_size[0] = -np.inf
    for k in range(1, n + 1):
        log_size[k] = math.log(k - discount)
    labels, K = canonicalize(z)
    # Block slots: states/counts by slot, `active` lists the K occupied slots, `pos` is a
    # slot's index in `active`, `free` is a stack of unused slots; capacity doubles on
    # demand (a block state can be large: O(d^2) for the full-covariance Gaussian).
    cap = min(n + 1, 2 * K + 16)
    states = np.empty((cap, S))
    counts = np.zeros(cap, dtype=np.int64)
    pos = np.full(cap, -1, dtype=np.int64)
    active = np.empty(cap, dtype=np.int64)
    free = np.empty(cap, dtype=np.int64)
    n_free = 0
    for s in range(cap - 1, K - 1, -1):
        free[n_free] = s
        n_free += 1
    # the empty-block (prior) state, copied into every new block
    empty = np.empty(S)
    cj.state_init(fam, empty, hp, d, tab)
    for k in range(K):
        states[k] = empty
        active[k] = k
        pos[k] = k
    for i in range(n):
        cj.state_add(fam, states[labels[i]], X[i], tab)
        counts[labels[i]] += 1
    # The new-block term is the prior predictive, constant over the call.
    prior_pred = np.empty(n)
    for i in range(n):
        prior_pred[i] = cj.state_log_predictive(fam, X[i], empty, hp, work)

    lw = np.empty(n + 1)
    order = np.arange(n)
    for _sweep in range(n_sweeps):
        _shuffle(order, rng)
        for idx in range(n):
            i = order[idx]
            x = X[i]
            s_old = labels[i]
            if counts[s_old] == 1:
                # i was alone: its block disappears (no downdate needed)
                counts[s_old] = 0
                p = pos[s_old]
                last = active[K - 1]
                active[p] = last
                pos[last] = p
                pos[s_old] = -1
                K -= 1
                free[n_free] = s_old
                n_free += 1
            else:
                cj.state_remove(fam, states[s_old], x, tab)
                counts[s_old] -= 1
            # Eq. 25.33 (corrected): CRP prior weight x posterior predictive
            for a in range(K):
                s = active[a]
                lw[a] = log_size[counts[s]] + _tempered(
                    beta, cj.state_log_predictive(fam, x, states[s], hp, work))
            lw[K] = math.log(alpha + K * discount) + _tempered(beta, prior_pred[i])
            c = sample_log_weights(lw, K + 1, rng)
            if c == K:
                if n_free == 0:
                    states, counts, pos, active, free, n_free = _grow(
                        states, counts, pos, active, free, K
                    )
                n_free -= 1
                s = free[n_free]
                states[s] = empty
                active[K] = s
                pos[s] = K
                K += 1
            else:
                s = active[c]
            cj.state_add(fam, states[s], x, tab)
            counts[s] += 1
            labels[i] = s
    out, _K = canonicalize(labels)
    return out


# --------------------------------------------------------------------------------------
# split-merge (Jain & Neal 2004)
# --------------------------------------------------------------------------------------
@njit_exact
def _restricted_scan(data, scan, n_a, n_b, discount, beta, rng, forced):
    """One restricted Gibbs scan (:class:`_RestrictedScan`) of the items ``members[:n_s]``
    between blocks A (holding i, ``n_a`` items) and B (holding j, ``n_b`` items), at
    inverse temperature ``beta``. With ``forced``, each item is moved to ``target[r]``
    instead of sampled. Returns (n_a, n_b, log probability of the moves made)."""
    X, fam, hp = data
    members, side, target, n_s, A, B, tab = scan
    work = np.empty(X.shape[1])
    log_q = 0.0
    for r in range(n_s):
        x = X[members[r]]
        if side[r] == 0:
            cj.state_remove(fam, A, x, tab)
            n_a -= 1
        else:
            cj.state_remove(fam, B, x, tab)
            n_b -= 1
        la = math.log(n_a - discount) + _tempered(
            beta, cj.state_log_predictive(fam, x, A, hp, work))
        lb = math.log(n_b - discount) + _tempered(
            beta, cj.state_log_predictive(fam, x, B, hp, work))
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if forced:
            choice = target[r]
        else:
            choice = 0 if rng.random() < math.exp(la - log_norm) else 1
        if choice == 0:
            log_q += la - log_norm
            cj.state_add(fam, A, x, tab)
            n_a += 1
        else:
            log_q += lb - log_norm
            cj.state_add(fam, B, x, tab)
            n_b += 1
        side[r] = choice
    return n_a, n_b, log_q


@njit_exact
def split_merge_proposal(data, z, prior, beta, rng, n_launch):
    """One split-merge proposal for canonical labels ``z`` of the rows of ``data``
    (:class:`ConjugateData`) under the restaurant ``prior`` (:class:`CRPPrior`) (Jain &
    Neal 2004, §3-4).

    Two distinct items i, j are drawn uniformly. S holds the other items of their blocks.
    The launch state splits S uniformly at random between i's and j's sides and applies
    ``n_launch`` restricted Gibbs scans. If i and j share a block, one more restricted
    scan from the launch state proposes a split (forward probability ``q``); otherwise the
    proposal merges the two blocks, and ``q`` of the reverse move is the probability that
    a restricted scan from the launch state recreates the current split. The restricted
    scans target the power posterior at ``beta`` (their predictives to the power beta),
    and ``q`` is the probability of the scan actually made, so the caller's acceptance
    ``prior ratio + beta * likelihood ratio + log q_reverse - log q_forward`` is exact
    for that target.

    Returns
    -------
    z_proposed : (n,) int64 (not canonical)
    log_prior_ratio, log_lik_ratio : float
        log p(z') - log p(z) under the EPPF, and the collapsed likelihood ratio (not
        multiplied by ``beta``).
    log_q_forward, log_q_reverse : float
        Proposal log probabilities (the deterministic direction is 0).
    is_split : bool
    """
    X, fam, hp = data
    alpha, discount = prior
    n, d = X.shape
    S = cj.state_size(fam, d)
    i = rng.integers(0, n)
    j = rng.integers(0, n - 1)
    if j >= i:
        j += 1
    ci = z[i]
    cj_ = z[j]
    K = 0
    for r in range(n):
        if z[r] + 1 > K:
            K = z[r] + 1
    members = np.empty(n, dtype=np.int64)
    side = np.empty(n, dtype=np.int64)
    target = np.empty(n, dtype=np.int64)
    n_s = 0
    for r in range(n):
        if r != i and r != j and (z[r] == ci or z[r] == cj_):
            members[n_s] = r
            target[n_s] = 0 if z[r] == ci else 1
            n_s += 1
    tab = cj.state_table(fam, hp, d, n_s + 2)
    A = np.empty(S)
    cj.state_init(fam, A, hp, d, tab)
    B = A.copy()
    cj.state_add(fam, A, X[i], tab)
    cj.state_add(fam, B, X[j], tab)
    n_a = 1
    n_b = 1
    for r in range(n_s):
        x = X[members[r]]
        if rng.random() < 0.5:
            side[r] = 0
            cj.state_add(fam, A, x, tab)
            n_a += 1
        else:
            side[r] = 1
            cj.state_add(fam, B, x, tab)
            n_b += 1
    scan = _RestrictedScan(members, side, target, n_s, A, B, tab)
    for _t in range(n_launch):
        n_a, n_b, _lq = _restricted_scan(data, scan, n_a, n_b, discount, beta, rng, False)
    # the union of the two blocks, in the merged partition or as the block being split
    M = np.empty(S)
    cj.state_init(fam, M, hp, d, tab)
    cj.state_add(fam, M, X[i], tab)
    cj.state_add(fam, M, X[j], tab)
    for r in range(n_s):
        cj.state_add(fam, M, X[members[r]], tab)
    proposed = z.copy()
    if ci == cj_:
        n_a, n_b, log_q = _restricted_scan(data, scan, n_a, n_b, discount, beta, rng, False)
        log_prior = log_split_prior_ratio(n_a, n_b, K, alpha, discount)
        log_lik = (cj.state_log_marginal(fam, A, hp, d) + cj.state_log_marginal(fam, B, hp, d)
                   - cj.state_log_marginal(fam, M, hp, d))
        proposed[j] = K
        for r in range(n_s):
            if side[r] == 1:
                proposed[members[r]] = K
        return proposed, log_prior, log_lik, log_q, 0.0, True
    # merge: A and B after the forced scan hold exactly the current blocks of i and j
    n_a, n_b, log_q_rev = _restricted_scan(data, scan, n_a, n_b, discount, beta, rng, True)
    log_prior = -log_split_prior_ratio(n_a, n_b, K - 1, alpha, discount)
    log_lik = (cj.state_log_marginal(fam, M, hp, d) - cj.state_log_marginal(fam, A, hp, d)
               - cj.state_log_marginal(fam, B, hp, d))
    for r in range(n):
        if proposed[r] == cj_:
            proposed[r] = ci
    return proposed, log_prior, log_lik, 0.0, log_q_rev, False


# --------------------------------------------------------------------------------------
# Algorithm 8 (non-conjugate, auxiliary components)
# --------------------------------------------------------------------------------------
NORMAL, POISSON, BERNOULLI_COMPONENT = 0, 1, 2
#: Component densities of Algorithm 8: code and the names of the parameters (each (d,)
#: per block, concatenated in this order).
COMPONENT_CODES = {
    "normal": (NORMAL, ("mu", "sigma")),
    "poisson": (POISSON, ("rate",)),
    "bernoulli": (BERNOULLI_COMPONENT, ("p",)),
}


@njit_exact
def _component_loglik(code, x, theta):
    d = x.shape[0]
    out = 0.0
    if code == NORMAL:
        for j in range(d):
            s = theta[d + j]
            r = (x[j] - theta[j]) / s
            out += -0.5 * r * r - math.log(s) - 0.9189385332046727
    elif code == POISSON:
        for j in range(d):
            out += x[j] * math.log(theta[j]) - theta[j] - math.lgamma(x[j] + 1.0)
    else:
        for j in range(d):
            out += math.log(theta[j]) if x[j] > 0.5 else math.log1p(-theta[j])
    return out


@njit_exact
def auxiliary_sweeps(data, z, theta, prior, auxiliary, beta, rng, n_sweeps):
    """Neal (2000) Algorithm 8 sweeps over the canonical labels ``z``.

    Parameters
    ----------
    data : ComponentData
        The rows ``X`` (n, d) and the component density's code.
    z : (n,) int64 canonical labels with K blocks
    theta : (>= K, P) float64; row k holds block k's parameters
    prior : CRPPrior
    auxiliary : AuxiliaryComponents
        The number ``m`` of auxiliary components and the base measure's draws.
    beta : float in [0, 1], inverse temperature: each component density enters to the
        power beta (module docstring)
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    z_new : (n,) canonical labels; theta_new : (K_new, P) their parameters
    """
    X, code = data
    alpha, discount = prior
    m, pool = auxiliary
    n = X.shape[0]
    P = theta.shape[1]
    labels = z.copy()
    K = 0
    for i in range(n):
        if labels[i] + 1 > K:
            K = labels[i] + 1
    cap = n + m + 1
    th = np.empty((cap, P))
    counts = np.zeros(cap, dtype=np.int64)
    pos = np.full(cap, -1, dtype=np.int64)
    active = np.empty(cap, dtype=np.int64)
    free = np.empty(cap, dtype=np.int64)
    n_free = 0
    for s in range(cap - 1, K - 1, -1):
        free[n_free] = s
        n_free += 1
    for k in range(K):
        th[k] = theta[k]
        active[k] = k
        pos[k] = k
    for i in range(n):
        counts[labels[i]] += 1
    aux = np.empty((m, P))
    lw = np.empty(n + m)
    order = np.arange(n)
    used = 0
    for _sweep in range(n_sweeps):
        _shuffle(order, rng)
        for idx in range(n):
            i = order[idx]
            s_old = labels[i]
            x = X[i]
            first_fresh = 0
            if counts[s_old] == 1:
                # a singleton's parameter becomes the first auxiliary component
                aux[0] = th[s_old]
                first_fresh = 1
                counts[s_old] = 0
                p = pos[s_old]
                last = active[K - 1]
                active[p] = last
                pos[last] = p
                pos[s_old] = -1
                K -= 1
                free[n_free] = s_old
                n_free += 1
            else:
                counts[s_old] -= 1
            for a in range(first_fresh, m):
                aux[a] = pool[used]
                used += 1
            for a in range(K):
                s = active[a]
                lw[a] = math.log(counts[s] - discount) + _tempered(
                    beta, _component_loglik(code, x, th[s]))
            log_new = math.log((alpha + K * discount) / m)
            for a in range(m):
                lw[K + a] = log_new + _tempered(beta, _component_loglik(code, x, aux[a]))
            c = sample_log_weights(lw, K + m, rng)
            if c >= K:
                n_free -= 1
                s = free[n_free]
                th[s] = aux[c - K]
                active[K] = s
                pos[s] = K
                K += 1
            else:
                s = active[c]
            counts[s] += 1
            labels[i] = s
    z_new, K_new = canonicalize(labels)
    theta_new = np.empty((K_new, P))
    done = np.zeros(K_new, dtype=np.bool_)
    for i in range(n):
        k = z_new[i]
        if not done[k]:
            theta_new[k] = th[labels[i]]
            done[k] = True
    return z_new, theta_new


@njit_exact
def sequential_map_partition(X, alpha, discount, fam, hp):
    """A deterministic starting partition: seat the items in order, each at the table
    that maximises Eq. 25.33's weight given the items seated so far (a one-pass greedy
    version of the sequential posterior seating). O(n K) predictive evaluations."""
    n, d = X.shape
    S = cj.state_size(fam, d)
    tab = cj.state_table(fam, hp, d, n)
    work = np.empty(d)
    cap = 16
    states = np.empty((cap, S))
    counts = np.zeros(cap, dtype=np.int64)
    empty = np.empty(S)
    cj.state_init(fam, empty, hp, d, tab)
    labels = np.empty(n, dtype=np.int64)
    K = 0
    for i in range(n):
        x = X[i]
        best = K
        best_val = math.log(alpha + K * discount) + cj.state_log_predictive(fam, x, empty, hp, work)
        for k in range(K):
            v = math.log(counts[k] - discount) + cj.state_log_predictive(
                fam, x, states[k], hp, work
            )
            if v > best_val:
                best_val = v
                best = k
        if best == K:
            if K == cap:
                s2 = np.empty((2 * cap, S))
                s2[:cap] = states
                c2 = np.zeros(2 * cap, dtype=np.int64)
                c2[:cap] = counts
                states, counts, cap = s2, c2, 2 * cap
            states[K] = empty
            K += 1
        cj.state_add(fam, states[best], x, tab)
        counts[best] += 1
        labels[i] = best
    return labels


def kmeans_partition(X, k, rng, max_iter=50):
    """Labels of a k-means clustering of the rows of ``X`` (columns standardised so no
    unit dominates): k-means++ seeding (Arthur & Vassilvitskii 2007) from ``rng``, then
    Lloyd iterations until the labels stop changing or ``max_iter``. Only a starting
    partition for the samplers, so no restarts: the caller scores candidates itself.
    Returns ``min(k, distinct rows)`` or fewer non-empty blocks, canonical labels."""
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[0]
    sd = X.std(axis=0)
    Y = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    centres = np.empty((k, Y.shape[1]))
    centres[0] = Y[rng.integers(n)]
    d2 = ((Y - centres[0]) ** 2).sum(axis=1)
    used = 1
    for j in range(1, k):
        total = d2.sum()
        if total <= 0.0:  # fewer distinct rows than k
            break
        centres[j] = Y[rng.choice(n, p=d2 / total)]
        d2 = np.minimum(d2, ((Y - centres[j]) ** 2).sum(axis=1))
        used += 1
    centres = centres[:used]
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        dist = (Y * Y).sum(1)[:, None] - 2.0 * Y @ centres.T + (centres * centres).sum(1)
        new = np.argmin(dist, axis=1).astype(np.int64)
        if np.array_equal(new, labels):
            break
        labels = new
        for j in range(used):
            members = labels == j
            if members.any():
                centres[j] = Y[members].mean(axis=0)
    z, _K = canonicalize(labels)
    return z
