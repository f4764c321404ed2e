"""BHC's per-row conditional predictive under a fixed tree (LOO) against brute force,
and its replicates' tree-consistent partitions (pp_models.bhc.predictive)."""

from __future__ import annotations

import itertools

import numpy as np
import xarray as xr
from scipy.integrate import quad

from custom_ops import conjugate as cj
from custom_ops.bhc.evidence import tree_forward
from pp_models import bhc
from pp_models.bhc import predictive

RNG = np.random.default_rng(0)


def _posterior(**arrays):
    return xr.Dataset({k: (("chain", "draw", *[f"{k}_{i}" for i in range(np.ndim(v) - 1)]),
                           np.asarray(v)[None]) for k, v in arrays.items()})


def _log_evidence(likelihood, X, merges, alpha, hyper):
    fam = cj.FAMILY_CODES[likelihood]
    names = cj.FAMILIES[likelihood].hyper_names
    hp = cj.pack_hyper(likelihood, [hyper[k] for k in names])
    return tree_forward(fam, cj.point_stats(fam, np.asarray(X, dtype=float)), merges,
                        alpha, hp)[0][-1]


def test_binary_rows_conditional_predictive_sums_the_evidence_over_the_rows_values():
    # log p(x_i | X_{-i}, T) = log p(D | T) - log sum over the 2^d values v of x_i of
    # p(D with x_i = v | T): the row summed out exactly, each term a whole evidence
    X = (RNG.random((7, 3)) < 0.5).astype(float)
    m = bhc.model(X, likelihood="bernoulli")
    merges = m._pp_models_info.postprocess.merges
    alphas = np.array([0.4, 2.5])
    a = np.array([[0.5, 1.0, 2.0], [1.5, 1.5, 0.7]])
    b = np.array([[1.0, 0.3, 2.0], [0.8, 1.1, 1.0]])
    got = predictive.pointwise_log_likelihood(_posterior(alpha=alphas, a=a, b=b), m)
    got = got["X"].values[0]
    for s in range(2):
        hyper = {"a": a[s], "b": b[s]}
        full = _log_evidence("bernoulli", X, merges, alphas[s], hyper)
        for i in range(X.shape[0]):
            terms = []
            for v in itertools.product([0.0, 1.0], repeat=3):
                Xv = X.copy()
                Xv[i] = v
                terms.append(_log_evidence("bernoulli", Xv, merges, alphas[s], hyper))
            np.testing.assert_allclose(got[s, i], full - np.logaddexp.reduce(terms),
                                       rtol=1e-10)


def test_gaussian_rows_conditional_predictive_integrates_the_evidence():
    X = RNG.normal(size=(6, 1))
    m = bhc.model(X, likelihood="gaussian", priors={})  # every hyperparameter fixed
    info = m._pp_models_info.postprocess
    got = predictive.pointwise_log_likelihood(_posterior(dummy=np.zeros(1)), m)["X"].values
    full = _log_evidence("gaussian", X, info.merges, info.alpha, info.hyper)
    for i in range(X.shape[0]):
        def density(x, i=i):
            Xv = X.copy()
            Xv[i, 0] = x
            return np.exp(_log_evidence("gaussian", Xv, info.merges, info.alpha,
                                        info.hyper) - full)

        # the whole line: the predictives are Student-t, with tails a finite range misses
        integral = sum(quad(density, lo, hi, limit=200, epsabs=0.0, epsrel=1e-11)[0]
                       for lo, hi in ((-np.inf, X[i, 0]), (X[i, 0], np.inf)))
        np.testing.assert_allclose(got[0, 0, i], -np.log(integral), rtol=1e-7)


def test_partitions_are_drawn_with_the_trees_merge_probabilities():
    # over leaves {0, 1, 2} merged as ((0, 1), 2): {012} with r_root, {01}{2} with
    # (1 - r_root) r_01, {0}{1}{2} with (1 - r_root)(1 - r_01)
    children = {3: (0, 1), 4: (3, 2)}
    r = np.array([1.0, 1.0, 1.0, 0.3, 0.6])
    rng = np.random.default_rng(1)
    counts = {}
    reps = 20000
    for _ in range(reps):
        key = tuple(sorted(tuple(c) for c in predictive._partition(children, r, 3, rng)))
        counts[key] = counts.get(key, 0) + 1
    expected = {((0, 1, 2),): 0.6, ((0, 1), (2,)): 0.4 * 0.3,
                ((0,), (1,), (2,)): 0.4 * 0.7}
    assert set(counts) == set(expected)
    for key, p in expected.items():
        assert abs(counts[key] / reps - p) < 4.5 * np.sqrt(p * (1 - p) / reps)
