"""``inference.evidence`` on the conjugate Normal model, whose evidence is closed form:
y_i ~ N(mu, 1), mu ~ N(0, 1), i = 1..20, so y ~ N(0, I + 11') (the anchors' model).

Every estimator, with the draws of parallel tempering and of the independent nutpie runs,
is within its Student-t tolerance of it (the slow test measures the coverage of ±2 se over
20 seeds); a tempered fit's DataTree is reused; a seed gives the same estimate whatever
``cores``; bad input is refused before anything compiles. The tempered model the nutpie
runs sample is checked term by term in ``test_nutpie_ladder.py``.
"""

import math

import numpy as np
import pymc as pm
import pytest

from inference import EvidenceResult, evidence, fit
from inference.tempering import estimate_from_tempering
from tests.helpers.evidence_checks import check_against_exact
from tests.oracles.normal import EXACT, Y, normal_model


@pytest.fixture(scope="module")
def model():
    return normal_model()


@pytest.fixture(scope="module")
def tempered(model):
    return fit(model, draws=600, tune=300, chains=2, cores=1, random_seed=11,
               progressbar=False, tempering=6)


def test_stepping_stone_and_thermodynamic_from_one_tempered_fit(model, tempered):
    ss = evidence(model, dt=tempered)
    assert isinstance(ss, EvidenceResult) and ss.method == "stepping_stone"
    # an error of 0.9 nats is caught (tests/helpers/evidence_checks.py)
    check_against_exact(ss, EXACT, detect=0.9, comparisons=2)
    assert ss.se > 0.005
    assert ss.tempering is tempered and ss.chains == 2 and ss.n_temperatures == 6
    table = ss.table
    assert list(table.index.names) == ["chain", "temperature"] and len(table) == 12
    # the stones add up to each chain's estimate
    for c in range(2):
        np.testing.assert_allclose(table.loc[c, "log_ratio"].iloc[:-1].sum(), ss.per_chain[c])
    assert "log evidence" in str(ss) and "stepping_stone" in str(ss)
    ti = estimate_from_tempering(tempered, "thermodynamic")
    # 6 temperatures are coarse for the quadrature: it is checked against its own se
    # plus a discretisation allowance
    check_against_exact(ti, EXACT, comparisons=2, quadrature=0.15)
    fig = ss.plot()
    assert fig.axes[0].get_xlabel() == "inverse temperature beta"


@pytest.mark.parametrize("sampler", ["parallel_tempering", "nutpie"])
def test_thermodynamic_integration_with_a_finer_ladder(model, sampler):
    ti = evidence(model, method="thermodynamic", n_temperatures=16, draws=400, tune=300,
                  chains=2, cores=1, random_seed=3, sampler=sampler)
    assert ti.sampler == sampler
    check_against_exact(ti, EXACT)


def test_stepping_stone_on_nutpie_is_the_default_for_a_continuous_model(model):
    ss = evidence(model, n_temperatures=8, draws=500, tune=200, chains=2, random_seed=6)
    assert ss.sampler == "nutpie" and "nutpie" in str(ss)
    check_against_exact(ss, EXACT, detect=0.9, comparisons=2)
    assert ss.se > 0.005
    table = ss.table
    assert len(table) == 16 and (table["divergences"] == 0).all()
    # the stepping stone makes no run at beta = 1
    assert table.xs(7, level="temperature")["mean_log_likelihood"].isna().all()
    for c in range(2):
        np.testing.assert_allclose(table.loc[c, "log_ratio"].iloc[:-1].sum(), ss.per_chain[c])
    again = evidence(model, n_temperatures=8, draws=500, tune=200, chains=2, cores=1,
                     random_seed=6)
    assert again.per_chain == ss.per_chain  # nutpie's chains are seeded, not scheduled
    ladder = [0.0, 0.001, 0.01, 0.1, 0.4, 1.0]
    given = evidence(model, ladder=ladder, draws=300, tune=200, chains=2, random_seed=7)
    np.testing.assert_array_equal(given.table.loc[0, "beta"].values, ladder)
    check_against_exact(given, EXACT, comparisons=2)


