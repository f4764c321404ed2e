"""Label-invariant summaries of sampled partitions.

Posterior draws of a clustering are label vectors whose labels mean nothing by
themselves (label switching); what is identified is which items go together. This
module turns draws ``Z`` (S draws x n items) into:

- :func:`coclustering`: the posterior similarity matrix ``P[i, j] = Pr(z_i = z_j | data)``;
- :func:`point_estimate`: the partition minimising the posterior expected Binder loss
  (Binder 1978; Dahl 2006's least-squares clustering, then greedy single-item moves) or
  the expected variation of information (Meila 2007; Wade & Ghahramani 2018), searched
  over the sampled partitions;
- :func:`greedy_point_estimate` and :func:`expected_loss`: the same losses from
  contingency tables between partitions, linear in n (no n x n matrix);
- :func:`expected_binder_loss`, :func:`expected_vi`, :func:`variation_of_information`;
- :func:`adjusted_rand_index` (Hubert & Arabie 1985) and :func:`canonical_labels`.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.dpm.crp import canonicalize
from custom_ops.jit import njit_exact
from pp_models.validation import check_choice, check_int

__all__ = [
    "adjusted_rand_index",
    "canonical_labels",
    "coclustering",
    "expected_binder_loss",
    "expected_loss",
    "expected_vi",
    "greedy_point_estimate",
    "n_blocks",
    "point_estimate",
    "variation_of_information",
]



def _as_draws(Z, name="Z") -> np.ndarray:
    Z = np.asarray(Z)
    if Z.ndim == 1:
        Z = Z[None, :]
    if Z.ndim != 2 or Z.shape[0] < 1 or Z.shape[1] < 1:
        raise ValueError(f"{name} must be a (draws, items) array of labels, got shape {Z.shape}")
    if not np.issubdtype(Z.dtype, np.integer):
        if not np.all(np.isfinite(Z)) or not np.all(Z == np.round(Z)):
            raise ValueError(f"{name} must hold integer labels")
        Z = Z.astype(np.int64)
    if np.any(Z < 0):
        raise ValueError(f"{name} must hold non-negative labels")
    return np.ascontiguousarray(Z, dtype=np.int64)


def canonical_labels(z) -> np.ndarray:
    """``z`` relabelled by order of first appearance (0, 1, 2, ...)."""
    out, _K = canonicalize(_as_draws(z)[0])
    return out


def n_blocks(Z) -> np.ndarray:
    """Number of distinct labels in each draw (rows of ``Z``)."""
    Z = _as_draws(Z)
    return np.array([np.unique(row).size for row in Z])


@njit_exact
def _coclustering(Z):
    S, n = Z.shape
    P = np.zeros((n, n))
    for s in range(S):
        z = Z[s]
        for i in range(n):
            zi = z[i]
            for j in range(i + 1, n):
                if z[j] == zi:
                    P[i, j] += 1.0
    for i in range(n):
        P[i, i] = S
        for j in range(i + 1, n):
            P[j, i] = P[i, j]
    return P / S


def coclustering(Z, items=None) -> np.ndarray:
    """Posterior similarity matrix ``P[i, j]``: the fraction of draws with z_i == z_j.

    ``items`` (indices): the matrix of those items only (m x m memory for m items), for
    data sets too large for the whole n x n matrix.
    """
    Z = _as_draws(Z)
    if items is not None:
        idx = np.asarray(items)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or idx.size == 0:
            raise ValueError("items must be a non-empty 1-D array of item indices")
        if idx.min() < -Z.shape[1] or idx.max() >= Z.shape[1]:
            raise ValueError(f"items must index the {Z.shape[1]} items")
        Z = np.ascontiguousarray(Z[:, idx])
    return _coclustering(Z)


@njit_exact
def _binder(z, P):
    n = z.shape[0]
    out = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            out += (1.0 - P[i, j]) if z[i] == z[j] else P[i, j]
    return out


def expected_binder_loss(z, P) -> float:
    """Posterior expected Binder loss (equal misclassification costs) of partition ``z``:
    ``sum_{i<j} |1(z_i = z_j) - P[i, j]|`` (Binder 1978; Dahl 2006 Eq. 3)."""
    z = _as_draws(z)[0]
    P = np.asarray(P, dtype=np.float64)
    if P.shape != (z.size, z.size):
        raise ValueError(f"P must be ({z.size}, {z.size}), got {P.shape}")
    return float(_binder(z, P))


@njit_exact
def _vi(a, b):
    n = a.shape[0]
    Ka = a.max() + 1
    Kb = b.max() + 1
    table = np.zeros((Ka, Kb))
    ra = np.zeros(Ka)
    rb = np.zeros(Kb)
    for i in range(n):
        table[a[i], b[i]] += 1.0
        ra[a[i]] += 1.0
        rb[b[i]] += 1.0
    h_joint = 0.0
    for u in range(Ka):
        for v in range(Kb):
            c = table[u, v]
            if c > 0:
                h_joint -= c / n * math.log(c / n)
    ha = 0.0
    for u in range(Ka):
        if ra[u] > 0:
            ha -= ra[u] / n * math.log(ra[u] / n)
    hb = 0.0
    for v in range(Kb):
        if rb[v] > 0:
            hb -= rb[v] / n * math.log(rb[v] / n)
    # VI = H(a) + H(b) - 2 I(a, b) = 2 H(a, b) - H(a) - H(b)
    return 2.0 * h_joint - ha - hb


def variation_of_information(a, b) -> float:
    """Variation of information between two partitions, in nats (Meila 2007)."""
    a = canonical_labels(a)
    b = canonical_labels(b)
    if a.shape != b.shape:
        raise ValueError("a and b must label the same items")
    return float(_vi(a, b))


@njit_exact
def _expected_vi_many(candidates, Z):
    out = np.zeros(candidates.shape[0])
    for c in range(candidates.shape[0]):
        acc = 0.0
        for s in range(Z.shape[0]):
            acc += _vi(candidates[c], Z[s])
        out[c] = acc / Z.shape[0]
    return out


def expected_vi(z, Z) -> float:
    """Monte Carlo posterior expected variation of information of ``z`` over draws ``Z``."""
    z = canonical_labels(z)
    Z = np.array([canonical_labels(row) for row in _as_draws(Z)])
    return float(_expected_vi_many(z[None, :], Z)[0])


@njit_exact
def _binder_local_search(z, P, max_passes):
    """Greedy single-item moves (to another block or a new one) while the expected Binder
    loss decreases."""
    n = z.shape[0]
    K = z.max() + 1
    cap = 2 * n + 2
    # gain[i, k] = sum_{j in block k, j != i} (1 - 2 P_ij): loss change of having i in k
    for _pass in range(max_passes):
        moved = False
        for i in range(n):
            acc = np.zeros(cap)
            for j in range(n):
                if j != i:
                    acc[z[j]] += 1.0 - 2.0 * P[i, j]
            best = z[i]
            best_val = acc[z[i]]
            for k in range(K):
                if acc[k] < best_val - 1e-12:
                    best_val = acc[k]
                    best = k
            if best_val > 1e-12:
                # a block of its own (contributes 0) beats every existing block
                best = K
                K += 1
            if best != z[i]:
                z[i] = best
                moved = True
        if not moved:
            break
        z, K = canonicalize(z)
    z, K = canonicalize(z)
    return z


def point_estimate(Z, *, loss: str = "binder", max_candidates: int = 500,
                   max_draws: int = 1000, local_search: bool = True, P=None):
    """A single partition summarising posterior draws ``Z``.

    Parameters
    ----------
    Z : array (draws, n)
        Sampled label vectors (any labelling).
    loss : {"binder", "vi"}
        ``"binder"``: minimise the posterior expected Binder loss over the sampled
        partitions (Dahl 2006), then improve by greedy single-item moves (exact for this
        loss given the similarity matrix). ``"vi"``: minimise the Monte Carlo expected
        variation of information (Wade & Ghahramani 2018) over the sampled partitions.
    max_candidates, max_draws : int
        Distinct sampled partitions tried, and draws used to estimate expected VI (both
        thinned evenly when there are more).
    local_search : bool
        Binder only: the greedy refinement.
    P : array (n, n), optional
        The co-clustering matrix, if already computed.

    Returns
    -------
    z : ndarray (n,) canonical labels
    expected_loss : float
    """
    if loss not in ("binder", "vi"):
        raise ValueError(f"loss must be 'binder' or 'vi', got {loss!r}")
    Z = _as_draws(Z)
    canon = np.array([canonicalize(row)[0] for row in Z])
    unique = np.unique(canon, axis=0)
    if unique.shape[0] > max_candidates:
        unique = unique[np.linspace(0, unique.shape[0] - 1, max_candidates).astype(int)]
    if loss == "binder":
        P = coclustering(canon) if P is None else np.asarray(P, dtype=np.float64)
        losses = np.array([_binder(c, P) for c in unique])
        best = unique[int(np.argmin(losses))].copy()
        if local_search:
            best = _binder_local_search(best, P, 50)
        return best, float(_binder(best, P))
    draws = canon
    if draws.shape[0] > max_draws:
        draws = draws[np.linspace(0, draws.shape[0] - 1, max_draws).astype(int)]
    losses = _expected_vi_many(unique, draws)
    k = int(np.argmin(losses))
    return unique[k].copy(), float(losses[k])


def adjusted_rand_index(a, b) -> float:
    """Adjusted Rand index of two labelings of the same items (Hubert & Arabie 1985;
    Murphy 2012 Eq. 25.10). Labels may be any values ``numpy.unique`` can sort (the
    clustering metrics of :mod:`pp_models.metrics` use this function too)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 1 or a.shape != b.shape or a.size == 0:
        raise ValueError(f"a and b must label the same items (1-D, equal length, non-empty), "
                         f"got shapes {a.shape} and {b.shape}")
    for name, labels in (("a", a), ("b", b)):
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError(f"{name}: contains NaN or infinite values")
    a = np.unique(a, return_inverse=True)[1].reshape(-1)
    b = np.unique(b, return_inverse=True)[1].reshape(-1)
    n = a.size
    if n < 2:
        return 1.0
    table = np.zeros((a.max() + 1, b.max() + 1))
    np.add.at(table, (a, b), 1.0)

    def comb2(x):
        return x * (x - 1) / 2.0

    sum_cells = comb2(table).sum()
    sum_a = comb2(table.sum(1)).sum()
    sum_b = comb2(table.sum(0)).sum()
    expected = sum_a * sum_b / comb2(n)
    top = 0.5 * (sum_a + sum_b)
    if top == expected:
        return 1.0
    return float((sum_cells - expected) / (top - expected))


