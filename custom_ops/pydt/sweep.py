"""One MCMC sweep of the Pitman-Yor diffusion tree sampler in Numba (Knowles 2012
§4.6.1; digest ``knowles-nsfa-pydt.md`` §3.8-3.9), on the cached upward messages of
:mod:`custom_ops.pydt.messages`: each proposal costs O(depth x children x D) instead of
the O(n D) full recursion, and one Numba call runs the whole sweep (no Python per
move). :func:`custom_ops.pydt.density.pydt_forward` stays the reference: ``check=True``
compares the cached total with it after every update.

The moves are exactly those of ``inference.gibbs.pydt`` (its module docstring): the
subtree root drawn uniformly among the non-root nodes, a new position drawn from the
generative process on the rest (restarted until it diverges before the subtree's root,
at most 200 tries, else the move is void), the full Metropolis-Hastings ratio with the
proposal densities and the ratio of the numbers of subtrees; then every divergence time
slice-sampled (Neal 2003, stepping out and shrinkage:
:func:`custom_ops.slice.slice_sample`) in ``log(1 - t)`` with its Jacobian, in a random
order. The Metropolis-Hastings log ratio (:func:`mh_log_ratio`) and the Jacobian of the
times (:func:`log_time_jacobian`) are kernels of their own: the tests' planted-bug twins
are this sweep compiled with one of them replaced (``tests/helpers/twin_kernels.py``).

Power posteriors: the sweep targets ``p(T) p(X | T)^beta`` for an inverse temperature
``beta`` in [0, 1] (``beta = 1``: the posterior). The prior ``p(T)`` and the likelihood
``p(X | T)`` are separate sums of cached terms (``lp`` and ``ll`` plus the root term), so
each Metropolis-Hastings ratio is ``Δ log p(T) + beta Δ log p(X | T)`` plus the proposal
terms (the proposal is the generative process, which does not look at the data), and
the slice sampler's target is ``log p(T) + beta log p(X | T)`` plus the Jacobian. A
proposal whose likelihood is zero is rejected at every ``beta``.

Random numbers come from a NumPy ``Generator`` passed in (Numba draws from its bit
generator, so the caller's generator advances and a seed reproduces a chain).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.messages import (
    EDGE,
    NODE,
    Check,
    PYDTState,
    attach,
    cached_total,
    clear_node,
    detach,
    full_state,
    journal,
    log1m_time,
    new_journal,
    node_likelihood,
    node_prior,
    refresh_path,
    refresh_prior,
    restore,
    root_term,
    state_root_term,
)
from custom_ops.pydt.ops import choose_branch, parameter_code, pydt_forward
from custom_ops.slice import SliceSettings, slice_sample
from custom_ops.trees.diffusion import UNUSED_SLOT, diffusion_tree_structure

# @njit_exact_numpy, as custom_ops.pydt.messages: a NaN or infinite density is rejected,
# not raised

__all__ = [
    "NO_POSITION",
    "attach_position",
    "log_attach_density",
    "log_time_jacobian",
    "mh_log_ratio",
    "pydt_sweep",
    "sample_attach",
    "sweep_inputs_valid",
]

_MAX_TRIES = 200
_MAX_SHRINK = 200
_MAX_STEPS = 50
#: the mode :func:`sample_attach` returns when it found no position (after 200 restarts
#: of the generative process)
NO_POSITION = 2


@njit_exact_numpy
def sample_attach(rng, st, l_limit):
    """Where the generative process places one new point on the tree under ``st``'s
    root (Eqs. 4.9-4.11: exponential waiting times in A-space at rate ``c
    Gamma(m - alpha) / Gamma(m + 1 + theta)`` on the edge into a node of ``m`` leaves,
    then a branch chosen as the Pitman-Yor urn says), restarted until it diverges
    before ``log(1 - t) = l_limit`` (at most 200 times). Returns ``(mode, anchor,
    log1m_t)``: on the edge above ``anchor`` at ``log1m_t`` (:data:`EDGE`), at the
    internal node ``anchor`` (:data:`NODE`, ``log1m_t`` NaN), or :data:`NO_POSITION`."""
    first = st.topo.first
    nxt = st.topo.next
    nb = st.topo.n_below
    lt, n, c, theta, alpha = st.lt, st.n, st.c, st.theta, st.alpha
    root = st.root[0]
    rate = st.tables[4]
    u_limit = -l_limit
    for _ in range(_MAX_TRIES):
        v = root
        u_top = 0.0
        while True:
            m = nb[v]
            u_d = u_top + rng.exponential() / (c * rate[m])
            u_v = -log1m_time(lt, n, v)
            if u_d < u_v:
                if u_d >= u_limit:
                    break
                return EDGE, v, -u_d
            if u_v >= u_limit:
                break
            chosen = choose_branch(rng.random(), v, m, theta, alpha, first, nxt, nb)
            if chosen < 0:
                return NODE, v, math.nan
            u_top = u_v
            v = chosen
    return NO_POSITION, -1, math.nan


@njit_exact_numpy
def log_attach_density(st, mode, anchor, l_attach, path):
    """log density (in t) of the generative process placing one new point at ``(mode,
    anchor, l_attach)`` on the tree under ``st``'s root (Eqs. 4.9-4.11, 4.16; ``path``:
    an int64 workspace of the tree's size). A test oracle written on the Python tree is
    ``tests.oracles.pydt.log_attach_density``."""
    parent = st.topo.parent
    nch = st.topo.n_children
    nb = st.topo.n_below
    lt, n, c, theta, alpha = st.lt, st.n, st.c, st.theta, st.alpha
    root = st.root[0]
    rate = st.tables[4]
    k = 0
    u = anchor
    while True:
        path[k] = u
        k += 1
        if u == root:
            break
        u = parent[u]
    total = 0.0
    u_top = 0.0
    for j in range(k - 1, -1, -1):
        w = path[j]
        m = nb[w]
        g = rate[m]
        if j == 0 and mode == EDGE:
            u_d = -l_attach
            return total - c * (u_d - u_top) * g + math.log(c * g) + u_d
        u_w = -log1m_time(lt, n, w)
        total -= c * (u_w - u_top) * g
        if j == 0:
            return total + math.log((theta + alpha * nch[w]) / (m + theta))
        total += math.log((nb[path[j - 1]] - alpha) / (m + theta))
        u_top = u_w
    return math.nan


@njit_exact_numpy
def _slice_eval(x, v, st, lo, hi):
    """Move the caches to ``log(1 - t_v) = x`` and return the tempered sum of the terms
    that depend on it: the edge factors of ``v``'s internal children and ``v``'s prior
    term, plus ``beta`` times ``v``'s and its ancestors' likelihood terms and the root
    term (-inf, with nothing changed, outside the open interval (lo, hi))."""
    if not (lo < x < hi):
        return -np.inf
    topo, lt, n, mu, s, rr, ll, lp = st.topo, st.lt, st.n, st.mu, st.s, st.rr, st.ll, st.lp
    sigma2, tables, c = st.sigma2, st.tables, st.c
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    lt[v - n] = x
    total = 0.0
    w = first[v]
    while w >= 0:
        if w >= n:
            lp[w] = node_prior(w, topo, lt, n, tables, c)
            total += lp[w]
        w = nxt[w]
    lp[v] = node_prior(v, topo, lt, n, tables, c)
    total += lp[v]
    lik = 0.0
    u = v
    while u >= 0:
        ll[u] = node_likelihood(u, topo, lt, n, mu, s, rr, sigma2)
        lik += ll[u]
        u = parent[u]
    lik += root_term(st.root[0], lt, n, mu, s, sigma2)
    if not math.isfinite(lik):
        return -np.inf if not lik > 0 else lik
    return total + st.beta * lik


@njit_exact_numpy
def _check_value(value, st, chk):
    """With a :class:`~custom_ops.pydt.messages.Check` holding data: compare a tempered
    log density the sampler is about to use with the full recursion on the current tree
    (largest relative error kept in ``chk.errs[0]``)."""
    if chk.X.shape[0] == 0 or not math.isfinite(value):
        return value
    ref_p, ref_l = pydt_forward(st.topo.parent, st.lt, chk.X, st.c, st.theta, st.alpha,
                                st.sigma2)
    err = abs(ref_p + st.beta * ref_l - value) / (1.0 + abs(ref_p) + abs(ref_l))
    if not err <= chk.errs[0]:
        chk.errs[0] = err
    return value


@njit_exact_numpy
def mh_log_ratio(d_log_prior, d_log_lik, n_before, n_after, log_q_old, log_q_new):
    """Log Metropolis-Hastings ratio of a detach-and-reattach move (module docstring of
    ``inference.gibbs.pydt``): the change of the log prior and log likelihood, the ratio
    of the numbers of subtrees to choose from, and the proposal densities
    ``g_R(old) / g_R(new)``."""
    return (d_log_prior + d_log_lik + math.log(n_before) - math.log(n_after)
            + log_q_old - log_q_new)


@njit_exact_numpy
def log_time_jacobian(l):
    """``log |dt/dl|`` at ``l = log(1 - t)``: the density is in ``t`` and the slice
    sampler moves ``l`` (``dt/dl = -(1 - t) = -exp(l)``)."""
    return l


class _TimeTarget(NamedTuple):
    """What the slice sampler's density of one time reads: the node ``v``, the state,
    the tempered total of the terms that do not depend on ``t_v`` (``rest``), the open
    interval ``(lo, hi)`` of ``log(1 - t_v)`` and the check."""

    v: int
    st: PYDTState
    rest: float
    lo: float
    hi: float
    chk: Check


@njit_exact_numpy
def _time_log_density(x, target):
    """The tempered log density at ``log(1 - t_v) = x`` with its Jacobian, the caches
    moved there (:func:`_slice_eval`)."""
    st = target.st
    return log_time_jacobian(x) + _check_value(
        target.rest + _slice_eval(x, target.v, st, target.lo, target.hi), st, target.chk)


@njit_exact_numpy
def _slice_time(rng, v, st, tot, chk):
    """Slice-sample log(1 - t_v) (:func:`custom_ops.slice.slice_sample`) from the power
    posterior at ``st.beta``. The target at ``x`` is ``tot - base + _slice_eval(x) +
    log_time_jacobian(x)`` (``tot`` tempered: ``tot[0] + beta tot[1]``) with ``base`` the
    changed terms at the current value, so repeated evaluations do not accumulate
    rounding. Between the children's latest time and the parent's the interval is the
    whole support; above the root it steps out by ``1 + |hi|``."""
    parent = st.topo.parent
    first = st.topo.first
    nxt = st.topo.next
    lt, n, ll, lp = st.lt, st.n, st.ll, st.lp
    p = parent[v]
    hi = 0.0 if p < 0 else lt[p - n]
    lo = -np.inf
    base = lp[v]
    w = first[v]
    while w >= 0:
        if w >= n:
            base += lp[w]
            if lt[w - n] > lo:
                lo = lt[w - n]
        w = nxt[w]
    beta = st.beta
    base_lik = 0.0
    u = v
    while u >= 0:
        base_lik += ll[u]
        u = parent[u]
    base_lik += state_root_term(st, st.root[0])
    base += beta * base_lik
    rest = tot[0] + beta * tot[1] - base
    x0 = lt[v - n]
    f0 = tot[0] + beta * tot[1] + log_time_jacobian(x0)
    slice_sample(rng, _time_log_density, _TimeTarget(v, st, rest, lo, hi, chk), x0, f0,
                 lo, hi, SliceSettings(1.0 + abs(hi), _MAX_STEPS, _MAX_SHRINK))


@njit_exact_numpy
def pydt_sweep(rng, parent, log1m_t, X, params, n_moves, slice_times, check):
    """One sweep of the PYDT tree sampler (module docstring), in place on ``parent`` and
    ``log1m_t`` (a valid tree; see :mod:`custom_ops.trees.diffusion`).

    Parameters
    ----------
    rng : numpy.random.Generator
    parent, log1m_t : int64 (2n - 1,), float64 (n - 1,) arrays, edited in place
    X : (n, D) float64 array
    params : custom_ops.pydt.messages.PYDTParameters
        ``(c, theta, alpha, sigma2, beta)``, floats; ``beta`` in [0, 1] the inverse
        temperature of the likelihood (module docstring), 1 for the posterior.
    n_moves : int
        Detach-reattach proposals; negative means ``2 n - 2``, the number of subtrees of
        a binary tree. The count must not depend on the current tree: repeating an
        invariant move the current number of subtrees times (``n + #internal - 1``) is
        not invariant: it draws too few internal nodes (about 1 % at n = 4-5, caught by
        the exact-prior test of the sweep).
    slice_times : bool
        Slice-sample every divergence time after the moves.
    check : bool
        Compare with :func:`custom_ops.pydt.density.pydt_forward` (O(n D) each; for tests): the
        change of the log density each Metropolis-Hastings ratio uses, every value the
        slice sampler compares with its level, and the cached total after every move
        and every slice update.

    Returns
    -------
    (accepted, log_prior, log_lik, max_error)
        Accepted moves; the log prior and log likelihood of the final tree from the
        caches; the largest relative error ``abs(cached - recomputed) / (1 + abs(recomputed))``
        (prior plus likelihood) seen with ``check`` (else 0).
    """
    n, d = X.shape
    nn = parent.shape[0]
    c, theta, alpha, sigma2, beta = params
    st = full_state(parent, log1m_t, X, c, theta, alpha, sigma2, beta)
    lt, lp = st.lt, st.lp
    tot = np.zeros(2)  # log prior, log likelihood
    tot[0], tot[1] = cached_total(st)
    # journal of the cached values a move changes
    jn = new_journal(nn, d)
    path = np.empty(nn, dtype=np.int64)
    max_err = 0.0
    chk = Check(X if check else np.zeros((0, d)), np.zeros(1))
    accepted = 0
    if n_moves < 0:
        n_moves = 2 * n - 2
    acc = np.zeros(2)
    for move in range(n_moves):
        n_internal = st.n_internal[0]
        n_before = n + n_internal - 1
        while True:
            v = int(rng.random() * nn)
            if v < nn and parent[v] >= 0:
                break
        l_limit = log1m_time(lt, n, v)
        acc[0] = 0.0
        acc[1] = 0.0
        jn.length[0] = 0
        root_before = st.root[0]
        root_term_before = state_root_term(st, root_before)
        if check:
            ref0_p, ref0_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
        # cut: the old parent's messages (or the new root's) change
        mode0, anchor0, l_old, freed, start = detach(v, st)
        if freed >= 0:
            clear_node(freed, st, acc, jn, move)
            refresh_prior(anchor0, st, acc, jn, move, True)
        refresh_path(start, st, True, acc, jn, move, True)
        journal(v, jn, move, st.mu, st.s, st.ll, st.lp)
        if v >= n:
            acc[0] -= lp[v]
            lp[v] = 0.0
        mode1, anchor1, l_new = sample_attach(rng, st, l_limit)
        log_ratio = -np.inf
        slot = -1
        if mode1 != NO_POSITION:
            log_q_new = log_attach_density(st, mode1, anchor1, l_new, path)
            log_q_old = log_attach_density(st, mode0, anchor0, l_old, path)
            if mode1 == EDGE:
                st.free_top[0] -= 1
                slot = st.free[st.free_top[0]]
                journal(slot, jn, move, st.mu, st.s, st.ll, st.lp)
            start = attach(v, mode1, anchor1, l_new, slot, st)
            if mode1 == EDGE:
                refresh_prior(anchor1, st, acc, jn, move, True)
            refresh_prior(v, st, acc, jn, move, True)
            refresh_path(start, st, True, acc, jn, move, True)
            new_root_term = state_root_term(st, st.root[0])
            acc[1] += new_root_term - root_term_before
            n_after = n + n_internal - 1 + (1 if mode1 == EDGE else 0) - (
                1 if freed >= 0 else 0)
            log_ratio = mh_log_ratio(acc[0], beta * acc[1], n_before, n_after, log_q_old,
                                     log_q_new)
            if not math.isfinite(acc[0] + acc[1]):
                log_ratio = -np.inf
            if check:
                # the change the ratio uses, against two full recursions
                ref1_p, ref1_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
                if math.isfinite(ref1_p + ref1_l):
                    err = (abs(ref1_p - ref0_p - acc[0]) / (1.0 + abs(ref1_p))
                           + abs(ref1_l - ref0_l - acc[1]) / (1.0 + abs(ref1_l)))
                    if not err <= max_err:
                        max_err = err
        if mode1 != NO_POSITION and math.log(rng.random()) < log_ratio:
            accepted += 1
            tot[0], tot[1] = cached_total(st)
            st.n_internal[0] = n_internal + (1 if mode1 == EDGE else 0) - (
                1 if freed >= 0 else 0)
        else:
            # undo the structure edits (LIFO slots), then the cached values
            if mode1 != NO_POSITION:
                detach(v, st)
            slot0 = -1
            if mode0 == EDGE:
                st.free_top[0] -= 1
                slot0 = st.free[st.free_top[0]]
            attach(v, mode0, anchor0, l_old, slot0, st)
            restore(jn, st)
            st.root[0] = root_before
        if check:
            ref_p, ref_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
            err = (abs(ref_p - tot[0]) / (1.0 + abs(ref_p))
                   + abs(ref_l - tot[1]) / (1.0 + abs(ref_l)))
            if not err <= max_err:
                max_err = err
    if slice_times:
        n_internal = st.n_internal[0]
        internal = np.empty(n_internal, dtype=np.int64)
        k = 0
        for v in range(n, nn):
            if parent[v] != UNUSED_SLOT:
                internal[k] = v
                k += 1
        for i in range(n_internal - 1, 0, -1):
            j = int(rng.random() * (i + 1))
            internal[i], internal[j] = internal[j], internal[i]
        for i in range(n_internal):
            _slice_time(rng, internal[i], st, tot, chk)
            # the total from the cached terms (O(n) scalars), not a running sum
            tot[0], tot[1] = cached_total(st)
            if check:
                ref_p, ref_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
                err = (abs(ref_p - tot[0]) / (1.0 + abs(ref_p))
                       + abs(ref_l - tot[1]) / (1.0 + abs(ref_l)))
                if not err <= max_err:
                    max_err = err
    for v in range(n, nn):
        if parent[v] == UNUSED_SLOT:
            lt[v - n] = 0.0
    tp, tl = cached_total(st)
    return accepted, tp, tl, max(max_err, chk.errs[0])


@njit_exact_numpy
def attach_position(rng, parent, log1m_t, params, l_limit):
    """:func:`sample_attach` on the valid tree ``(parent, log1m_t)`` at ``params``'s
    ``c``, ``theta``, ``alpha`` (:class:`~custom_ops.pydt.messages.PYDTParameters`; the
    variance and ``beta`` unused): where a new point joins a tree, for the predictive
    density's Monte Carlo check (``pp_models.pydt.outputs``)."""
    n = (parent.shape[0] + 1) // 2
    c, theta, alpha, sigma2, beta = params
    st = full_state(parent, log1m_t, np.zeros((n, 0)), c, theta, alpha, sigma2, beta)
    return sample_attach(rng, st, l_limit)


def sweep_inputs_valid(parent, log1m_t, X, c, theta, alpha, sigma2):
    """Whether :func:`pydt_sweep` may run: parameters in range and a valid tree (O(n))."""
    return (parameter_code(float(c), float(theta), float(alpha), float(sigma2)) == 0
            and diffusion_tree_structure(parent, log1m_t, X.shape[0])[0] == 0)
