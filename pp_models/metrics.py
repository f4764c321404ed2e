"""Clustering evaluation: dendrogram purity for trees, and purity, Rand, adjusted Rand
(the one of :mod:`pp_models.partitions`, re-exported) and normalised mutual information
for flat partitions.

Definitions: Heller (2007) §3.5 footnote 3 (dendrogram purity); Murphy (2012) §25.1.2
Eqs. 25.5-25.12 (flat metrics; NMI with the arithmetic mean of the entropies, which is
scikit-learn's default).
"""

from __future__ import annotations

import numpy as np

from pp_models.partitions import adjusted_rand_index
from pp_models.trees import validate_merges

__all__ = [
    "adjusted_rand_index",
    "contingency",
    "dendrogram_purity",
    "normalized_mutual_info",
    "purity",
    "rand_index",
]


def _labels(labels, name, n=None):
    arr = np.asarray(labels)
    if arr.ndim != 1:
        raise ValueError(f"{name}: must be 1-D, got shape {arr.shape}")
    if n is not None and arr.shape[0] != n:
        raise ValueError(f"{name}: expected {n} labels, got {arr.shape[0]}")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}: is empty")
    if arr.dtype.kind == "f" and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: contains NaN or infinite values")
    _, codes = np.unique(arr, return_inverse=True)
    return codes.astype(np.int64)


def contingency(labels_true, labels_pred):
    """N[i, j]: number of objects in cluster i (``labels_pred``) with class j."""
    t = _labels(labels_true, "labels_true")
    p = _labels(labels_pred, "labels_pred", t.shape[0])
    N = np.zeros((p.max() + 1, t.max() + 1), dtype=np.int64)
    np.add.at(N, (p, t), 1)
    return N


def purity(labels_true, labels_pred):
    """Σ_i max_j N_ij / N (Murphy 2012 Eq. 25.5)."""
    N = contingency(labels_true, labels_pred)
    return float(N.max(axis=1).sum() / N.sum())


def _pairs(x):
    return x * (x - 1) / 2.0


def rand_index(labels_true, labels_pred):
    """(TP + TN) / C(N, 2) over all pairs of objects (Murphy 2012 Eq. 25.7)."""
    N = contingency(labels_true, labels_pred)
    n = N.sum()
    tp = _pairs(N).sum()
    tp_fp = _pairs(N.sum(axis=1)).sum()
    tp_fn = _pairs(N.sum(axis=0)).sum()
    total = _pairs(n)
    tn = total - tp_fp - tp_fn + tp
    return float((tp + tn) / total) if total > 0 else 1.0


def normalized_mutual_info(labels_true, labels_pred):
    """I(U, V) / ((H(U) + H(V)) / 2) in nats (Murphy 2012 Eqs. 25.11-25.12)."""
    N = contingency(labels_true, labels_pred).astype(float)
    n = N.sum()
    p = N / n
    pu = p.sum(axis=1)
    pv = p.sum(axis=0)
    nz = p > 0
    mi = float(np.sum(p[nz] * np.log(p[nz] / np.outer(pu, pv)[nz])))
    hu = -float(np.sum(pu[pu > 0] * np.log(pu[pu > 0])))
    hv = -float(np.sum(pv[pv > 0] * np.log(pv[pv > 0])))
    if hu + hv == 0.0:
        return 1.0
    return mi / (0.5 * (hu + hv))


def dendrogram_purity(linkage, labels, *, weighting="pair"):
    """Dendrogram purity of a binary tree (Heller 2007 §3.5, footnote 3).

    For two leaves of the same class, take the smallest subtree containing both and the
    fraction of its leaves in that class; the purity is the expectation of this fraction.
    Computed exactly bottom-up: with class-count vectors a, b of the children of node k
    and v = a + b, node k is the smallest common subtree of a_c b_c same-class pairs of
    class c, each scoring v_c / n_k.

    Parameters
    ----------
    linkage : (n - 1, 4) scipy linkage or (n - 1, 2) merge list
    labels : (n,) class labels of the leaves
    weighting : {"pair", "leaf"}
        ``"pair"`` (default): uniform over unordered same-class pairs (the form used by
        later literature, e.g. Kobren et al. 2017). ``"leaf"``: Heller's literal
        procedure (a leaf uniformly among leaves that have a same-class partner, then a
        partner uniformly in its class), which weights class c by n_c instead of
        C(n_c, 2). The two agree when all classes have equal size.

    Returns
    -------
    float in [0, 1]; 1 iff every class is exactly the leaf set of some subtree.
    """
    if weighting not in ("pair", "leaf"):
        raise ValueError(f"weighting: must be 'pair' or 'leaf', got {weighting!r}")
    y = _labels(labels, "labels")
    n = y.shape[0]
    Z = np.asarray(linkage)
    if Z.ndim == 2 and Z.shape[0] + 1 != n:
        raise ValueError(f"labels: linkage has {Z.shape[0] + 1} leaves but {n} labels were given")
    m = validate_merges(Z, n, name="linkage")
    C = int(y.max()) + 1
    class_n = np.bincount(y, minlength=C).astype(float)
    if not np.any(class_n >= 2):
        raise ValueError("labels: no class has two or more members; purity is undefined")
    counts = np.zeros((2 * n - 1, C))
    counts[np.arange(n), y] = 1.0
    if weighting == "pair":
        w = np.ones(C)
        denom = float(np.sum(_pairs(class_n)))
    else:
        # ordered pair (ℓ, j): prob 1/n' · 1/(n_c - 1); an unordered pair counts twice
        n_prime = float(class_n[class_n >= 2].sum())
        w = np.where(class_n >= 2, 2.0 / (n_prime * np.maximum(class_n - 1.0, 1.0)), 0.0)
        denom = 1.0
    total = 0.0
    for t, (i, j) in enumerate(m):
        k = n + t
        a, b = counts[i], counts[j]
        v = a + b
        counts[k] = v
        total += float(np.sum(w * a * b * v)) / v.sum()
    return total / denom
