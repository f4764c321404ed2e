"""One MCMC sweep of the Pitman-Yor diffusion tree sampler in Numba, with cached upward
messages updated along root paths (Knowles 2012 §4.6.1; digest ``knowles-nsfa-pydt.md``
§3.8-3.9).

The log joint density of :mod:`custom_ops.pydt` is a sum of one term per internal node
plus a root term:

* likelihood ``ll[v]``: what node ``v`` adds to ``log p(X | tree, sigma2)`` when it
  combines the Gaussian messages ``N(x_v; mu_w, s_w + sigma2 (t_w - t_v))`` of its
  children ``w`` (digest §3.9); it depends on ``v``'s time, its children's times and
  their cached messages ``(mu_w, s_w)``;
* prior ``lp[v]``: Eq. 4.23 times the edge factor of Eq. 4.25 of the edge into ``v``; it
  depends on ``v``'s time, its parent's time and the leaf counts of ``v`` and of its
  children.

A detach-reattach move or a new divergence time therefore changes only the terms of the
nodes on the path(s) from the edited node(s) to the root (plus the edited nodes'
children's edge factors): each proposal costs O(depth x children x D) instead of the
O(n D) full recursion, and one Numba call runs the whole sweep (no Python per move).
:func:`custom_ops.pydt.pydt_forward` stays the reference: ``check=True`` compares the
cached total with it after every update.

The moves are exactly those of ``inference.gibbs.pydt`` (its module docstring): the
subtree root drawn uniformly among the non-root nodes, a new position drawn from the
generative process on the rest (restarted until it diverges before the subtree's root,
at most 200 tries, else the move is void), the full Metropolis-Hastings ratio with the
proposal densities and the ratio of the numbers of subtrees; then every divergence time
slice-sampled (Neal 2003, stepping out and shrinkage) in ``log(1 - t)`` with its
Jacobian, in a random order. The ``exact_ratio``, ``proposal_ratio`` and
``time_jacobian`` flags exist only for the planted-bug twins of the tests.

Random numbers come from a NumPy ``Generator`` passed in (Numba draws from its bit
generator, so the caller's generator advances and a seed reproduces a chain).
Internal node slots: a move that frees a slot pushes it on a stack and a new node takes
the top one; slot numbers are labels the density does not depend on.

Why one module of ~930 lines: the sweep, its journal/undo of cached terms, the slice
sampler and the greedy build all read and write the same cache arrays through the same
private helpers (``_refresh_path``, ``_journal``, ``_restore``); splitting them would make
those helpers public cross-module API for Numba kernels only. A split of the greedy
build (``pydt_greedy``) into its own module is the planned next step (issue #9).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from custom_ops.diffusion_tree_kernels import diffusion_tree_structure
from custom_ops.pydt import h_table, parameter_code, pydt_forward

__all__ = ["pydt_sweep", "sweep_inputs_valid"]

# error_model="numpy": a zero or infinite variance (sigma2 or the times at an extreme)
# gives an infinite or NaN density, which the samplers reject, instead of raising
_jit = numba.njit(cache=True, error_model="numpy")
_LOG_2PI = math.log(2.0 * math.pi)
# the floor of custom_ops.pydt: a zero-length leaf edge would give a zero variance
_MIN_VARIANCE = 1e-300
_MAX_TRIES = 200
_MAX_SHRINK = 200
_MAX_STEPS = 50
_EDGE = 0
_NODE = 1
_FAIL = 2


@_jit
def _lval(lt, n, v):
    """log(1 - t_v); -inf at a leaf (t = 1)."""
    if v < n:
        return -np.inf
    return lt[v - n]


@_jit
def _edge_length(lt, n, u, w):
    """t_w - t_u without cancellation (as custom_ops.pydt._edge_length)."""
    eu = math.exp(lt[u - n])
    if w < n:
        return eu
    return -eu * math.expm1(lt[w - n] - lt[u - n])


@_jit
def _node_lik(v, topo, lt, n, mu, s, rr, sigma2):
    """Recompute the upward message (mu[v], s[v]) of internal node ``v`` from its
    children's and return its likelihood term (digest §3.9)."""
    first = topo[1]
    nxt = topo[2]
    nch = topo[4]
    d = mu.shape[1]
    prec = 0.0
    sum_log_r = 0.0
    for j in range(d):
        mu[v, j] = 0.0
    w = first[v]
    while w >= 0:
        r = max(s[w] + sigma2 * _edge_length(lt, n, v, w), _MIN_VARIANCE)
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