# ---------------------------------------------------------------------------------------
# Point estimates linear in n: losses from contingency tables between partitions
# ---------------------------------------------------------------------------------------
# For a candidate c and draws z^1..z^S, with N^s[k, l] = #{i: c_i = k, z^s_i = l} (the
# contingency table), m_k the block sizes of c and n^s_l those of z^s:
#
#   Binder (Binder 1978; Dahl 2006 Eq. 3, unit costs, P the co-clustering matrix):
#     sum_{i<j} |1(c_i = c_j) - P_ij|
#       = sum_k C(m_k, 2) + (1/S) sum_s sum_l C(n^s_l, 2) - (2/S) sum_s sum_kl C(N^s_kl, 2)
#   VI (Meila 2007; Wade & Ghahramani 2018 Eq. 7), in nats:
#     (1/S) sum_s VI(c, z^s)
#       = (1/n) [ sum_k m_k log m_k + (1/S) sum_s sum_l n^s_l log n^s_l
#                 - (2/S) sum_s sum_kl N^s_kl log N^s_kl ]
#
# Both need O(S n) work and O(S K_c K_z) memory, never the n x n matrix P. Moving item i
# from block a to block b changes only the cells (a, z^s_i) and (b, z^s_i) of every table,
# so a greedy single-item search (the moves of SALSO, Dahl, Johnson & Müller 2022) costs
# O(S K) per item.


