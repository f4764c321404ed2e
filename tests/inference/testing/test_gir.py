"""getting_it_right: passes a correct sampler, catches planted bugs, validates input."""

import numpy as np
import pymc as pm
import pytest

from inference.gibbs import CategoricalGibbs
from inference.testing import getting_it_right
from pp_models import finite_mixture
from tests.inference.testing import conjugate_normal as cn

# Power measured at this size (50 seeds each, alpha = 0.01): correct step 0/50
# rejections; every twin 50/50 (see test_false_alarm_and_power for the full run).
N_DEFAULT_RUN = 4000


# The conjugate-normal tests run on one xdist worker with test_sbc.py (--dist loadgroup),
# which samples the same generative model: its functions compile once in a cold run, and
# the module-scoped run below is made once. (A marker per test, not pytestmark: xdist
# joins every group marker of a test into one name, and the mixture tests have their own.)
ON_THE_CONJUGATE_NORMAL_WORKER = pytest.mark.xdist_group("conjugate_normal")


def _gir(bug, n_samples=N_DEFAULT_RUN, seed=20261126, **kwargs):
    return getting_it_right(
        cn.generative_model(),
        data_vars=["y"],
        step=lambda model: cn.NormalGibbs(model=model, bug=bug),
        n_samples=n_samples,
        random_seed=seed,
        **kwargs,
    )


@pytest.fixture(scope="module")
def correct_run():
    # one run of the correct step: test_correct_step_passes checks it, test_plot draws it
    return _gir(None)


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_correct_step_passes(correct_run):
    result = correct_run
    result.assert_passed(0.01)
    assert set(result.table.index) == {"mu", "mu^2", "sigma2", "sigma2^2", "mean(y)",
                                       "mean(y^2)"}
    # The marginal-conditional means are those of the prior: E[mu] = 0, E[sigma2] = 1.
    assert abs(result.table.loc["mu", "mean_marginal"]) < 4 * cn.S0 / np.sqrt(N_DEFAULT_RUN)
    assert abs(result.table.loc["sigma2", "mean_marginal"] - 1.0) < 0.05


@ON_THE_CONJUGATE_NORMAL_WORKER
@pytest.mark.parametrize("bug", cn.BUGS)
def test_planted_bug_is_caught(bug):
    result = _gir(bug)
    assert not result.passed(0.01), str(result)
    assert len(result.failures(0.01)) >= 1


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_observed_data_are_freed():
    # With the data observed, getting_it_right frees them itself (their observed values
    # are ignored) and builds the step callable on that copy.
    observed = cn.generative_model(observed=np.full(cn.N_OBS, 100.0))
    result = getting_it_right(observed, data_vars=["y"],
                              step=lambda model: cn.NormalGibbs(model=model),
                              n_samples=N_DEFAULT_RUN, random_seed=3)
    result.assert_passed(0.01)
    # Data drawn from the prior predictive, not the observed 100s: E[y] = E[mu] = 0.
    assert abs(result.table.loc["mean(y)", "mean_marginal"]) < 0.2


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_step_instance_on_free_data_model():
    model = cn.generative_model()
    with model:
        step = pm.Metropolis([model["mu"], model["sigma2"]])
    result = getting_it_right(model, data_vars=["y"], step=step, n_samples=3000, tune=300,
                              random_seed=1, statistics={"mu": lambda s: s["mu"],
                                                         "sigma2": lambda s: s["sigma2"]})
    assert list(result.table.index) == ["mu", "sigma2"]
    # Metropolis mixes slowly here; the test still must not reject a correct sampler.
    result.assert_passed(0.01)


# Measured at this size (seeds 7, 101-104, alpha 0.01, warm): the mixture's correct
# steps 0/5 rejected (smallest Holm p 0.033), the broken categorical step 5/5 (largest
# Holm p 2e-6); at 1000 samples each side failed once in 5. (Was 2500: file 27 -> 23 s.)
N_MIXTURE_RUN = 1500
# the finite-mixture family's xdist worker (tests/conftest.py): a cold run compiles the
# mixture's graphs once there (cold, one process: first GIR 40 s, the second 13 s)
ON_THE_MIXTURE_WORKER = pytest.mark.xdist_group("family-finite_mixture")


