"""PyMC's own steps, tempered, leave the enumerated power posterior invariant.

A hand-written mixture of two Gaussian components (means ``mu_k ~ N(m0_k, 1)``, known
sigma, a ``pm.Categorical`` or a ``pm.Bernoulli`` label per point) on three points: the
2^3 labellings enumerate and each component's mean integrates on a grid (``oracles``:
SciPy only), so the power posterior ``p(z, mu) p(X | z, mu)^beta`` is known exactly. A
chain of the tempered label step with a tempered ``Slice`` or ``Metropolis`` on the means
at beta in {0, 0.3, 1} must match each labelling's probability and the means' power
posterior expectations within the chain's Monte Carlo error (family-wise false-failure
rate 1e-4 per test, ``tests.helpers.stationary``). A twin of each step that ignores beta
is caught by the same comparison at beta = 0.1. Beta 0 and 1, and ``evidence`` on the
Categorical mixture against the enumerated log evidence, run with ``-m slow``.
"""

import itertools

import numpy as np
import pymc as pm
import pytest

from inference import evidence
from inference.tempering import (
    TemperedBinaryGibbsMetropolis,
    TemperedCategoricalGibbsMetropolis,
    TemperedMetropolis,
    TemperedNUTS,
)
from inference.tempering.steps import plan_steps
from tests.helpers.stationary import compare_with_exact
from tests.inference.tempering.pymc_mixture import M0, S0, SIGMA, STEPS, WEIGHTS, X3, mixture
from tests.inference.tempering.twins import (
    BinaryGibbsIgnoringBeta,
    CategoricalGibbsIgnoringBeta,
    MetropolisIgnoringBeta,
    SliceIgnoringBeta,
)
from tests.oracles import mixtures as oracles

STATES = list(itertools.product(range(2), repeat=3))
ALPHA = 1e-4
TUNE, DRAWS = 150, 1500
#: where the twins (which run at beta = 1) are compared: far enough from 1 that a twin
#: of the Metropolis step, whose draws are the most correlated, is caught by 1500 draws
TWIN_BETA = 0.1


@pytest.fixture(scope="module")
def built():
    """Each model with its two tempered steps, compiled once: every test runs replicas."""
    out = {}
    for latent, (label, means) in STEPS.items():
        m = mixture(latent)
        with m:
            # Metropolis tunes its scale every 20 iterations (PyMC: 100), so that the short
            # tuning reaches a scale that mixes
            options = {"tune_interval": 20} if means is TemperedMetropolis else {}
            out[latent] = (m, [label([m["z"]]), means([m["mu"]], **options)])
    return out


def run(steps, model, beta, seed):
    """Tune, stop tuning, then record ``DRAWS`` iterations: (state codes, mu draws)."""
    for s, r in zip(steps, np.random.default_rng(seed).spawn(len(steps)), strict=True):
        s.setup_chain(r, TUNE, DRAWS)
        s.set_inverse_temperature(beta)
    point = model.initial_point()
    codes, mus = [], []
    for i in range(TUNE + DRAWS):
        if i == TUNE:
            for s in steps:
                s.stop_tuning()
        for s in steps:
            point, _ = s.step(point)
        if i >= TUNE:
            codes.append(int(np.ravel_multi_index(point["z"], (2, 2, 2))))
            mus.append(np.copy(point["mu"]))
    return np.array(codes), np.array(mus)


def check(codes, mus, beta):
    probs, means, squares, _ = oracles.latent_mixture_table(X3, WEIGHTS, M0, S0, SIGMA, beta)
    draws = {f"z={s}": (codes == j).astype(float) for j, s in enumerate(STATES)}
    exact = {f"z={s}": probs[j] for j, s in enumerate(STATES)}
    sd = {f"z={s}": np.sqrt(probs[j] * (1 - probs[j])) for j, s in enumerate(STATES)}
    for k in range(2):
        draws[f"mu[{k}]"] = mus[:, k]
        exact[f"mu[{k}]"] = float(probs @ means[:, k])
        draws[f"mu[{k}]^2"] = mus[:, k] ** 2
        exact[f"mu[{k}]^2"] = float(probs @ squares[:, k])
    return compare_with_exact(draws, exact, exact_sd=sd, alpha=ALPHA)