@njit_exact
def _draw_block_counts(Zc):
    """Per-draw block sizes (S, K_max) of canonical draws, and K per draw."""
    S, n = Zc.shape
    ks = np.zeros(S, dtype=np.int64)
    for s in range(S):
        top = 0
        for i in range(n):
            if Zc[s, i] > top:
                top = Zc[s, i]
        ks[s] = top + 1
    counts = np.zeros((S, ks.max()), dtype=np.int64)
    for s in range(S):
        for i in range(n):
            counts[s, Zc[s, i]] += 1
    return counts, ks


@njit_exact
def _xlogx(x):
    return x * math.log(x) if x > 0 else 0.0


@njit_exact
def _c2(x):
    return 0.5 * x * (x - 1.0)


@njit_exact
def _draws_constant(draw_counts, loss_vi):
    """(1/S) sum_s sum_l f(n^s_l), the part of the expected loss that does not depend on
    the candidate (f = C(., 2) for Binder, x log x for VI)."""
    S, K = draw_counts.shape
    acc = 0.0
    for s in range(S):
        for l in range(K):
            x = float(draw_counts[s, l])
            acc += _xlogx(x) if loss_vi else _c2(x)
    return acc / S


@njit_exact
def _expected_losses(candidates, Zc, draw_counts, loss_vi):
    """Expected Binder (loss_vi=False) or VI loss of every candidate (rows, canonical)."""
    C, n = candidates.shape
    S = Zc.shape[0]
    kz = draw_counts.shape[1]
    const = _draws_constant(draw_counts, loss_vi)
    out = np.empty(C)
    for c in range(C):
        cand = candidates[c]
        kc = cand.max() + 1
        sizes = np.zeros(kc)
        for i in range(n):
            sizes[cand[i]] += 1.0
        own = 0.0
        for k in range(kc):
            own += _xlogx(sizes[k]) if loss_vi else _c2(sizes[k])
        table = np.zeros((kc, kz))
        cross = 0.0
        for s in range(S):
            table[:, :] = 0.0
            z = Zc[s]
            for i in range(n):
                table[cand[i], z[i]] += 1.0
            for k in range(kc):
                for l in range(kz):
                    x = table[k, l]
                    if x > 1.0:
                        cross += _xlogx(x) if loss_vi else _c2(x)
        total = own + const - 2.0 * cross / S
        out[c] = total / n if loss_vi else total
    return out


