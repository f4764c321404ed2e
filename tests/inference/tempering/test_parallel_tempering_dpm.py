"""``fit(..., tempering=...)`` end to end on a DP mixture small enough to enumerate.

Every temperature's state is distributed as its power posterior: the cold draws'
partition frequencies match ``p(z | X)`` and each temperature's mean log-likelihood
matches ``E_beta[log p(X | z)]`` (both exact by enumeration, ``oracles``), within
batch-means Monte Carlo errors. The DataTree keeps fit's layout plus a ``tempering``
group; ArviZ reads it; a Ctrl-C'd run with a trace resumes to the uninterrupted run.
"""

import json
import math

import arviz as az
import numpy as np
import pytest

from inference import fit
from inference.tempering import TEMPERING_GROUP
from pp_models import dpm
from pp_models.model_info import posterior_with_labels
from tests.helpers.stationary import state_codes, tv_against_mcse
from tests.oracles import mixtures as oracles

RNG = np.random.default_rng(5)
X5 = np.concatenate([RNG.normal(-1.5, 0.4, (2, 2)), RNG.normal(1.5, 0.4, (3, 2))])


@pytest.fixture(scope="module")
def model_and_exact():
    m = dpm.model(X5, likelihood="diag_gaussian", alpha=1.0)
    spec = dpm.get_spec(m)
    hyper = [spec.prior[k] for k in ("m0", "kappa0", "a0", "b0")]
    _parts, prior, lik = oracles.dp_table(X5, oracles.block_function("diag_gaussian", hyper),
                                          1.0)
    return m, prior, lik


@pytest.fixture(scope="module")
def tempered_fit(model_and_exact):
    m, _prior, _lik = model_and_exact
    return fit(m, draws=4000, tune=200, chains=2, cores=1, random_seed=3, progressbar=False,
               tempering=4)


def test_every_temperature_samples_its_power_posterior(model_and_exact, tempered_fit):
    _m, prior, lik = model_and_exact
    dt = tempered_fit
    z = posterior_with_labels(dt)["z"].values.reshape(-1, 5)
    tv, expected = tv_against_mcse(state_codes(z, oracles.partitions(5)),
                                   oracles.power_posterior(prior, lik, 1.0))
    assert tv < 1.6 * expected, (tv, expected)
    group = dt[TEMPERING_GROUP]
    ladder = group["ladder"].values
    assert np.all(ladder[:, 0] == 0.0) and np.all(ladder[:, -1] == 1.0)
    # the ladder is fixed after tuning
    np.testing.assert_array_equal(group["beta"].values[:, 0], ladder)
    loglik = group["log_likelihood"].values  # (chain, draw, temperature)
    for c in range(2):
        for t, beta in enumerate(ladder[c]):
            p = oracles.power_posterior(prior, lik, beta)
            exact = float(p @ lik)
            x = loglik[c, :, t]
            batches = x.reshape(40, -1).mean(1)
            mcse = batches.std(ddof=1) / math.sqrt(40)
            assert abs(x.mean() - exact) < 4 * mcse + 1e-9, (c, beta, x.mean(), exact, mcse)


def test_tempered_fit_layout(tempered_fit):
    dt = tempered_fit
    group = dt[TEMPERING_GROUP]
    assert dict(group.sizes) == {"chain": 2, "draw": 4000, "temperature": 4, "pair": 3}
    for name in ("beta", "log_likelihood", "swap_prob", "index", "ladder",
                 "swap_acceptance", "barrier", "cumulative_barrier", "round_trips"):
        assert name in group
    assert (group["swap_acceptance"].values > 0.2).all()
    assert (group["round_trips"].values > 10).all()
    np.testing.assert_allclose(group["barrier"].values,
                               (1 - group["swap_acceptance"]).sum("pair").values)
    assert "tempering_beta" not in dt["sample_stats"]
    assert "n_clusters" in dt["posterior"]  # the derived statistics as without tempering
    steps = json.loads(dt.attrs["pp_models_steps"])
    assert steps == {"crp_collapsed_gibbs": ["z"]}
    assert json.loads(dt.attrs["pp_models_tempering"])["adapt"] is True
    summary = az.summary(dt, var_names=["n_clusters"])
    assert summary.loc["n_clusters", "r_hat"] < 1.05


