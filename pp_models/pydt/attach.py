"""Where the generative process puts one new point on an existing tree (Knowles 2012
§4.3, Eqs. 4.9-4.11, 4.16): sampling a position and its density. Used by the
detach-reattach move (``inference.gibbs.pydt``) and the predictive density
(:mod:`pp_models.pydt.outputs`)."""

from __future__ import annotations

import math

import numpy as np

__all__ = ["children_lists", "leaf_counts_from", "log_attach_density", "sample_attach"]


def children_lists(parent):
    kids: list[list[int]] = [[] for _ in range(parent.shape[0])]
    for v, p in enumerate(parent):
        if p >= 0:
            kids[p].append(v)
    return kids


def leaf_counts_from(root, kids, n):
    """Leaves under every node reachable from ``root`` (others stay 0)."""
    counts = np.zeros(len(kids), dtype=np.int64)
    order = [root]
    for v in order:
        order.extend(kids[v])
    for v in reversed(order):
        counts[v] = 1 if v < n else sum(counts[w] for w in kids[v])
    return counts


def _rate(m, theta, alpha):
    """Gamma(m - alpha) / Gamma(m + 1 + theta): divergence rate per unit A(t) (Eq. 4.9)."""
    return math.exp(math.lgamma(m - alpha) - math.lgamma(m + 1.0 + theta))


def _l(tree, v):
    return -math.inf if v < tree.n_leaves else float(tree.log1m_t[v - tree.n_leaves])


def sample_attach(rng, tree, root, kids, counts, l_limit, *, c, theta, alpha, max_tries=200):
    """Where the generative process places one new point on the tree under ``root``,
    conditioned on diverging before ``log(1 - t) = l_limit`` (restarts); ``None`` when
    ``max_tries`` runs all fail. Returns ``(mode, anchor, log1m_t)``."""
    u_limit = -l_limit
    for _ in range(max_tries):
        v = root
        u_top = 0.0
        while True:
            m = counts[v]
            u_d = u_top + rng.exponential() / (c * _rate(m, theta, alpha))
            u_v = -_l(tree, v)
            if u_d < u_v:
                if u_d >= u_limit:
                    break
                return "edge", v, -u_d
            if u_v >= u_limit:
                break
            x = rng.random() * (m + theta)
            acc = theta + alpha * len(kids[v])
            if x < acc:
                return "node", v, math.nan
            chosen = kids[v][-1]
            for w in kids[v]:
                acc += counts[w] - alpha
                if x < acc:
                    chosen = w
                    break
            u_top = u_v
            v = chosen
    return None


def log_attach_density(tree, root, kids, counts, mode, anchor, l_attach, *, c, theta, alpha):
    """log density (in t) of the generative process placing one new point at the position
    ``(mode, anchor, l_attach)`` of the tree under ``root`` (Eqs. 4.9-4.11, 4.16)."""
    path = [anchor]
    while path[-1] != root:
        path.append(int(tree.parent[path[-1]]))
    path.reverse()
    total = 0.0
    u_top = 0.0
    last = len(path) - 1
    for j, w in enumerate(path):
        m = counts[w]
        g = _rate(m, theta, alpha)
        if j == last and mode == "edge":
            u_d = -l_attach
            return total - c * (u_d - u_top) * g + math.log(c * g) + u_d
        u_w = -_l(tree, w)
        total -= c * (u_w - u_top) * g
        if j == last:
            return total + math.log((theta + alpha * len(kids[w])) / (m + theta))
        total += math.log((counts[path[j + 1]] - alpha) / (m + theta))
        u_top = u_w
    raise AssertionError("unreachable")