def test_annealed_importance_sampling(model):
    ais = evidence(model, method="ais", n_temperatures=40, draws=60, tune=150, chains=2,
                   cores=2, random_seed=5)
    assert ais.sampler == "ais"
    check_against_exact(ais, EXACT, comparisons=2)
    assert list(ais.table.index.names) == ["chain", "particle"] and len(ais.table) == 120
    ais.plot()
    # chains run in worker processes; each from its own generator spawned from the seed
    one_by_one = evidence(model, method="ais", n_temperatures=40, draws=60, tune=150,
                          chains=2, cores=1, random_seed=5)
    np.testing.assert_array_equal(one_by_one.table["log_weight"].values,
                                  ais.table["log_weight"].values)
    # the particles move together (one compiled call per leapfrog step for all of them),
    # here on a given schedule
    given = evidence(model, method="ais", ladder=np.linspace(0.0, 1.0, 30) ** 4, draws=60,
                     tune=100, chains=2, random_seed=6)
    assert "moved together" in given.se_method and given.n_temperatures == 30
    check_against_exact(given, EXACT)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [({"method": "harmonic_mean"}, ValueError, "method must be one of"),
     ({"n_temperatures": 1}, ValueError, "n_temperatures must be >= 2"),
     ({"draws": 0}, ValueError, "draws must be >= 1"),
     ({"draws": 3}, ValueError, "draws must be >= 4"),
     ({"chains": 0}, ValueError, "chains must be >= 1"),
     ({"random_seed": -1}, ValueError, "random_seed must be >= 0"),
     ({"dt": "x"}, ValueError, "no 'tempering' group"),
     ({"method": "ais", "dt": "x"}, ValueError, "AIS makes its own runs"),
     ({"ladder": [0.0, 0.5]}, ValueError, "ladder must end at 1"),
     ({"ladder": [0.1, 0.5, 1.0]}, ValueError, "ladder must start at 0"),
     ({"ladder": [0.0, 0.6, 0.5, 1.0]}, ValueError, "ladder must be strictly increasing"),
     ({"ladder": [1.0]}, ValueError, "ladder needs at least 2 temperatures"),
     ({"ladder": [0.0, 1.0], "n_temperatures": 2}, ValueError, "n_temperatures or ladder"),
     ({"sampler": "smc"}, ValueError, "sampler must be one of"),
     ({"cores": 0}, ValueError, "cores must be >= 1"),
     ({"method": "ais", "draws": -1}, ValueError, "draws must be >= 1"),
     ({"method": "ais", "ladder": [0.0, 0.5]}, ValueError, "ladder must end at 1")],
)
def test_bad_input_is_refused_before_compiling(model, kwargs, error, match, monkeypatch):
    import sys

    import inference.tempering.ais as ais
    import inference.tempering.nutpie_ladder as ladder_runs

    def started(*args, **kw):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(sys.modules["inference.fitting"], "fit_mcmc", started)
    monkeypatch.setattr(ladder_runs, "run_ladder", started)
    monkeypatch.setattr(ais, "sample_gibbs", started)
    with pytest.raises(error, match=match):
        evidence(model, **kwargs)


def test_model_without_data_is_refused_and_a_discrete_one_planned(monkeypatch):
    import sys

    from inference.tempering.evidence import choose_sampler

    def started(*args, **kw):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(sys.modules["inference.tempering.sampling"], "build_steps", started)
    with pm.Model() as prior_only:
        pm.Normal("mu", 0.0, 1.0)
    with pytest.raises(ValueError, match="model: the model has no observed data"):
        evidence(prior_only)
    with pm.Model() as discrete:
        k = pm.Poisson("k", 2.0)
        pm.Normal("y", k, 1.0, observed=[1.0])
    # PyMC's Metropolis for k has a tempered version: planned, nothing compiled
    assert choose_sampler(discrete, "auto", "stepping_stone") == "parallel_tempering"
    for method in ("thermodynamic", "ais"):
        with pytest.raises(ValueError, match="model: the model has no observed data"):
            evidence(prior_only, method=method)


def test_nutpie_is_refused_for_a_model_with_zoo_steps(monkeypatch):
    """A model with a Gibbs step cannot run on nutpie: the error names the step, before
    anything compiles; 'auto' takes parallel tempering for it."""
    import inference.tempering.nutpie_ladder as ladder_runs
    from inference.tempering.evidence import choose_sampler
    from pp_models import finite_mixture

    def started(*args, **kw):
        raise AssertionError("compiled before refusing")

    monkeypatch.setattr(ladder_runs, "run_ladder", started)
    m = finite_mixture.model(np.r_[Y[:6], Y[:6] + 5].reshape(-1, 1), 2)
    with pytest.raises(ValueError, match="sampler='nutpie' needs an all-continuous model; "
                                         "this one has the steps 'categorical_gibbs' for z"):
        evidence(m, sampler="nutpie")
    assert choose_sampler(m, "auto", "stepping_stone") == "parallel_tempering"


@pytest.mark.slow
@pytest.mark.parametrize(("method", "sampler"), [
    ("stepping_stone", "parallel_tempering"), ("thermodynamic", "parallel_tempering"),
    ("stepping_stone", "nutpie"), ("thermodynamic", "nutpie"), ("ais", "auto")])
def test_standard_error_is_calibrated(method, sampler):
    """The exact value lies within ±2 se on >= 90% of 20 seeds (measured: see the commit
    messages and docs/benchmarks.md)."""
    m = normal_model()
    sizes = {"stepping_stone": dict(n_temperatures=6, draws=500, tune=300, chains=2),
             "thermodynamic": dict(n_temperatures=16, draws=400, tune=300, chains=2),
             "ais": dict(n_temperatures=40, draws=60, tune=150, chains=2)}[method]
    z = []
    for seed in range(20):
        r = evidence(m, method=method, random_seed=100 + seed, cores=1, sampler=sampler,
                     **sizes)
        z.append((r.log_evidence - EXACT) / r.se)
    z = np.array(z)
    print(f"{method} ({sampler}): |z| < 2 on {np.mean(np.abs(z) < 2):.2f}, mean z "
          f"{z.mean():.2f}, sd {z.std():.2f}")
    assert np.mean(np.abs(z) < 2) >= 0.9
    assert math.isfinite(z.mean())