def replicas(steps, twin=None):
    """Fresh replicas of the built steps (the contract's ``replica``: same compiled
    functions, own state); ``twin`` replaces the class of the step it subclasses."""
    out = [s.replica() for s in steps]
    for s in out:
        if twin is not None and isinstance(twin, type) and issubclass(twin, type(s)):
            s.__class__ = twin
    return out


@pytest.mark.parametrize(
    "beta",
    [pytest.param(0.0, marks=pytest.mark.slow), 0.3, pytest.param(1.0, marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("latent", ["categorical", "bernoulli"])
def test_tempered_pymc_steps_match_power_posterior(built, latent, beta):
    m, steps = built[latent]
    result = check(*run(replicas(steps), m, beta, seed=5), beta)
    print(latent, beta, result, sep="\n")
    assert result.passed, str(result)


@pytest.mark.parametrize(
    ("latent", "twin"),
    [
        ("categorical", CategoricalGibbsIgnoringBeta),
        ("categorical", SliceIgnoringBeta),
        ("bernoulli", BinaryGibbsIgnoringBeta),
        ("bernoulli", MetropolisIgnoringBeta),
    ],
)
def test_twins_ignoring_beta_are_caught(built, latent, twin):
    m, steps = built[latent]
    result = check(*run(replicas(steps, twin), m, TWIN_BETA, seed=5), TWIN_BETA)
    print(latent, twin.__name__, f"max |z| {result.table['|z|'].max():.2f}", result, sep="\n")
    assert not result.passed, str(result)


def test_replicas_share_compiled_functions_and_own_their_state(built):
    _m, (label, means) = built["bernoulli"]
    for step in (label, means):
        copy = step.replica()
        assert copy.beta == step.beta and copy.rng is not step.rng
        if hasattr(step, "fs"):
            assert copy.fs[0] is step.fs[0]
        else:
            assert copy.delta_logp is step.delta_logp
            assert copy.accepted_sum is not step.accepted_sum


def test_a_replica_draws_from_its_own_generator(built):
    """``CategoricalGibbsMetropolis`` keeps its update (``astep``) as a method bound on
    the instance: a replica's must be bound to the replica, or every replica draws from
    the template's generator, which no chain seeds, and the same seed gives other draws."""
    m, (label, _means) = built["categorical"]
    copies = [label.replica() for _ in range(3)]
    assert all(c.astep.__self__ is c for c in copies)
    paths = []
    for c, seed in zip(copies, [11, 11, 12], strict=True):
        c.setup_chain(np.random.default_rng(seed), 0, 40)
        point, path = m.initial_point(), []
        for _ in range(40):
            point, _ = c.step(point)
            path.append(point["z"].copy())
        paths.append(np.array(path))
    assert np.array_equal(paths[0], paths[1])
    assert not np.array_equal(paths[0], paths[2])


def test_tempered_run_picks_them_in_place_of_pymcs_steps(built):
    """The plan swaps each PyMC class for its tempered version, building nothing (a
    built PyMC step given by the user is refused: ``test_interface``)."""
    with pm.Model() as m:
        z = pm.Categorical("z", p=np.ones(3) / 3, shape=2)
        k = pm.Poisson("k", 2.0)
        mu = pm.Normal("mu", 0.0, 1.0, shape=3)
        pm.Normal("y", mu[z] + k, 1.0, observed=[1.0, 2.0])
    plan = {item.var_names: item.cls for item in plan_steps(m, None, [])}
    assert plan == {
        ("z",): TemperedCategoricalGibbsMetropolis,
        ("k",): TemperedMetropolis,
        ("mu",): TemperedNUTS,
    }, plan
    two, _ = built["categorical"]  # two categories: PyMC's binary Gibbs
    assert {item.cls for item in plan_steps(two, None, [])} == {
        TemperedBinaryGibbsMetropolis,
        TemperedNUTS,
    }


@pytest.mark.slow
def test_evidence_of_the_hand_written_mixture_matches_enumeration():
    m = mixture("categorical")
    *_, exact = oracles.latent_mixture_table(X3, WEIGHTS, M0, S0, SIGMA, 1.0)
    result = evidence(m, n_temperatures=6, draws=800, tune=200, chains=2, cores=1, random_seed=3)
    print(result, exact)
    assert result.sampler == "parallel_tempering"
    # 4.42 standard errors: a false failure about once in 1e5 runs
    assert abs(result.log_evidence - exact) < 4.42 * result.se, (result.log_evidence, exact)