@njit_exact
def _greedy_search(z, Zc, kz, loss_vi, max_passes):
    """Single-item moves (to another block or a new one) while the expected loss drops.

    ``z``: the starting partition (canonical, modified in place); ``Zc``: canonical
    draws (S, n) with at most ``kz`` blocks each. The change of the loss when item i
    joins block b (having left its own) is, per draw s with l = z^s_i and t = N^s[b, l],
    Binder: m_b - (2/S) sum_s t; VI: [f(m_b + 1) - f(m_b)] - (2/S) sum_s [f(t + 1) - f(t)]
    (times 1/n), f(x) = x log x: joining an empty block costs 0 for both.
    """
    S, n = Zc.shape
    K = z.max() + 1
    cap = min(n, K + 256)
    sizes = np.zeros(cap)
    table = np.zeros((S, cap, kz))
    for i in range(n):
        sizes[z[i]] += 1.0
        for s in range(S):
            table[s, z[i], Zc[s, i]] += 1.0
    inv_s = 1.0 / S
    for _pass in range(max_passes):
        moved = False
        for i in range(n):
            a = z[i]
            sizes[a] -= 1.0
            for s in range(S):
                table[s, a, Zc[s, i]] -= 1.0
            vals = np.empty(K)
            empty = -1
            for k in range(K):
                m = sizes[k]
                if m == 0.0 and k != a:
                    vals[k] = np.inf
                    if empty < 0:
                        empty = k
                    continue
                acc = 0.0
                if loss_vi:
                    for s in range(S):
                        t = table[s, k, Zc[s, i]]
                        acc += _xlogx(t + 1.0) - _xlogx(t)
                    vals[k] = _xlogx(m + 1.0) - _xlogx(m) - 2.0 * inv_s * acc
                else:
                    for s in range(S):
                        acc += table[s, k, Zc[s, i]]
                    vals[k] = m - 2.0 * inv_s * acc
            # staying put wins ties
            best = a
            best_val = vals[a]
            for k in range(K):
                if vals[k] < best_val - 1e-12:
                    best_val = vals[k]
                    best = k
            if best_val > 1e-12:
                # a block of its own (contributes 0) beats every existing block
                if empty >= 0:
                    best = empty
                elif K < cap:
                    best = K
                    K += 1
            z[i] = best
            sizes[best] += 1.0
            for s in range(S):
                table[s, best, Zc[s, i]] += 1.0
            if best != a:
                moved = True
        if not moved:
            break
    out, _K = canonicalize(z)
    return out


