"""Greedy BHC builds the same trees as the heap over all candidate pairs it replaced.

``data/bhc_greedy_reference.npz`` and ``data/bhc_greedy_reference_10000.npz`` hold trees
built by the earlier kernel, which kept every candidate pair in one binary heap
(commit 4b15452, before the node heap with lazy re-scans): the merges, log p(D | T) and
log r_k. The trees must be the same merge for merge and the evidence the same number,
bit for bit; a test-only twin that breaks ties the other way is caught.
"""

from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from pp_models import bhc
from pp_models.bhc.defaults import resolve_hyper
from pp_models.bhc.greedy import TreeBuilder
from tests.pp_models.bhc.cases import binary_mixture

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def reference():
    return np.load(DATA / "bhc_greedy_reference.npz")


def test_digits_tree_is_unchanged(reference):
    X = (load_digits().data > 8).astype(float)
    res = bhc.greedy(X, progressbar=False)
    np.testing.assert_array_equal(res.merges, reference["digits_merges"])
    assert res.log_evidence == float(reference["digits_log_evidence"])
    np.testing.assert_array_equal(res.log_rk, reference["digits_log_rk"])
    # every candidate pair scored once, as the oracle counts them
    assert res.n_scored == (X.shape[0] - 1) ** 2


@pytest.mark.parametrize("method", ["randomized", "embhc"])
def test_randomized_builders_trees_are_unchanged(reference, method):
    # their top-level greedy runs on clusters (nodes with several points, own log d)
    X, _ = binary_mixture(600, 16, 4, 0.05, np.random.default_rng(21))
    res = getattr(bhc, method)(X, random_seed=1, subsample=30)
    np.testing.assert_array_equal(res.merges, reference[f"{method}_merges"])
    assert res.log_evidence == float(reference[f"{method}_log_evidence"])


def test_other_likelihoods_trees_are_unchanged(reference):
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(size=(50, 3)) + 4 * rng.normal(size=3) for _ in range(4)])
    for likelihood in ("gaussian", "diag_gaussian"):
        res = bhc.greedy(X, likelihood=likelihood, progressbar=False)
        np.testing.assert_array_equal(res.merges, reference[f"{likelihood}_merges"])
        assert res.log_evidence == float(reference[f"{likelihood}_log_evidence"])
    counts = rng.multinomial(20, [0.5, 0.3, 0.2], size=80)
    res = bhc.greedy(counts, likelihood="multinomial", alpha=0.5, progressbar=False)
    np.testing.assert_array_equal(res.merges, reference["multinomial_merges"])
    assert res.log_evidence == float(reference["multinomial_log_evidence"])


def test_a_builder_that_breaks_ties_the_other_way_is_caught(reference):
    """The digits hold identical images, so equal scores are common: a builder that
    prefers the larger ids among equal log r (here: the same kernel on the rows in
    reverse order, its merges mapped back) builds another tree, and the comparison
    above sees it."""
    X = (load_digits().data > 8).astype(float)
    n = X.shape[0]
    hyper, _ = resolve_hyper(X, "bernoulli", None)
    builder = TreeBuilder(X[::-1], "bernoulli", 1.0, hyper)
    merges = builder.greedy_points(np.arange(n))
    old_id = np.concatenate([np.arange(n)[::-1], np.arange(n, 2 * n - 1)])
    twin = np.sort(old_id[merges], axis=1)
    assert not np.array_equal(twin, np.sort(reference["digits_merges"], axis=1))


@pytest.mark.slow
def test_10000_point_tree_is_unchanged():
    """n = 10,000 binary points (``benchmarks/bench_bhc.make_data``, seed 0): the tree the
    old kernel took 1.6 GB of candidate pairs to build."""
    from benchmarks.bench_bhc import make_data

    ref = np.load(DATA / "bhc_greedy_reference_10000.npz")
    X, _ = make_data(10_000, seed=0)
    res = bhc.greedy(X, progressbar=False)
    np.testing.assert_array_equal(res.merges, ref["merges"])
    assert res.log_evidence == float(ref["log_evidence"])
    np.testing.assert_array_equal(res.log_rk, ref["log_rk"])