@_jit
def _root_term(root, lt, n, mu, s, sigma2):
    """log N(0; mu_root, s_root + sigma2 t_root) summed over the dimensions."""
    d = mu.shape[1]
    t_root = -math.expm1(_lval(lt, n, root))
    r = max(s[root] + sigma2 * t_root, _MIN_VARIANCE)
    q = 0.0
    for j in range(d):
        q += mu[root, j] * mu[root, j]
    return -0.5 * d * (_LOG_2PI + math.log(r)) - 0.5 * q / r


@_jit
def _node_prior(v, topo, lt, n, tables, c):
    """Eq. 4.23 at internal node ``v`` times the Eq. 4.25 factor of the edge into it."""
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
    nch = topo[4]
    nb = topo[5]
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


@_jit
def _tables(n, theta, alpha):
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


# ----------------------------------------------------------------------- structure edits
@_jit
def _unlink(v, topo):
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
    prv = topo[3]
    nch = topo[4]
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


@_jit
def _link(v, p, topo):
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
    prv = topo[3]
    nch = topo[4]
    parent[v] = p
    prv[v] = -1
    nxt[v] = first[p]
    if first[p] >= 0:
        prv[first[p]] = v
    first[p] = v
    nch[p] += 1


@_jit
def _add_count(u, k, topo):
    parent = topo[0]
    nb = topo[5]
    while u >= 0:
        nb[u] += k
        u = parent[u]


@_jit
def _detach(v, topo, lt, n, root_box, free, free_top):
    """Cut the subtree under ``v`` off (as DiffusionTree.detach). Returns ``(mode, anchor,
    l_old, freed_slot, start)``: where it was, the slot freed (or -1) and the lowest
    node whose message changed (-1 if only the root changed)."""
    parent = topo[0]
    first = topo[1]
    nch = topo[4]
    nb = topo[5]
    p = parent[v]
    _unlink(v, topo)
    parent[v] = -3
    _add_count(p, -nb[v], topo)
    if nch[p] >= 2:
        return _NODE, p, math.nan, -1, p
    s = first[p]
    pp = parent[p]
    l_old = lt[p - n]
    _unlink(s, topo)
    if pp >= 0:
        # s takes p's place among pp's children
        _unlink(p, topo)
        _link(s, pp, topo)
    else:
        parent[s] = -1
        root_box[0] = s
    parent[p] = -2
    lt[p - n] = 0.0
    nb[p] = 0
    free[free_top[0]] = p
    free_top[0] += 1
    return _EDGE, s, l_old, p, pp


@_jit
def _attach(v, mode, anchor, l_new, slot, topo, lt, n, root_box):
    """Hang the detached subtree ``v`` at ``anchor``: as a child of the node, or under the
    new node ``slot`` at ``l_new`` on the edge above it. Returns the lowest node whose
    message changed."""
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
    prv = topo[3]
    nch = topo[4]
    nb = topo[5]
    if mode == _NODE:
        _link(v, anchor, topo)
        _add_count(anchor, nb[v], topo)
        return anchor
    w = slot
    pa = parent[anchor]
    first[w] = -1
    nch[w] = 0
    nb[w] = 0
    if pa >= 0:
        _unlink(anchor, topo)
        _link(w, pa, topo)
    else:
        parent[w] = -1
        prv[w] = -1
        nxt[w] = -1
        root_box[0] = w
    _link(anchor, w, topo)
    _link(v, w, topo)
    lt[w - n] = l_new
    nb[w] = nb[anchor]
    _add_count(w, nb[v], topo)
    return w