def expected_loss(z, Z, *, loss: str = "binder") -> float:
    """Posterior expected Binder loss or VI of partition ``z`` over draws ``Z``, from
    contingency tables (O(draws x n) time, no n x n matrix).

    Equals :func:`expected_binder_loss` ``(z, coclustering(Z))`` and :func:`expected_vi`
    ``(z, Z)``.
    """
    if loss not in ("binder", "vi"):
        raise ValueError(f"loss must be 'binder' or 'vi', got {loss!r}")
    Zc = np.array([canonicalize(row)[0] for row in _as_draws(Z)])
    cand = canonical_labels(z)
    if cand.size != Zc.shape[1]:
        raise ValueError(f"z labels {cand.size} items, the draws {Zc.shape[1]}")
    counts, _ks = _draw_block_counts(Zc)
    return float(_expected_losses(cand[None, :], Zc, counts, loss == "vi")[0])


def greedy_point_estimate(Z, *, loss: str = "binder", max_candidates: int = 500,
                          max_draws: int = 500, work_budget: float = 5e7,
                          local_search: bool = True, max_passes: int = 50):
    """A point estimate of the partition with time and memory linear in n.

    The sampled partition with the least expected loss (Dahl's 2006 search over the
    draws, for Binder's loss or VI), then greedy single-item moves while the expected
    loss decreases (the moves of SALSO, Dahl, Johnson & Müller 2022), all computed from
    contingency tables between the candidate and the draws (see the section comment),
    never from the n x n co-clustering matrix.

    Parameters
    ----------
    Z : array (draws, n)
        Sampled label vectors (any labelling).
    loss : {"binder", "vi"}
    max_candidates : int
        Distinct sampled partitions tried as starting points (thinned evenly); fewer
        when ``candidates x draws x n`` would exceed ``work_budget``.
    max_draws : int
        Draws the expected loss averages over (thinned evenly).
    local_search : bool
        The greedy refinement.

    Returns
    -------
    z : ndarray (n,) canonical labels
    expected_loss : float
        Over the (thinned) draws used.
    """
    check_choice(loss, "loss", ("binder", "vi"))
    max_candidates = check_int(max_candidates, "max_candidates", minimum=1)
    max_draws = check_int(max_draws, "max_draws", minimum=1)
    max_passes = check_int(max_passes, "max_passes", minimum=1)
    Z = _as_draws(Z)
    if Z.shape[0] > max_draws:
        Z = Z[np.linspace(0, Z.shape[0] - 1, max_draws).astype(int)]
    Zc = np.array([canonicalize(row)[0] for row in Z])
    S, n = Zc.shape
    unique = np.unique(Zc, axis=0)
    budget = max(1, int(work_budget // (S * n)))
    n_cand = min(max_candidates, budget, unique.shape[0])
    if unique.shape[0] > n_cand:
        unique = unique[np.linspace(0, unique.shape[0] - 1, n_cand).astype(int)]
    counts, _ks = _draw_block_counts(Zc)
    vi = loss == "vi"
    losses = _expected_losses(unique, Zc, counts, vi)
    best = unique[int(np.argmin(losses))].copy()
    if local_search:
        best = _greedy_search(best, Zc, counts.shape[1], vi, max_passes)
    return best, float(_expected_losses(best[None, :], Zc, counts, vi)[0])
