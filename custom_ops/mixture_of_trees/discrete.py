"""Kernels of the Bayesian mixture of trees with Dirichlet (BDeu) CPTs integrated out.

Component ``k`` has a spanning tree (parent vector ``parents[k]`` rooted at node 0) and
CPTs with BDeu priors of equivalent sample size ``ess``: a root's distribution
``Dir(ess / K_root)`` per cell, a child's row per parent value ``Dir(ess / (K_pa K_v))``
per cell (Murphy 2012 Eqs. 26.28-26.30). Integrating them out (Dirichlet-categorical,
:mod:`custom_ops.conjugate`) gives ``p(D_k | T_k) = prod_v prod_j ML(N_vj; cell_v)``
where ``N_vj`` counts the child's values among the rows of component ``k`` whose parent
takes value ``j`` (the root's counts are row 0).

State: ``tables[k, v, j, c]`` (float64 counts), updated in place by the sweeps.

Power posteriors. The kernels that sample take ``inv_temp`` (the inverse temperature
``b`` in [0, 1] of a tempered run; 1 for the posterior) and target ``p(z, T | w)
p(X | z, T)^b``. ``p(D_k | T_k) = exp(alone_k + sum_{uv in T_k} g_uv)`` (the empty tree's
score times the edges' Bayes factors, Murphy 2012 Eq. 26.14), so raised to ``b`` it is
still decomposable: the tree's conditional has log edge weights ``log beta_uv + b g_uv``
(``b alone_k`` does not depend on ``T_k``) and the conditional of one assignment is
``w_k`` times the collapsed predictive ``p(x_i | D_k without i, T_k)^b`` (a ratio of two
marginals, each raised to ``b``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.conjugate import dirichlet_categorical_log_marginal
from custom_ops.jit import njit_exact, register_numba_op
from custom_ops.log_weights import sample_log_weights
from custom_ops.trees.spanning import (
    breadth_first_order,
    max_categories,
    pairwise_bdeu_gain,
    sequential_spanning_tree,
    spanning_tree_log_partition_log_weights,
)

__all__ = [
    "ComponentStatistics",
    "MixtureState",
    "TreeMixtureLogp",
    "TreeMixturePrior",
    "as_integer_tensor",
    "assignment_sweep",
    "block_log_weights",
    "block_reassignments",
    "collapsed_log_marginal",
    "component_edge_log_weights",
    "propose_reallocation",
    "row_log_predictive",
    "row_neighbours",
    "sample_tree_mixture_data",
    "tree_marginal_log_evidence",
    "tree_mixture_logp",
    "tree_tables",
]


class TreeMixturePrior(NamedTuple):
    """The priors the kernels read: categories per variable ``n_categories`` (int64, V),
    the BDeu equivalent sample size ``ess`` of the integrated-out CPTs and the log
    structure prior ``log_beta`` (V, V; zero diagonal) of every component's tree."""

    n_categories: np.ndarray
    ess: float
    log_beta: np.ndarray


class MixtureState(NamedTuple):
    """The chain's state as the moves read it: assignments ``z`` (int64, n; the moves
    write it in place), trees ``parents`` (int64, K x V) and ``log_weights`` (K)."""

    z: np.ndarray
    parents: np.ndarray
    log_weights: np.ndarray


class ComponentStatistics(NamedTuple):
    """Every component's pairwise count matrices ``joints[k]``, ``marginals[k]`` (the
    layout of :func:`_count_statistics`, whose ``offsets`` they share) and ``evidence[k]``
    its tree-integrated log marginal less ``log Z(beta)``."""

    joints: np.ndarray
    marginals: np.ndarray
    evidence: np.ndarray
    offsets: np.ndarray


class _Scan(NamedTuple):
    """A restricted scan over the rows ``order`` between components ``a`` and ``b``
    (trees ``trees[0]``, ``trees[1]``), from the labels ``start``, its outcome in
    ``labels``."""

    order: np.ndarray
    start: np.ndarray
    labels: np.ndarray
    trees: np.ndarray
    a: int
    b: int


@njit_exact
def _parent_categories(parents_k, v, n_categories):
    p = parents_k[v]
    return 1 if p < 0 else n_categories[p]


