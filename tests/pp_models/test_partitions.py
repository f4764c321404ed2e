"""Partition summaries: co-clustering, Binder / VI point estimates, ARI."""

import math

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from pp_models import partitions
from tests.oracles.mixtures import partitions as all_partitions


def test_coclustering_by_hand():
    Z = np.array([[0, 0, 1], [0, 1, 1], [5, 5, 5], [2, 3, 2]])
    P = partitions.coclustering(Z)
    expected = np.array([[1, 0.5, 0.5], [0.5, 1, 0.5], [0.5, 0.5, 1]])
    np.testing.assert_allclose(P, expected)


def test_ari_matches_scikit_learn():
    rng = np.random.default_rng(0)
    for _ in range(20):
        a, b = rng.integers(0, 4, 30), rng.integers(0, 5, 30)
        assert partitions.adjusted_rand_index(a, b) == pytest.approx(adjusted_rand_score(a, b))
    assert partitions.adjusted_rand_index([0, 0, 1], [3, 3, 9]) == 1.0


def test_variation_of_information_by_definition():
    a = np.array([0, 0, 1, 1, 2])
    b = np.array([0, 1, 1, 1, 1])
    n = a.size
    joint = {}
    for u, v in zip(a, b, strict=True):
        joint[(u, v)] = joint.get((u, v), 0) + 1
    pa = np.bincount(a) / n
    pb = np.bincount(b) / n
    mi = sum(c / n * math.log((c / n) / (pa[u] * pb[v])) for (u, v), c in joint.items())
    ha = -np.sum(pa * np.log(pa))
    hb = -np.sum(pb * np.log(pb))
    assert partitions.variation_of_information(a, b) == pytest.approx(ha + hb - 2 * mi)
    assert partitions.variation_of_information(a, a[::-1][::-1]) == pytest.approx(0.0)


def test_binder_point_estimate_is_the_exact_minimiser():
    """Over all 52 partitions of 5 items, the returned partition minimises expected Binder
    loss computed from a random posterior on partitions."""
    rng = np.random.default_rng(1)
    parts = all_partitions(5)
    weights = rng.dirichlet(np.full(len(parts), 0.3))
    draws = np.array([parts[i] for i in rng.choice(len(parts), size=3000, p=weights)])
    P = partitions.coclustering(draws)
    losses = [partitions.expected_binder_loss(z, P) for z in parts]
    _z, loss = partitions.point_estimate(draws, loss="binder")
    assert loss == pytest.approx(min(losses))
    # VI: the minimiser over the sampled partitions of the Monte Carlo expected loss
    _z, vi = partitions.point_estimate(draws, loss="vi", max_draws=3000)
    sampled = {tuple(z) for z in draws}
    best = min(partitions.expected_vi(np.array(z), draws) for z in sampled)
    assert vi == pytest.approx(best, rel=1e-9)


def test_point_estimate_recovers_a_clear_clustering_and_validates():
    truth = np.repeat([0, 1, 2], 10)
    rng = np.random.default_rng(2)
    draws = np.array([np.where(rng.random(30) < 0.05, rng.integers(0, 3, 30), truth)
                      for _ in range(200)])
    for loss in ("binder", "vi"):
        z, _ = partitions.point_estimate(draws, loss=loss)
        assert partitions.adjusted_rand_index(z, truth) == 1.0
    with pytest.raises(ValueError, match="loss must be"):
        partitions.point_estimate(draws, loss="l2")
    with pytest.raises(ValueError, match="non-negative"):
        partitions.coclustering(-draws - 1)
    assert partitions.n_blocks(draws).min() >= 3


def _mixed_draws(rng, n, n_draws, k=4, noise=0.2):
    truth = rng.integers(0, k, n)
    return np.array([np.where(rng.random(n) < noise, rng.integers(0, k + 2, n), truth)
                     for _ in range(n_draws)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_table_losses_equal_the_matrix_formulas(seed):
    """Binder from contingency tables == sum_{i<j} |1(z_i = z_j) - P_ij| with the n x n P;
    VI from tables == the mean of pairwise VIs (by its definition, Meila 2007)."""
    rng = np.random.default_rng(seed)
    draws = _mixed_draws(rng, 40, 25, noise=0.4)
    P = partitions.coclustering(draws)
    for z in [draws[3], rng.integers(0, 7, 40), np.zeros(40, int), np.arange(40)]:
        brute = sum(abs(float(z[i] == z[j]) - P[i, j]) for i in range(40)
                    for j in range(i + 1, 40))
        assert partitions.expected_loss(z, draws) == pytest.approx(brute, rel=1e-10)
        vi = np.mean([partitions.variation_of_information(z, d) for d in draws])
        assert partitions.expected_loss(z, draws, loss="vi") == pytest.approx(vi, rel=1e-10)


def test_greedy_point_estimate_is_the_exact_minimiser_on_five_items():
    rng = np.random.default_rng(1)
    parts = all_partitions(5)
    weights = rng.dirichlet(np.full(len(parts), 0.3))
    draws = np.array([parts[i] for i in rng.choice(len(parts), size=3000, p=weights)])
    P = partitions.coclustering(draws)
    _z, loss = partitions.greedy_point_estimate(draws, max_draws=3000)
    assert loss == pytest.approx(min(partitions.expected_binder_loss(p, P) for p in parts))
    vis = [partitions.expected_loss(p, draws, loss="vi") for p in parts]
    _z, vi = partitions.greedy_point_estimate(draws, loss="vi", max_draws=3000)
    assert vi == pytest.approx(min(vis), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_greedy_point_estimate_is_no_worse_than_the_matrix_one(seed):
    rng = np.random.default_rng(10 + seed)
    draws = _mixed_draws(rng, 60, 80, noise=0.35)
    P = partitions.coclustering(draws)
    _old, old_loss = partitions.point_estimate(draws, loss="binder")
    new, new_loss = partitions.greedy_point_estimate(draws, loss="binder")
    assert new_loss == pytest.approx(partitions.expected_binder_loss(new, P), rel=1e-10)
    assert new_loss <= old_loss + 1e-9
    old_vi = partitions.point_estimate(draws, loss="vi")[1]
    assert partitions.greedy_point_estimate(draws, loss="vi")[1] <= old_vi + 1e-12


def test_greedy_point_estimate_recovers_a_clear_clustering_and_validates():
    truth = np.repeat([0, 1, 2], 10)
    rng = np.random.default_rng(2)
    draws = np.array([np.where(rng.random(30) < 0.05, rng.integers(0, 3, 30), truth)
                      for _ in range(200)])
    for loss in ("binder", "vi"):
        z, _ = partitions.greedy_point_estimate(draws, loss=loss)
        assert partitions.adjusted_rand_index(z, truth) == 1.0
    with pytest.raises(ValueError, match="loss must be"):
        partitions.greedy_point_estimate(draws, loss="l2")
    with pytest.raises(ValueError, match="max_draws"):
        partitions.greedy_point_estimate(draws, max_draws=0)


def test_coclustering_of_a_subset_of_items():
    rng = np.random.default_rng(3)
    draws = _mixed_draws(rng, 30, 40)
    items = np.array([4, 0, 17, 29])
    np.testing.assert_array_equal(partitions.coclustering(draws, items),
                                  partitions.coclustering(draws)[np.ix_(items, items)])
    with pytest.raises(ValueError, match="items"):
        partitions.coclustering(draws, [30])
