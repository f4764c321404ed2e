"""Label-invariant summaries of sampled partitions.

Posterior draws of a clustering are label vectors whose labels mean nothing by
themselves (label switching); what is identified is which items go together. This
module turns draws ``Z`` (S draws x n items) into:

- :func:`coclustering`: the posterior similarity matrix ``P[i, j] = Pr(z_i = z_j | data)``;
- :func:`point_estimate`: the partition minimising the posterior expected Binder loss
  (Binder 1978; Dahl 2006's least-squares clustering, then greedy single-item moves) or
  the expected variation of information (Meila 2007; Wade & Ghahramani 2018), searched
  over the sampled partitions;
- :func:`expected_binder_loss`, :func:`expected_vi`, :func:`variation_of_information`;
- :func:`adjusted_rand_index` (Hubert & Arabie 1985) and :func:`canonical_labels`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from custom_ops.crp import canonicalize

__all__ = [
    "adjusted_rand_index",
    "canonical_labels",
    "coclustering",
    "expected_binder_loss",
    "expected_vi",
    "n_blocks",
    "point_estimate",
    "variation_of_information",
]

_jit = numba.njit(cache=True)


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


@_jit
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


def coclustering(Z) -> np.ndarray:
    """Posterior similarity matrix ``P[i, j]``: the fraction of draws with z_i == z_j."""
    return _coclustering(_as_draws(Z))


@_jit
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


@_jit
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


@_jit
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


@_jit
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
