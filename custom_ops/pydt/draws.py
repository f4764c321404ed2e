"""Prior draws of a Pitman-Yor diffusion tree and of Gaussian data at its leaves, in
Numba: the sequential generative process of Knowles (2012) §4.3 / §4.3.1 (digest
``knowles-nsfa-pydt.md`` §3), into the tree layout of
:mod:`custom_ops.trees.diffusion` (``parent``, ``log1m_t``). The density of what
they draw is :mod:`custom_ops.pydt.ops`; the tests compare the two (closed-form shape
probabilities, chi-square).
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.ops import choose_branch, edge_length
from custom_ops.trees.diffusion import UNUSED_SLOT, diffusion_tree_structure

__all__ = ["pydt_draw_data", "pydt_draw_tree"]



@njit_exact_numpy
def pydt_draw_tree(rng, n, c, theta, alpha, parent, log1m_t):
    """Draw a tree over ``n`` leaves by the sequential generative process (Knowles 2012
    §4.3, §4.3.1) into ``parent`` (2n - 1) and ``log1m_t`` (n - 1).

    Point ``i`` follows the path of the earlier points. On a segment traversed by ``m``
    points it diverges at rate ``a(t) Gamma(m - alpha) / Gamma(m + 1 + theta)`` (Eq.
    4.9); in ``u = -log(1 - t) = A(t) / c`` the waiting time is exponential, which is the
    inversion sampling of Eqs. 4.13 / 4.15 done in A-space (plain t rounds to 1 for small
    c). Passing a branch point with ``K`` branches it follows branch ``k`` w.p.
    ``(b_k - alpha) / (m + theta)`` or starts a new one w.p. ``(theta + alpha K) /
    (m + theta)`` (Eqs. 4.10-4.11).
    """
    nn = 2 * n - 1
    u = np.full(nn, np.inf)
    first = np.full(nn, -1, dtype=np.int64)
    nxt = np.full(nn, -1, dtype=np.int64)
    n_below = np.zeros(nn, dtype=np.int64)
    for v in range(nn):
        parent[v] = UNUSED_SLOT
    parent[0] = -1
    n_below[0] = 1
    root = 0
    n_int = 0
    for i in range(1, n):
        v = root
        u_top = 0.0
        n_below[i] = 1
        while True:
            m = n_below[v]
            rate = c * math.exp(math.lgamma(m - alpha) - math.lgamma(m + 1.0 + theta))
            u_d = u_top + rng.exponential() / rate
            if u_d < u[v]:
                w = n + n_int
                n_int += 1
                u[w] = u_d
                p = parent[v]
                parent[w] = p
                if p >= 0:
                    # replace v by w among p's children
                    if first[p] == v:
                        first[p] = w
                    else:
                        q = first[p]
                        while nxt[q] != v:
                            q = nxt[q]
                        nxt[q] = w
                    nxt[w] = nxt[v]
                else:
                    root = w
                parent[v] = w
                parent[i] = w
                first[w] = v
                nxt[v] = i
                nxt[i] = -1
                n_below[w] = m
                break
            chosen = choose_branch(rng.random(), v, m, theta, alpha, first, nxt, n_below)
            if chosen < 0:
                parent[i] = v
                nxt[i] = first[v]
                first[v] = i
                break
            u_top = u[v]
            v = chosen
        q = parent[i]
        while q >= 0:
            n_below[q] += 1
            q = parent[q]
    for k in range(n - 1):
        log1m_t[k] = -u[n + k] if k < n_int else 0.0


@njit_exact_numpy
def pydt_draw_data(rng, parent, log1m_t, sigma2, d, out):
    """Brownian motion with variance ``sigma2`` per unit time down the tree (Eq. 4.7 /
    4.26), observed at the leaves: ``out`` (n, d)."""
    n = out.shape[0]
    order = diffusion_tree_structure(parent, log1m_t, n)[1]
    x = np.zeros((parent.shape[0], d))
    for r in range(order.shape[0]):
        v = order[r]
        p = parent[v]
        if p < 0:
            var = -sigma2 * math.expm1(log1m_t[v - n])
            base = -1
        else:
            var = sigma2 * edge_length(log1m_t, n, p, v)
            base = p
        sd = math.sqrt(var)
        for j in range(d):
            x[v, j] = (0.0 if base < 0 else x[base, j]) + sd * rng.standard_normal()
    for i in range(n):
        for j in range(d):
            out[i, j] = x[i, j]