# ----------------------------------------------------------------------- proposal
@_jit
def _sample_attach(rng, root, topo, lt, n, l_limit, c, theta, alpha, rate):
    """The generative process for one new point on the tree under ``root`` (Eqs.
    4.9-4.11), restarted until it diverges before ``log(1 - t) = l_limit``; as
    pp_models.pydt.attach.sample_attach. Returns ``(mode, anchor, log1m_t)``."""
    first = topo[1]
    nxt = topo[2]
    nch = topo[4]
    nb = topo[5]
    u_limit = -l_limit
    for _ in range(_MAX_TRIES):
        v = root
        u_top = 0.0
        while True:
            m = nb[v]
            u_d = u_top + rng.exponential() / (c * rate[m])
            u_v = -_lval(lt, n, v)
            if u_d < u_v:
                if u_d >= u_limit:
                    break
                return _EDGE, v, -u_d
            if u_v >= u_limit:
                break
            x = rng.random() * (m + theta)
            acc = theta + alpha * nch[v]
            if x < acc:
                return _NODE, v, math.nan
            w = first[v]
            chosen = w
            while w >= 0:
                acc += nb[w] - alpha
                chosen = w
                if x < acc:
                    break
                w = nxt[w]
            u_top = u_v
            v = chosen
    return _FAIL, -1, math.nan


@_jit
def _log_attach_density(root, topo, lt, n, mode, anchor, l_attach, c, theta, alpha,
                        rate, path):
    """log density (in t) of the generative process placing one point at ``(mode,
    anchor, l_attach)``; as pp_models.pydt.attach.log_attach_density."""
    parent = topo[0]
    nch = topo[4]
    nb = topo[5]
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
        if j == 0 and mode == _EDGE:
            u_d = -l_attach
            return total - c * (u_d - u_top) * g + math.log(c * g) + u_d
        u_w = -_lval(lt, n, w)
        total -= c * (u_w - u_top) * g
        if j == 0:
            return total + math.log((theta + alpha * nch[w]) / (m + theta))
        total += math.log((nb[path[j - 1]] - alpha) / (m + theta))
        u_top = u_w
    return math.nan


# ----------------------------------------------------------------------- cache updates
@_jit
def _journal(v, jr, jnodes, jmu, jsc, mark, stamp, mu, s, ll, lp):
    """Save node ``v``'s cached values once per move (restored if the move is rejected)."""
    if v < 0 or mark[v] == stamp:
        return
    mark[v] = stamp
    k = jr[0]
    jnodes[k] = v
    for j in range(mu.shape[1]):
        jmu[k, j] = mu[v, j]
    jsc[k, 0] = s[v]
    jsc[k, 1] = ll[v]
    jsc[k, 2] = lp[v]
    jr[0] = k + 1


@_jit
def _restore(jr, jnodes, jmu, jsc, mu, s, ll, lp):
    for k in range(jr[0] - 1, -1, -1):
        v = jnodes[k]
        for j in range(mu.shape[1]):
            mu[v, j] = jmu[k, j]
        s[v] = jsc[k, 0]
        ll[v] = jsc[k, 1]
        lp[v] = jsc[k, 2]
    jr[0] = 0


@_jit
def _refresh_path(u, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, prior_too, acc,
                  jr, jnodes, jmu, jsc, mark, stamp, use_journal):
    """Recompute the likelihood terms (and, with ``prior_too``, the prior terms) of ``u``
    and its ancestors; add the changes to ``acc = [d log prior, d log lik]``."""
    parent = topo[0]
    while u >= 0:
        if use_journal:
            _journal(u, jr, jnodes, jmu, jsc, mark, stamp, mu, s, ll, lp)
        new = _node_lik(u, topo, lt, n, mu, s, rr, sigma2)
        acc[1] += new - ll[u]
        ll[u] = new
        if prior_too:
            newp = _node_prior(u, topo, lt, n, tables, c)
            acc[0] += newp - lp[u]
            lp[u] = newp
        u = parent[u]


@_jit
def _refresh_prior(v, topo, lt, n, mu, s, ll, lp, tables, c, acc, jr, jnodes, jmu, jsc,
                   mark, stamp, use_journal):
    if v < n:
        return
    if use_journal:
        _journal(v, jr, jnodes, jmu, jsc, mark, stamp, mu, s, ll, lp)
    newp = _node_prior(v, topo, lt, n, tables, c)
    acc[0] += newp - lp[v]
    lp[v] = newp