@njit_exact
def tree_tables(codes, z, parents, n_categories):
    """Counts ``tables[k, v, j, c]`` of every component's (parent value, child value)."""
    n, V = codes.shape
    n_components = parents.shape[0]
    k_max = max_categories(n_categories)
    tables = np.zeros((n_components, V, k_max, k_max))
    for i in range(n):
        k = z[i]
        for v in range(V):
            p = parents[k, v]
            j = codes[i, p] if p >= 0 else 0
            tables[k, v, j, codes[i, v]] += 1.0
    return tables


@njit_exact
def collapsed_log_marginal(tables, parents, n_categories, ess):
    """sum_k log p(D_k | T_k), CPTs integrated out."""
    n_components, V = parents.shape
    out = 0.0
    for k in range(n_components):
        for v in range(V):
            Kv = n_categories[v]
            Kp = _parent_categories(parents[k], v, n_categories)
            cell = ess / (Kp * Kv)
            for j in range(Kp):
                out += dirichlet_categorical_log_marginal(tables[k, v, j, :Kv], cell)
    return out


@njit_exact
def _update(tables, codes_i, parents_k, k, delta):
    for v in range(codes_i.shape[0]):
        p = parents_k[v]
        j = codes_i[p] if p >= 0 else 0
        tables[k, v, j, codes_i[v]] += delta


@njit_exact
def row_log_predictive(tables, codes_i, parents_k, k, n_categories, ess):
    """log p(x_i | rows counted in ``tables[k]``, tree ``parents_k``), CPTs integrated
    out: ``sum_v log (N_v,x_pa,x_v + a_v) - log (N_v,x_pa + K_v a_v)``."""
    s = 0.0
    for v in range(codes_i.shape[0]):
        p = parents_k[v]
        Kv = n_categories[v]
        Kp = 1 if p < 0 else n_categories[p]
        a = ess / (Kp * Kv)
        j = codes_i[p] if p >= 0 else 0
        row = 0.0
        for c in range(Kv):
            row += tables[k, v, j, c]
        s += math.log(tables[k, v, j, codes_i[v]] + a) - math.log(row + Kv * a)
    return s


@njit_exact
def assignment_sweep(rng, codes, state, tables, counts, prior, inv_temp):
    """One collapsed Gibbs sweep over the assignments, in place on ``state.z``, ``tables``
    and ``counts`` (rows per component): ``p(z_i = k | ...) ∝ w_k [prod_v (N_k,v,x_pa,x_v +
    a_v) / (N_k,v,x_pa + K_v a_v)]^inv_temp`` (the tree's posterior predictive with
    ``x_i`` removed, raised to the inverse temperature: module docstring). Returns the
    number of changed assignments."""
    z, parents, log_weights = state
    n_categories, ess = prior.n_categories, prior.ess
    n = codes.shape[0]
    n_components = parents.shape[0]
    logp = np.empty(n_components)
    changed = 0
    for i in range(n):
        old = z[i]
        _update(tables, codes[i], parents[old], old, -1.0)
        counts[old] -= 1
        for k in range(n_components):
            logp[k] = log_weights[k] + inv_temp * row_log_predictive(
                tables, codes[i], parents[k], k, n_categories, ess)
        new = sample_log_weights(logp, n_components, rng)
        z[i] = new
        _update(tables, codes[i], parents[new], new, 1.0)
        counts[new] += 1
        if new != old:
            changed += 1
    return changed


@njit_exact
def draw_component_rows(rng, k, z, parents_k, n_categories, ess, tables_k, out):
    """Component ``k``'s CPTs drawn from Dirichlet(``ess / (K_pa K_v)`` + ``tables_k``)
    (zero tables: the BDeu prior), then every row with ``z == k`` by ancestral sampling
    (parents before children: :func:`breadth_first_order`) into ``out``."""
    V = parents_k.shape[0]
    k_max = max_categories(n_categories)
    order = breadth_first_order(parents_k)
    cpt = np.zeros((V, k_max, k_max))
    for v in range(V):
        Kv = n_categories[v]
        Kp = _parent_categories(parents_k, v, n_categories)
        a = ess / (Kp * Kv)
        for j in range(Kp):
            total = 0.0
            for c in range(Kv):
                g = rng.gamma(a + tables_k[v, j, c], 1.0)
                cpt[v, j, c] = g
                total += g
            if total <= 0.0:  # every gamma draw underflowed: a point mass at random
                cpt[v, j, int(rng.random() * Kv)] = 1.0
                total = 1.0
            for c in range(Kv):
                cpt[v, j, c] /= total
    for i in np.nonzero(z == k)[0]:
        for v in order:
            p = parents_k[v]
            j = out[i, p] if p >= 0 else 0
            u = rng.random()
            acc = 0.0
            Kv = n_categories[v]
            choice = Kv - 1
            for c in range(Kv):
                acc += cpt[v, j, c]
                if u < acc:
                    choice = c
                    break
            out[i, v] = choice


