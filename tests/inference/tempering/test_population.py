"""The population HMC move of annealed importance sampling
(:mod:`inference.tempering.population`) against the exact power posterior of the
conjugate Normal model (y_i ~ N(mu, 1), mu ~ N(0, 1), i = 1..20: at inverse temperature
beta, mu ~ N(beta sum(y) / (1 + 20 beta), 1 / (1 + 20 beta))), and its planted-bug twins;
then (``-m slow``) AIS on a Beta-Bernoulli model, whose evidence is a Beta function.

The particles start as exact independent draws of ``p_beta`` and each moves on its own, so
after the moves they are still independent draws of ``p_beta`` when the move leaves it
invariant: the sample mean's z-score and the sample variance's chi-squared statistic are
exact tests, at a false-failure rate of 1e-4 shared by the two.
"""

import copy
import math

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

from inference import evidence
from inference.tempering.population import BatchedPowerPosterior
from tests.helpers.evidence_checks import FALSE_FAILURE, check_against_exact
from tests.inference.tempering.twins import PopulationAcceptingAll, PopulationIgnoringBeta
from tests.oracles.normal import Y, normal_model

BETA, PARTICLES, MOVES = 0.5, 4000, 10
PRECISION = 1.0 + BETA * Y.size
MEAN, VAR = BETA * Y.sum() / PRECISION, 1.0 / PRECISION


@pytest.fixture(scope="module")
def batched():
    return BatchedPowerPosterior.for_model(normal_model())


def _moved(batched, cls=None, seed=0):
    population = batched if cls is None else copy.copy(batched)
    if cls is not None:
        population.__class__ = cls  # the twin shares the compiled function
    rng = np.random.default_rng(seed)
    x = rng.normal(MEAN, math.sqrt(VAR), (PARTICLES, 1))
    scale = np.array([math.sqrt(VAR)])
    state = None
    for _ in range(MOVES):
        x, state, accept = population.hmc_move(x, BETA, 1.4, scale, 2, rng, state)
    return x[:, 0], accept


def _rejects(x) -> bool:
    """Whether the mean or the variance of ``x`` departs from p_beta's."""
    p = FALSE_FAILURE / 2
    z = (x.mean() - MEAN) / math.sqrt(VAR / x.size)
    chi2 = (x.size - 1) * x.var(ddof=1) / VAR
    return abs(z) > stats.norm.isf(p / 2) or not stats.chi2.ppf(
        p / 2, x.size - 1
    ) < chi2 < stats.chi2.isf(p / 2, x.size - 1)


def test_the_move_leaves_the_power_posterior_invariant(batched):
    assert batched.dim == 1 and batched.names == ["mu"]
    prior, lik, dprior, dlik = batched.evaluate(np.array([[0.3], [-1.0]]))
    np.testing.assert_allclose(prior, stats.norm.logpdf([0.3, -1.0]))
    np.testing.assert_allclose(lik, [stats.norm.logpdf(Y, m).sum() for m in (0.3, -1.0)])
    np.testing.assert_allclose(dprior[:, 0], [-0.3, 1.0])
    np.testing.assert_allclose(dlik[:, 0], [np.sum(Y - m) for m in (0.3, -1.0)])
    x, accept = _moved(batched)
    assert 0.3 < accept.mean() < 1.0  # it moves, and the test is not idle
    assert not _rejects(x)


@pytest.mark.parametrize("twin", [PopulationAcceptingAll, PopulationIgnoringBeta])
def test_the_same_test_catches_a_broken_move(batched, twin):
    x, _ = _moved(batched, twin)
    assert _rejects(x)


@pytest.mark.slow
def test_ais_on_a_beta_bernoulli_model():
    """The evidence of p ~ Beta(2, 3), 14 of 20 Bernoulli(p) ones is B(16, 9) / B(2, 3);
    the default schedule (respaced by the pilot) and a given one (slow: the model's own
    compile; the default run's AIS test is on the conjugate Normal)."""
    y = np.r_[np.ones(14), np.zeros(6)]
    exact = float(special.betaln(16, 9) - special.betaln(2, 3))
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 3.0)
        pm.Bernoulli("y", p, observed=y)
    result = evidence(
        m, method="ais", n_temperatures=60, draws=500, tune=200, chains=2, random_seed=1
    )
    assert "moved together" in result.se_method and result.n_temperatures == 60
    # an error of 0.1 nats is caught (tests/helpers/evidence_checks.py)
    check_against_exact(result, exact, detect=0.1, comparisons=2)
    given = evidence(
        m,
        method="ais",
        ladder=np.linspace(0.0, 1.0, 30) ** 3,
        draws=300,
        tune=100,
        chains=2,
        random_seed=2,
    )
    check_against_exact(given, exact, comparisons=2)
