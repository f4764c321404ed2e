"""inference.fit: dispatch to NUTS, Gibbs and ADVI, results layout, errors."""

import json

import numpy as np
import pymc as pm
import pytest
import xarray as xr

from inference import fit
from inference.cli import DEMO
from inference.convergence import check_convergence
from pp_models import datasets, finite_mixture
from pp_models.model_info import posterior_with_labels

# one xdist worker runs this module, so its module-scoped fits are made once (--dist
# loadgroup in pyproject's addopts)
pytestmark = pytest.mark.xdist_group("fit")


def _normal_model():
    """y_i ~ N(mu, 2), mu ~ N(0, 10), 50 data: (model, y)."""
    y = np.random.default_rng(0).normal(1.0, 2.0, size=50)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 2.0, observed=y)
    return model, y


@pytest.fixture(scope="module")
def normal_model():
    """The normal model with its posterior N(m, s) in closed form."""
    model, y = _normal_model()
    precision = 1 / 10.0**2 + y.size / 2.0**2
    return model, (y.sum() / 2.0**2) / precision, precision**-0.5


def _iris_mixture():
    # Every finite-mixture fit here uses this one graph (all of iris, 3 components): a
    # distinct data size or K is a distinct graph to compile, a cold cache's main cost.
    return finite_mixture.model(datasets.load("iris").data, n_components=3)


@pytest.fixture(scope="module")
def iris_model():
    return _iris_mixture()


@pytest.fixture(scope="module")
def iris_fit(demo_run):
    # `ppzoo demo` (tests/inference/conftest.py) is fit(model, method="gibbs", draws=1000,
    # tune=1000, chains=4) on iris_model's model, and test_cli.py runs it anyway: its
    # saved fit is checked here instead of a second identical run (fit's in-memory result
    # is checked on the other fits of this module)
    code, _, out = demo_run
    assert code == 0
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    dt.load()
    return dt


@pytest.fixture(scope="module")
def one_core_fit(iris_model):
    return fit(iris_model, draws=100, tune=100, chains=2, cores=1, random_seed=5,
               progressbar=False)


def test_nuts_recovers_conjugate_posterior_mean(normal_model):
    model, mean, sd = normal_model
    dt = fit(model, method="nuts", draws=1000, chains=4, random_seed=3, progressbar=False)
    draws = dt["posterior"]["mu"].values
    assert draws.shape == (4, 1000)
    from arviz import mcse

    mcse_mean = float(mcse(dt["posterior"]["mu"]))
    assert abs(draws.mean() - mean) < 4 * mcse_mean
    assert abs(draws.std() - sd) < 0.1 * sd
    assert dt.attrs["pp_models_method"] == "nuts"


def test_advi_recovers_conjugate_posterior_mean(normal_model):
    model, mean, sd = normal_model
    dt = fit(model, method="advi", draws=500, chains=2, random_seed=3, progressbar=False,
             n=15_000)
    draws = dt["posterior"]["mu"]
    assert draws.dims == ("chain", "draw") and draws.shape == (2, 500)
    assert abs(float(draws.mean()) - mean) < 0.1 * sd
    assert abs(float(draws.std()) / sd - 1) < 0.25
    history = dt["fit_history"]["loss"].values
    assert history.size == 18_000 and np.isfinite(history).all()
    assert history[-1000:].mean() < history[:100].mean()
    assert json.loads(dt.attrs["pp_models_steps"]) == {"ADVI": ["mu"]}


def test_auto_picks_nuts_for_continuous_model(normal_model):
    model, _mean, _ = normal_model
    dt = fit(model, draws=200, tune=200, chains=2, random_seed=1, progressbar=False)
    assert dt.attrs["pp_models_method"] == "nuts"
    assert dt.attrs["pp_models_requested_method"] == "auto"


def test_gibbs_on_iris_mixture(iris_fit):
    dt = iris_fit
    assert {"posterior", "sample_stats", "observed_data"} <= set(dt.children)
    posterior = posterior_with_labels(dt)
    for name in ("n_occupied", "weights_sorted", "log_likelihood", "z", "mu"):
        assert name in posterior.data_vars
    assert posterior["z"].shape == (4, 1000, 150)
    # The Gibbs step's own statistic reaches sample_stats.
    assert "n_changed" in dt["sample_stats"].data_vars
    assert int(dt["sample_stats"]["n_changed"].sum()) > 0
    steps = json.loads(dt.attrs["pp_models_steps"])
    assert steps["categorical_gibbs"] == ["z"]
    assert sorted(steps["NUTS"]) == ["mu", "sigma", "w"]
    report = check_convergence(dt)
    assert report.table["r_hat"].max() <= 1.01, str(report)
    versions = json.loads(dt.attrs["pp_models_versions"])
    assert versions["pymc"].startswith("6.")
    assert json.loads(dt.attrs["pp_models_random_seed"]) == DEMO["seed"]