@njit_exact
def sample_tree_mixture_data(rng, z, parents, n_categories, ess, out):
    """Data given assignments and trees: every component's BDeu CPTs drawn from the
    prior, then its rows by ancestral sampling (:func:`draw_component_rows`)."""
    n_components, V = parents.shape
    k_max = max_categories(n_categories)
    prior = np.zeros((V, k_max, k_max))
    for k in range(n_components):
        draw_component_rows(rng, k, z, parents[k], n_categories, ess, prior, out)
    return out


# ---------------------------------------------------------------------------------------
# Trees integrated out too: the evidence of a component, and a reallocation move
# ---------------------------------------------------------------------------------------


@njit_exact
def _count_statistics(codes, rows, n_categories):
    """Pairwise count matrices of the rows with ``rows[i]`` in the layout of
    :func:`custom_ops.trees.spanning.pairwise_bdeu_gain`: ``joint`` over the
    indicators of every variable's categories but the last, ``marginal[v, k]``."""
    n, V = codes.shape
    offsets = np.zeros(V, dtype=np.int64)
    for v in range(1, V):
        offsets[v] = offsets[v - 1] + n_categories[v - 1] - 1
    width = offsets[V - 1] + n_categories[V - 1] - 1
    k_max = max_categories(n_categories)
    joint = np.zeros((width, width))
    marginal = np.zeros((V, k_max))
    on = np.empty(V, dtype=np.int64)
    for i in range(n):
        if not rows[i]:
            continue
        m = 0
        for v in range(V):
            c = codes[i, v]
            marginal[v, c] += 1.0
            if c < n_categories[v] - 1:
                on[m] = offsets[v] + c
                m += 1
        for a in range(m):
            for b in range(m):
                joint[on[a], on[b]] += 1.0
    return joint, marginal, offsets


@njit_exact
def component_edge_log_weights(codes, rows, n_categories, ess, log_beta, inv_temp):
    """Log edge weights of the tree's power posterior given the rows ``rows``: ``log
    beta_uv`` plus ``inv_temp`` times the edge's BDeu log Bayes factor ``g_uv``; and
    ``inv_temp`` times the sum of the variables' BDeu log marginals alone (the empty
    tree's score), so that ``inv_temp log p(D | T) = alone + sum_{uv in T} (weights_uv -
    log beta_uv)`` (Murphy 2012 Eq. 26.14)."""
    joint, marginal, offsets = _count_statistics(codes, rows, n_categories)
    gain = pairwise_bdeu_gain(joint, marginal, offsets, n_categories, ess)
    V = codes.shape[1]
    alone = 0.0
    for v in range(V):
        Kv = n_categories[v]
        alone += dirichlet_categorical_log_marginal(marginal[v, :Kv], ess / Kv)
    out = np.empty((V, V))
    for u in range(V):
        for v in range(V):
            out[u, v] = log_beta[u, v] + inv_temp * gain[u, v] if u != v else 0.0
    return out, inv_temp * alone


@njit_exact
def tree_marginal_log_evidence(codes, rows, n_categories, ess, log_beta, inv_temp):
    """``log sum_T P(T) p(D | T)^inv_temp`` of the rows ``rows`` with the CPTs *and* the
    tree integrated out: ``b alone + log Z(beta * BF^b) - log Z(beta)`` (``b = inv_temp``;
    matrix-tree theorem, Meilă & Jaakkola 2006 Eq. 11), both determinants by the
    positive-only elimination. ``inv_temp = 1``: the tree-integrated evidence."""
    lw, alone = component_edge_log_weights(codes, rows, n_categories, ess, log_beta,
                                           inv_temp)
    return alone + spanning_tree_log_partition_log_weights(lw) \
        - spanning_tree_log_partition_log_weights(log_beta)


