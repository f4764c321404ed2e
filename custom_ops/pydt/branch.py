"""Branch-point moves for the Pitman-Yor diffusion tree: a reversible pair that changes
the number of internal nodes directly (Knowles 2012 §4.4, Eqs. 4.23, 4.25; digest
``knowles-nsfa-pydt.md`` §3.3, §3.8), on the cached messages of
:mod:`custom_ops.pydt.messages`.

Detach-and-reattach (:mod:`custom_ops.pydt.sweep`) makes or removes a multifurcation
only by moving one subtree at a time, through intermediate trees of low density, so
the number of branch points mixes slowly at a few hundred leaves. These moves do it in
one step:

* **collapse** an internal edge: a non-root internal node ``v`` with parent ``u`` is
  merged into ``u`` (``v``'s children become ``u``'s children, ``t_v`` is removed);
* **expand** a branch point: a node ``u`` with ``K_u >= 3`` children, a subset ``S`` of
  ``2 <= |S| <= K_u - 1`` of them, and a new node ``v`` on a new edge below ``u`` whose
  children are ``S``, at a time ``t_v`` in ``(t_u, min_{w in S} t_w)`` (leaves at 1).

Each is the other's reverse: collapsing ``v`` gives ``u`` the ``K_u - 1 + K_v >= 3``
children among which ``S`` = ``v``'s former children is a valid subset.

Proposal
--------
With probability 1/2 a collapse, else an expansion (a direction with no candidates is
a void move: the tree stays). A collapse picks ``v`` uniformly among the ``E(T) =
#internal(T) - 1`` non-root internal nodes. An expansion picks ``u`` uniformly among
the ``B(T)`` nodes with at least three children, the subset size ``|S|`` uniformly in
``{2, ..., K_u - 1}`` and ``S`` uniformly among the ``binom(K_u, |S|)`` subsets of that
size, then the time from the prior's own edge factor: in ``x = A(t_v) - A(t_u)``, with
``A(t) = -c log(1 - t)``, the edge into ``v`` contributes ``exp(-x H_{m(v)-1})`` (Eq.
4.25) and ``a(t_v) dt_v = dA`` (Eq. 4.23), so ``x`` is drawn from an Exponential of rate
``H_{m(v)-1}`` truncated to ``(0, A(t_min) - A(t_u))`` (``t_min`` the earliest time in
``S``, infinite when ``S`` holds only leaves). As a density in ``t_v`` (the measure of
the Op's density), with ``lambda = c H_{m(v)-1}`` and ``y = -log(1 - t)``::

    q_t(t_v) = lambda exp(-lambda (y_v - y_u)) / (1 - exp(-lambda (y_min - y_u))) / (1 - t_v)

Acceptance (Metropolis-Hastings-Green)
--------------------------------------
The expanded tree ``T'`` has one more coordinate (``t_v``) than ``T``; the proposal's
density is taken in ``t`` like the target's and the map ``(T, t_v) -> T'`` keeps every
other time, so the Jacobian is 1 and the ratio for ``T -> T'`` (expansion) is::

    p(T') p(X | T')   (1/2) / E(T')
    --------------- x ---------------------------------------------------
    p(T)  p(X | T)    (1/2) / B(T) / (K_u - 2) / binom(K_u, |S|) x q_t(t_v)

and a collapse ``T' -> T`` uses the inverse, with ``B(T)``, ``K_u`` and ``|S| = K_v``
read off the collapsed tree.

The prior ratio in closed form: with ``j = |S|``, ``n_w`` the leaves under ``w`` and
``m_v = sum_{w in S} n_w``, the new node factor of ``v`` (Eq. 4.23) over the change of
``u``'s (its ``K_u`` children become ``K_u - j + 1``; ``Gamma(m_v - alpha)`` replaces
``prod_{w in S} Gamma(n_w - alpha)``) leaves, after the ``Gamma(n_w - alpha)`` and
``Gamma(1 - alpha)^(j - 1)`` cancel::

    p(T') / p(T) = a(t_v) Gamma(m_v - alpha) / Gamma(m_v + theta)
                   x prod_{k=3}^{j} (theta + (k-1) alpha)
                   / prod_{k=K_u-j+2}^{K_u} (theta + (k-1) alpha)
                   x exp(-(A(t_v) - A(t_u)) (H_{m_v-1} - sum_{w in S} H_{n_w-1}))

(Eq. 4.25: ``v``'s new edge, and the edges into ``S`` now start at ``t_v``; ``H_0 = 0``).
The time proposal cancels ``a(t_v) exp(-(A(t_v) - A(t_u)) H_{m_v-1})`` up to its
normaliser, so what remains of the times is ``exp((A(t_v) - A(t_u)) sum_S H_{n_w-1})``,
which is 1 when ``S`` holds only leaves. The kernel does not use this form: it takes the
change of the cached node terms (the same factors, :func:`custom_ops.pydt.messages.
node_prior`), and the tests check the whole ratio against the Op's density.

Above, ``p`` is the closed-form prior: node factors (Eq. 4.23,
with ``a(t) = c / (1 - t)``) and edge factors (Eq. 4.25); ``p(X | T)`` the Gaussian
likelihood with the internal locations integrated out (digest §3.9). Only the terms of
``v``, ``u``, ``S``'s edge factors and ``u``'s ancestors change; they are recomputed
from the cached messages in O(depth x children x D) (:func:`custom_ops.pydt.messages.
refresh_path`). The count in the reverse direction is the one of the *proposed* tree:
``E(T') = E(T) + 1`` after an expansion; ``B`` is recounted after the edit (an
expansion can take ``u`` down to two children and make ``v`` a new branch point).

Power posteriors: at an inverse temperature ``beta`` the target is ``p(T) p(X | T)^beta``,
so the ratio's likelihood part ``p(X | T') / p(X | T)`` is raised to ``beta`` (the
proposal does not look at the data); a proposal with zero likelihood is rejected.

In the DDT (``theta = alpha = 0``) every tree with a node of three children has density
0, so collapses are always rejected and there is nothing to expand: the move is void.

The subset probability (:func:`log_subset_prob`), the time proposal's density
(:func:`log_time_proposal`) and the reverse count of an expansion
(:func:`collapses_after_expansion`) are kernels of their own: the tests' planted-bug
twins are these moves compiled with one of them replaced (``tests/helpers/
twin_kernels.py``: ``binom(K_u, |S|)`` dropped from both directions, ``q_t`` dropped,
``E`` counted on the current tree instead of the proposed one).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.messages import (
    Check,
    cached_total,
    clear_node,
    full_state,
    journal,
    link,
    new_journal,
    refresh_path,
    refresh_prior,
    restore,
    state_root_term,
    unlink,
)
from custom_ops.pydt.ops import pydt_forward
from custom_ops.trees.diffusion import UNUSED_SLOT

__all__ = [
    "COLLAPSE",
    "EXPAND",
    "VOID",
    "BranchWork",
    "branch_move",
    "collapses_after_expansion",
    "log_subset_prob",
    "log_time_proposal",
    "propose_branch_move",
    "pydt_branch_moves",
]

# what a proposal did (first entry of the record of propose_branch_move)
VOID = -1
COLLAPSE = 0
EXPAND = 1


class BranchWork(NamedTuple):
    """Workspace of :func:`branch_move`, allocated once per call of the moves: the
    change of ``(log prior, log likelihood)``, the children being moved, and the record
    ``(kind, v, u, log_ratio, log_q_forward, log_q_reverse)`` of the last proposal."""

    acc: np.ndarray
    kids: np.ndarray
    record: np.ndarray


@njit_exact_numpy
def log_subset_prob(k, m):
    """log probability of one subset of size ``m`` of ``k`` children: the size uniform
    in ``{2, ..., k - 1}``, the subset uniform among ``binom(k, m)``."""
    return -math.log(k - 2.0) - (math.lgamma(k + 1.0) - math.lgamma(m + 1.0)
                                 - math.lgamma(k - m + 1.0))


@njit_exact_numpy
def collapses_after_expansion(n_internal):
    """The number of collapses the reverse of an expansion chooses from: the non-root
    internal nodes of the *proposed* tree, ``E(T') = (n_internal + 1) - 1`` for a tree
    with ``n_internal`` internal nodes before the expansion."""
    return n_internal


@njit_exact_numpy
def log_time_proposal(l_v, l_u, l_min, lam):
    """log density in ``t_v`` of the time proposal (module docstring), with ``l =
    log(1 - t) = -y``: ``l_u`` the parent's, ``l_min`` the latest of the children's (``-inf``
    when they are all leaves), ``lam = c H_{m(v)-1}``."""
    x = l_u - l_v
    out = math.log(lam) - lam * x - l_v
    if math.isfinite(l_min):
        out -= math.log(-math.expm1(-lam * (l_u - l_min)))
    return out


@njit_exact_numpy
def _sample_time(rng, l_u, l_min, lam):
    u01 = rng.random()
    if math.isfinite(l_min):
        x = -math.log1p(u01 * math.expm1(-lam * (l_u - l_min))) / lam
    else:
        x = -math.log1p(-u01) / lam
    return l_u - x


@njit_exact_numpy
def _count_branch_points(topo, n):
    parent = topo.parent
    nch = topo.n_children
    count = 0
    for v in range(n, parent.shape[0]):
        if parent[v] != UNUSED_SLOT and nch[v] >= 3:
            count += 1
    return count


@njit_exact_numpy
def _nth_node(topo, n, j, branch_points):
    """The ``j``-th (0-based, in slot order) non-root internal node, or with
    ``branch_points`` the ``j``-th node with at least three children."""
    parent = topo.parent
    nch = topo.n_children
    for v in range(n, parent.shape[0]):
        if parent[v] == UNUSED_SLOT:
            continue
        if branch_points:
            if nch[v] < 3:
                continue
        elif parent[v] < 0:
            continue
        if j == 0:
            return v
        j -= 1
    return -1


@njit_exact_numpy
def _latest_child(topo, lt, n, v):
    """max over ``v``'s children of log(1 - t) (-inf when all are leaves)."""
    first = topo.first
    nxt = topo.next
    out = -np.inf
    w = first[v]
    while w >= 0:
        if w >= n and lt[w - n] > out:
            out = lt[w - n]
        w = nxt[w]
    return out


@njit_exact_numpy
def _full_density(st, chk):
    return pydt_forward(st.topo.parent, st.lt, chk.X, st.c, st.theta, st.alpha, st.sigma2)


@njit_exact_numpy
def _check_change(st, chk, ref0_p, ref0_l, acc):
    """The change ``acc`` of the log prior and log likelihood against two full
    recursions (before: ``ref0_p, ref0_l``); largest relative error in ``chk.errs[0]``."""
    ref1_p, ref1_l = _full_density(st, chk)
    if math.isfinite(ref1_p + ref1_l):
        err = (abs(ref1_p - ref0_p - acc[0]) / (1.0 + abs(ref1_p))
               + abs(ref1_l - ref0_l - acc[1]) / (1.0 + abs(ref1_l)))
        if not err <= chk.errs[0]:
            chk.errs[0] = err


@njit_exact_numpy
def _record_move(record, kind, v, u, acc, log_q_fwd, log_q_rev, beta):
    """Log Metropolis-Hastings-Green ratio of a proposed move at inverse temperature
    ``beta`` (``-inf`` where the proposed tree has no density), written with its parts
    into ``record``."""
    log_ratio = acc[0] + beta * acc[1] + log_q_rev - log_q_fwd
    if not math.isfinite(acc[0] + acc[1]):
        log_ratio = -np.inf
    record[0] = kind
    record[1] = v
    record[2] = u
    record[3] = log_ratio
    record[4] = log_q_fwd
    record[5] = log_q_rev
    return log_ratio


@njit_exact_numpy
def branch_move(rng, st, jn, work, stamp, keep, chk):
    """One collapse-or-expand proposal (module docstring), accepted by its
    Metropolis-Hastings-Green ratio (``keep``: always kept). Fills ``work.record`` with
    ``(kind, v, u, log_ratio, log_q_forward, log_q_reverse)``; returns whether the tree
    changed. With data in ``chk`` the change of the log density the ratio uses is
    compared with two full recursions (largest relative error kept in ``chk.errs[0]``)."""
    topo, lt, n, c = st.topo, st.lt, st.n, st.c
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    nch = topo.n_children
    nb = topo.n_below
    H = st.tables[0]
    free, free_top = st.free, st.free_top
    n_internal = st.n_internal[0]
    acc, kids, record = work.acc, work.kids, work.record
    acc[0] = 0.0
    acc[1] = 0.0
    jn.length[0] = 0
    record[0] = VOID
    root = st.root[0]
    root_before = state_root_term(st, root)
    checking = chk.X.shape[0] > 0
    ref0_p = 0.0
    ref0_l = 0.0
    if checking:
        ref0_p, ref0_l = _full_density(st, chk)
    if rng.random() < 0.5:
        n_edges = n_internal - 1
        if n_edges < 1:
            return False
        v = _nth_node(topo, n, int(rng.random() * n_edges), False)
        u = parent[v]
        k_v = nch[v]
        k_after = nch[u] - 1 + k_v
        l_v = lt[v - n]
        l_u = lt[u - n]
        l_min = _latest_child(topo, lt, n, v)
        lam = c * H[nb[v] - 1]
        log_qt = log_time_proposal(l_v, l_u, l_min, lam)
        saved_nb = nb[v]
        journal(u, jn, stamp, st.mu, st.s, st.ll, st.lp)
        k = 0
        w = first[v]
        while w >= 0:
            kids[k] = w
            k += 1
            w = nxt[w]
        for i in range(k):
            unlink(kids[i], topo)
            link(kids[i], u, topo)
        unlink(v, topo)
        parent[v] = UNUSED_SLOT
        lt[v - n] = 0.0
        nb[v] = 0
        free[free_top[0]] = v
        free_top[0] += 1
        clear_node(v, st, acc, jn, stamp)
        for i in range(k):
            refresh_prior(kids[i], st, acc, jn, stamp, True)
        refresh_path(u, st, True, acc, jn, stamp, True)
        acc[1] += state_root_term(st, root) - root_before
        if checking:
            _check_change(st, chk, ref0_p, ref0_l, acc)
        log_q_fwd = -math.log(n_edges)
        log_q_rev = (-math.log(_count_branch_points(topo, n))
                     + log_subset_prob(k_after, k_v) + log_qt)
        log_ratio = _record_move(record, COLLAPSE, v, u, acc, log_q_fwd, log_q_rev,
                                 st.beta)
        if keep or math.log(rng.random()) < log_ratio:
            st.n_internal[0] = n_internal - 1
            return True
        for i in range(k):
            unlink(kids[i], topo)
            link(kids[i], v, topo)
        free_top[0] -= 1  # v is on top of the stack
        link(v, u, topo)
        lt[v - n] = l_v
        nb[v] = saved_nb
        restore(jn, st)
        return False
    n_branch = _count_branch_points(topo, n)
    if n_branch < 1:
        return False
    u = _nth_node(topo, n, int(rng.random() * n_branch), True)
    k_u = nch[u]
    size = 2 + int(rng.random() * (k_u - 2))
    k = 0
    w = first[u]
    while w >= 0:
        kids[k] = w
        k += 1
        w = nxt[w]
    # the first `size` entries of a partial Fisher-Yates shuffle: a uniform subset
    for i in range(size):
        j = i + int(rng.random() * (k_u - i))
        kids[i], kids[j] = kids[j], kids[i]
    l_u = lt[u - n]
    l_min = -np.inf
    leaves = 0
    for i in range(size):
        w = kids[i]
        leaves += nb[w]
        if w >= n and lt[w - n] > l_min:
            l_min = lt[w - n]
    lam = c * H[leaves - 1]
    l_v = _sample_time(rng, l_u, l_min, lam)
    if not (l_min < l_v < l_u):
        # a tie in floating point (probability ~ 0): the move is void
        return False
    log_qt = log_time_proposal(l_v, l_u, l_min, lam)
    free_top[0] -= 1
    v = free[free_top[0]]
    journal(v, jn, stamp, st.mu, st.s, st.ll, st.lp)
    first[v] = -1
    nch[v] = 0
    for i in range(size):
        unlink(kids[i], topo)
        link(kids[i], v, topo)
    link(v, u, topo)
    lt[v - n] = l_v
    nb[v] = leaves
    for i in range(size):
        refresh_prior(kids[i], st, acc, jn, stamp, True)
    refresh_path(v, st, True, acc, jn, stamp, True)
    acc[1] += state_root_term(st, root) - root_before
    if checking:
        _check_change(st, chk, ref0_p, ref0_l, acc)
    log_q_fwd = -math.log(n_branch) + log_subset_prob(k_u, size) + log_qt
    log_q_rev = -math.log(collapses_after_expansion(n_internal))
    log_ratio = _record_move(record, EXPAND, v, u, acc, log_q_fwd, log_q_rev, st.beta)
    if keep or math.log(rng.random()) < log_ratio:
        st.n_internal[0] = n_internal + 1
        return True
    for i in range(size):
        unlink(kids[i], topo)
        link(kids[i], u, topo)
    unlink(v, topo)
    parent[v] = UNUSED_SLOT
    lt[v - n] = 0.0
    nb[v] = 0
    free[free_top[0]] = v
    free_top[0] += 1
    restore(jn, st)
    return False


@njit_exact_numpy
def pydt_branch_moves(rng, parent, log1m_t, X, params, n_moves, check):
    """``n_moves`` collapse-or-expand Metropolis-Hastings-Green moves (module docstring),
    in place on a valid tree ``(parent, log1m_t)`` (as :func:`custom_ops.pydt.sweep.
    pydt_sweep`; parameters in range, see :func:`custom_ops.pydt.sweep.
    sweep_inputs_valid`).

    Parameters
    ----------
    rng : numpy.random.Generator
    parent, log1m_t : int64 (2n - 1,), float64 (n - 1,) arrays, edited in place
    X : (n, D) float64 array (``D = 0``: the prior alone)
    params : custom_ops.pydt.messages.PYDTParameters
        ``(c, theta, alpha, sigma2, beta)``, floats; ``beta`` in [0, 1] the inverse
        temperature of the likelihood (module docstring), 1 for the posterior.
    n_moves : int
        A fixed count (a count read off the current tree would not leave the posterior
        invariant).
    check : bool
        Compare the change of the log density each ratio uses, and the cached total
        after each move, with :func:`custom_ops.pydt.density.pydt_forward` (O(n D); for tests).

    Returns
    -------
    (accepted, max_error)
        Accepted moves; the largest relative error seen with ``check`` (else 0).
    """
    n, d = X.shape
    c, theta, alpha, sigma2, beta = params
    st = full_state(parent, log1m_t, X, c, theta, alpha, sigma2, beta)
    jn = new_journal(parent.shape[0], d)
    work = BranchWork(np.zeros(2), np.empty(n, dtype=np.int64), np.zeros(6))
    chk = Check(X if check else np.zeros((0, d)), np.zeros(1))
    accepted = 0
    for move in range(n_moves):
        if branch_move(rng, st, jn, work, move, np.bool_(False), chk):
            accepted += 1
        if check:
            ref_p, ref_l = pydt_forward(parent, log1m_t, X, c, theta, alpha, sigma2)
            tp, tl = cached_total(st)
            err = (abs(ref_p - tp) / (1.0 + abs(ref_p))
                   + abs(ref_l - tl) / (1.0 + abs(ref_l)))
            if not err <= chk.errs[0]:
                chk.errs[0] = err
    return accepted, chk.errs[0]


@njit_exact_numpy
def propose_branch_move(rng, parent, log1m_t, X, params):
    """One collapse-or-expand proposal, kept whatever its ratio (for the tests: the tree
    is left as proposed), its ratio at the inverse temperature ``params.beta``. Returns
    ``(kind, v, u, log_ratio, log_q_forward, log_q_reverse)``: ``kind`` :data:`COLLAPSE`
    (``v`` merged into ``u``, its slot freed), :data:`EXPAND` (new node ``v`` below
    ``u``) or :data:`VOID`."""
    n, d = X.shape
    c, theta, alpha, sigma2, beta = params
    st = full_state(parent, log1m_t, X, c, theta, alpha, sigma2, beta)
    work = BranchWork(np.zeros(2), np.empty(n, dtype=np.int64), np.zeros(6))
    branch_move(rng, st, new_journal(parent.shape[0], d), work, np.int64(0), np.bool_(True),
                Check(np.zeros((0, d)), np.zeros(1)))
    return work.record