def test_gibbs_mixture_separates_setosa(iris_fit):
    # Setosa (rows 0-49) is linearly separable from the rest: every posterior draw
    # should put nearly all of it in one component, apart from the others.
    z = iris_fit["posterior"]["z"].values.reshape(-1, 150)
    setosa_label = np.array([np.bincount(row[:50]).argmax() for row in z])
    purity = np.mean(z[:, :50] == setosa_label[:, None])
    leakage = np.mean(z[:, 50:] == setosa_label[:, None])
    assert purity > 0.98 and leakage < 0.02


def test_gibbs_with_one_core_and_auto(one_core_fit):
    dt = one_core_fit
    assert dt.attrs["pp_models_method"] == "gibbs"  # the factory's preference
    assert dt["posterior"]["z"].shape == (2, 100, 150)


def test_discrete_variable_without_zoo_step_gets_pymc_gibbs():
    rng = np.random.default_rng(1)
    y = rng.normal(size=30)
    with pm.Model() as model:
        flag = pm.Bernoulli("flag", 0.5)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1.0 + 2.0 * flag, observed=y)
    # flag stays 0 in every draw: PyMC's R-hat of a constant chain divides 0 by 0
    dt = fit(model, method="gibbs", draws=300, tune=200, chains=2, cores=1, random_seed=2,
             progressbar=False, compute_convergence_checks=False)
    steps = json.loads(dt.attrs["pp_models_steps"])
    assert steps == {"BinaryGibbsMetropolis": ["flag"], "NUTS": ["mu"]}
    # The data have sd 1, so flag = 1 (sd 3) is essentially impossible.
    assert dt["posterior"]["flag"].mean() < 0.05


def test_user_step_is_respected(normal_model):
    model, mean, sd = normal_model
    with model:
        step = pm.Slice([model["mu"]])
    dt = fit(model, method="gibbs", step=step, draws=500, tune=200, chains=2, cores=1,
             random_seed=4, progressbar=False)
    assert json.loads(dt.attrs["pp_models_steps"]) == {"Slice": ["mu"]}
    assert abs(float(dt["posterior"]["mu"].mean()) - mean) < 0.5 * sd


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"method": "hmc"}, ValueError, "method must be one of"),
        ({"draws": 0}, ValueError, "draws must be >= 1"),
        ({"chains": 0}, ValueError, "chains must be >= 1"),
        ({"tune": -1}, ValueError, "tune must be >= 0"),
        ({"draws": 10.5}, TypeError, "draws must be an integer"),
        ({"cores": 0}, ValueError, "cores must be >= 1"),
        ({"step": "nuts"}, TypeError, "instantiated PyMC step"),
    ],
)
def test_bad_arguments_raise_before_compiling(normal_model, kwargs, error, match):
    model, _, _ = normal_model
    with pytest.raises(error, match=match):
        fit(model, **kwargs)


@pytest.fixture
def sampling_forbidden(monkeypatch):
    """``fit`` whose samplers fail the test if reached: an error expected from the
    argument checks must come before anything is compiled or sampled."""
    import sys

    def started(*args, **kwargs):
        raise AssertionError("fit started compiling/sampling before rejecting the argument")

    module = sys.modules["inference.fitting"]
    monkeypatch.setattr(module, "fit_mcmc", started)
    monkeypatch.setattr(module, "fit_advi", started)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"random_seed": "x"}, TypeError, "random_seed must be None, an integer"),
        ({"random_seed": 2.5}, TypeError, "random_seed must be None, an integer"),
        ({"random_seed": -1}, ValueError, "random_seed must be >= 0"),
        ({"random_seed": [1, True]}, TypeError, "random_seed must be None, an integer"),
        ({"var_names": ["nope"]}, ValueError, "var_names: 'nope' not in the model; its "
                                              "variables are mu"),
        ({"var_names": [1]}, TypeError, "var_names must be a list of variable names"),
        ({"initvals": {"nope": 0.0}}, ValueError, "initvals: 'nope' not in the model; its free"),
        ({"initvals": [{"mu": 0.0}, {"sigma": 1.0}]}, ValueError, "initvals: 'sigma'"),
        ({"initvals": 3.0}, TypeError, "initvals must be a dict"),
        ({"bogus": 1}, TypeError, "unknown option 'bogus' for method='nuts'"),
        ({"target_acept": 0.9}, TypeError, "did you mean 'target_accept'"),
        ({"method": "advi", "bogus": 1}, TypeError, "unknown option 'bogus' for method='advi'"),
        ({"trace_flush": 1.0}, ValueError, "trace_flush needs trace=PATH"),
        ({"target_accept": 1.5}, ValueError, r"target_accept must be a finite number in \(0, 1\)"),
    ],
)
def test_bad_sampler_options_raise_before_compiling(normal_model, sampling_forbidden, kwargs,
                                                    error, match):
    model, _, _ = normal_model
    with pytest.raises(error, match=match):
        fit(model, draws=5, tune=5, chains=1, progressbar=False, **kwargs)