@njit_exact
def _restricted_scan(rng, codes, scan, log_weights, prior, draw, inv_temp):
    """One Gibbs scan of the rows ``order`` restricted to components ``a`` and ``b``
    (Jain & Neal 2004), from the allocation ``start``: row t, removed from its side,
    goes to c with probability ∝ w_c p(x_t | the other rows now on c, tree
    ``trees2[0 or 1]``)^inv_temp. With ``draw`` the new labels are sampled into
    ``labels``; otherwise ``labels`` is read as the scan's outcome. Returns its log
    probability."""
    order, start, labels, trees2, a, b = scan
    n_categories, ess = prior.n_categories, prior.ess
    V = codes.shape[1]
    k_max = max_categories(n_categories)
    tables = np.zeros((2, V, k_max, k_max))
    for t in range(order.shape[0]):
        _update(tables, codes[order[t]], trees2[0 if start[t] == a else 1],
                0 if start[t] == a else 1, 1.0)
    log_q = 0.0
    for t in range(order.shape[0]):
        i = order[t]
        old = 0 if start[t] == a else 1
        _update(tables, codes[i], trees2[old], old, -1.0)
        la = log_weights[a] + inv_temp * row_log_predictive(tables, codes[i], trees2[0], 0,
                                                            n_categories, ess)
        lb = log_weights[b] + inv_temp * row_log_predictive(tables, codes[i], trees2[1], 1,
                                                            n_categories, ess)
        top = max(la, lb)
        log_norm = top + math.log(math.exp(la - top) + math.exp(lb - top))
        if draw:
            labels[t] = a if rng.random() < math.exp(la - log_norm) else b
        side = 0 if labels[t] == a else 1
        log_q += (la if side == 0 else lb) - log_norm
        _update(tables, codes[i], trees2[side], side, 1.0)
    return log_q


@njit_exact
def propose_reallocation(rng, codes, state, a, b, prior, n_launch, inv_temp):
    """A Metropolis-Hastings proposal that reallocates every row of components ``a`` and
    ``b`` at once: a split-merge move with a restricted-Gibbs launch (Jain & Neal 2004)
    for a finite mixture with instantiated weights.

    Launch: the rows of a and b, in a random order, are split at random and refined by
    ``n_launch`` restricted Gibbs scans under the *independence* model (every variable
    a root), which does not depend on the state beyond the set of rows, so the launch
    is the same auxiliary variable for the move and its reverse. Forward: one more scan
    from the launch under the current trees gives ``z'``; both trees are then drawn
    exactly from ``P(T | z', X)``. Reverse: the probability that the same scan from the
    launch under the *new* trees gives the current ``z``. Because the trees are redrawn
    from their conditionals, the acceptance ratio is ``pi(z') q(z | L, T') / (pi(z)
    q(z' | L, T))`` with ``pi`` the trees-integrated target ``prod w_{z_i} m(D_a)
    m(D_b)`` (:func:`tree_marginal_log_evidence`).

    At inverse temperature ``inv_temp`` (module docstring) every likelihood term is
    raised to it: the scans' predictives, the trees' conditionals and the tree-integrated
    marginals ``m(D) = sum_T P(T) p(D | T)^inv_temp``; the proposal probabilities are
    those of the tempered scans, so the ratio is the tempered target's.

    Returns ``(new_labels, order, tree_a, tree_b, log_target_new, log_target_old,
    log_q_forward, log_q_reverse)``: ``new_labels[t]`` is the proposed label of row
    ``order[t]``; accepting means writing them into ``z`` and the trees into
    ``parents[a]``, ``parents[b]`` (of ``state``).
    """
    z, parents, log_weights = state
    n_categories, ess, log_beta = prior
    n = codes.shape[0]
    m = 0
    for i in range(n):
        if z[i] == a or z[i] == b:
            m += 1
    order = np.empty(m, dtype=np.int64)
    m = 0
    for i in range(n):
        if z[i] == a or z[i] == b:
            order[m] = i
            m += 1
    rng.shuffle(order)
    V = codes.shape[1]
    launch = np.empty(m, dtype=np.int64)
    for t in range(m):
        launch[t] = a if rng.random() < 0.5 else b
    independent = np.full((2, V), -1, dtype=np.int64)
    scanned = np.empty(m, dtype=np.int64)
    for _ in range(n_launch):
        _restricted_scan(rng, codes, _Scan(order, launch, scanned, independent, a, b),
                         log_weights, prior, True, inv_temp)
        launch[:] = scanned
    current_trees = np.empty((2, V), dtype=np.int64)
    current_trees[0] = parents[a]
    current_trees[1] = parents[b]
    new_labels = np.empty(m, dtype=np.int64)
    log_q_forward = _restricted_scan(
        rng, codes, _Scan(order, launch, new_labels, current_trees, a, b), log_weights,
        prior, True, inv_temp)
    proposed = parents.copy()
    log_target_new = 0.0
    log_target_old = 0.0
    for side in range(2):
        c = a if side == 0 else b
        rows_new = np.zeros(n, dtype=np.bool_)
        rows_old = np.zeros(n, dtype=np.bool_)
        count_new = 0
        count_old = 0
        for t in range(m):
            if new_labels[t] == c:
                rows_new[order[t]] = True
                count_new += 1
            if z[order[t]] == c:
                rows_old[order[t]] = True
                count_old += 1
        lw, alone = component_edge_log_weights(codes, rows_new, n_categories, ess, log_beta,
                                               inv_temp)
        proposed[c] = sequential_spanning_tree(rng, lw)
        log_z_beta = spanning_tree_log_partition_log_weights(log_beta)
        log_target_new += count_new * log_weights[c] + alone \
            + spanning_tree_log_partition_log_weights(lw) - log_z_beta
        log_target_old += count_old * log_weights[c] + tree_marginal_log_evidence(
            codes, rows_old, n_categories, ess, log_beta, inv_temp)
    current = np.empty(m, dtype=np.int64)
    for t in range(m):
        current[t] = z[order[t]]
    new_trees = np.empty((2, V), dtype=np.int64)
    new_trees[0] = proposed[a]
    new_trees[1] = proposed[b]
    log_q_reverse = _restricted_scan(rng, codes, _Scan(order, launch, current, new_trees, a, b),
                                     log_weights, prior, False, inv_temp)
    return (new_labels, order, proposed[a].copy(), proposed[b].copy(), log_target_new,
            log_target_old, log_q_forward, log_q_reverse)


