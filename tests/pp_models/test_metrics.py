"""Clustering metrics: Murphy's worked example, Heller's dendrogram purity oracles, and
brute-force / scikit-learn references."""

import itertools

import numpy as np
import pytest
from scipy.cluster.hierarchy import linkage
from sklearn import metrics as skm

from pp_models import metrics


def nested_to_merges(tree):
    """Nested tuples of leaf ints -> merge list (post-order, scipy convention)."""
    leaves = []

    def collect(t):
        if isinstance(t, tuple):
            for c in t:
                collect(c)
        else:
            leaves.append(t)

    collect(tree)
    n = len(leaves)
    rows = []

    def build(t):
        if not isinstance(t, tuple):
            return t
        a, b = build(t[0]), build(t[1])
        rows.append((a, b))
        return n + len(rows) - 1

    build(tree)
    return np.array(rows)


def brute_force_dp(merges, labels, weighting="pair"):
    n = len(labels)
    leafsets = [{i} for i in range(n)]
    for i, j in merges:
        leafsets.append(leafsets[i] | leafsets[j])
    labels = np.asarray(labels)
    vals, weights = [], []
    for i, j in itertools.combinations(range(n), 2):
        if labels[i] != labels[j]:
            continue
        lca = min((s for s in leafsets if i in s and j in s), key=len)
        vals.append(np.mean(labels[list(lca)] == labels[i]))
        nc = np.sum(labels == labels[i])
        weights.append(1.0 if weighting == "pair" else 1.0 / (nc - 1))
    return float(np.average(vals, weights=weights))


# ------------------------------------------------------------------ Murphy §25.1.2
MURPHY_PRED = np.repeat([1, 2, 3], [6, 6, 5])
MURPHY_TRUE = np.array(list("AAAAAB" + "ABBBBC" + "AACCC"))


def test_murphy_worked_example():
    assert metrics.purity(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(12 / 17, abs=1e-6)
    assert metrics.purity(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(0.7059, abs=5e-5)
    assert metrics.rand_index(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(92 / 136, abs=1e-12)
    assert metrics.rand_index(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(0.6765, abs=5e-5)
    assert metrics.adjusted_rand_index(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(
        0.242915, abs=1e-6
    )
    assert metrics.normalized_mutual_info(MURPHY_TRUE, MURPHY_PRED) == pytest.approx(
        0.364562, abs=1e-6
    )


def test_flat_metrics_vs_sklearn_random_labelings():
    rng = np.random.default_rng(0)
    for _ in range(20):
        t = rng.integers(0, 4, size=50)
        p = rng.integers(0, 6, size=50)
        assert metrics.adjusted_rand_index(t, p) == pytest.approx(
            skm.adjusted_rand_score(t, p), abs=1e-12
        )
        assert metrics.normalized_mutual_info(t, p) == pytest.approx(
            skm.normalized_mutual_info_score(t, p), abs=1e-12
        )
        assert metrics.rand_index(t, p) == pytest.approx(skm.rand_score(t, p), abs=1e-12)
    # identical partitions up to relabelling
    assert metrics.adjusted_rand_index([0, 0, 1, 1], [5, 5, 2, 2]) == 1.0
    assert metrics.normalized_mutual_info([0, 0, 1, 1], [5, 5, 2, 2]) == pytest.approx(1.0)


# ------------------------------------------------------------------ dendrogram purity
def test_dendrogram_purity_heller_oracles():
    m = nested_to_merges((((0, 1), 2), ((3, 4), (5, (6, (7, 8))))))
    assert metrics.dendrogram_purity(m, [0, 0, 0, 1, 1, 1, 2, 2, 2]) == pytest.approx(8 / 9)
    m = nested_to_merges(((((0, 1), 2), (3, (4, 5))), ((6, 7), 8)))
    assert metrics.dendrogram_purity(m, [0, 0, 1, 1, 1, 0, 2, 2, 2]) == pytest.approx(20 / 27)
    m = nested_to_merges((((0, 1), (2, 3)), ((4, 5), 6)))
    y = [0, 0, 0, 1, 1, 1, 1]
    assert metrics.dendrogram_purity(m, y) == pytest.approx(0.80159, abs=5e-6)
    assert metrics.dendrogram_purity(m, y, weighting="leaf") == pytest.approx(0.80612, abs=5e-6)


def test_pure_tree_scores_one_and_scipy_linkage_accepted():
    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(0, 0.1, (6, 2)), rng.normal(10, 0.1, (5, 2))])
    y = np.repeat([3, 7], [6, 5])
    assert metrics.dendrogram_purity(linkage(X, "average"), y) == pytest.approx(1.0)


def test_recursive_equals_brute_force_and_invariances():
    rng = np.random.default_rng(2)
    for n in (5, 9, 14):
        X = rng.normal(size=(n, 2))
        Z = linkage(X, "single")
        y = rng.integers(0, 3, size=n)
        y[:2] = 0  # at least one class with a pair
        merges = Z[:, :2].astype(int)
        for w in ("pair", "leaf"):
            assert metrics.dendrogram_purity(Z, y, weighting=w) == pytest.approx(
                brute_force_dp(merges, y, w), rel=1e-12
            )
        swapped = merges[:, ::-1]
        assert metrics.dendrogram_purity(swapped, y) == pytest.approx(
            metrics.dendrogram_purity(merges, y)
        )
        relabelled = np.array([10, 20, 30])[y]
        assert metrics.dendrogram_purity(merges, relabelled) == pytest.approx(
            metrics.dendrogram_purity(merges, y)
        )


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: metrics.purity([0, 1], [0]), "labels_pred"),
        (lambda: metrics.purity([[0, 1]], [0, 1]), "labels_true"),
        (lambda: metrics.dendrogram_purity(np.array([[0, 1]]), [0, 0, 1]), "labels"),
        (lambda: metrics.dendrogram_purity(np.array([[0, 0], [2, 1]]), [0, 0, 1]), "linkage"),
        (lambda: metrics.dendrogram_purity(np.array([[0, 1], [0, 2]]), [0, 0, 1]), "linkage"),
        (lambda: metrics.dendrogram_purity(np.array([[0, 1], [3, 2]]), [0, 1, 2]), "no class"),
        (lambda: metrics.dendrogram_purity(np.array([[0, 1]]), [0, 0], weighting="x"), "weighting"),
        (lambda: metrics.rand_index([0, np.nan], [0, 1]), "NaN"),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()