def test_var_names_as_one_string_means_that_variable(normal_model, monkeypatch):
    # PyMC reads a string as a sequence of names (its substrings): fit takes it as [name]
    import sys

    seen = {}

    class Captured(Exception):
        pass

    def capture(model, **arguments):
        seen.update(arguments["kwargs"])
        raise Captured  # stop here: the options are what this test looks at

    monkeypatch.setattr(sys.modules["inference.fitting"], "fit_mcmc", capture)
    model, _, _ = normal_model
    with pytest.raises(Captured):
        fit(model, draws=5, tune=5, chains=1, progressbar=False, var_names="mu")
    assert seen["var_names"] == ["mu"]


def _flag_model():
    """A binary flag (PyMC's Gibbs step) and a continuous mean (NUTS)."""
    y = np.random.default_rng(1).normal(size=10)
    with pm.Model() as model:
        flag = pm.Bernoulli("flag", 0.5)
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu, 1.0 + 2.0 * flag, observed=y)
    return model


@pytest.mark.parametrize("option", [{"target_accept": 0.93}, {"nuts": {"target_accept": 0.93}}])
def test_nuts_options_reach_the_nuts_step_of_a_gibbs_fit(option, monkeypatch):
    # pm.sample applies target_accept only to steps it assigns; fit gives it them all built
    import sys

    class Captured(Exception):
        pass

    seen = {}

    def capture(model, steps, **arguments):
        seen.update(steps=steps, kwargs=arguments["kwargs"])
        raise Captured

    monkeypatch.setattr(sys.modules["inference.mcmc"], "_pm_sample", capture)
    with pytest.raises(Captured):
        fit(_flag_model(), method="gibbs", draws=5, tune=5, chains=1, progressbar=False,
            **option)
    nuts = [s for s in seen["steps"] if isinstance(s, pm.NUTS)]
    assert len(nuts) == 1 and nuts[0].target_accept == 0.93
    assert not {"target_accept", "nuts"} & set(seen["kwargs"])


def test_nuts_option_without_a_nuts_step_is_refused():
    model = _flag_model()
    with model:
        steps = [pm.BinaryGibbsMetropolis([model["flag"]]), pm.Slice([model["mu"]])]
    with pytest.raises(ValueError, match=r"options for the step\(s\) nuts \(e\.g\. "
                                         r"target_accept\) have no variable to apply to"):
        fit(model, method="gibbs", step=steps, draws=5, tune=5, chains=1, progressbar=False,
            target_accept=0.9)


def test_model_must_be_pymc_model():
    with pytest.raises(TypeError, match=r"model must be a pymc\.Model"):
        fit("not a model")


@pytest.mark.parametrize("method", ["nuts", "advi"])
def test_discrete_model_rejected_by_continuous_methods(method):
    model = finite_mixture.model(datasets.load("iris").data[:20], n_components=2)
    with pytest.raises(ValueError, match=r"discrete: z\. Use method='gibbs'"):
        fit(model, method=method)


def test_results_are_a_datatree(one_core_fit):
    # fit's own result (iris_fit was read back from the demo's file)
    assert isinstance(one_core_fit, xr.DataTree)
    assert one_core_fit.attrs["pp_models_family"] == "finite_mixture"


def test_factory_can_limit_what_is_traced():
    from dataclasses import replace

    from pp_models.model_info import attach_info, get_info

    model = _iris_mixture()  # a model of its own (its info is replaced), the same graph
    info = get_info(model)
    # Keep only the parameters the derived statistics need; drop the labels z.
    attach_info(model, replace(info, trace_var_names=("w", "mu", "sigma")))
    dt = fit(model, draws=50, tune=50, chains=2, cores=1, random_seed=1, progressbar=False)
    assert "z" not in posterior_with_labels(dt).data_vars
    assert "weights_sorted" in dt["posterior"].data_vars  # needs only w
    assert "n_occupied" not in dt["posterior"].data_vars  # needs z: skipped, not an error
    # The user's own var_names win.
    dt = fit(model, draws=20, tune=20, chains=2, cores=1, random_seed=1, progressbar=False,
             var_names=["z", "w"])
    assert set(posterior_with_labels(dt).data_vars) >= {"z", "w"}
    assert "mu" not in posterior_with_labels(dt)


def test_factory_hint_can_ask_for_slice():
    from pp_models.model_info import StepHint, ZooModelInfo, attach_info

    # a model of its own (its info is replaced) with normal_model's graph, compiled already
    model, y = _normal_model()
    attach_info(model, ZooModelInfo(family="test", preferred_method="gibbs",
                                    step_hints=(StepHint("slice", ("mu",)),)))
    dt = fit(model, draws=400, tune=100, chains=2, cores=1, random_seed=8, progressbar=False)
    assert json.loads(dt.attrs["pp_models_steps"]) == {"Slice": ["mu"]}
    assert abs(float(dt["posterior"]["mu"].mean()) - y.mean()) < 0.1
