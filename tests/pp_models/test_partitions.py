"""Partition summaries: co-clustering, Binder / VI point estimates, ARI."""

import math

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from pp_models import partitions
from tests.custom_ops.test_crp import restricted_growth_strings


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
    parts = restricted_growth_strings(5)
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