def test_interrupted_tempered_run_resumes_to_the_uninterrupted_run(tmp_path):
    """Ctrl-C (a real SIGINT once 25 draws are stored) stops the tempered chain; resuming
    from the trace gives the very run made without interruption: every replica's state,
    generator, NUTS adaptation and the ladder are in the stored chain state. A finite
    mixture, so NUTS (w, mu, sigma) and the categorical step (z) are both tempered."""
    from pp_models import finite_mixture
    from tests.helpers.interrupts import sigint_once_stored

    rng = np.random.default_rng(2)
    X = np.concatenate([rng.normal(-2, 0.5, (10, 1)), rng.normal(2, 0.5, (10, 1))])
    m = finite_mixture.model(X, 2)
    sizes = dict(draws=60, tune=40, chains=2, cores=1, random_seed=7, tempering=3)
    path = tmp_path / "run"
    watcher, seen = sigint_once_stored(path, 25)
    with pytest.warns(UserWarning, match="interrupted"):
        partial = fit(m, progressbar=False, trace=path, trace_flush=0.0, **sizes)
    watcher.join()
    assert seen and partial.attrs["pp_models_interrupted"] == 1
    resumed = fit(m, progressbar=False, trace=path, resume=True, **sizes)
    whole = fit(m, progressbar=False, **sizes)
    for group, name in (("posterior", "mu"), ("posterior", "z"),
                        (TEMPERING_GROUP, "log_likelihood"), (TEMPERING_GROUP, "beta")):
        np.testing.assert_array_equal(resumed[group][name].values, whole[group][name].values)


def _first_swap(tempered, point, iterations=100):
    """The first tuning iteration after which some state left its temperature (the index
    process is no longer the identity), or None."""
    tempered.setup_chain(np.random.default_rng(0), 200, 0)
    identity = np.arange(tempered.n_temperatures)
    for t in range(iterations):
        point, (stats,) = tempered.step(point)
        if not np.array_equal(stats["tempering_index"], identity):
            return t
    return None


def test_swaps_are_held_while_tuning_only_when_a_step_adapts(model_and_exact):
    """Gibbs steps alone swap from the first tuning iteration (Syed et al.'s Algorithm 4:
    the ladder adapts to the rejections of replicas that exchange states); NUTS, whose
    step size and mass matrix adapt to its replica's temperature, holds the swaps until
    the last ladder update (iteration 48 of a 200-iteration tuning)."""
    import pymc as pm

    from inference.sampling_core import initial_point
    from inference.tempering import TemperedNUTS
    from inference.tempering.driver import TemperedStep
    from inference.tempering.ladder import adaptation_rounds, initial_ladder
    from inference.tempering.steps import build_steps, plan_steps
    from pp_models.model_info import get_info

    assert adaptation_rounds(200) == [16, 48]
    m = model_and_exact[0]
    start = initial_point(m)
    steps = build_steps(m, plan_steps(m, get_info(m), []), initial_point=start)
    gibbs = TemperedStep(steps, model=m, ladder=initial_ladder(4))
    assert not gibbs.hold_swaps
    assert _first_swap(gibbs, dict(start)) < 16
    held = TemperedStep(steps, model=m, ladder=initial_ladder(4), hold_swaps=True)
    assert _first_swap(held, dict(start)) >= 48

    with pm.Model() as normal:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=[0.3, 1.2, 2.0, 0.7])
    nuts = TemperedNUTS([mu], model=normal, initial_point=normal.initial_point())
    tempered = TemperedStep([nuts], model=normal, ladder=initial_ladder(3))
    assert tempered.hold_swaps
    assert 48 <= _first_swap(tempered, normal.initial_point()) < 100