@njit_exact
def row_neighbours(codes, size):
    """For every row, itself and its ``size - 1`` nearest rows by the number of variables
    on which they differ (ties by row index): ``out[i, 0] == i``. Depends on the data
    alone, so a block drawn from it is the same for a state and for its reverse."""
    n, V = codes.shape
    size = min(size, n)
    out = np.empty((n, size), dtype=np.int64)
    distance = np.empty(n, dtype=np.int64)
    for i in range(n):
        for j in range(n):
            d = 0
            for v in range(V):
                if codes[i, v] != codes[j, v]:
                    d += 1
            # the row itself first, then by distance, then by index (a stable key)
            distance[j] = -1 if j == i else d
        out[i] = np.argsort(distance, kind="mergesort")[:size]
    return out


@njit_exact
def _add_row_statistics(codes, rows, n_rows, n_categories, offsets, joint, marginal, sign):
    """Add (``sign = 1``) or remove (``-1``) rows ``rows[:n_rows]`` to count matrices laid
    out as :func:`_count_statistics`'s, in place (whole-number counts: exact)."""
    V = codes.shape[1]
    on = np.empty(V, dtype=np.int64)
    for t in range(n_rows):
        i = rows[t]
        m = 0
        for v in range(V):
            c = codes[i, v]
            marginal[v, c] += sign
            if c < n_categories[v] - 1:
                on[m] = offsets[v] + c
                m += 1
        for a in range(m):
            for b in range(m):
                joint[on[a], on[b]] += sign


@njit_exact
def _statistics_log_evidence(joint, marginal, offsets, n_categories, ess, log_beta,
                             inv_temp):
    """:func:`tree_marginal_log_evidence` from the rows' count matrices, less the
    constant ``log Z(beta)`` (it cancels in every difference the block move takes)."""
    gain = pairwise_bdeu_gain(joint, marginal, offsets, n_categories, ess)
    V = offsets.shape[0]
    alone = 0.0
    for v in range(V):
        Kv = n_categories[v]
        alone += dirichlet_categorical_log_marginal(marginal[v, :Kv], ess / Kv)
    lw = np.empty((V, V))
    for u in range(V):
        for v in range(V):
            lw[u, v] = log_beta[u, v] + inv_temp * gain[u, v] if u != v else 0.0
    return inv_temp * alone + spanning_tree_log_partition_log_weights(lw)


