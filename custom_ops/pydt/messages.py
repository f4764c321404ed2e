"""Cached upward messages of a Pitman-Yor diffusion tree, edited in place along root
paths: the state shared by the MCMC sweep (:mod:`custom_ops.pydt.sweep`) and the greedy
build (:mod:`custom_ops.pydt.greedy`); Knowles 2012 §4.6.1, digest
``knowles-nsfa-pydt.md`` §3.8-3.9.

The log joint density of :mod:`custom_ops.pydt.ops` is a sum of one term per internal node
plus a root term:

* likelihood ``ll[v]``: what node ``v`` adds to ``log p(X | tree, sigma2)`` when it
  combines the Gaussian messages ``N(x_v; mu_w, s_w + sigma2 (t_w - t_v))`` of its
  children ``w`` (digest §3.9); it depends on ``v``'s time, its children's times and
  their cached messages ``(mu_w, s_w)``;
* prior ``lp[v]``: Eq. 4.23 times the edge factor of Eq. 4.25 of the edge into ``v``; it
  depends on ``v``'s time, its parent's time and the leaf counts of ``v`` and of its
  children.

An edit of the tree (a leaf or subtree detached or attached, a new divergence time)
therefore changes only the terms of the nodes on the path(s) from the edited node(s) to
the root (plus the edited nodes' children's edge factors): :func:`refresh_path` and
:func:`refresh_prior` recompute those in O(depth x children x D), recording the old
values in a journal so that :func:`restore` undoes a rejected proposal.

The tree is a :class:`Topology` ``topo = (parent, first, next, prev, n_children,
n_below)``: the parent vector of :mod:`custom_ops.trees.diffusion` plus doubly linked
child lists and leaf counts. Internal node slots: an edit that frees a slot pushes it on
a stack and a new node takes the top one; slot numbers are labels the density does not
depend on.
These are Numba kernels for those two modules, not a user API. The kernels pass the
state as :class:`PYDTState` (a Numba structref: the tree, its cached terms and the
model's constants, passed as one pointer) and :class:`Journal` (a named tuple: the
values a proposal saved).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba.core import types
from numba.experimental import structref

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.density import MIN_VARIANCE, PYDTParameters
from custom_ops.pydt.ops import edge_length, h_table
from custom_ops.trees.diffusion import DETACHED, UNUSED_SLOT, diffusion_tree_structure

__all__ = [
    "EDGE",
    "NODE",
    "STATE_FIELDS",
    "Check",
    "Journal",
    "PYDTParameters",
    "PYDTState",
    "PYDTStateType",
    "Topology",
    "add_leaf_count",
    "attach",
    "cached_total",
    "clear_node",
    "detach",
    "free_slots",
    "full_state",
    "journal",
    "link",
    "log1m_time",
    "new_journal",
    "node_likelihood",
    "node_prior",
    "prior_tables",
    "refresh_path",
    "refresh_prior",
    "restore",
    "root_term",
    "state_root_term",
    "unlink",
]

# @njit_exact_numpy (error_model="numpy"): a zero or infinite variance (sigma2 or the
# times at an extreme) gives an infinite or NaN density, which the samplers reject,
# instead of raising
_LOG_2PI = math.log(2.0 * math.pi)
# how a subtree is attached: on the edge above a node, or at an existing internal node
EDGE = 0
NODE = 1


class Topology(NamedTuple):
    """The tree's structure as the kernels edit it (int64 arrays over the ``2 n - 1``
    nodes): ``parent`` (:mod:`custom_ops.trees.diffusion`'s codes), each node's
    ``first`` child, the ``next`` and ``prev`` siblings of its doubly linked child list
    (-1 at the ends), its ``n_children`` and the leaves below it, ``n_below``."""

    parent: np.ndarray
    first: np.ndarray
    next: np.ndarray
    prev: np.ndarray
    n_children: np.ndarray
    n_below: np.ndarray


@structref.register
class PYDTStateType(types.StructRef):
    """Numba type of :class:`PYDTState` (a struct passed by reference)."""

    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


#: The fields of :class:`PYDTState`, in the order its constructor takes them: the tree
#: ``topo``, a :class:`Topology`; ``lt``, log(1 - t) of the
#: internal slots (``lt[v - n]``); the upward messages' means ``mu`` (slots, D) and
#: variances ``s``; ``rr``, each node's variance ``s + sigma2 * edge length`` as its
#: parent last saw it; the likelihood and prior terms ``ll``, ``lp``; the root's slot
#: ``root``, the stack of free internal slots ``free`` and its height ``free_top``, the
#: number of internal nodes in use ``n_internal`` (1-element arrays, edited in place);
#: the model's ``n``, ``c``, ``theta``, ``alpha``, ``sigma2`` and ``tables``
#: (:func:`prior_tables` of ``n``, ``theta``, ``alpha``); the inverse temperature
#: ``beta`` of the likelihood in the samplers' target ``p(T) p(X | T)^beta``.
STATE_FIELDS = ("topo", "lt", "mu", "s", "rr", "ll", "lp", "root", "free", "free_top",
                "n_internal", "n", "c", "theta", "alpha", "sigma2", "tables", "beta")


class PYDTState(structref.StructRefProxy):
    """A tree, its cached messages and terms (module docstring), and the model's constants
    they were computed with (:data:`STATE_FIELDS`). A Numba structref: kernels pass it as
    one pointer, however many arrays it holds; the arrays are edited in place."""

    def __new__(cls, *fields):
        return structref.StructRefProxy.__new__(cls, *fields)


structref.define_proxy(PYDTState, PYDTStateType, list(STATE_FIELDS))


class Check(NamedTuple):
    """What a sampler compares its cached log density with, for the tests: the data
    ``X`` for the full recursion (no rows: no comparison) and the largest relative error
    seen (``errs[0]``)."""

    X: np.ndarray
    errs: np.ndarray


class Journal(NamedTuple):
    """The cached values of the nodes a proposal changed (:func:`journal`,
    :func:`restore`): how many, which nodes, their messages and ``(s, ll, lp)``, and per
    slot the stamp of the proposal that last saved it (a node is saved once per
    proposal)."""

    length: np.ndarray
    nodes: np.ndarray
    messages: np.ndarray
    scalars: np.ndarray
    mark: np.ndarray


@njit_exact_numpy
def log1m_time(lt, n, v):
    """log(1 - t_v); -inf at a leaf (t = 1)."""
    if v < n:
        return -np.inf
    return lt[v - n]


@njit_exact_numpy
def node_likelihood(v, topo, lt, n, mu, s, rr, sigma2):
    """Recompute the upward message (mu[v], s[v]) of internal node ``v`` from its
    children's and return its likelihood term (digest §3.9).

    This and the other per-node kernels (:func:`node_prior`, :func:`root_term`,
    :func:`journal`) take the arrays they read rather than a :class:`PYDTState`: they run
    once per node of a path, and taking each array out of the state there costs the
    sweep about a third of its time (reference counts); their callers take it out once.
    """
    first = topo.first
    nxt = topo.next
    nch = topo.n_children
    d = mu.shape[1]
    prec = 0.0
    sum_log_r = 0.0
    for j in range(d):
        mu[v, j] = 0.0
    w = first[v]
    while w >= 0:
        r = max(s[w] + sigma2 * edge_length(lt, n, v, w), MIN_VARIANCE)
        rr[w] = r
        iw = 1.0 / r
        prec += iw
        sum_log_r += math.log(r)
        for j in range(d):
            mu[v, j] += iw * mu[w, j]
        w = nxt[w]
    sv = 1.0 / prec
    s[v] = sv
    for j in range(d):
        mu[v, j] *= sv
    quad = 0.0
    w = first[v]
    while w >= 0:
        qw = 0.0
        for j in range(d):
            diff = mu[w, j] - mu[v, j]
            qw += diff * diff
        quad += qw / rr[w]
        w = nxt[w]
    k_v = nch[v]
    return (-0.5 * d * (k_v - 1) * _LOG_2PI - 0.5 * d * sum_log_r
            + 0.5 * d * math.log(sv) - 0.5 * quad)


@njit_exact_numpy
def root_term(root, lt, n, mu, s, sigma2):
    """log N(0; mu_root, s_root + sigma2 t_root) summed over the dimensions."""
    d = mu.shape[1]
    t_root = -math.expm1(log1m_time(lt, n, root))
    r = max(s[root] + sigma2 * t_root, MIN_VARIANCE)
    q = 0.0
    for j in range(d):
        q += mu[root, j] * mu[root, j]
    return -0.5 * d * (_LOG_2PI + math.log(r)) - 0.5 * q / r


@njit_exact_numpy
def node_prior(v, topo, lt, n, tables, c):
    """Eq. 4.23 at internal node ``v`` times the Eq. 4.25 factor of the edge into it."""
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    nch = topo.n_children
    nb = topo.n_below
    H, lga, lgt, logf = tables[0], tables[1], tables[2], tables[3]
    k_v = nch[v]
    m = nb[v]
    lv = lt[v - n]
    p = parent[v]
    lu = 0.0 if p < 0 else lt[p - n]
    out = math.log(c) - lv + logf[k_v] - lgt[m] - (k_v - 1) * lga[1]
    w = first[v]
    while w >= 0:
        out += lga[nb[w]]
        w = nxt[w]
    return out + c * (lv - lu) * H[m - 1]


@njit_exact_numpy
def prior_tables(n, theta, alpha):
    """H_j (Eq. 4.24), lgamma(j - alpha), lgamma(j + theta), the running sum of
    log(theta + (k - 1) alpha) over k = 3..K (-inf once a factor is <= 0) and the
    divergence rate Gamma(m - alpha) / Gamma(m + 1 + theta) per unit A(t) (Eq. 4.9)."""
    H = h_table(n + 1, theta, alpha)[0]
    lga = np.zeros(n + 2)
    lgt = np.zeros(n + 3)
    lga[1] = math.lgamma(1.0 - alpha)
    for j in range(1, n + 1):
        lga[j + 1] = lga[j] + math.log(j - alpha)
    for j in range(1, n + 3):
        lgt[j] = math.lgamma(j + theta) if j + theta > 0.0 else np.inf
    logf = np.zeros(n + 2)
    for k in range(3, n + 2):
        f = theta + (k - 1) * alpha
        logf[k] = logf[k - 1] + (math.log(f) if f > 0.0 else -np.inf)
    rate = np.zeros(n + 1)
    for m in range(1, n + 1):
        rate[m] = math.exp(lga[m] - math.lgamma(m + 1.0 + theta))
    return H, lga, lgt, logf, rate


@njit_exact_numpy
def unlink(v, topo):
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    prv = topo.prev
    nch = topo.n_children
    p = parent[v]
    if prv[v] >= 0:
        nxt[prv[v]] = nxt[v]
    else:
        first[p] = nxt[v]
    if nxt[v] >= 0:
        prv[nxt[v]] = prv[v]
    nch[p] -= 1
    prv[v] = -1
    nxt[v] = -1


@njit_exact_numpy
def link(v, p, topo):
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    prv = topo.prev
    nch = topo.n_children
    parent[v] = p
    prv[v] = -1
    nxt[v] = first[p]
    if first[p] >= 0:
        prv[first[p]] = v
    first[p] = v
    nch[p] += 1


@njit_exact_numpy
def add_leaf_count(u, k, topo):
    parent = topo.parent
    nb = topo.n_below
    while u >= 0:
        nb[u] += k
        u = parent[u]


@njit_exact_numpy
def free_slots(parent, n):
    """The stack of unused internal slots (``parent == -2``), highest index at the bottom,
    its height as a 1-element array, and the number of internal nodes in use."""
    nn = parent.shape[0]
    free = np.empty(nn, dtype=np.int64)
    free_top = np.zeros(1, dtype=np.int64)
    n_internal = 0
    for v in range(nn - 1, n - 1, -1):
        if parent[v] == UNUSED_SLOT:
            free[free_top[0]] = v
            free_top[0] += 1
        else:
            n_internal += 1
    return free, free_top, n_internal


@njit_exact_numpy
def detach(v, st):
    """Cut the subtree under ``v`` off (as DiffusionTree.detach). Returns ``(mode, anchor,
    l_old, freed_slot, start)``: where it was, the slot freed (or -1) and the lowest
    node whose message changed (-1 if only the root changed)."""
    topo, lt, n, free, free_top = st.topo, st.lt, st.n, st.free, st.free_top
    parent = topo.parent
    first = topo.first
    nch = topo.n_children
    nb = topo.n_below
    p = parent[v]
    unlink(v, topo)
    parent[v] = DETACHED
    add_leaf_count(p, -nb[v], topo)
    if nch[p] >= 2:
        return NODE, p, math.nan, -1, p
    s = first[p]
    pp = parent[p]
    l_old = lt[p - n]
    unlink(s, topo)
    if pp >= 0:
        # s takes p's place among pp's children
        unlink(p, topo)
        link(s, pp, topo)
    else:
        parent[s] = -1
        st.root[0] = s
    parent[p] = UNUSED_SLOT
    lt[p - n] = 0.0
    nb[p] = 0
    free[free_top[0]] = p
    free_top[0] += 1
    return EDGE, s, l_old, p, pp


@njit_exact_numpy
def attach(v, mode, anchor, l_new, slot, st):
    """Hang the detached subtree ``v`` at ``anchor``: as a child of the node, or under the
    new node ``slot`` at ``l_new`` on the edge above it. Returns the lowest node whose
    message changed."""
    topo, lt, n = st.topo, st.lt, st.n
    parent = topo.parent
    first = topo.first
    nxt = topo.next
    prv = topo.prev
    nch = topo.n_children
    nb = topo.n_below
    if mode == NODE:
        link(v, anchor, topo)
        add_leaf_count(anchor, nb[v], topo)
        return anchor
    w = slot
    pa = parent[anchor]
    first[w] = -1
    nch[w] = 0
    nb[w] = 0
    if pa >= 0:
        unlink(anchor, topo)
        link(w, pa, topo)
    else:
        parent[w] = -1
        prv[w] = -1
        nxt[w] = -1
        st.root[0] = w
    link(anchor, w, topo)
    link(v, w, topo)
    lt[w - n] = l_new
    nb[w] = nb[anchor]
    add_leaf_count(w, nb[v], topo)
    return w


@njit_exact_numpy
def new_journal(nn, d):
    """Empty :class:`Journal` over ``nn`` node slots in ``d`` dimensions."""
    return Journal(np.zeros(1, dtype=np.int64), np.empty(nn, dtype=np.int64),
                   np.empty((nn, d)), np.empty((nn, 3)), np.full(nn, -1, dtype=np.int64))


@njit_exact_numpy
def journal(v, jn, stamp, mu, s, ll, lp):
    """Save node ``v``'s cached values once per move (restored if the move is rejected)."""
    mark = jn.mark
    if v < 0 or mark[v] == stamp:
        return
    mark[v] = stamp
    k = jn.length[0]
    jn.nodes[k] = v
    messages = jn.messages
    for j in range(mu.shape[1]):
        messages[k, j] = mu[v, j]
    scalars = jn.scalars
    scalars[k, 0] = s[v]
    scalars[k, 1] = ll[v]
    scalars[k, 2] = lp[v]
    jn.length[0] = k + 1


@njit_exact_numpy
def restore(jn, st):
    mu = st.mu
    for k in range(jn.length[0] - 1, -1, -1):
        v = jn.nodes[k]
        for j in range(mu.shape[1]):
            mu[v, j] = jn.messages[k, j]
        st.s[v] = jn.scalars[k, 0]
        st.ll[v] = jn.scalars[k, 1]
        st.lp[v] = jn.scalars[k, 2]
    jn.length[0] = 0


@njit_exact_numpy
def refresh_path(u, st, prior_too, acc, jn, stamp, use_journal):
    """Recompute the likelihood terms (and, with ``prior_too``, the prior terms) of ``u``
    and its ancestors; add the changes to ``acc = [d log prior, d log lik]`` (saving the
    old values in ``jn`` under ``stamp`` first, with ``use_journal``)."""
    topo, lt, n, mu, s, rr, ll, lp = st.topo, st.lt, st.n, st.mu, st.s, st.rr, st.ll, st.lp
    sigma2, tables, c = st.sigma2, st.tables, st.c
    parent = topo.parent
    while u >= 0:
        if use_journal:
            journal(u, jn, stamp, mu, s, ll, lp)
        new = node_likelihood(u, topo, lt, n, mu, s, rr, sigma2)
        acc[1] += new - ll[u]
        ll[u] = new
        if prior_too:
            newp = node_prior(u, topo, lt, n, tables, c)
            acc[0] += newp - lp[u]
            lp[u] = newp
        u = parent[u]


@njit_exact_numpy
def refresh_prior(v, st, acc, jn, stamp, use_journal):
    if v < st.n:
        return
    lp = st.lp
    if use_journal:
        journal(v, jn, stamp, st.mu, st.s, st.ll, lp)
    newp = node_prior(v, st.topo, st.lt, st.n, st.tables, st.c)
    acc[0] += newp - lp[v]
    lp[v] = newp


@njit_exact_numpy
def clear_node(v, st, acc, jn, stamp):
    """A freed slot contributes nothing."""
    ll, lp = st.ll, st.lp
    journal(v, jn, stamp, st.mu, st.s, ll, lp)
    acc[0] -= lp[v]
    acc[1] -= ll[v]
    lp[v] = 0.0
    ll[v] = 0.0


@njit_exact_numpy
def full_state(parent, lt, X, c, theta, alpha, sigma2, beta):
    """The :class:`PYDTState` of the valid tree ``(parent, lt)`` (arrays kept, edited in
    place by the moves) for the target at inverse temperature ``beta``: linked children,
    leaf counts, free slots and every node's cached message and terms."""
    n, d = X.shape
    nn = parent.shape[0]
    tables = prior_tables(n, theta, alpha)
    structure = diffusion_tree_structure(parent, lt, n)
    order = structure[1]
    n_below = structure[4]
    first = np.full(nn, -1, dtype=np.int64)
    nxt = np.full(nn, -1, dtype=np.int64)
    prv = np.full(nn, -1, dtype=np.int64)
    nch = np.zeros(nn, dtype=np.int64)
    nb = n_below.copy()
    topo = Topology(parent, first, nxt, prv, nch, nb)
    for q in range(order.shape[0] - 1, 0, -1):
        v = order[q]
        link(v, parent[v], topo)
    mu = np.zeros((nn, d))
    for i in range(n):
        for j in range(d):
            mu[i, j] = X[i, j]
    s = np.zeros(nn)
    rr = np.zeros(nn)
    ll = np.zeros(nn)
    lp = np.zeros(nn)
    free, free_top, n_internal = free_slots(parent, n)
    st = PYDTState(topo, lt, mu, s, rr, ll, lp, np.array([order[0]]), free, free_top,
                   np.array([n_internal]), n, c, theta, alpha, sigma2, tables, beta)
    for q in range(order.shape[0] - 1, -1, -1):
        v = order[q]
        if v >= n:
            ll[v] = node_likelihood(v, topo, lt, n, mu, s, rr, sigma2)
            lp[v] = node_prior(v, topo, lt, n, tables, c)
    return st


@njit_exact_numpy
def cached_total(st):
    """(log prior, log likelihood) of the tree from the cached terms."""
    parent = st.topo.parent
    n, ll, lp = st.n, st.ll, st.lp
    tp = 0.0
    tl = 0.0
    for v in range(n, parent.shape[0]):
        if parent[v] != UNUSED_SLOT:
            tp += lp[v]
            tl += ll[v]
    return tp, tl + state_root_term(st, st.root[0])


@njit_exact_numpy
def state_root_term(st, root):
    """:func:`root_term` at node ``root`` of the tree of ``st``."""
    return root_term(root, st.lt, st.n, st.mu, st.s, st.sigma2)
