"""Numba hot loops of the Chinese-restaurant-process Gibbs samplers.

- :func:`collapsed_update`: Neal (2000) Algorithm 3 (collapsed Gibbs, one sweep over the
  items in random order; Murphy 2012 Algorithm 25.1 **with** the predictive-likelihood
  factor the printed algorithm drops, Eq. 25.33) and Jain & Neal (2004) split-merge
  proposals with a restricted-Gibbs launch state.
- :func:`auxiliary_update`: Neal (2000) Algorithm 8 (``m`` auxiliary components) for a
  non-conjugate mixture with explicit component parameters.

Both work for the two-parameter (Pitman-Yor) restaurant: an item joins an existing block
``k`` with weight ``n_{k,-i} - d`` and a new block with weight ``alpha + K_{-i} d``.

The component family enters through jitted functions passed as arguments (Numba
specialises the loop for each, and caches the result):

``init(state, hyper)``      write the empty-block (prior) state into the row ``state``
``add(state, x)``           add one item (in place)
``remove(state, x)``        remove one item (in place)
``log_pred(x, state, hyper)``  log p(x | items in the block), the posterior predictive
``log_marg(state, hyper)``  log p(items in the block), the marginal likelihood

:data:`STATE_KERNELS` holds them for the families of ``custom_ops.conjugate`` (for the
Normal-Inverse-Wishart family the state is the Cholesky-factored posterior plus cached
predictive constants, so every update and predictive is O(d^2)).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from custom_ops import conjugate as cj
from custom_ops.crp import canonicalize

__all__ = [
    "COMPONENT_LOGLIKS",
    "STATE_KERNELS",
    "StateKernels",
    "auxiliary_update",
    "collapsed_update",
    "sm_acceptance",
]

_jit = numba.njit(cache=True)


# --------------------------------------------------------------------------------------
# per-family state kernels with one signature
# --------------------------------------------------------------------------------------
@_jit
def _zeros_init(state, hyper):
    state[:] = 0.0


# Normal-Inverse-Wishart: the Cholesky-factored posterior of custom_ops.conjugate
# (``gaussian_state``) followed by three cached constants of its Student-t predictive,
# refreshed after every add/remove, so that each of the K predictive evaluations per item
# costs one O(d^2) triangular solve and no special functions:
#     log t(x) = c - e * log1p(w * |L^{-1}(x - m_n)|^2),
#     c = lgamma((dof + d)/2) - lgamma(dof/2) - d/2 log(dof pi) - 1/2 log|s L Lᵀ|,
#     w = 1 / (s dof), e = (dof + d)/2, dof = nu_n - d + 1, s = (kappa_n + 1)/(kappa_n dof).
def _niw_state_size(d):
    return cj.gaussian_state_size(d) + 3


@_jit
def _niw_refresh(state, d):
    base = 3 + d + d * d
    kn = state[1]
    dof = state[2] - d + 1.0
    sf = (kn + 1.0) / (kn * dof)
    logdet = 0.0
    for j in range(d):
        logdet += math.log(state[3 + d + j * d + j])
    state[base] = (
        math.lgamma(0.5 * (dof + d))
        - math.lgamma(0.5 * dof)
        - 0.5 * d * math.log(dof * math.pi)
        - logdet
        - 0.5 * d * math.log(sf)
    )
    state[base + 1] = 1.0 / (sf * dof)
    state[base + 2] = 0.5 * (dof + d)


@_jit
def _niw_init(state, hyper):
    d = hyper[0].shape[0]
    base = 3 + d + d * d
    state[:base] = cj.gaussian_state(np.zeros(1 + d + d * d), hyper)
    _niw_refresh(state, d)


@_jit
def _niw_add(state, x):
    d = x.shape[0]
    cj.gaussian_state_add(state[: 3 + d + d * d], x)
    _niw_refresh(state, d)


@_jit
def _niw_remove(state, x):
    d = x.shape[0]
    cj.gaussian_state_remove(state[: 3 + d + d * d], x)
    _niw_refresh(state, d)


@_jit
def _niw_log_pred(x, state, hyper):
    d = x.shape[0]
    base = 3 + d + d * d
    # forward substitution L u = x - m_n, accumulating |u|^2; u kept in a small buffer
    u = np.empty(d)
    maha = 0.0
    for j in range(d):
        acc = x[j] - state[3 + j]
        row = 3 + d + j * d
        for k in range(j):
            acc -= state[row + k] * u[k]
        u[j] = acc / state[row + j]
        maha += u[j] * u[j]
    return state[base] - state[base + 2] * math.log1p(state[base + 1] * maha)


@_jit
def _niw_log_marg(state, hyper):
    d = hyper[0].shape[0]
    return cj.gaussian_state_log_marginal(state[: 3 + d + d * d], hyper)


class StateKernels(NamedTuple):
    """The jitted block-state functions of one conjugate family."""

    state_size: object
    init: object
    add: object
    remove: object
    log_pred: object
    log_marg: object


STATE_KERNELS: dict[str, StateKernels] = {
    "bernoulli": StateKernels(
        cj.bernoulli_stats_size, _zeros_init, cj.bernoulli_add, cj.bernoulli_remove,
        cj.bernoulli_log_predictive, cj.bernoulli_log_marginal,
    ),
    "multinomial": StateKernels(
        cj.multinomial_stats_size, _zeros_init, cj.multinomial_add, cj.multinomial_remove,
        cj.multinomial_log_predictive, cj.multinomial_log_marginal,
    ),
    "gaussian": StateKernels(
        _niw_state_size, _niw_init, _niw_add, _niw_remove, _niw_log_pred, _niw_log_marg,
    ),
    "diag_gaussian": StateKernels(
        cj.diag_gaussian_stats_size, _zeros_init, cj.diag_gaussian_add,
        cj.diag_gaussian_remove, cj.diag_gaussian_log_predictive,
        cj.diag_gaussian_log_marginal,
    ),
}


@_jit
def sm_acceptance(log_prior_ratio, log_lik_ratio, log_q_forward, log_q_reverse):
    """Metropolis-Hastings log acceptance ratio of a split-merge proposal
    (Jain & Neal 2004 Eqs. 3.5-3.7): prior ratio x likelihood ratio x q(reverse)/q(forward).
    """
    return log_prior_ratio + log_lik_ratio + log_q_reverse - log_q_forward


# --------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------
@_jit
def _sample_log_weights(lw, m, rng):
    """Index in [0, m) with probability proportional to exp(lw[:m])."""
    top = lw[0]
    for a in range(1, m):
        if lw[a] > top:
            top = lw[a]
    tot = 0.0
    for a in range(m):
        lw[a] = math.exp(lw[a] - top)
        tot += lw[a]
    u = rng.random() * tot
    acc = 0.0
    for a in range(m):
        acc += lw[a]
        if u < acc:
            return a
    return m - 1


@_jit
def _shuffle(order, rng):
    for i in range(order.shape[0] - 1, 0, -1):
        j = rng.integers(0, i + 1)
        tmp = order[i]
        order[i] = order[j]
        order[j] = tmp


@_jit
def _log_split_prior_ratio(n_a, n_b, K, alpha, discount):
    """log p(split) - log p(merged) under the EPPF, K = blocks before the split."""
    return (
        math.log(alpha + K * discount)
        + math.lgamma(n_a - discount)
        + math.lgamma(n_b - discount)
        - math.lgamma(1.0 - discount)
        - math.lgamma(n_a + n_b - discount)
    )


@_jit
def _grow(states, counts, pos, free, n_free, extra_rows):
    """Double the capacity; return the new arrays and the new n_free."""
    cap = states.shape[0]
    new_cap = max(2 * cap, cap + extra_rows)
    s2 = np.empty((new_cap, states.shape[1]))
    s2[:cap] = states
    c2 = np.zeros(new_cap, dtype=np.int64)
    c2[:cap] = counts
    p2 = np.full(new_cap, -1, dtype=np.int64)
    p2[:cap] = pos
    f2 = np.empty(new_cap, dtype=np.int64)
    f2[:n_free] = free[:n_free]
    for s in range(new_cap - 1, cap - 1, -1):
        f2[n_free] = s
        n_free += 1
    return s2, c2, p2, f2, n_free


# --------------------------------------------------------------------------------------
# Algorithm 3 + split-merge
# --------------------------------------------------------------------------------------
@_jit
def collapsed_update(
    X,
    z,
    alpha,
    discount,
    hyper,
    state_size,
    init,
    add,
    remove,
    log_pred,
    log_marg,
    accept,
    rng,
    n_sweeps,
    n_split_merge,
    n_launch,
):
    """Collapsed Gibbs sweeps (Neal 2000 Alg. 3) then split-merge proposals (Jain & Neal
    2004) for labels ``z`` of the rows of ``X``.

    Parameters
    ----------
    X : (n, d) float64
    z : (n,) int64, any non-negative labels (the state is rebuilt from them)
    alpha, discount : float
        Restaurant parameters (``discount = 0``: Dirichlet process).
    hyper : tuple
        The conjugate family's hyperparameters.
    state_size : int
        Length of one block state.
    init, add, remove, log_pred, log_marg : jitted functions
        The family's block-state kernels (module docstring).
    accept : jitted function
        ``accept(log_prior_ratio, log_lik_ratio, log_q_forward, log_q_reverse)``, the
        split-merge log acceptance ratio (:func:`sm_acceptance`).
    rng : numpy.random.Generator
    n_sweeps : int
        Full Gibbs sweeps (each item once, in a fresh random order).
    n_split_merge : int
        Split-merge proposals after the sweeps.
    n_launch : int
        Intermediate restricted Gibbs scans building the launch state (Jain & Neal's t).

    Returns
    -------
    z_new : (n,) int64, canonical labels
    n_split, n_merge, n_proposed_split, n_proposed_merge : int
    """
    n = X.shape[0]
    labels, K = canonicalize(z)
    cap = max(2 * K + 8, 16)
    states = np.empty((cap, state_size))
    counts = np.zeros(cap, dtype=np.int64)
    pos = np.full(cap, -1, dtype=np.int64)
    active = np.empty(cap, dtype=np.int64)
    free = np.empty(cap, dtype=np.int64)
    n_free = 0
    for s in range(cap - 1, K - 1, -1):
        free[n_free] = s
        n_free += 1
    for k in range(K):
        init(states[k], hyper)
        active[k] = k
        pos[k] = k
    for i in range(n):
        add(states[labels[i]], X[i])
        counts[labels[i]] += 1

    # Prior predictive of each item: the new-block term, constant over the call.
    empty = np.empty(state_size)
    init(empty, hyper)
    prior_pred = np.empty(n)
    for i in range(n):
        prior_pred[i] = log_pred(X[i], empty, hyper)

    lw = np.empty(n + 1)
    order = np.arange(n)
    for _sweep in range(n_sweeps):
        _shuffle(order, rng)
        for idx in range(n):
            i = order[idx]
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
                remove(states[s_old], X[i])
                counts[s_old] -= 1
            x = X[i]
            # Eq. 25.33 (corrected): prior weight x posterior predictive
            for a in range(K):
                s = active[a]
                lw[a] = math.log(counts[s] - discount) + log_pred(x, states[s], hyper)
            lw[K] = math.log(alpha + K * discount) + prior_pred[i]
            c = _sample_log_weights(lw, K + 1, rng)
            if c == K:
                if n_free == 0:
                    states, counts, pos, free, n_free = _grow(
                        states, counts, pos, free, n_free, 1
                    )
                    a2 = np.empty(states.shape[0], dtype=np.int64)
                    a2[:K] = active[:K]
                    active = a2
                n_free -= 1
                s = free[n_free]
                init(states[s], hyper)
                active[K] = s
                pos[s] = K
                K += 1
            else:
                s = active[c]
            add(states[s], x)
            counts[s] += 1
            labels[i] = s

    n_split = 0
    n_merge = 0
    n_prop_split = 0
    n_prop_merge = 0
    if n_split_merge > 0 and n >= 2:
        tmp = np.empty((3, state_size))
        members = np.empty(n, dtype=np.int64)
        side = np.empty(n, dtype=np.int64)
        for _prop in range(n_split_merge):
            i = rng.integers(0, n)
            j = rng.integers(0, n - 1)
            if j >= i:
                j += 1
            ci = labels[i]
            cj_ = labels[j]
            # S: the other items of the two blocks, in a fixed (index) order
            n_s = 0
            for l in range(n):
                if l != i and l != j and (labels[l] == ci or labels[l] == cj_):
                    members[n_s] = l
                    n_s += 1
            A = tmp[0]
            B = tmp[1]
            init(A, hyper)
            init(B, hyper)
            add(A, X[i])
            add(B, X[j])
            n_a = 1
            n_b = 1
            # launch state: uniform random split of S, then restricted Gibbs scans
            for r in range(n_s):
                l = members[r]
                if rng.random() < 0.5:
                    side[r] = 0
                    add(A, X[l])
                    n_a += 1
                else:
                    side[r] = 1
                    add(B, X[l])
                    n_b += 1
            for _t in range(n_launch):
                n_a, n_b, _lq = _restricted_scan(
                    X, members, side, n_s, A, B, n_a, n_b, discount, hyper, add, remove,
                    log_pred, rng, False, labels, ci,
                )
            if ci == cj_:
                n_prop_split += 1
                n_a, n_b, log_q = _restricted_scan(
                    X, members, side, n_s, A, B, n_a, n_b, discount, hyper, add, remove,
                    log_pred, rng, False, labels, ci,
                )
                log_prior = _log_split_prior_ratio(n_a, n_b, K, alpha, discount)
                log_lik = (
                    log_marg(A, hyper) + log_marg(B, hyper) - log_marg(states[ci], hyper)
                )
                log_acc = accept(log_prior, log_lik, log_q, 0.0)
                if math.log(rng.random()) < log_acc:
                    n_split += 1
                    if n_free == 0:
                        states, counts, pos, free, n_free = _grow(
                            states, counts, pos, free, n_free, 1
                        )
                        a2 = np.empty(states.shape[0], dtype=np.int64)
                        a2[:K] = active[:K]
                        active = a2
                    n_free -= 1
                    s_new = free[n_free]
                    states[ci] = A
                    states[s_new] = B
                    counts[ci] = n_a
                    counts[s_new] = n_b
                    active[K] = s_new
                    pos[s_new] = K
                    K += 1
                    labels[j] = s_new
                    for r in range(n_s):
                        if side[r] == 1:
                            labels[members[r]] = s_new
            else:
                n_prop_merge += 1
                # probability that a restricted scan from the launch state recreates the
                # current split (the reverse move of the merge)
                n_a, n_b, log_q_rev = _restricted_scan(
                    X, members, side, n_s, A, B, n_a, n_b, discount, hyper, add, remove,
                    log_pred, rng, True, labels, ci,
                )
                M = tmp[2]
                init(M, hyper)
                add(M, X[i])
                add(M, X[j])
                for r in range(n_s):
                    add(M, X[members[r]])
                n_ci = counts[ci]
                n_cj = counts[cj_]
                log_prior = -_log_split_prior_ratio(n_ci, n_cj, K - 1, alpha, discount)
                log_lik = (
                    log_marg(M, hyper) - log_marg(states[ci], hyper)
                    - log_marg(states[cj_], hyper)
                )
                log_acc = accept(log_prior, log_lik, 0.0, log_q_rev)
                if math.log(rng.random()) < log_acc:
                    n_merge += 1
                    states[ci] = M
                    counts[ci] = n_ci + n_cj
                    counts[cj_] = 0
                    p = pos[cj_]
                    last = active[K - 1]
                    active[p] = last
                    pos[last] = p
                    pos[cj_] = -1
                    K -= 1
                    free[n_free] = cj_
                    n_free += 1
                    labels[j] = ci
                    for r in range(n_s):
                        labels[members[r]] = ci

    z_new, _K = canonicalize(labels)
    return z_new, n_split, n_merge, n_prop_split, n_prop_merge


@_jit
def _restricted_scan(X, members, side, n_s, A, B, n_a, n_b, discount, hyper, add, remove,
                     log_pred, rng, forced, labels, ci):
    """One restricted Gibbs scan of S between blocks A (holding i) and B (holding j).

    ``forced``: instead of sampling, move each item to its current block (A if its label
    is ``ci``) and return the log probability of doing so. Returns (n_a, n_b, log q).
    """
    log_q = 0.0
    for r in range(n_s):
        l = members[r]
        x = X[l]
        if side[r] == 0:
            remove(A, x)
            n_a -= 1
        else:
            remove(B, x)
            n_b -= 1
        la = math.log(n_a - discount) + log_pred(x, A, hyper)
        lb = math.log(n_b - discount) + log_pred(x, B, hyper)
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if forced:
            choice = 0 if labels[l] == ci else 1
        else:
            choice = 0 if rng.random() < math.exp(la - log_norm) else 1
        if choice == 0:
            log_q += la - log_norm
            add(A, x)
            n_a += 1
        else:
            log_q += lb - log_norm
            add(B, x)
            n_b += 1
        side[r] = choice
    return n_a, n_b, log_q


# --------------------------------------------------------------------------------------
# Algorithm 8 (non-conjugate, auxiliary components)
# --------------------------------------------------------------------------------------
@_jit
def _loglik_normal(x, theta):
    """Independent normals: theta = [mu (d), sigma (d)]."""
    d = x.shape[0]
    out = 0.0
    for j in range(d):
        s = theta[d + j]
        r = (x[j] - theta[j]) / s
        out += -0.5 * r * r - math.log(s) - 0.9189385332046727
    return out


@_jit
def _loglik_poisson(x, theta):
    """Independent Poissons: theta = [rate (d)]."""
    out = 0.0
    for j in range(x.shape[0]):
        out += x[j] * math.log(theta[j]) - theta[j] - math.lgamma(x[j] + 1.0)
    return out


@_jit
def _loglik_bernoulli(x, theta):
    """Independent Bernoullis: theta = [p (d)]."""
    out = 0.0
    for j in range(x.shape[0]):
        out += math.log(theta[j]) if x[j] > 0.5 else math.log1p(-theta[j])
    return out


#: Component log-likelihoods for Algorithm 8, with the names of their parameters
#: (each of shape (d,) per component, concatenated in this order).
COMPONENT_LOGLIKS = {
    "normal": (_loglik_normal, ("mu", "sigma")),
    "poisson": (_loglik_poisson, ("rate",)),
    "bernoulli": (_loglik_bernoulli, ("p",)),
}


@_jit
def auxiliary_update(X, z, theta, alpha, discount, loglik, pool, m, rng, n_sweeps):
    """Neal (2000) Algorithm 8 sweeps over the labels ``z``.

    Parameters
    ----------
    X : (n, d) float64
    z : (n,) int64 canonical labels with K blocks
    theta : (>= K, P) float64; row k holds block k's parameters
    alpha, discount : float
    loglik : jitted ``loglik(x, theta_row) -> float``
    pool : (B, P) float64 independent draws from the base measure H, consumed in order
        (B >= n_sweeps * n * m suffices)
    m : int, number of auxiliary components (>= 1)
    rng : numpy.random.Generator
    n_sweeps : int

    Returns
    -------
    z_new : (n,) canonical labels, theta_new : (K_new, P) their parameters, used : int
    (pool rows consumed)
    """
    n = X.shape[0]
    P = theta.shape[1]
    labels = z.copy()
    K = 0
    for i in range(n):
        if labels[i] + 1 > K:
            K = labels[i] + 1
    cap = max(2 * K + m + 8, 16)
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
                # singleton: its parameter becomes the first auxiliary component
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
                lw[a] = math.log(counts[s] - discount) + loglik(x, th[s])
            log_new = math.log((alpha + K * discount) / m)
            for a in range(m):
                lw[K + a] = log_new + loglik(x, aux[a])
            c = _sample_log_weights(lw, K + m, rng)
            if c >= K:
                if n_free == 0:
                    cap2 = 2 * th.shape[0]
                    th2 = np.empty((cap2, P))
                    th2[: th.shape[0]] = th
                    c2 = np.zeros(cap2, dtype=np.int64)
                    c2[: th.shape[0]] = counts
                    p2 = np.full(cap2, -1, dtype=np.int64)
                    p2[: th.shape[0]] = pos
                    a2 = np.empty(cap2, dtype=np.int64)
                    a2[:K] = active[:K]
                    f2 = np.empty(cap2, dtype=np.int64)
                    for s in range(cap2 - 1, th.shape[0] - 1, -1):
                        f2[n_free] = s
                        n_free += 1
                    th, counts, pos, active, free = th2, c2, p2, a2, f2
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
    return z_new, theta_new, used