@njit_exact
def block_log_weights(codes, block, a, stats, log_weights, prior, inv_temp):
    """Log weights of putting every row of ``block`` (now all in component ``a``) into
    component ``k``, for each ``k``, the rest of ``z`` fixed, with every tree and CPT
    integrated out:

    ``|S| log w_k + log m(D_k^{-S} + S) - log m(D_k^{-S})``,

    ``m(D) = sum_T P(T) p(D | T)^inv_temp`` (:func:`tree_marginal_log_evidence`,
    Meilă & Jaakkola 2006 Eq. 11) and ``D_k^{-S}`` the rows of ``k`` outside the block;
    the terms of the other components are the same for every ``k`` and cancel.
    ``stats`` (:class:`ComponentStatistics`) holds every component's count matrices and
    its ``log m`` (less ``log Z(beta)``), so only ``D_a^{-S}`` and each ``D_k + S`` are
    scored. Returns the weights, ``log m(D_a^{-S})`` and ``log m(D_k + S)`` per ``k``
    (``evidence[a]`` at ``a``)."""
    joints, marginals, evidence, offsets = stats
    n_categories, ess, log_beta = prior
    n_components = log_weights.shape[0]
    size = block.shape[0]
    out = np.empty(n_components)
    joined = np.empty(n_components)
    joint = joints[a].copy()
    marginal = marginals[a].copy()
    _add_row_statistics(codes, block, size, n_categories, offsets, joint, marginal, -1.0)
    without_a = _statistics_log_evidence(joint, marginal, offsets, n_categories, ess,
                                         log_beta, inv_temp)
    for k in range(n_components):
        if k == a:
            joined[k] = evidence[a]
            out[k] = size * log_weights[k] + evidence[a] - without_a
            continue
        joint = joints[k].copy()
        marginal = marginals[k].copy()
        _add_row_statistics(codes, block, size, n_categories, offsets, joint, marginal, 1.0)
        joined[k] = _statistics_log_evidence(joint, marginal, offsets, n_categories, ess,
                                             log_beta, inv_temp)
        out[k] = size * log_weights[k] + joined[k] - evidence[k]
    return out, without_a, joined


@njit_exact
def block_reassignments(rng, codes, state, neighbours, n_moves, prior, inv_temp):
    """``n_moves`` block moves on ``state.z``, in place; returns how many moved their
    block (``state.parents`` is not read: the moves integrate the trees out).

    A move draws a row ``i`` and a block size ``s`` in ``2..neighbours.shape[1]``
    uniformly; the block ``S`` is ``i`` and its ``s - 1`` nearest rows
    (:func:`row_neighbours`, data only). If the rows of ``S`` share one component, all of
    them are put into component ``k`` drawn from :func:`block_log_weights`; otherwise
    nothing changes. This is a Gibbs update of ``z_S`` restricted to the labellings that
    give the whole block one component, a set that is the same from every state in it,
    so it leaves ``p(z | w, X)`` with the trees integrated out invariant (the power
    posterior at ``inv_temp``); the caller then redraws every tree from ``P(T | z, X)``.
    A group of similar rows moves between components together, which one-row updates
    reach only through states where the group is split, each far less probable.
    """
    z, log_weights = state.z, state.log_weights
    n_categories, ess, log_beta = prior
    n = codes.shape[0]
    n_components = log_weights.shape[0]
    widest = neighbours.shape[1]
    moved = 0
    if widest < 2:
        return moved
    rows = np.empty(n, dtype=np.bool_)
    joint0, marginal0, offsets = _count_statistics(codes, np.zeros(n, dtype=np.bool_),
                                                   n_categories)
    joints = np.empty((n_components, joint0.shape[0], joint0.shape[1]))
    marginals = np.empty((n_components, marginal0.shape[0], marginal0.shape[1]))
    evidence = np.empty(n_components)
    for k in range(n_components):
        for i in range(n):
            rows[i] = z[i] == k
        joints[k], marginals[k], _offsets = _count_statistics(codes, rows, n_categories)
        evidence[k] = _statistics_log_evidence(joints[k], marginals[k], offsets,
                                               n_categories, ess, log_beta, inv_temp)
    for _ in range(n_moves):
        i = rng.integers(0, n)
        size = rng.integers(2, widest + 1)
        block = neighbours[i, :size]
        a = z[block[0]]
        same = True
        for t in range(1, size):
            if z[block[t]] != a:
                same = False
        if not same:
            continue
        lw, without_a, joined = block_log_weights(
            codes, block, a, ComponentStatistics(joints, marginals, evidence, offsets),
            log_weights, prior, inv_temp)
        k = sample_log_weights(lw, n_components, rng)
        if k != a:
            for t in range(size):
                z[block[t]] = k
            _add_row_statistics(codes, block, size, n_categories, offsets, joints[a],
                                marginals[a], -1.0)
            _add_row_statistics(codes, block, size, n_categories, offsets, joints[k],
                                marginals[k], 1.0)
            evidence[a] = without_a
            evidence[k] = joined[k]
            moved += 1
    return moved


