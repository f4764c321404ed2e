"""The PYDT factory: structure, hints, bad input, and a posterior check against the
truth on data simulated from the model."""

import numpy as np
import pytest

from inference import fit
from pp_models import pydt
from pp_models.model_info import get_info


def test_factory_structure_and_hints():
    X = np.random.default_rng(0).normal(size=(6, 2))
    m = pydt.model(X)
    assert {v.name for v in m.free_RVs} == {"c", "theta", "alpha", "precision", "tree"}
    info = get_info(m)
    assert info.family == "pydt"
    assert info.step_hints[0].step == "pydt_tree"
    assert set(info.step_hints[0].var_names) == {"tree", "c", "theta", "alpha", "precision"}
    assert len(info.step_hints) == 1
    options = info.step_hints[0].options
    assert (options["ridge_rounds"], options["sweeps"]) == (0, 1)
    options = get_info(pydt.model(X, ridge_rounds=3, thin=5)).step_hints[0].options
    assert (options["ridge_rounds"], options["sweeps"]) == (3, 5)
    ddt = pydt.model(X, binary=True)
    assert {v.name for v in ddt.free_RVs} == {"c", "precision", "tree"}
    assert np.isfinite(m.compile_logp()(m.initial_point()))


@pytest.mark.parametrize(("X", "kwargs", "error", "match"), [
    (np.zeros(5), {}, ValueError, "X must be 2-D"),
    (np.zeros((1, 2)), {}, ValueError, "X needs at least 2 rows"),
    (np.array([[0.0], [np.nan]]), {}, ValueError, "NaN"),
    (np.zeros((4, 0)), {}, ValueError, "X has no columns"),
    ([["a"], ["b"]], {}, TypeError, "X must be a numeric 2-D array"),
    (np.zeros((4, 1)), {"priors": {"gamma": (1, 1)}}, ValueError, "unknown"),
    (np.zeros((4, 1)), {"priors": {"c": (1.0, -1.0)}}, ValueError, "positive"),
    (np.zeros((4, 1)), {"priors": [1, 2]}, TypeError, "priors"),
    (np.zeros((4, 1)), {"priors": {"c": "x"}}, TypeError, r"priors: c needs two numbers"),
    (np.zeros((4, 1)), {"binary": "yes"}, TypeError, "binary"),
    (np.zeros((4, 1)), {"ridge_rounds": -1}, ValueError, "ridge_rounds"),
    (np.zeros((4, 1)), {"thin": 0}, ValueError, "thin"),
    (np.zeros((4, 1)), {"thin": 1.5}, TypeError, "thin"),
])
def test_factory_bad_input(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        pydt.model(X, **kwargs)


@pytest.mark.slow
def test_posterior_of_sigma2_and_c_covers_the_truth():
    """Data from a known tree (n = 12, D = 30, sigma2 = 1, c = 1, DDT): the posterior of
    sigma2 is concentrated by 30 dimensions and must cover 1; c's must cover 1."""
    draw = pydt.sample_prior(12, c=1.0, theta=0.0, alpha=0.0, dim=30, random_seed=4)[0]
    m = pydt.model(draw.X, binary=True)
    dt = fit(m, draws=150, tune=100, chains=1, random_seed=2, progressbar=False)
    s2 = dt.posterior["sigma2"].values.ravel()
    c = dt.posterior["c"].values.ravel()
    assert np.quantile(s2, 0.005) < 1.0 < np.quantile(s2, 0.995)
    assert np.quantile(c, 0.005) < 1.0 < np.quantile(c, 0.995)
    assert 0.5 < np.median(s2) < 2.0
    assert set(dt.posterior["n_internal"].values.ravel()) == {11}


def test_cli_build_drops_repeated_rows_and_standardises():
    """A repeated row makes the posterior improper (docs/families/pydt.md, "Repeated
    rows and the origin"): ``ppzoo fit pydt`` fits the distinct rows, standardised."""
    from pp_models.datasets.registry import Dataset

    X = np.array([[5.0, 1.0], [6.0, 3.0], [5.0, 1.0], [7.0, 2.0]])
    data = Dataset(name="toy", data=X)

    def observed(m):
        return np.asarray(m.rvs_to_values[m["X"]].data)

    fitted = observed(pydt.FAMILY.cli.build(data))
    expected = X[[0, 1, 3]]
    expected = (expected - expected.mean(axis=0)) / expected.std(axis=0)
    np.testing.assert_allclose(fitted, expected)
    np.testing.assert_array_equal(observed(pydt.FAMILY.cli.build(data, standardize=False)),
                                  X[[0, 1, 3]])
