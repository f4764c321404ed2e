"""Numba kernels for undirected spanning trees (Chow-Liu, mixtures of trees): the
representation of :mod:`pp_models.trees`' spanning-tree section.

Why one module of ~750 lines: the matrix-tree kernels (partition function, edge
marginals, their log-weight forms, exact sampling) and the Chow-Liu statistics (pairwise
mutual information and BDeu gains, edge tables) all read the same parent-vector and
weight-matrix layout, and the tree-mixture Ops call both; the Chow-Liu statistics
(``_fill_pair_table`` to ``tree_log_density_rows``) are the piece to move out if the
module grows.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from custom_ops.conjugate import dirichlet_categorical_log_marginal
from custom_ops.jit import njit_exact
from custom_ops.trees import breadth_first, children_lists

__all__ = [
    "breadth_first_order",
    "effective_conductance",
    "eliminate_nodes",
    "is_spanning_tree",
    "log_effective_conductance",
    "max_categories",
    "maximum_spanning_forest",
    "pairwise_bdeu_gain",
    "pairwise_mutual_information",
    "parents_from_edge_arrays",
    "prufer_to_parents",
    "reduced_laplacian",
    "reroot",
    "sequential_spanning_tree",
    "spanning_tree_edge_marginals",
    "spanning_tree_log_edge_marginals",
    "spanning_tree_log_partition",
    "spanning_tree_log_partition_log_weights",
    "spanning_tree_log_weight",
    "spanning_tree_logp",
    "spanning_tree_logp_grad",
    "tree_edge_tables",
    "tree_log_density_rows",
    "wilson_spanning_tree",
]

# ======================================================================================
# Undirected spanning trees (Chow-Liu, mixtures of trees)
#
# A spanning tree over V nodes is stored as a parent vector rooted at node 0:
# ``parents[0] == -1`` and ``parents[v]`` is v's neighbour on the path to node 0. Every
# labelled tree has exactly one such vector, so a distribution over parent vectors is a
# distribution over trees. Edge weights are a symmetric (V, V) matrix ``beta >= 0``; the
# weight of a tree is the product of its edges' weights, and by the matrix-tree theorem
# (Kirchhoff) the sum over all trees is det of the Laplacian with row/column 0 removed.
# ======================================================================================





@njit_exact
def breadth_first_order(parents):
    """The nodes of the tree rooted at node 0 in breadth-first order: node 0 first, then
    its children, their children, ..., the children of a node in increasing index. Every
    node comes after its parent, so ancestral sampling can visit them in this order.
    O(V) (:func:`custom_ops.trees.traversal.breadth_first`); nodes that do not hang from node 0
    (not a tree) are left out of the result."""
    V = parents.shape[0]
    child_ptr, child_idx = children_lists(parents)
    # np.int64, not a literal 0: the same compile of breadth_first as the diffusion trees
    order, n_reached, _complete = breadth_first(np.int64(0), child_ptr, child_idx, V)
    return order[:n_reached]


@njit_exact
def max_categories(n_categories):
    """The largest number of categories of any variable (0 for none): the side of the
    (parent value, child value) tables."""
    k_max = 0
    for v in range(n_categories.shape[0]):
        if n_categories[v] > k_max:
            k_max = n_categories[v]
    return k_max


@njit_exact
def maximum_spanning_forest(weights, drop_nonpositive):
    """Prim's algorithm, O(V^2), on a dense symmetric weight matrix.

    Returns a parent vector (``-1`` marks a root). With ``drop_nonpositive`` an edge of
    weight <= 0 is never used, giving the maximum-weight spanning *forest* (one root per
    component, the smallest node of each; Murphy 2012 §26.3.3); otherwise the result is
    a maximum-weight spanning tree rooted at node 0 (ties go to the smaller node index).
    """
    V = weights.shape[0]
    parents = np.full(V, -1, dtype=np.int64)
    in_tree = np.zeros(V, dtype=np.bool_)
    best = np.full(V, -np.inf)
    best_from = np.full(V, -1, dtype=np.int64)
    for _ in range(V):
        # next node: the best attachment, or a new root when none is allowed
        u = -1
        bu = -np.inf
        for v in range(V):
            if not in_tree[v] and best_from[v] >= 0 and best[v] > bu:
                bu = best[v]
                u = v
        if u < 0:
            for v in range(V):
                if not in_tree[v]:
                    u = v
                    break
        else:
            parents[u] = best_from[u]
        in_tree[u] = True
        for v in range(V):
            if in_tree[v] or v == u:
                continue
            w = weights[u, v]
            if drop_nonpositive and not w > 0.0:
                continue
            if best_from[v] < 0 or w > best[v]:
                best[v] = w
                best_from[v] = u
    return parents


@njit_exact
def is_spanning_tree(parents):
    """Whether ``parents`` (length V) is a tree rooted at node 0 (no cycle, one root)."""
    V = parents.shape[0]
    if V == 0 or parents[0] != -1:
        return False
    state = np.zeros(V, dtype=np.int64)  # 0 unknown, 1 on the current path, 2 reaches 0
    state[0] = 2
    for start in range(1, V):
        v = start
        while state[v] == 0:
            p = parents[v]
            if p < 0 or p >= V or p == v:
                return False
            state[v] = 1
            v = p
        if state[v] == 1:
            return False
        v = start
        while state[v] == 1:
            state[v] = 2
            v = parents[v]
    return True


@njit_exact
def reroot(parents, root):
    """The same undirected tree as a parent vector rooted at ``root``."""
    out = parents.copy()
    prev = -1
    v = root
    while v >= 0:
        nxt = parents[v]
        out[v] = prev
        prev = v
        v = nxt
    return out


@njit_exact
def wilson_spanning_tree(rng, weights):
    """One spanning tree with P(T) ∝ prod_{uv in T} weights[u, v] (Wilson 1996).

    Loop-erased random walks whose steps go to a neighbour with probability
    proportional to the edge weight, rooted at node 0; ``weights`` must be symmetric
    and non-negative with a connected support.
    """
    V = weights.shape[0]
    parents = np.full(V, -1, dtype=np.int64)
    in_tree = np.zeros(V, dtype=np.bool_)
    in_tree[0] = True
    nxt = np.full(V, -1, dtype=np.int64)
    row_sum = np.zeros(V)
    for u in range(V):
        s = 0.0
        for v in range(V):
            if v != u:
                s += weights[u, v]
        row_sum[u] = s
    for start in range(1, V):
        u = start
        while not in_tree[u]:
            target = rng.random() * row_sum[u]
            acc = 0.0
            choice = -1
            for v in range(V):
                if v == u:
                    continue
                w = weights[u, v]
                if w > 0.0:
                    choice = v
                    acc += w
                    if target < acc:
                        break
            nxt[u] = choice
            u = choice
        u = start
        while not in_tree[u]:
            in_tree[u] = True
            parents[u] = nxt[u]
            u = nxt[u]
    return parents


@njit_exact
def reduced_laplacian(weights):
    """Laplacian of the weighted complete graph without row and column 0 ((V-1, V-1))."""
    V = weights.shape[0]
    L = np.zeros((V - 1, V - 1))
    for u in range(1, V):
        s = 0.0
        for v in range(V):
            if v != u:
                w = 0.5 * (weights[u, v] + weights[v, u])
                s += w
                if v > 0:
                    L[u - 1, v - 1] = -w
        L[u - 1, u - 1] = s
    return L


@njit_exact
def spanning_tree_log_partition(weights):
    """log sum_T prod_{uv in T} beta_uv = log det of the reduced Laplacian (Kirchhoff)."""
    if weights.shape[0] == 1:
        return 0.0
    sign, logdet = np.linalg.slogdet(reduced_laplacian(weights))
    if sign <= 0:
        return -np.inf
    return logdet


@njit_exact
def spanning_tree_edge_marginals(weights):
    """P(uv in T) under P(T) ∝ prod beta: beta_uv (M_uu + M_vv - 2 M_uv), M = L0^{-1}
    zero-padded at node 0 (the edge's effective resistance times its weight)."""
    V = weights.shape[0]
    out = np.zeros((V, V))
    if V == 1:
        return out
    Minv = np.linalg.inv(reduced_laplacian(weights))
    M = np.zeros((V, V))
    M[1:, 1:] = Minv
    for u in range(V):
        for v in range(u + 1, V):
            w = 0.5 * (weights[u, v] + weights[v, u])
            p = w * (M[u, u] + M[v, v] - 2.0 * M[u, v])
            out[u, v] = p
            out[v, u] = p
    return out


@njit_exact
def spanning_tree_log_weight(parents, weights):
    """sum over the tree's edges of log beta_uv (symmetrised weights)."""
    out = 0.0
    for v in range(parents.shape[0]):
        p = parents[v]
        if p >= 0:
            out += math.log(0.5 * (weights[v, p] + weights[p, v]))
    return out


@njit_exact
def spanning_tree_logp(parents, weights):
    """log P(T) = sum_{uv in T} log beta_uv - log det L0 (-inf when not a tree)."""
    if parents.shape[0] != weights.shape[0] or not is_spanning_tree(parents):
        return -np.inf
    return spanning_tree_log_weight(parents, weights) - spanning_tree_log_partition(weights)


@njit_exact
def spanning_tree_logp_grad(parents, weights):
    """d logp / d weights for the symmetrised weights: (1[uv in T] - P(uv)) / (2 beta_uv)
    on both (u, v) and (v, u); zero on the diagonal."""
    V = weights.shape[0]
    grad = np.zeros((V, V))
    if parents.shape[0] != V or not is_spanning_tree(parents):
        return grad
    marg = spanning_tree_edge_marginals(weights)
    for u in range(V):
        for v in range(V):
            if u != v:
                w = 0.5 * (weights[u, v] + weights[v, u])
                grad[u, v] = -marg[u, v] / (2.0 * w)
    for v in range(V):
        p = parents[v]
        if p >= 0:
            w = 0.5 * (weights[v, p] + weights[p, v])
            grad[v, p] += 1.0 / (2.0 * w)
            grad[p, v] += 1.0 / (2.0 * w)
    return grad


@njit_exact
def prufer_to_parents(sequence, V):
    """Decode a Prüfer sequence (length V-2, entries in [0, V)) into a parent vector
    rooted at node 0 (Prüfer 1918)."""
    degree = np.ones(V, dtype=np.int64)
    for s in sequence:
        degree[s] += 1
    eu = np.empty(V - 1, dtype=np.int64)
    ev = np.empty(V - 1, dtype=np.int64)
    n_edges = 0
    for s in sequence:
        for leaf in range(V):
            if degree[leaf] == 1:
                eu[n_edges] = leaf
                ev[n_edges] = s
                n_edges += 1
                degree[leaf] -= 1
                degree[s] -= 1
                break
    u = -1
    for v in range(V):
        if degree[v] == 1:
            if u < 0:
                u = v
            else:
                eu[n_edges] = u
                ev[n_edges] = v
                n_edges += 1
                break
    return parents_from_edge_arrays(eu, ev, V)


@njit_exact
def parents_from_edge_arrays(eu, ev, V):
    """Parent vector rooted at node 0 of the tree with edges (eu[i], ev[i]); entries stay
    -2 for nodes the edges do not reach from node 0."""
    head = np.full(V, -1, dtype=np.int64)
    nxt = np.empty(2 * eu.shape[0], dtype=np.int64)
    to = np.empty(2 * eu.shape[0], dtype=np.int64)
    for i in range(eu.shape[0]):
        to[2 * i] = ev[i]
        nxt[2 * i] = head[eu[i]]
        head[eu[i]] = 2 * i
        to[2 * i + 1] = eu[i]
        nxt[2 * i + 1] = head[ev[i]]
        head[ev[i]] = 2 * i + 1
    parents = np.full(V, -2, dtype=np.int64)
    parents[0] = -1
    stack = np.empty(V, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        e = head[u]
        while e >= 0:
            v = to[e]
            if parents[v] == -2 and v != 0:
                parents[v] = u
                stack[top] = v
                top += 1
            e = nxt[e]
    return parents


@njit_exact
def _fill_pair_table(joint_counts, marginal_counts, offsets, u, v, Ku, Kv, table):
    """The (Ku, Kv) weighted contingency table of variables u and v: rows a < Ku-1 and
    columns b < Kv-1 straight from the count matrix, the last row and column from the
    margins."""
    for a in range(Ku - 1):
        row = 0.0
        for b in range(Kv - 1):
            c = joint_counts[offsets[u] + a, offsets[v] + b]
            table[a, b] = c
            row += c
        table[a, Kv - 1] = marginal_counts[u, a] - row
    for b in range(Kv):
        col = 0.0
        for a in range(Ku - 1):
            col += table[a, b]
        table[Ku - 1, b] = marginal_counts[v, b] - col
    for a in range(Ku):
        for b in range(Kv):
            if table[a, b] < 0.0:  # float round-off of the subtractions
                table[a, b] = 0.0


@njit_exact
def pairwise_mutual_information(joint_counts, marginal_counts, offsets, n_categories,
                                total, prior):
    """Mutual information (nats) of every pair of discrete variables from count matrices.

    ``joint_counts`` is ``Z^T diag(w) Z`` for the one-hot matrix ``Z`` of every variable's
    categories except its last (so binary data need only X^T X); ``marginal_counts[v, k]``
    the weighted counts of every category (last included); the missing last row and
    column of each pairwise table follow from the margins. ``prior`` is a Dirichlet
    pseudo-count spread uniformly over each table's cells (BDeu style), so smoothed
    pairwise tables and marginals stay consistent. Murphy 2012 Eq. 26.12.
    """
    V = offsets.shape[0]
    out = np.zeros((V, V))
    k_max = max_categories(n_categories)
    table = np.zeros((k_max, k_max))
    denom = total + prior
    for u in range(V):
        Ku = n_categories[u]
        for v in range(u + 1, V):
            Kv = n_categories[v]
            cell = prior / (Ku * Kv)
            _fill_pair_table(joint_counts, marginal_counts, offsets, u, v, Ku, Kv, table)
            mi = 0.0
            for a in range(Ku):
                pa = (marginal_counts[u, a] + prior / Ku) / denom
                for b in range(Kv):
                    pab = (table[a, b] + cell) / denom
                    if pab > 0.0:
                        pb = (marginal_counts[v, b] + prior / Kv) / denom
                        mi += pab * math.log(pab / (pa * pb))
            if mi < 0.0:
                mi = 0.0
            out[u, v] = mi
            out[v, u] = mi
    return out


@njit_exact
def pairwise_bdeu_gain(joint_counts, marginal_counts, offsets, n_categories, ess):
    """BDeu edge weights ``w_st = score(t | s) - score(t | none)`` for every pair
    (Murphy 2012 Eqs. 26.13-26.15, 26.28-26.30): the log Bayes factor of the edge. BDeu
    is likelihood-equivalent, so the matrix is symmetric."""
    V = offsets.shape[0]
    out = np.zeros((V, V))
    k_max = max_categories(n_categories)
    table = np.zeros((k_max, k_max))
    alone = np.empty(V)
    for v in range(V):
        Kv = n_categories[v]
        alone[v] = dirichlet_categorical_log_marginal(marginal_counts[v, :Kv], ess / Kv)
    for s in range(V):
        Ks = n_categories[s]
        for t in range(s + 1, V):
            Kt = n_categories[t]
            _fill_pair_table(joint_counts, marginal_counts, offsets, s, t, Ks, Kt, table)
            cell = ess / (Ks * Kt)
            score = 0.0
            for a in range(Ks):
                score += dirichlet_categorical_log_marginal(table[a, :Kt], cell)
            gain = score - alone[t]
            out[s, t] = gain
            out[t, s] = gain
    return out


@njit_exact
def tree_edge_tables(joint_counts, marginal_counts, offsets, n_categories, parents):
    """Weighted (parent value, child value) counts of every node of a forest, from the
    same count matrices: ``tables[v, j, k]``; a root's marginal counts are row 0."""
    V = parents.shape[0]
    k_max = max_categories(n_categories)
    tables = np.zeros((V, k_max, k_max))
    scratch = np.zeros((k_max, k_max))
    for v in range(V):
        p = parents[v]
        Kv = n_categories[v]
        if p < 0:
            for k in range(Kv):
                tables[v, 0, k] = marginal_counts[v, k]
            continue
        Kp = n_categories[p]
        if p < v:
            _fill_pair_table(joint_counts, marginal_counts, offsets, p, v, Kp, Kv, scratch)
            for j in range(Kp):
                for k in range(Kv):
                    tables[v, j, k] = scratch[j, k]
        else:
            _fill_pair_table(joint_counts, marginal_counts, offsets, v, p, Kv, Kp, scratch)
            for j in range(Kp):
                for k in range(Kv):
                    tables[v, j, k] = scratch[k, j]
    return tables


@njit_exact
def tree_log_density_rows(codes, parents, log_cpt):
    """``log p(x_i) = sum_v log_cpt[v, x_i,parent(v), x_iv]`` for every row (a root reads
    row 0 of its table)."""
    n, V = codes.shape
    out = np.zeros(n)
    for i in range(n):
        s = 0.0
        for v in range(V):
            p = parents[v]
            j = codes[i, p] if p >= 0 else 0
            s += log_cpt[v, j, codes[i, v]]
        out[i] = s
    return out


@njit_exact
def _find(comp, u):
    while comp[u] != u:
        comp[u] = comp[comp[u]]
        u = comp[u]
    return u


@njit_exact
def _log_add(a, b):
    if a < b:
        a, b = b, a
    if b == -np.inf:
        return a
    return a + math.log1p(math.exp(b - a))


@njit_exact
def eliminate_nodes(log_conductance, eliminate):
    """Kron reduction (Schur complement of the Laplacian) of a weighted graph, in place,
    in log space: every node with ``eliminate[k]`` is removed and its neighbours i, j
    gain the conductance ``c_ik c_kj / d_k`` with ``d_k = sum_l c_kl`` over the nodes
    still present. The Laplacian's diagonal is never formed: degrees are sums of
    conductances and every operation adds or multiplies positive numbers (as in the
    Grassmann-Taksar-Heyman algorithm), so each reduced conductance keeps a relative
    accuracy of a few ulps whatever range the weights span, where a Cholesky or LU
    factorisation of the Laplacian loses every edge lighter than ~1e-16 times its
    heaviest neighbour. The reduced graph's conductance between two kept nodes is their
    effective conductance in the eliminated part (Kron 1939). O(m n^2) for m eliminated
    of n nodes; the diagonal is ignored.

    Returns the sum of the log pivots (the eliminated nodes' degrees at elimination):
    the log determinant of the Laplacian restricted to the eliminated nodes, so with
    every node but one eliminated it is the log of the weighted number of spanning trees
    (Kirchhoff); -inf when the eliminated part is not connected to the kept nodes.
    """
    n = log_conductance.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    scaled = np.empty(n)
    log_det = 0.0
    for k in range(n):
        if not eliminate[k]:
            continue
        alive[k] = False
        log_degree = -np.inf
        for j in range(n):
            if alive[j]:
                log_degree = _log_add(log_degree, log_conductance[k, j])
        log_det += log_degree
        if log_degree == -np.inf:  # isolated: nothing flows through it
            continue
        for i in range(n):
            if alive[i]:
                scaled[i] = log_conductance[i, k] - log_degree
        for i in range(n):
            if not alive[i] or log_conductance[i, k] == -np.inf:
                continue
            si = scaled[i]
            for j in range(i + 1, n):
                if alive[j]:
                    c = _log_add(log_conductance[i, j], si + log_conductance[k, j])
                    log_conductance[i, j] = c
                    log_conductance[j, i] = c
    return log_det


@njit_exact
def log_effective_conductance(log_conductance, a, b):
    """log of the effective conductance between nodes ``a`` and ``b`` (a copy of the
    matrix is reduced onto the two; see :func:`eliminate_nodes`)."""
    n = log_conductance.shape[0]
    drop = np.ones(n, dtype=np.bool_)
    drop[a] = False
    drop[b] = False
    reduced = log_conductance.copy()
    eliminate_nodes(reduced, drop)
    return reduced[a, b]


@njit_exact
def effective_conductance(conductance, a, b):
    """Effective conductance between ``a`` and ``b`` by the same positive-only Kron
    reduction as :func:`eliminate_nodes`, in linear space (destroys ``conductance``).
    For graphs whose conductances are <= the one of a direct a-b edge (the sequential
    sampler rescales so): the result is >= that edge's, so contributions that underflow
    (below 1e-308 of it) cannot matter, and no exp/log is needed."""
    n = conductance.shape[0]
    alive = np.ones(n, dtype=np.bool_)
    for k in range(n):
        if k == a or k == b:
            continue
        alive[k] = False
        degree = 0.0
        for j in range(n):
            if alive[j]:
                degree += conductance[k, j]
        if degree == 0.0:
            continue
        for i in range(n):
            if not alive[i] or conductance[i, k] == 0.0:
                continue
            si = conductance[i, k] / degree
            for j in range(i + 1, n):
                if alive[j]:
                    c = conductance[i, j] + si * conductance[k, j]
                    conductance[i, j] = c
                    conductance[j, i] = c
    return conductance[a, b]


@njit_exact
def spanning_tree_log_partition_log_weights(log_weights):
    """log sum_T prod_{uv in T} exp(log_weights[u, v]) (symmetrised), by the
    positive-only elimination of every node but node 0 (:func:`eliminate_nodes`): the
    matrix-tree determinant with a relative accuracy of a few ulps at any weight range."""
    V = log_weights.shape[0]
    C = np.empty((V, V))
    for u in range(V):
        for v in range(V):
            C[u, v] = 0.5 * (log_weights[u, v] + log_weights[v, u]) if u != v else -np.inf
    drop = np.ones(V, dtype=np.bool_)
    drop[0] = False
    return eliminate_nodes(C, drop)


@njit_exact
def spanning_tree_log_edge_marginals(log_weights):
    """``log P(uv in T)`` for every pair under ``P(T) ∝ prod_{uv in T} exp(log_weights)``.

    ``P(uv in T) = w_uv R_uv = w_uv / C_uv`` (Kirchhoff; Lyons & Peres 2016 §4.2) with
    ``C_uv`` the effective conductance between u and v, computed for every pair with the
    positive-only Kron reduction of :func:`eliminate_nodes`, so edge marginals anywhere
    between e^-700 and 1 keep their relative accuracy when log weights span hundreds of
    nats. All pairs in O(V^3): the node set is split into four quarters and each union of
    two quarters is reduced out of the current graph and recursed on (T(n) = 6 T(n/2) +
    O(n^3)). Off-diagonal entries are <= 0; the diagonal is -inf. Asymmetric input is
    read symmetrised (the mean of the two log weights).
    """
    V = log_weights.shape[0]
    out = np.full((V, V), -np.inf)
    if V < 2:
        return out
    lw = np.empty((V, V))
    for u in range(V):
        for v in range(V):
            lw[u, v] = 0.5 * (log_weights[u, v] + log_weights[v, u]) if u != v else -np.inf
    conductance = numba.typed.List()
    nodes = numba.typed.List()
    conductance.append(lw.copy())
    nodes.append(np.arange(V))
    while len(nodes) > 0:
        C = conductance.pop()
        ids = nodes.pop()
        m = ids.shape[0]
        if m <= 4:
            for i in range(m):
                for j in range(i + 1, m):
                    drop = np.ones(m, dtype=np.bool_)
                    drop[i] = False
                    drop[j] = False
                    reduced = C.copy()
                    eliminate_nodes(reduced, drop)
                    c = reduced[i, j]
                    u = ids[i]
                    v = ids[j]
                    p = lw[u, v] - c if c > -np.inf else -np.inf
                    if p > 0.0:  # rounding: a bridge's marginal is exactly one
                        p = 0.0
                    out[u, v] = p
                    out[v, u] = p
            continue
        group = (np.arange(m) * 4) // m
        for g in range(4):
            for h in range(g + 1, 4):
                keep = (group == g) | (group == h)
                reduced = C.copy()
                eliminate_nodes(reduced, ~keep)
                idx = np.nonzero(keep)[0]
                sub = np.empty((idx.shape[0], idx.shape[0]))
                for i in range(idx.shape[0]):
                    for j in range(idx.shape[0]):
                        sub[i, j] = reduced[idx[i], idx[j]]
                conductance.append(sub)
                nodes.append(ids[idx])
    return out


@njit_exact
def sequential_spanning_tree(rng, log_weights):
    """One exact draw of P(T) ∝ prod_{uv in T} exp(log_weights[u, v]), robust to weights
    spanning hundreds of nats (posteriors), where Wilson's walks would take ~e^gap steps.

    Edges are decided one at a time in decreasing weight: edge e joins the tree with
    probability P(e in T | decisions so far) = w_e / C_e (Kirchhoff: C_e the effective
    conductance between e's ends in the graph with accepted edges contracted and
    rejected ones deleted), so the product of the decision probabilities is P(T) (chain
    rule). C_e comes from the positive-only Kron reduction of
    :func:`eliminate_nodes` (the kernel of :func:`spanning_tree_log_edge_marginals`),
    here in linear space relative to w_e (:func:`effective_conductance`), so no weight
    is floored and none that matters is lost.
    """
    V = log_weights.shape[0]
    E = V * (V - 1) // 2
    eu = np.empty(E, dtype=np.int64)
    ev = np.empty(E, dtype=np.int64)
    lw = np.empty(E)
    m = 0
    for u in range(V):
        for v in range(u + 1, V):
            eu[m] = u
            ev[m] = v
            lw[m] = 0.5 * (log_weights[u, v] + log_weights[v, u])
            m += 1
    order = np.argsort(-lw)
    alive = np.ones(E, dtype=np.bool_)
    comp = np.arange(V)
    tu = np.empty(V - 1, dtype=np.int64)
    tv = np.empty(V - 1, dtype=np.int64)
    n_in = 0
    label = np.empty(V, dtype=np.int64)
    for r in range(E):
        if n_in == V - 1:
            break
        e = order[r]
        cu = _find(comp, eu[e])
        cv = _find(comp, ev[e])
        if cu == cv:
            alive[e] = False
            continue
        # super-nodes of the contracted graph, parallel edges merged
        n_super = 0
        for x in range(V):
            if _find(comp, x) == x:
                label[x] = n_super
                n_super += 1
        for x in range(V):
            label[x] = label[_find(comp, x)]
        # conductances relative to edge e's: every alive edge is lighter (decreasing
        # order), so all are <= 1 and the effective conductance is >= 1
        C = np.zeros((n_super, n_super))
        for f in range(E):
            if not alive[f]:
                continue
            a = label[eu[f]]
            b = label[ev[f]]
            if a != b:
                c = C[a, b] + math.exp(lw[f] - lw[e])
                C[a, b] = c
                C[b, a] = c
        alive[e] = False  # decided now either way
        p = 1.0 / effective_conductance(C, label[cu], label[cv])
        if rng.random() < p:
            tu[n_in] = eu[e]
            tv[n_in] = ev[e]
            n_in += 1
            comp[cv] = cu
    return parents_from_edge_arrays(tu, tv, V)