def _mixture():
    X = np.array([[-1.0], [0.2], [1.5], [2.0]])
    return finite_mixture.model(X, n_components=2)


def _label_invariant_failures(result, alpha=0.01):
    """The failing statistics that do not depend on the labelling: the data moments and
    the factory's label-invariant statistics. The raw labels (``z``, ``w``, ``mu``,
    ``sigma``) switch on a time scale longer than the run, so their ESS is overestimated
    and their tests can reject a right sampler (seed 7: ``z[1]``'s successive mean 0.755
    against 0.50 with an estimated ESS of 92, while no label-invariant statistic moved)."""
    failures = result.failures(alpha)
    raw = failures.index.str.match(r"^(z|w|mu|sigma)\[")
    return failures[~raw]


@ON_THE_MIXTURE_WORKER
def test_zoo_mixture_gibbs_plus_nuts_passes():
    # method="gibbs": the factory's hint gives z to CategoricalGibbs (its logits follow
    # the freed data), NUTS takes w, mu, sigma.
    result = getting_it_right(_mixture(), data_vars=["X"], n_samples=N_MIXTURE_RUN, tune=300,
                              random_seed=7)
    steps = {k: sorted(v) for k, v in result.step_description.items()}
    assert steps == {"categorical_gibbs": ["z"], "NUTS": ["mu", "sigma", "w"]}
    assert {"n_occupied", "weights_sorted[0]", "log_likelihood"} <= set(result.table.index)
    assert _label_invariant_failures(result).empty, str(result)


@ON_THE_MIXTURE_WORKER
def test_zoo_mixture_broken_categorical_step_is_caught():
    def broken(model):
        # Planted bug: the mixture weights are left out of z's conditional.
        logits = pm.logp(pm.Normal.dist(model["mu"][None], model["sigma"][None]),
                         model["X"][:, None, :]).sum(-1)
        return [CategoricalGibbs([model["z"]], logits=logits),
                pm.NUTS([model["w"], model["mu"], model["sigma"]])]

    result = getting_it_right(_mixture(), data_vars=["X"], step=broken, n_samples=N_MIXTURE_RUN,
                              tune=300, random_seed=7)
    assert not _label_invariant_failures(result).empty, str(result)


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_plot_returns_figure(correct_run):
    fig = correct_run.plot()
    assert len(fig.axes) >= 6


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_method_chooses_the_steps():
    # "nuts": every parameter by NUTS; discrete parameters are refused before any work
    result = getting_it_right(cn.generative_model(), data_vars=["y"], method="nuts",
                              n_samples=20, tune=5, random_seed=0)
    assert {k: sorted(v) for k, v in result.step_description.items()} == {
        "NUTS": ["mu", "sigma2"]}
    with pytest.raises(ValueError, match="z are discrete"):
        getting_it_right(_mixture(), data_vars=["X"], method="nuts", n_samples=20)


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_errors():
    model = cn.generative_model()
    with pytest.raises(ValueError, match=r"data_vars: 'nope' not a random variable"):
        getting_it_right(model, data_vars=["nope"], step=lambda m: cn.NormalGibbs(model=m))
    with pytest.raises(ValueError, match="must return a scalar"):
        getting_it_right(model, data_vars=["y"], step=lambda m: cn.NormalGibbs(model=m),
                         statistics={"y": lambda s: s["y"]})
    with pytest.raises(ValueError, match="n_samples must be >= 2"):
        getting_it_right(model, data_vars=["y"], n_samples=1)
    with pytest.raises(ValueError, match="method must be"):
        getting_it_right(model, data_vars=["y"], method="advi")
    observed = cn.generative_model(observed=np.zeros(cn.N_OBS))
    with observed:
        step = cn.NormalGibbs()
    with pytest.raises(ValueError, match="data variables are observed"):
        getting_it_right(observed, data_vars=["y"], step=step)
    with pytest.raises(ValueError, match="leaves these parameters unsampled: sigma2"):
        getting_it_right(model, data_vars=["y"],
                         step=lambda m: pm.Metropolis([m["mu"]]))
    with pytest.raises(TypeError, match="model must be a pymc.Model"):
        getting_it_right("model", data_vars=["y"])


