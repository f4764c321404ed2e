"""The tempering contract: inverse temperatures validated, refusals before compiling, the
likelihood each zoo model's steps temper is PyMC's ``datalogp``, prior draws exact, NUTS's
density weighted."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats

from custom_ops.dpm.collapsed import collapsed_loglik_value
from inference import fit
from inference.gibbs import CategoricalGibbs, CRPCollapsedGibbs, EscobarWestAlpha
from inference.gibbs.base import ZooGibbsStep
from inference.tempering import PriorDraws, TemperedNUTS, log_likelihood_function
from inference.tempering.steps import plan_steps
from pp_models import dpm, finite_mixture
from pp_models.model_info import get_info
from pp_models.validation import check_inverse_temperature, check_ladder

RNG = np.random.default_rng(3)
X_MIX = np.concatenate([RNG.normal(-2, 0.5, (6, 2)), RNG.normal(2, 0.5, (6, 2))])


@pytest.fixture(scope="module")
def mixture():
    return finite_mixture.model(X_MIX, 2)


@pytest.mark.parametrize("bad", [-0.1, 1.5, float("nan")])
def test_beta_outside_unit_interval_is_refused(bad):
    with pytest.raises(ValueError, match="beta must be in"):
        check_inverse_temperature(bad)
    with pytest.raises(TypeError, match="beta must be a number"):
        check_inverse_temperature("0.5")


@pytest.mark.parametrize(
    ("ladder", "match"),
    [([1.0], "at least 2"), ([0.0, 0.5], "end at 1"), ([0.0, 0.6, 0.5, 1.0], "increasing"),
     ([0.0, 1.0, 1.0], "increasing"), ([-0.1, 1.0], r"ladder\[0\] must be in")],
)
def test_bad_ladders_are_refused(ladder, match):
    with pytest.raises(ValueError, match=match):
        check_ladder(ladder)


def test_step_that_cannot_temper_refuses_a_beta(mixture):
    class Plain(ZooGibbsStep):
        name = "test_plain"

        def step(self, point):
            return point, []

    with mixture:
        step = Plain([mixture["z"]])
    step.set_inverse_temperature(1.0)
    with pytest.raises(ValueError, match="'test_plain'.*cannot temper"):
        step.set_inverse_temperature(0.5)
    with mixture:
        no_part = CategoricalGibbs([mixture["z"]], logits=mixture["mu"][:2].sum() + np.zeros(
            (12, 2)))
    with pytest.raises(ValueError, match="likelihood_logits"):
        no_part.set_inverse_temperature(0.5)
    with pytest.raises(ValueError, match="beta must be in"):
        no_part.set_inverse_temperature(2.0)


def test_categorical_conditional_is_tempered(mixture):
    info = get_info(mixture)
    options = info.step_hints[0].options(mixture)
    with mixture:
        step = CategoricalGibbs([mixture["z"]], **options)
    point = mixture.initial_point()
    full = step.conditional_logits(point)
    step.set_inverse_temperature(0.3)
    tempered = step.conditional_logits(point)
    # log w_k + 0.3 sum_j log N(x_ij | mu_kj, sigma_kj), from scipy
    w = np.full(2, 0.5)
    mu, sigma = point["mu"], np.exp(point["sigma_log__"])
    lik = stats.norm.logpdf(X_MIX[:, None, :], mu[None], sigma[None]).sum(-1)
    np.testing.assert_allclose(full, np.log(w) + lik, rtol=1e-10)
    np.testing.assert_allclose(tempered, np.log(w) + 0.3 * lik, rtol=1e-10)


def test_log_likelihood_is_the_likelihood_the_steps_condition_on(mixture):
    # finite mixture: the complete-data likelihood p(X | z, mu, sigma), no potential
    assert not mixture.potentials
    loglik = log_likelihood_function(mixture)
    point = mixture.initial_point() | {"z": np.arange(12) % 2}
    mu, sigma = point["mu"], np.exp(point["sigma_log__"])
    z = point["z"]
    expected = stats.norm.logpdf(X_MIX, mu[z], sigma[z]).sum()
    assert loglik(point) == pytest.approx(expected, rel=1e-12)
    # collapsed DP mixture: the collapsed marginal p(X | z) the collapsed step uses
    m = dpm.model(X_MIX, likelihood="gaussian", alpha=(1.0, 1.0))
    assert not m.potentials
    spec = dpm.get_spec(m)
    z = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 3, 3])
    point = m.initial_point() | {"z": z}
    hyper = [spec.prior[k] for k in ("m0", "kappa0", "nu0", "S0")]
    assert log_likelihood_function(m)(point) == pytest.approx(
        collapsed_loglik_value("gaussian", z, X_MIX, hyper), rel=1e-12)


def test_zoo_steps_of_the_mixtures_can_temper():
    assert CategoricalGibbs.can_temper and CRPCollapsedGibbs.can_temper
    # alpha enters only the partition's prior, so its update ignores beta
    assert EscobarWestAlpha.can_temper and EscobarWestAlpha.tempering_error({}) is None
    assert ZooGibbsStep.tempering_error({}) is not None


def test_prior_draws_are_the_prior():
    with pm.Model() as m:
        mu = pm.Normal("mu", 1.0, 2.0)
        s = pm.HalfNormal("s", 1.5)
        pm.Normal("y", mu, s, observed=np.zeros(3))
    draws = PriorDraws.for_model(m)
    assert PriorDraws.for_model(m) is draws  # compiled once per model
    draws.seed(np.random.default_rng(0))
    d = [draws.draw() for _ in range(4000)]
    mu_draws = np.array([x["mu"] for x in d])
    s_draws = np.exp([x["s_log__"] for x in d])
    assert stats.kstest(mu_draws, stats.norm(1.0, 2.0).cdf).pvalue > 1e-3
    assert stats.kstest(s_draws, stats.halfnorm(scale=1.5).cdf).pvalue > 1e-3
    draws.seed(np.random.default_rng(0))
    assert draws.draw()["mu"] == d[0]["mu"]  # reseeding repeats the stream


def test_tempered_nuts_samples_the_power_posterior():
    """y_i ~ N(mu, 1), mu ~ N(0, 1): at beta the power posterior is N(beta S / (1 + beta n),
    1 / (1 + beta n))."""
    y = np.array([0.3, 1.2, 2.0, 0.7])
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
    step = TemperedNUTS([m["mu"]], model=m, initial_point=m.initial_point())
    other = step.replica()
    step.set_inverse_temperature(0.25)
    other.set_inverse_temperature(1.0)
    for s, seed in ((step, 1), (other, 2)):
        s.setup_chain(np.random.default_rng(seed), 200, 3000)
    draws = {0.25: [], 1.0: []}
    p0, p1 = m.initial_point(), m.initial_point()
    for t in range(3200):
        if t == 200:
            step.stop_tuning()
            other.stop_tuning()
        # the two replicas share one compiled function: interleave them
        p0, _ = step.step(p0)
        p1, _ = other.step(p1)
        if t >= 200:
            draws[0.25].append(float(p0["mu"]))
            draws[1.0].append(float(p1["mu"]))
    for beta, x in draws.items():
        prec = 1 + beta * y.size
        exact = stats.norm(beta * y.sum() / prec, prec ** -0.5)
        assert stats.kstest(np.array(x)[::5], exact.cdf).pvalue > 1e-3, beta


def test_plan_refuses_a_step_that_cannot_temper_before_compiling(monkeypatch):
    import inference.tempering.sampling as sampling

    def started(*args, **kwargs):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(sampling, "build_steps", started)
    monkeypatch.setattr(sampling, "sample_gibbs", started)
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        k = pm.Binomial("k", 5, p)
        pm.Normal("y", k, 1.0, observed=[1.0, 2.0])
    with m:
        untempered = pm.Metropolis([k])
    with pytest.raises(ValueError, match="Metropolis.*cannot temper.*TemperedMetropolis"):
        fit(m, method="gibbs", tempering=3, step=[untempered], progressbar=False)
    with pytest.raises(ValueError, match="cannot temper"):
        plan_steps(m, None, [untempered])
    with pm.Model() as prior_only:
        pm.Normal("mu", 0.0, 1.0)
    with pytest.raises(ValueError, match="no observed data"):
        fit(prior_only, tempering=True, progressbar=False)
    with pytest.raises(ValueError, match="method='advi'"):
        fit(m, method="advi", tempering=True)


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [(1, ValueError, "tempering must be >= 2"), ("yes", TypeError, "tempering must be"),
     ({"n_temperatures": 1}, ValueError, "must be >= 2"),
     ({"ladder": [0.0, 0.5]}, ValueError, "end at 1"),
     ({"ladder": [0.5, 1.0], "n_temperatures": 3}, ValueError, "not both"),
     ({"ladder": [0.5, 1.0], "beta_min": 0.1}, ValueError, "not both"),
     ({"n_temperatures": 3, "beta_min": 1.0}, ValueError, r"\['beta_min'\] must be below 1"),
     ({"n_temperatures": 3, "beta_min": "0.1"}, TypeError, r"\['beta_min'\]"),
     ({"bogus": 1}, ValueError, "unknown key"),
     ([0.0, 1.2, 1.0], ValueError, "must be in")],
)
def test_bad_tempering_arguments_are_refused(mixture, value, error, match, monkeypatch):
    import sys

    def started(*args, **kwargs):
        raise AssertionError("started sampling before refusing the argument")

    monkeypatch.setattr(sys.modules["inference.fitting"], "fit_mcmc", started)
    with pytest.raises(error, match=match):
        fit(mixture, tempering=value, progressbar=False)


def test_tempering_dict_with_beta_min_starts_the_ladder_there():
    from inference.tempering.options import check_tempering

    options = check_tempering({"n_temperatures": 3, "beta_min": 0.1})
    np.testing.assert_allclose(options.ladder, [0.1, 0.1 ** 0.5, 1.0], rtol=1e-12)
    assert check_tempering({"n_temperatures": 3, "beta_min": 0.0}).ladder[0] == 0.0
