"""inference.nutpie_cache: fit(method="nuts") compiles a model for nutpie once.

Compilations are counted by wrapping ``nutpie.compile_pymc_model`` (what ``pm.sample``
calls); every draw compared here is compared exactly, since a hit must run the very
functions a new compile would make.
"""

import arviz as az
import numpy as np
import nutpie
import pymc as pm
import pytest

from inference import fit
from inference.nutpie_cache import _options_key, model_signature

# one xdist worker runs this module: its two compiling tests share one model object
pytestmark = pytest.mark.xdist_group("nutpie_cache")

SIZES = dict(draws=300, tune=200, chains=2, progressbar=False)


@pytest.fixture
def compiles(monkeypatch):
    """The models ``nutpie.compile_pymc_model`` compiled, in order."""
    seen = []
    original = nutpie.compile_pymc_model

    def counting(model, **options):
        seen.append(model)
        return original(model, **options)

    monkeypatch.setattr(nutpie, "compile_pymc_model", counting)
    return seen


def _data(n, slope, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    return x, slope * x + rng.normal(size=n)


def _regression(x, y):
    """y_i ~ N(beta x_i, 1), beta ~ N(0, 10), x and y in pm.Data; mu_i = beta x_i kept."""
    with pm.Model(coords={"obs": np.arange(len(y))}) as model:
        x_data = pm.Data("x", x, dims="obs")
        y_data = pm.Data("y", y, dims="obs")
        beta = pm.Normal("beta", 0.0, 10.0)
        mu = pm.Deterministic("mu", beta * x_data, dims="obs")
        pm.Normal("y_obs", mu, 1.0, observed=y_data, dims="obs")
    return model


def _exact_posterior(x, y):
    """Mean and sd of beta's conjugate normal posterior."""
    precision = 1 / 10.0**2 + np.sum(x**2)
    return np.sum(x * y) / precision, precision**-0.5


def _assert_same_tree(a, b):
    assert set(a.children) == set(b.children)
    for group in a.children:
        da, db = a[group].to_dataset(), b[group].to_dataset()
        assert set(da.data_vars) == set(db.data_vars), group
        assert set(da.coords) == set(db.coords), group
        assert set(da.attrs) == set(db.attrs), group
        for name in da.data_vars:
            np.testing.assert_array_equal(da[name].values, db[name].values)
    assert set(a.attrs) == set(b.attrs)


@pytest.fixture(scope="module")
def regression():
    """(model, x, y): one model object for both tests (a compile costs seconds)."""
    x, y = _data(30, 2.0, seed=0)
    return _regression(x, y), x, y


def test_refits_reuse_the_compiled_model_and_new_data_reach_it(regression, compiles):
    model, x, y = regression
    first = fit(model, method="nuts", random_seed=7, **SIZES)  # a miss: compiles
    assert len(compiles) == 1
    second = fit(model, method="nuts", random_seed=7, **SIZES)  # a hit
    other_seed = fit(model, method="nuts", random_seed=8, **{**SIZES, "chains": 3})
    assert len(compiles) == 1
    _assert_same_tree(first, second)
    assert other_seed["posterior"]["beta"].shape == (3, 300)
    assert not np.array_equal(other_seed["posterior"]["beta"].values[:2],
                              first["posterior"]["beta"].values)
    # the wrapper is gone after fit: PyMC's own calls reach nutpie's function again
    assert nutpie.compile_pymc_model.__name__ == "counting"

    # new values of the same shape: handed to the compiled model, no compile
    _, y_new = _data(30, -1.0, seed=2)
    with model:
        pm.set_data({"y": y_new})
    updated = fit(model, method="nuts", random_seed=7, **SIZES)
    assert len(compiles) == 1
    beta = updated["posterior"]["beta"]
    mean, sd = _exact_posterior(x, y_new)
    assert abs(float(beta.mean()) - mean) < 4 * float(az.mcse(beta))
    assert abs(float(beta.std()) / sd - 1) < 0.2
    np.testing.assert_array_equal(updated["observed_data"]["y_obs"].values, y_new)
    # back to the first data through with_data: the draws of the first compile
    with model:
        pm.set_data({"y": y})
    back = fit(model, method="nuts", random_seed=7, **SIZES)
    assert len(compiles) == 1
    _assert_same_tree(first, back)


def test_new_data_shapes_compile_again(regression, compiles):
    # (any other change that needs a compile changes the key: the test below)
    model, _, _ = regression
    fit(model, method="nuts", random_seed=1, **SIZES)  # a hit after the test above
    before = len(compiles)

    # new data of another size, with its coordinate: mu's shape follows
    x_new, y_new = _data(12, 0.5, seed=5)
    with model:
        pm.set_data({"x": x_new, "y": y_new}, coords={"obs": np.arange(12)})
    dt = fit(model, method="nuts", random_seed=1, **SIZES)
    assert len(compiles) == before + 1
    beta = dt["posterior"]["beta"]
    np.testing.assert_allclose(dt["posterior"]["mu"].values, beta.values[..., None] * x_new)
    mean, _ = _exact_posterior(x_new, y_new)
    assert abs(float(beta.mean()) - mean) < 4 * float(az.mcse(beta))


def test_what_a_compile_depends_on_is_in_the_cache_key():
    """Without compiling: each change that needs a new compile changes the key."""
    x, y = _data(10, 1.0, seed=0)
    model = _regression(x, y)
    signature = model_signature(model)
    assert model_signature(model) == signature
    assert model_signature(_regression(x, y)) != signature  # another model's variables
    changes = {
        "initial value": lambda: model.set_initval(model["beta"], 0.5),
        "coordinate": lambda: pm.set_data({"x": x[:5], "y": y[:5]},
                                          coords={"obs": np.arange(5)}),
        "deterministic": lambda: pm.Deterministic("twice", 2 * model["beta"]),
        "potential": lambda: pm.Potential("pull", -model["beta"] ** 2),
        "free variable": lambda: pm.Normal("gamma"),
    }
    for change, make in changes.items():
        with model:
            make()
        new = model_signature(model)
        assert new != signature, change
        signature = new
    model.check_bounds = False
    assert model_signature(model) != signature

    # a dimension without coordinates: its length is the data's
    with pm.Model() as free_length:
        pm.Data("X", np.zeros(5), dims="obs")
        pm.Normal("z", dims="obs")
    signature = model_signature(free_length)
    with free_length:
        pm.set_data({"X": np.zeros(6)})
    assert model_signature(free_length) != signature

    options = {"var_names": None, "backend": "numba"}
    key = _options_key(options)
    assert _options_key(dict(options)) == key
    assert _options_key({**options, "var_names": ["beta"]}) != key
    with_init = _options_key({**options, "initial_points": {"beta": 0.3}})
    assert with_init != key
    assert _options_key({**options, "initial_points": {"beta": 0.4}}) != with_init
    assert _options_key({**options, "initial_points": {"beta": 0.3}}) == with_init
