"""pp_models.finite_mixture: the model's structure and input validation."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats

from inference import fit
from pp_models import datasets, finite_mixture
from pp_models.model_info import get_info, posterior_with_labels


def test_structure_and_info():
    X = np.random.default_rng(0).normal(size=(20, 3))
    model = finite_mixture.model(X, 4)
    assert sorted(rv.name for rv in model.free_RVs) == ["mu", "sigma", "w", "z"]
    assert model["z"].eval().shape == (20,)
    info = get_info(model)
    assert info.preferred_method == "gibbs"
    assert info.step_hints[0].step == "categorical_gibbs"
    assert {d.name for d in info.derived} == {"n_occupied", "weights_sorted", "log_likelihood"}


def test_logp_matches_independent_formula():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    floor = np.array([0.05, 0.2])
    model = finite_mixture.model(X, 2, resolution=floor)
    point = model.initial_point()
    point["z"] = np.array([0, 1, 1, 0, 1, 0])
    sigma = np.array([[0.04, 0.5], [1.3, 0.9]])
    point["sigma_log__"] = np.log(sigma)
    logp = model.compile_logp()(point)
    w = np.full(2, 0.5)
    mu = np.tile(X.mean(0), (2, 1))
    expected = (
        stats.dirichlet.logpdf(w, [1.0, 1.0])
        + stats.norm.logpdf(mu, X.mean(0), 2 * X.std(0)).sum()
        + _floored_half_normal_logpdf(sigma, X.std(0), floor).sum()
        + 6 * np.log(0.5)
        + stats.norm.logpdf(X, mu[point["z"]], sigma[point["z"]]).sum()
    )
    # Jacobians of the simplex and log transforms are part of the model's logp on the
    # transformed space; compare on the untransformed scale instead.
    untransformed = model.compile_fn(model.logp(jacobian=False), point_fn=True)(point)
    np.testing.assert_allclose(untransformed, expected, rtol=1e-10)
    assert np.isfinite(logp)


def _floored_half_normal_logpdf(x, s, c):
    # half-normal(s) times exp(-c^2 / (2 x^2)), normalised: int_0^inf exp(-x^2/(2 s^2) -
    # c^2/(2 x^2)) dx = s sqrt(pi/2) exp(-c/s)
    return stats.halfnorm.logpdf(x, scale=s) + c / s - c**2 / (2 * x**2)


def test_dataframe_columns_become_feature_names():
    frame = pd.DataFrame({"height": [1.0, 2.0, 3.0], "weight": [3.0, 1.0, 2.0]})
    model = finite_mixture.model(frame, 2)
    assert list(model.coords["feature"]) == ["height", "weight"]


@pytest.mark.parametrize(
    ("X", "kwargs", "error", "match"),
    [
        (np.ones(5), {}, ValueError, "X must be 2-D"),
        (np.ones((1, 2)), {}, ValueError, "at least 2 rows"),
        (np.array([[1.0, np.nan], [2.0, 3.0]]), {}, ValueError, "non-finite"),
        (np.array([["a", "b"], ["c", "d"]]), {}, TypeError, "numeric"),
        (np.ones((4, 2)), {"n_components": 0}, ValueError, "n_components must be >= 1"),
        (np.ones((4, 2)), {"n_components": 2.5}, TypeError, "n_components must be an integer"),
        (np.ones((4, 2)), {"weight_concentration": 0}, ValueError, "weight_concentration"),
        (np.ones((4, 2)), {"feature_names": ["a"]}, ValueError, "feature_names has 1"),
        (np.ones((4, 2)), {"resolution": 0.0}, ValueError, "resolution must be finite and > 0"),
        (np.ones((4, 2)), {"resolution": [0.1, -1.0]}, ValueError, "first at 1"),
        (np.ones((4, 2)), {"resolution": [0.1]}, ValueError, r"resolution must be a number or "
                                                            r"have shape \(2,\)"),
        # one string is not read as one name per character
        (np.ones((4, 2)), {"feature_names": "ab"}, TypeError, "feature_names must be a "
                                                              "sequence of names"),
    ],
)
def test_bad_input(X, kwargs, error, match):
    kwargs = {"n_components": 2, **kwargs}
    with pytest.raises(error, match=match):
        finite_mixture.model(X, **kwargs)


def test_prior_draws_work():
    model = finite_mixture.model(np.random.default_rng(2).normal(size=(10, 2)), 3)
    draws = pm.draw(model["z"], draws=5, random_seed=1)
    assert draws.shape == (5, 10) and draws.max() < 3


# --- tied values: the prior on sigma keeps the posterior proper -------------------------


def _iris_state(groups, X):
    mu = np.array([X[g].mean(0) for g in groups])
    sigma = np.array([X[g].std(0) for g in groups])
    w = np.array([g.mean() for g in groups])
    return mu, sigma, w, np.select(groups, np.arange(len(groups)))


def test_a_component_on_tied_values_is_penalised_not_rewarded():
    # iris is recorded to 0.1 cm: 29 setosa petal widths are exactly 0.2. A component
    # holding just those rows had log density -> +inf as its petal-width sigma -> 0 (with
    # the plain half-normal prior, above the species partition's from sigma ~ 1e-5 on);
    # with the floor it peaks near the resolution's scale, far below the species'.
    iris = datasets.load("iris")
    X = iris.data
    model = finite_mixture.model(X, 3)
    logp = model.compile_fn(model.logp(jacobian=False), point_fn=True)

    def log_density(mu, sigma, w, z):
        return float(logp({"mu": mu, "sigma_log__": np.log(sigma),
                           "w_simplex__": np.log(w[:-1] / w[-1]), "z": z}))

    species = log_density(*_iris_state([iris.target == k for k in range(3)], X))
    tied = np.isclose(X[:, 3], 0.2) & (iris.target == 0)
    mu, sigma, w, z = _iris_state([tied, (iris.target == 0) & ~tied, iris.target > 0], X)
    collapse = []
    for s in np.geomspace(0.3, 1e-8, 30):
        sigma[0, 3] = s
        collapse.append(log_density(mu, sigma, w, z))
    assert max(collapse) < species - 50
    small = np.geomspace(0.3, 1e-8, 30) < 0.01
    assert np.all(np.diff(np.array(collapse)[small]) < 0)


def test_a_short_fit_started_collapsed_on_tied_values_leaves_the_collapse():
    # petal width alone, component 0 started on the 29 rows of 0.2 cm with sigma 0.01, a
    # tenth of the resolution: with the half-normal prior the chain went on collapsing
    # (sigma ~6e-4 after 150 iterations, seeds 1-3); with the floor it climbs to the
    # floor's scale (min 0.014-0.018 over seeds 1-5)
    iris = datasets.load("iris")
    X = iris.data[:, [3]]
    tied = np.isclose(X[:, 0], 0.2)
    mu, sigma, w, z = _iris_state([tied, (X[:, 0] < 1) & ~tied, X[:, 0] >= 1], X)
    sigma[0] = 0.01
    model = finite_mixture.model(X, 3)
    dt = fit(model, draws=50, tune=100, chains=1, cores=1, random_seed=3, progressbar=False,
             initvals={"mu": mu, "sigma": sigma, "w": w, "z": z})
    sigma_draws = posterior_with_labels(dt)["sigma"].values
    assert sigma_draws.min() > 0.1 / 20


@pytest.mark.slow
def test_no_degenerate_chain_on_iris_over_20_seeds():
    # 4 chains x 200 draws after the CLI's 1000 tuning iterations, at 20 seeds: no chain
    # has a component whose sigma sits below the rounding noise of the 0.1 cm recording
    # (0.1 / sqrt(12)); a collapsed chain sat at ~1e-8 with the half-normal prior
    X = datasets.load("iris").data
    degenerate = []
    for seed in range(20):
        dt = fit(finite_mixture.model(X, 3), draws=200, tune=1000, chains=4, cores=2,
                 random_seed=1000 + seed, progressbar=False)
        sigma = posterior_with_labels(dt)["sigma"].values  # (chain, draw, K, d)
        smallest = np.median(sigma.min(axis=(2, 3)), axis=1)
        degenerate += [(seed, c) for c in np.flatnonzero(smallest < 0.1 / np.sqrt(12))]
    assert not degenerate, degenerate