@_jit
def _clear_node(v, n, mu, s, ll, lp, acc, jr, jnodes, jmu, jsc, mark, stamp):
    """A freed slot contributes nothing."""
    _journal(v, jr, jnodes, jmu, jsc, mark, stamp, mu, s, ll, lp)
    acc[0] -= lp[v]
    acc[1] -= ll[v]
    lp[v] = 0.0
    ll[v] = 0.0


# ----------------------------------------------------------------------- the sweep
@_jit
def _full_state(parent, lt, X, c, sigma2, tables):
    """Linked children, leaf counts and every node's cached message and terms."""
    n, d = X.shape
    nn = parent.shape[0]
    structure = diffusion_tree_structure(parent, lt, n)
    order = structure[1]
    n_below = structure[4]
    first = np.full(nn, -1, dtype=np.int64)
    nxt = np.full(nn, -1, dtype=np.int64)
    prv = np.full(nn, -1, dtype=np.int64)
    nch = np.zeros(nn, dtype=np.int64)
    nb = n_below.copy()
    topo = (parent, first, nxt, prv, nch, nb)
    for q in range(order.shape[0] - 1, 0, -1):
        v = order[q]
        _link(v, parent[v], topo)
    mu = np.zeros((nn, d))
    for i in range(n):
        for j in range(d):
            mu[i, j] = X[i, j]
    s = np.zeros(nn)
    rr = np.zeros(nn)
    ll = np.zeros(nn)
    lp = np.zeros(nn)
    for q in range(order.shape[0] - 1, -1, -1):
        v = order[q]
        if v >= n:
            ll[v] = _node_lik(v, topo, lt, n, mu, s, rr, sigma2)
            lp[v] = _node_prior(v, topo, lt, n, tables, c)
    root = order[0]
    return topo, mu, s, rr, ll, lp, root


@_jit
def _slice_eval(x, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, root_box, lo, hi,
                dummy_i, dummy_f):
    """Move the caches to ``log(1 - t_v) = x`` and return the sum of the terms that
    depend on it: the edge factors of ``v``'s internal children, ``v``'s prior and
    likelihood terms, its ancestors' likelihood terms and the root term (-inf, with
    nothing changed, outside the open interval (lo, hi))."""
    if not (lo < x < hi):
        return -np.inf
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
    lt[v - n] = x
    total = 0.0
    w = first[v]
    while w >= 0:
        if w >= n:
            lp[w] = _node_prior(w, topo, lt, n, tables, c)
            total += lp[w]
        w = nxt[w]
    lp[v] = _node_prior(v, topo, lt, n, tables, c)
    total += lp[v]
    u = v
    while u >= 0:
        ll[u] = _node_lik(u, topo, lt, n, mu, s, rr, sigma2)
        total += ll[u]
        u = parent[u]
    return total + _root_term(root_box[0], lt, n, mu, s, sigma2)


@_jit
def _check_value(value, lt, parent, check_X, c, theta, alpha, sigma2, errs):
    """With ``check``: compare a log density the sampler is about to use with the full
    recursion on the current tree (largest relative error kept in ``errs[0]``)."""
    if check_X.shape[0] == 0 or not math.isfinite(value):
        return value
    ref_p, ref_l = pydt_forward(parent, lt, check_X, c, theta, alpha, sigma2)
    err = abs(ref_p + ref_l - value) / (1.0 + abs(ref_p) + abs(ref_l))
    if not err <= errs[0]:
        errs[0] = err
    return value