# ---------------------------------------------------------------------------------------
# Op: the collapsed log likelihood log p(X | z, trees)
# ---------------------------------------------------------------------------------------


@njit_exact
def tree_mixture_logp(codes, z, parents, n_categories, ess):
    """log p(X | z, trees) with the CPTs integrated out; -inf for codes or labels out of
    range or a parent vector that is not a tree."""
    n, V = codes.shape
    n_components = parents.shape[0]
    if z.shape[0] != n or parents.shape[1] != V:
        return -np.inf
    for i in range(n):
        if z[i] < 0 or z[i] >= n_components:
            return -np.inf
        for v in range(V):
            if codes[i, v] < 0 or codes[i, v] >= n_categories[v]:
                return -np.inf
    for k in range(n_components):
        if parents[k, 0] != -1:
            return -np.inf
        for v in range(1, V):
            if parents[k, v] < 0 or parents[k, v] >= V:
                return -np.inf
    tables = tree_tables(codes, z, parents, n_categories)
    return collapsed_log_marginal(tables, parents, n_categories, ess)


def as_integer_tensor(x, name, ndim):
    """``x`` as an int64 tensor of ``ndim`` dimensions (labels, trees, codes of the
    mixture Ops); ``TypeError``/``ValueError`` naming ``name`` otherwise."""
    x = pt.as_tensor_variable(x)
    if not x.dtype.startswith(("int", "uint")):
        raise TypeError(f"{name} must be an integer tensor, got {x.dtype}")
    if x.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D, got {x.ndim}-D")
    return pt.cast(x, "int64")


class TreeMixtureLogp(Op):
    """``log p(X | z, T_1..T_K)`` of the mixture of trees with BDeu CPTs integrated out.

    Inputs: codes int (n, V), z int (n,), parents int (K, V), n_categories int (V,),
    ess float scalar. Codes, labels and trees are discrete and ``ess`` a constant
    hyperparameter here: no gradient.
    """

    __props__ = ()

    def make_node(self, codes, z, parents, n_categories, ess):
        ins = [as_integer_tensor(x, name, ndim) for name, x, ndim in (
            ("codes", codes, 2), ("z", z, 1), ("parents", parents, 2),
            ("n_categories", n_categories, 1))]
        ess = pt.as_tensor_variable(ess, dtype="float64")
        if ess.ndim != 0:
            raise ValueError("ess must be a scalar")
        return Apply(self, [*ins, ess], [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        codes, z, parents, n_categories, ess = inputs
        output_storage[0][0] = np.asarray(tree_mixture_logp(
            np.ascontiguousarray(codes), np.ascontiguousarray(z),
            np.ascontiguousarray(parents), np.ascontiguousarray(n_categories), float(ess)))

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        return [grad_undefined(self, i, x, "not differentiable here")
                for i, x in enumerate(inputs)]


@register_numba_op(TreeMixtureLogp)
def _numba_tree_mixture_logp(op, node, **kwargs):
    @nb.numba_njit
    def tree_mixture_logp_numba(codes, z, parents, n_categories, ess):
        return np.asarray(tree_mixture_logp(
            np.ascontiguousarray(codes), np.ascontiguousarray(z),
            np.ascontiguousarray(parents), np.ascontiguousarray(n_categories), ess.item()))

    return tree_mixture_logp_numba