def _case(bug, n_samples):
    return dict(model=cn.generative_model, data_vars=["y"], step=_NormalStep(bug),
                n_samples=n_samples)


class _NormalStep:
    """Picklable step factory (a campaign pickles its cases to the workers)."""

    def __init__(self, bug):
        self.bug = bug

    def __call__(self, model):
        return cn.NormalGibbs(model=model, bug=self.bug)


@pytest.mark.slow
def test_false_alarm_and_power():
    """The measurement the issue asks for, at the default n_samples = 10,000 (on the
    executor PP_MODELS_TEST_EXECUTOR names, see tests/helpers/campaign.py)."""
    from tests.helpers.campaign import run_campaign

    campaign = run_campaign({str(bug): _case(bug, 10_000) for bug in (None, *cn.BUGS)},
                            range(50))
    rejections = campaign.rejections(0.01)
    print("rejections out of 50:", rejections.to_dict())
    assert rejections["None"] <= 1  # false-alarm rate <= 2 %
    for bug in cn.BUGS:
        assert rejections[str(bug)] == 50


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_a_campaign_on_an_executor_gives_the_serial_results():
    # threads: the runs still travel pickled (the process-pool path of the same code is
    # tests/inference/test_executors.py's; -m slow runs the campaign on any executor)
    from concurrent.futures import ThreadPoolExecutor

    from inference.testing import getting_it_right_campaign

    cases = {"correct": _case(None, 200), "count": _case("count", 200)}
    serial = getting_it_right_campaign(cases, [3, 4])
    with ThreadPoolExecutor(2) as pool:
        remote = getting_it_right_campaign(cases, [3, 4], executor=pool)
        single = getting_it_right(cn.generative_model(), data_vars=["y"],
                                  step=_NormalStep(None), n_samples=200, random_seed=4,
                                  executor=pool)
    assert sorted(remote.results) == [("correct", 3), ("correct", 4), ("count", 3),
                                      ("count", 4)]
    for key, result in serial.results.items():
        np.testing.assert_array_equal(result.successive.to_numpy(),
                                      remote.results[key].successive.to_numpy())
        np.testing.assert_array_equal(result.marginal.to_numpy(),
                                      remote.results[key].marginal.to_numpy())
    np.testing.assert_array_equal(single.successive.to_numpy(),
                                  serial.results[("correct", 4)].successive.to_numpy())
    assert serial.smallest_p().equals(remote.smallest_p())
    assert list(serial.rejections().index) == ["correct", "count"]


@ON_THE_CONJUGATE_NORMAL_WORKER
def test_campaign_errors():
    from inference.testing import getting_it_right_campaign

    with pytest.raises(TypeError, match="cases must be a non-empty dict"):
        getting_it_right_campaign({}, [1])
    with pytest.raises(TypeError, match=r"cases\['a'\] must be a dict with 'model'"):
        getting_it_right_campaign({"a": {"data_vars": ["y"]}}, [1])
    with pytest.raises(ValueError, match="random_seed is set by the campaign"):
        getting_it_right_campaign({"a": {**_case(None, 10), "random_seed": 1}}, [1])
    with pytest.raises(TypeError, match="seeds must be integers"):
        getting_it_right_campaign({"a": _case(None, 10)}, [1.5])
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        getting_it_right_campaign({"a": _case(None, 10)}, [1], executor="tcp://x:1")


def test_khat_of_a_statistic_with_tied_tails_is_zero():
    # Many distinct values but a tail made of ties (e.g. the mean of a few cluster labels,
    # 0 whenever all share one cluster): arviz's Pareto fit raises "All tail values are
    # the same"; such a tail is bounded, not heavy.
    from inference.testing.gir import _khat

    rng = np.random.default_rng(0)
    x = np.concatenate([np.zeros(2500), rng.integers(1, 60, 1500) / 8.0])
    assert np.unique(x).size >= 20
    assert _khat(x) == 0.0
