"""Pitman-Yor diffusion tree references: every labelled shape over a few leaves, their
prior probabilities, and the exact posterior's pieces (shapes flattened, the shape's log
probability and the nodes' times from Knowles 2012's Eqs. 4.23-4.25), and the
generative process placing one new point on a tree (:func:`sample_attach`,
:func:`log_attach_density`, on the Python tree), written apart from the kernels except
:func:`shape_probabilities`, which reads the structure probability from
``custom_ops.pydt.ops`` (tested against these enumerations)."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import numpy as np
from scipy import stats
from scipy.special import gammaln

from custom_ops.pydt import ops as pydt_ops
from pp_models.trees import DiffusionTree
from tests.oracles.mixtures import block_partitions

__all__ = [
    "H",
    "all_trees",
    "chi_square_pvalue",
    "flatten",
    "log_attach_density",
    "log_shape_probability",
    "nested_key",
    "nested_to_arrays",
    "node_log_times",
    "sample_attach",
    "shape_key",
    "shape_probabilities",
]


def nested_to_arrays(tree, n):
    """Nested tuples of leaf ids -> (parent, log1m_t) with times spread by depth."""
    parent = np.full(2 * n - 1, -2, dtype=np.int64)
    log1m_t = np.zeros(n - 1)
    nxt = [n]

    def rec(node, p, depth):
        if isinstance(node, int):
            parent[node] = p
            return
        v = nxt[0]
        nxt[0] += 1
        parent[v] = p
        log1m_t[v - n] = -(depth + 1.0)
        for ch in node:
            rec(ch, v, depth + 1)

    rec(tree, -1, 0)
    return parent, log1m_t


def all_trees(leaves):
    """Every rooted tree with labelled leaves and unlabelled, unordered internal nodes of
    >= 2 children (total 4 for n = 3, 26 for n = 4)."""
    if len(leaves) == 1:
        return [leaves[0]]
    out = []
    for part in block_partitions(list(leaves)):
        if len(part) < 2:
            continue
        for combo in itertools.product(*(all_trees(b) for b in part)):
            out.append(tuple(combo))
    return out


def shape_key(tree):
    """The labelled shape of a tree (anything with ``n_leaves`` and ``parent``): the set
    of clades, the leaf sets under its internal nodes."""
    n = tree.n_leaves
    counts = {}
    for leaf in range(n):
        v = int(tree.parent[leaf])
        while v >= 0:
            counts.setdefault(v, set()).add(leaf)
            v = int(tree.parent[v])
    return frozenset(frozenset(s) for s in counts.values())


def nested_key(shape, n):
    """:func:`shape_key` of a tree written as nested tuples of leaf ids."""
    return shape_key(DiffusionTree(*nested_to_arrays(shape, n)))


def shape_probabilities(n, theta, alpha):
    """P(shape | theta, alpha) of every labelled shape over ``n`` leaves, by
    :func:`shape_key`."""
    shapes = all_trees(tuple(range(n)))
    return {nested_key(s, n): math.exp(pydt_ops.log_structure_prob(
        nested_to_arrays(s, n)[0], theta, alpha)) for s in shapes}


def chi_square_pvalue(keys, probs):
    """Pearson's chi-square p-value of the shapes ``keys`` drawn against ``probs``."""
    counts = Counter(keys)
    assert set(counts) <= set(probs)
    support = [k for k, p in probs.items() if p > 0]
    observed = np.array([counts.get(k, 0) for k in support], dtype=float)
    expected = np.array([probs[k] for k in support]) * len(keys)
    return stats.chisquare(observed, expected).pvalue


def _leaves(node):
    return [node] if isinstance(node, int) else [x for ch in node for x in _leaves(ch)]


def flatten(shape, n):
    """Internal nodes in pre-order: parent index (-1 at the root), the leaf counts of
    the children, the leaf count ``m``; and the (n, n) index of each pair's most recent
    common ancestor."""
    parent, counts, ms = [], [], []
    lca = -np.ones((n, n), dtype=int)

    def visit(node, p):
        k = len(parent)
        parent.append(p)
        blocks = [_leaves(ch) for ch in node]
        counts.append([len(b) for b in blocks])
        ms.append(sum(len(b) for b in blocks))
        for a, block_a in enumerate(blocks):
            for b, block_b in enumerate(blocks):
                if a != b:
                    lca[np.ix_(block_a, block_b)] = k
        for ch in node:
            if not isinstance(ch, int):
                visit(ch, k)

    visit(shape, -1)
    return parent, counts, ms, lca


def H(m, theta, alpha):
    """``H_m^{theta, alpha}`` by its sum (Eq. 4.24), elementwise."""
    out = np.zeros(np.broadcast(theta, alpha).shape)
    for i in range(1, m + 1):
        out = out + np.exp(gammaln(i - alpha) - gammaln(i + 1 + theta))
    return out


def log_shape_probability(counts, ms, theta, alpha):
    """log P(shape | theta, alpha): per node, Eq. 4.23 without ``a(t)``, over
    ``H_{m-1}`` (the normaliser of the node's exponential gap, Eq. 4.25)."""
    out = 0.0
    for ns, m in zip(counts, ms, strict=True):
        k = len(ns)
        term = (sum(gammaln(nl - alpha) for nl in ns) - gammaln(m + theta)
                - (k - 1) * gammaln(1 - alpha))
        for j in range(3, k + 1):
            term = term + np.log(theta + (j - 1) * alpha)
        out = out + term - np.log(H(m - 1, theta, alpha))
    return out


def node_log_times(parent, ms, c, theta, alpha, w):
    """``u = -log(1 - t)`` of each internal node from the standardised gaps ``w``."""
    u = np.zeros((*np.shape(w)[:-1], len(parent)))
    for k, (p, m) in enumerate(zip(parent, ms, strict=True)):
        u[..., k] = (0.0 if p < 0 else u[..., p]) + w[..., k] / (c * H(m - 1, theta, alpha))
    return u


# --- the generative process for one new point (Eqs. 4.9-4.11, 4.16) on the Python tree:
# the oracle of the kernels custom_ops.pydt.sweep.sample_attach / log_attach_density
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