@_jit
def _slice_time(rng, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, tot,
                root_box, jac, dummy_i, dummy_f, check_X, theta, alpha, errs):
    """Slice-sample log(1 - t_v) as inference.gibbs.pydt.slice_time (Neal 2003). The
    target at ``x`` is ``tot - base + _slice_eval(x) + jac x`` with ``base`` the changed
    terms at the current value, so repeated evaluations do not accumulate rounding."""
    parent = topo[0]
    first = topo[1]
    nxt = topo[2]
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
    u = v
    while u >= 0:
        base += ll[u]
        u = parent[u]
    base += _root_term(root_box[0], lt, n, mu, s, sigma2)
    rest = tot[0] + tot[1] - base
    x0 = lt[v - n]
    f0 = tot[0] + tot[1] + jac * x0
    if not math.isfinite(f0):
        return
    log_y = f0 + math.log(rng.random())
    if math.isfinite(lo):
        left = lo
        right = hi
    else:
        width = 1.0 + abs(hi)
        left = x0 - width * rng.random()
        right = min(left + width, hi)
        j = int(_MAX_STEPS * rng.random())
        kk = _MAX_STEPS - 1 - j
        while j > 0 and jac * left + _check_value(rest + _slice_eval(
            left, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, root_box, lo, hi,
            dummy_i, dummy_f,
        ), lt, parent, check_X, c, theta, alpha, sigma2, errs) > log_y:
            left -= width
            j -= 1
        while kk > 0 and right < hi and jac * right + _check_value(rest + _slice_eval(
            right, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, root_box, lo, hi,
            dummy_i, dummy_f,
        ), lt, parent, check_X, c, theta, alpha, sigma2, errs) > log_y:
            right = min(right + width, hi)
            kk -= 1
    for _ in range(_MAX_SHRINK):
        x1 = left + (right - left) * rng.random()
        if not lo < x1 < hi:
            continue
        f1 = jac * x1 + _check_value(
            rest + _slice_eval(x1, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c,
                               root_box, lo, hi, dummy_i, dummy_f),
            lt, parent, check_X, c, theta, alpha, sigma2, errs)
        if f1 > log_y:
            return
        if x1 < x0:
            left = x1
        else:
            right = x1
    # the bracket collapsed in floating point without hitting the slice: stay put
    _slice_eval(x0, v, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, root_box, lo, hi,
                dummy_i, dummy_f)


@_jit
def _cached_total(topo, n, ll, lp, root, lt, mu, s, sigma2):
    parent = topo[0]
    tp = 0.0
    tl = 0.0
    for v in range(n, parent.shape[0]):
        if parent[v] != -2:
            tp += lp[v]
            tl += ll[v]
    return tp, tl + _root_term(root, lt, n, mu, s, sigma2)


