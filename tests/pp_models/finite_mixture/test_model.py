"""pp_models.finite_mixture: the model's structure and input validation."""

import numpy as np
import pandas as pd
import pymc as pm
import pytest
from scipy import stats

from pp_models import finite_mixture
from pp_models.model_info import get_info


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
    model = finite_mixture.model(X, 2)
    point = model.initial_point()
    point["z"] = np.array([0, 1, 1, 0, 1, 0])
    logp = model.compile_logp()(point)
    w = np.full(2, 0.5)
    mu = np.tile(X.mean(0), (2, 1))
    sigma = np.tile(X.std(0), (2, 1))
    expected = (
        stats.dirichlet.logpdf(w, [1.0, 1.0])
        + stats.norm.logpdf(mu, X.mean(0), 2 * X.std(0)).sum()
        + stats.halfnorm.logpdf(sigma, scale=X.std(0)).sum()
        + 6 * np.log(0.5)
        + stats.norm.logpdf(X, mu[point["z"]], sigma[point["z"]]).sum()
    )
    # Jacobians of the simplex and log transforms are part of the model's logp on the
    # transformed space; compare on the untransformed scale instead.
    untransformed = model.compile_fn(model.logp(jacobian=False), point_fn=True)(point)
    np.testing.assert_allclose(untransformed, expected, rtol=1e-10)
    assert np.isfinite(logp)


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