def test_table_of_a_heavy_tailed_prior_has_no_overflow_warning():
    """Prior draws of the diffusion tree give log-likelihoods near -1e200: the table's
    variance at beta = 0 is inf and its ESS undefined, without an overflow warning
    (warnings are errors here)."""
    from inference.tempering.evidence import _from_draws

    rng = np.random.default_rng(0)
    loglik = rng.normal(-10.0, 1.0, size=(2, 40, 3))
    loglik[:, :, 0] = -1e200 * rng.uniform(0.5, 1.0, size=(2, 40))
    ladder = np.array([[0.0, 0.5, 1.0]] * 2)
    result = _from_draws(loglik, ladder, "stepping_stone", independent=True,
                         sampler="parallel_tempering")
    assert np.isinf(result.table["var_log_likelihood"].loc[(0, 0)])
    assert np.isfinite(result.table["var_log_likelihood"].loc[(0, 1)])
    assert np.isnan(result.table["ess"].loc[(0, 0)])
    # the data are all but impossible under those draws: the first step's log ratio,
    # 0.5 x the log-likelihood's log-mean-exp, dominates
    assert -1e200 < result.log_evidence < -1e199


def test_se_covers_chains_that_disagree():
    """A chain stuck in one mode reports a small within-chain variance and an estimate far
    from the others' (the model_comparison tutorial's DP mixture: -181.8, -181.7, -199.9,
    -181.9 at a within-chain se of 0.2): the se is then the chains' spread, with chains -
    1 degrees of freedom, not the within-chain figure that would put the truth 20 se
    away."""
    from inference.tempering.evidence import _from_draws, combine_chains

    stuck = [-181.8, -181.7, -199.9, -181.9]
    estimate, se, which, dof = combine_chains(stuck, [0.16] * 4, [50] * 4)
    assert estimate == pytest.approx(np.mean(stuck))
    assert se == pytest.approx(np.std(stuck, ddof=1) / 2) and se > 4
    assert which.startswith("between chains") and dof == 3
    agreeing = [-181.8, -181.7, -181.9, -181.75]
    estimate, se, which, dof = combine_chains(agreeing, [0.16] * 4)
    assert se == pytest.approx(math.sqrt(4 * 0.16) / 4) and which == "within chains"
    # with the within-chain figure's degrees of freedom the two are pooled
    _, se, which, dof = combine_chains(agreeing, [0.16] * 4, [50] * 4)
    between = np.var(agreeing, ddof=1) / 4
    assert se**2 == pytest.approx((200 * 0.04 + 3 * between) / 203) and dof == 203
    assert which.endswith("pooled")
    assert combine_chains([-3.0], [0.04])[1] == pytest.approx(0.2)  # one chain: within

    # through the estimator: four chains on a 2-temperature ladder, exact independent
    # draws of the same log-likelihoods except one chain shifted by 20 nats at beta = 1
    rng = np.random.default_rng(0)
    loglik = rng.normal(-10.0, 1.0, size=(4, 400, 2))
    loglik[3, :, 0] += 20.0
    result = _from_draws(loglik, np.tile([0.0, 1.0], (4, 1)), "stepping_stone",
                         independent=True, sampler="nutpie")
    spread = np.std(result.per_chain, ddof=1) / 2
    assert result.se == pytest.approx(spread) and "between chains" in result.se_method


def test_evidence_runs_the_tempered_fit_s_draws(model):
    # evidence() runs the tempered sampler itself (the tempering layer does not call fit):
    # the same seed gives fit(..., tempering=)'s draws, so the same estimate (a short run:
    # the model's tempered steps are built once and shared by both calls)
    sizes = dict(draws=8, tune=10, chains=1, cores=1, random_seed=3)
    ss = evidence(model, n_temperatures=3, sampler="parallel_tempering", **sizes)
    dt = fit(model, tempering=3, progressbar=False, **sizes)
    assert ss.per_chain == estimate_from_tempering(dt, "stepping_stone").per_chain


def test_a_heavy_tailed_stone_is_flagged():
    """A stone between power posteriors far apart has log-normal weights of sd 4 (Pareto
    k near 1): the se cannot be trusted and se_method says so; with sd 0.3 it does not."""
    from inference.tempering.evidence import PARETO_K_LIMIT, _from_draws

    rng = np.random.default_rng(1)
    for sd, flagged in ((4.0, True), (0.3, False)):
        loglik = rng.normal(-10.0, sd, size=(2, 1000, 2))
        result = _from_draws(loglik, np.tile([0.0, 1.0], (2, 1)), "stepping_stone",
                             independent=True, sampler="nutpie")
        k = result.table["pareto_k"].xs(0, level="temperature")
        assert (k > PARETO_K_LIMIT).all() == flagged
        assert ("UNRELIABLE" in result.se_method) == flagged