@_jit
def pydt_sweep(rng, parent, log1m_t, X, c, theta, alpha, sigma2, n_moves, slice_times,
               exact_ratio, proposal_ratio, time_jacobian, check):
    """One sweep of the PYDT tree sampler (module docstring), in place on ``parent`` and
    ``log1m_t`` (a valid tree; see :mod:`custom_ops.diffusion_tree_kernels`).

    Parameters
    ----------
    rng : numpy.random.Generator
    parent, log1m_t : int64 (2n - 1,), float64 (n - 1,) arrays, edited in place
    X : (n, D) float64 array
    c, theta, alpha, sigma2 : float
    n_moves : int
        Detach-reattach proposals; negative means ``2 n - 2``, the number of subtrees of
        a binary tree. The count must not depend on the current tree: repeating an
        invariant move the current number of subtrees times (``n + #internal - 1``, the
        first session's sweep) is not invariant, and it drew about 1 % too few
        internal nodes at n = 4-5 (z = -11 to -15 over 300 000 sweeps of the prior).
    slice_times : bool
        Slice-sample every divergence time after the moves.
    exact_ratio, proposal_ratio, time_jacobian : bool
        True for the correct sampler (False only in the tests' planted-bug twins).
    check : bool
        Compare with :func:`custom_ops.pydt.pydt_forward` (O(n D) each; for tests): the
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
    tables = _tables(n, theta, alpha)
    rate = tables[4]
    topo, mu, s, rr, ll, lp, root = _full_state(parent, log1m_t, X, c, sigma2, tables)
    lt = log1m_t
    root_box = np.array([root])
    free = np.empty(nn, dtype=np.int64)
    free_top = np.zeros(1, dtype=np.int64)
    n_internal = 0
    for v in range(nn - 1, n - 1, -1):
        if parent[v] == -2:
            free[free_top[0]] = v
            free_top[0] += 1
        else:
            n_internal += 1
    tot = np.zeros(2)  # log prior, log likelihood
    tot[0], tot[1] = _cached_total(topo, n, ll, lp, root, lt, mu, s, sigma2)
    # journal of the cached values a move changes
    jr = np.zeros(1, dtype=np.int64)
    jnodes = np.empty(nn, dtype=np.int64)
    jmu = np.empty((nn, d))
    jsc = np.empty((nn, 3))
    mark = np.full(nn, -1, dtype=np.int64)
    path = np.empty(nn, dtype=np.int64)
    dummy_i = np.zeros(0, dtype=np.int64)
    dummy_f = np.zeros((0, 0))
    max_err = 0.0
    errs = np.zeros(1)
    check_X = X if check else np.zeros((0, d))
    accepted = 0
    if n_moves < 0:
        n_moves = 2 * n - 2
    acc = np.zeros(2)
    for move in range(n_moves):
        n_before = n + n_internal - 1
        while True:
            v = int(rng.random() * nn)
            if v < nn and parent[v] >= 0:
                break
        l_limit = _lval(lt, n, v)
        acc[0] = 0.0
        acc[1] = 0.0
        jr[0] = 0
        root_before = root_box[0]
        root_term_before = _root_term(root_before, lt, n, mu, s, sigma2)
        if check:
            ref0_p, ref0_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
        # cut: the old parent's messages (or the new root's) change
        mode0, anchor0, l_old, freed, start = _detach(v, topo, lt, n, root_box, free,
                                                      free_top)
        if freed >= 0:
            _clear_node(freed, n, mu, s, ll, lp, acc, jr, jnodes, jmu, jsc, mark, move)
            _refresh_prior(anchor0, topo, lt, n, mu, s, ll, lp, tables, c, acc, jr,
                           jnodes, jmu, jsc, mark, move, True)
        _refresh_path(start, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, True, acc,
                      jr, jnodes, jmu, jsc, mark, move, True)
        _journal(v, jr, jnodes, jmu, jsc, mark, move, mu, s, ll, lp)
        if v >= n:
            acc[0] -= lp[v]
            lp[v] = 0.0
        mode1, anchor1, l_new = _sample_attach(rng, root_box[0], topo, lt, n, l_limit, c,
                                               theta, alpha, rate)
        log_ratio = -np.inf
        slot = -1
        if mode1 != _FAIL:
            log_q_new = _log_attach_density(root_box[0], topo, lt, n, mode1, anchor1,
                                            l_new, c, theta, alpha, rate, path)
            log_q_old = _log_attach_density(root_box[0], topo, lt, n, mode0, anchor0,
                                            l_old, c, theta, alpha, rate, path)
            if mode1 == _EDGE:
                free_top[0] -= 1
                slot = free[free_top[0]]
                _journal(slot, jr, jnodes, jmu, jsc, mark, move, mu, s, ll, lp)
            start = _attach(v, mode1, anchor1, l_new, slot, topo, lt, n, root_box)
            if mode1 == _EDGE:
                _refresh_prior(anchor1, topo, lt, n, mu, s, ll, lp, tables, c, acc, jr,
                               jnodes, jmu, jsc, mark, move, True)
            _refresh_prior(v, topo, lt, n, mu, s, ll, lp, tables, c, acc, jr, jnodes, jmu,
                           jsc, mark, move, True)
            _refresh_path(start, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, True,
                          acc, jr, jnodes, jmu, jsc, mark, move, True)
            new_root_term = _root_term(root_box[0], lt, n, mu, s, sigma2)
            acc[1] += new_root_term - root_term_before
            n_after = n + n_internal - 1 + (1 if mode1 == _EDGE else 0) - (
                1 if freed >= 0 else 0)
            if exact_ratio:
                log_ratio = acc[0] + acc[1] + math.log(n_before) - math.log(n_after)
                if proposal_ratio:
                    log_ratio += log_q_old - log_q_new
            else:
                # the prior-as-proposal shortcut (planted bug): likelihood ratio alone
                log_ratio = acc[1]
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
        if mode1 != _FAIL and math.log(rng.random()) < log_ratio:
            accepted += 1
            tot[0], tot[1] = _cached_total(topo, n, ll, lp, root_box[0], lt, mu, s, sigma2)
            n_internal += (1 if mode1 == _EDGE else 0) - (1 if freed >= 0 else 0)
        else:
            # undo the structure edits (LIFO slots), then the cached values
            if mode1 != _FAIL:
                _detach(v, topo, lt, n, root_box, free, free_top)
            slot0 = -1
            if mode0 == _EDGE:
                free_top[0] -= 1
                slot0 = free[free_top[0]]
            _attach(v, mode0, anchor0, l_old, slot0, topo, lt, n, root_box)
            _restore(jr, jnodes, jmu, jsc, mu, s, ll, lp)
            root_box[0] = root_before
        if check:
            ref_p, ref_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
            err = (abs(ref_p - tot[0]) / (1.0 + abs(ref_p))
                   + abs(ref_l - tot[1]) / (1.0 + abs(ref_l)))
            if not err <= max_err:
                max_err = err
    if slice_times:
        jac = 1.0 if time_jacobian else 0.0
        internal = np.empty(n_internal, dtype=np.int64)
        k = 0
        for v in range(n, nn):
            if parent[v] != -2:
                internal[k] = v
                k += 1
        for i in range(n_internal - 1, 0, -1):
            j = int(rng.random() * (i + 1))
            internal[i], internal[j] = internal[j], internal[i]
        for i in range(n_internal):
            _slice_time(rng, internal[i], topo, lt, n, mu, s, rr, ll, lp, sigma2, tables,
                        c, tot, root_box, jac, dummy_i, dummy_f, check_X, theta, alpha,
                        errs)
            # the total from the cached terms (O(n) scalars), not a running sum
            tot[0], tot[1] = _cached_total(topo, n, ll, lp, root_box[0], lt, mu, s, sigma2)
            if check:
                ref_p, ref_l = pydt_forward(parent, lt, X, c, theta, alpha, sigma2)
                err = (abs(ref_p - tot[0]) / (1.0 + abs(ref_p))
                   + abs(ref_l - tot[1]) / (1.0 + abs(ref_l)))
                if not err <= max_err:
                    max_err = err
    for v in range(n, nn):
        if parent[v] == -2:
            lt[v - n] = 0.0
    tp, tl = _cached_total(topo, n, ll, lp, root_box[0], lt, mu, s, sigma2)
    return accepted, tp, tl, max(max_err, errs[0])


def sweep_inputs_valid(parent, log1m_t, X, c, theta, alpha, sigma2):
    """Whether :func:`pydt_sweep` may run: parameters in range and a valid tree (O(n))."""
    return (parameter_code(float(c), float(theta), float(alpha), float(sigma2)) == 0
            and diffusion_tree_structure(parent, log1m_t, X.shape[0])[0] == 0)


# ----------------------------------------------------------------------- greedy build
@_jit
def _greedy_try(x, mode, anchor, l_new, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c,
                root_box, free, free_top, jr, jnodes, jmu, jsc, mark, stamp, keep):
    """Attach leaf ``x`` at a candidate position and return the change of the log joint;
    undone unless ``keep``."""
    root_before = root_box[0]
    root_term_before = _root_term(root_before, lt, n, mu, s, sigma2)
    acc = np.zeros(2)
    jr[0] = 0
    slot = -1
    if mode == _EDGE:
        free_top[0] -= 1
        slot = free[free_top[0]]
        _journal(slot, jr, jnodes, jmu, jsc, mark, stamp, mu, s, ll, lp)
    start = _attach(x, mode, anchor, l_new, slot, topo, lt, n, root_box)
    if mode == _EDGE:
        _refresh_prior(anchor, topo, lt, n, mu, s, ll, lp, tables, c, acc, jr, jnodes, jmu,
                       jsc, mark, stamp, True)
    _refresh_path(start, topo, lt, n, mu, s, rr, ll, lp, sigma2, tables, c, True, acc, jr,
                  jnodes, jmu, jsc, mark, stamp, True)
    delta = acc[0] + acc[1] + _root_term(root_box[0], lt, n, mu, s, sigma2) - root_term_before
    if not keep:
        _detach(x, topo, lt, n, root_box, free, free_top)
        _restore(jr, jnodes, jmu, jsc, mu, s, ll, lp)
        root_box[0] = root_before
    jr[0] = 0
    return delta


@_jit
def pydt_greedy(parent, log1m_t, X, order, c, theta, alpha, sigma2):
    """Greedy sequential build (Knowles 2012 §7.5.1) as pp_models.pydt.greedy.greedy
    documents it, with each candidate scored from the cached messages in
    O(depth x children x D) instead of by the full recursion.

    Leaves are added in ``order``; leaf ``order[k]`` goes to the best of: the edge above
    each node on the path from the nearest placed leaf (Euclidean) to the root, at the
    midpoint in log(1 - t) of the edge (one unit above a leaf), and each internal node
    on that path; the first best wins ties. ``parent`` (2n - 1) and ``log1m_t`` (n - 1)
    are written. Returns the number of candidates scored, or -1 if every candidate of
    some leaf had zero density.
    """
    n, d = X.shape
    nn = 2 * n - 1
    tables = _tables(n, theta, alpha)
    for v in range(nn):
        parent[v] = -2 if v >= n else -3
    for k in range(n - 1):
        log1m_t[k] = 0.0
    first = np.full(nn, -1, dtype=np.int64)
    nxt = np.full(nn, -1, dtype=np.int64)
    prv = np.full(nn, -1, dtype=np.int64)
    nch = np.zeros(nn, dtype=np.int64)
    nb = np.zeros(nn, dtype=np.int64)
    nb[:n] = 1
    topo = (parent, first, nxt, prv, nch, nb)
    mu = np.zeros((nn, d))
    mu[:n] = X
    s = np.zeros(nn)
    rr = np.zeros(nn)
    ll = np.zeros(nn)
    lp = np.zeros(nn)
    free = np.empty(nn, dtype=np.int64)
    free_top = np.zeros(1, dtype=np.int64)
    for v in range(nn - 1, n - 1, -1):
        free[free_top[0]] = v
        free_top[0] += 1
    jr = np.zeros(1, dtype=np.int64)
    jnodes = np.empty(nn, dtype=np.int64)
    jmu = np.empty((nn, d))
    jsc = np.empty((nn, 3))
    mark = np.full(nn, -1, dtype=np.int64)
    path = np.empty(nn, dtype=np.int64)
    # two leaves under a root halfway in log(1 - t) of their expected divergence
    free_top[0] -= 1
    root = free[free_top[0]]
    parent[root] = -1
    _link(order[0], root, topo)
    _link(order[1], root, topo)
    nb[root] = 2
    log1m_t[root - n] = -math.log(2.0)
    ll[root] = _node_lik(root, topo, log1m_t, n, mu, s, rr, sigma2)
    lp[root] = _node_prior(root, topo, log1m_t, n, tables, c)
    root_box = np.array([root])
    stamp = 0
    for k in range(2, n):
        x = order[k]
        nearest = order[0]
        best_d = np.inf
        for i in range(k):
            y = order[i]
            dist = 0.0
            for j in range(d):
                diff = X[y, j] - X[x, j]
                dist += diff * diff
            if dist < best_d:
                best_d = dist
                nearest = y
        n_path = 0
        u = nearest
        while u >= 0:
            path[n_path] = u
            n_path += 1
            u = parent[u]
        best = -np.inf
        best_mode = -1
        best_anchor = -1
        best_l = math.nan
        for q in range(n_path):
            v = path[q]
            l_v = _lval(log1m_t, n, v)
            p = parent[v]
            l_p = 0.0 if p < 0 else log1m_t[p - n]
            l_mid = l_p - 1.0 if not math.isfinite(l_v) else 0.5 * (l_p + l_v)
            for mode in (_EDGE, _NODE):
                if mode == _NODE and v < n:
                    continue
                stamp += 1
                val = _greedy_try(x, mode, v, l_mid, topo, log1m_t, n, mu, s, rr, ll, lp,
                                  sigma2, tables, c, root_box, free, free_top, jr, jnodes,
                                  jmu, jsc, mark, stamp, False)
                if val > best:
                    best = val
                    best_mode = mode
                    best_anchor = v
                    best_l = l_mid
        if best_mode < 0:
            return -1
        stamp += 1
        _greedy_try(x, best_mode, best_anchor, best_l, topo, log1m_t, n, mu, s, rr, ll, lp,
                    sigma2, tables, c, root_box, free, free_top, jr, jnodes, jmu, jsc, mark,
                    stamp, True)
    return stamp - (n - 2)
