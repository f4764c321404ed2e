"""Getting-it-right (Geweke 2004) for the IOMM sampler: Algorithm 7.1's two steps
together, alternated with fresh data, must reproduce the joint prior's label-invariant
statistics, for Bernoulli and Gaussian experts, with a random alpha and with split-merge
proposals after each sweep (:mod:`custom_ops.iomm.split_merge`). The planted-bug
twins (one per step; tests/inference/gibbs/iomm/twins.py) must fail the same test (their
cheap exact tests are in the default run: tests/custom_ops/iomm/)."""

import numpy as np
import pytest

from inference.gibbs.iomm import IOMMMemberships, IOMMParameters
from inference.testing import getting_it_right
from pp_models import iomm
from tests.inference.gibbs.iomm.twins import (
    NoHastingsParameters,
    NoJacobianParameters,
    NoProposalTermsSplitMerge,
    OtherPointsOddsMemberships,
)

N_SAMPLES = 2000


def _on(state):
    return np.asarray(state["Z"]) != 0


def _common(state):
    on = _on(state)
    m = on.sum(axis=0)
    return {"n_clusters": float(on.any(axis=0).sum()), "n_ones": float(on.sum()),
            "n_empty": float((~on.any(axis=1)).sum()),
            "shared_pairs": float((m * m).sum() - on.sum())}


STATISTICS_COMMON = {name: (lambda s, name=name: _common(s)[name])
                     for name in ("n_clusters", "n_ones", "n_empty", "shared_pairs")}


def _bernoulli_stats():
    stats = dict(STATISTICS_COMMON)
    def mean_product(s):
        # a planted bug can push theta to a value that rounds to 0 (its logit -inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(np.nanmean(iomm.bernoulli_product(s["Z"], s["theta"])))

    stats["mean theta~"] = mean_product
    stats["mean theta (all slots)"] = lambda s: float(np.mean(s["theta"]))
    stats["mean theta used^2"] = lambda s: float(
        np.mean(np.asarray(s["theta"])[_on(s).any(axis=0)] ** 2)) if _on(s).any() else 0.0
    stats["mean X"] = lambda s: float(np.mean(s["X"]))
    stats["X[0] . X[1]"] = lambda s: float(np.dot(s["X"][0], s["X"][1]))
    return stats


def _gaussian_stats(background):
    stats = dict(STATISTICS_COMMON)

    def product(s):
        return iomm.gaussian_product(s["Z"], s["mu"], s["tau"], background)

    stats["mean mu~"] = lambda s: float(np.mean(product(s)[0]))
    stats["mean log tau~"] = lambda s: float(np.mean(np.log(product(s)[1])))
    stats["mean log tau (all slots)"] = lambda s: float(np.mean(np.log(s["tau"])))
    stats["mean X"] = lambda s: float(np.mean(s["X"]))
    stats["mean X^2"] = lambda s: float(np.mean(np.asarray(s["X"]) ** 2))
    return stats


def bernoulli_model(**kwargs):
    X = np.zeros((4, 3))  # freed and redrawn by the test
    options = dict(alpha=1.5, capacity=14, theta_prior=(0.7, 0.7), omega=4.0)
    options.update(kwargs)
    return iomm.model(X, **options)


def gaussian_model(**kwargs):
    X = np.array([[0.0, 1.0], [1.0, 0.0], [-1.0, 2.0], [0.5, 0.5]])
    options = dict(likelihood="gaussian", alpha=1.2, capacity=14, mean_prior=(0.0, 1.5),
                   precision_prior=(2.0, 1.0), background=(0.0, 3.0), omega=2.0)
    options.update(kwargs)
    return iomm.model(X, **options)


def _gir(m, statistics, memberships=IOMMMemberships, parameters=IOMMParameters, seed=0,
         n_samples=N_SAMPLES):
    hints = {h.step: h for h in m._pp_models_info.step_hints}

    def build(model):
        z_hint = hints[iomm.STEP_MEMBERSHIPS]
        p_hint = hints[iomm.STEP_PARAMETERS]
        return [memberships.from_model(model, z_hint.var_names, **z_hint.options),
                parameters.from_model(model, p_hint.var_names, **p_hint.options)]

    return getting_it_right(m, data_vars=["X"], step=build, n_samples=n_samples,
                            statistics=statistics, random_seed=seed)


def test_bernoulli_sampler_gets_it_right():
    """alpha fixed: the chain's mean number of clusters is alpha H_4."""
    result = _gir(bernoulli_model(), _bernoulli_stats(), seed=1)
    print(result)
    result.assert_passed(0.01)
    # E[K+] = alpha H_4 under the prior
    assert abs(result.successive["n_clusters"].mean() - 1.5 * (1 + 1 / 2 + 1 / 3 + 1 / 4)) < 0.3


@pytest.mark.slow  # the alpha update is one conjugate draw; the default run has the above
def test_random_alpha_gets_it_right():
    stats = _bernoulli_stats()
    stats["alpha"] = lambda s: float(s["alpha"])
    result = _gir(bernoulli_model(alpha=(3.0, 2.0), capacity=30), stats, seed=2,
                  n_samples=3000)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow  # the move's exact transport tests are in the default run
def test_sampler_with_split_merge_gets_it_right():
    result = _gir(bernoulli_model(split_merge=3), _bernoulli_stats(), seed=4)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow  # planted-bug power; its exact twin test is tests/custom_ops/iomm/
def test_split_merge_twin_is_caught():
    result = _gir(bernoulli_model(split_merge=3), _bernoulli_stats(),
                  memberships=NoProposalTermsSplitMerge, seed=4)
    print(result)
    assert not result.passed(0.01)


def test_gaussian_sampler_gets_it_right():
    m = gaussian_model()
    result = _gir(m, _gaussian_stats(iomm.get_spec(m).background), seed=3)
    print(result)
    result.assert_passed(0.01)


def test_fit_assigns_the_two_steps():
    result = getting_it_right(bernoulli_model(), data_vars=["X"], n_samples=20,
                              statistics=STATISTICS_COMMON, random_seed=1)
    assert result.step_description == {"iomm_memberships": ["Z"],
                                       "iomm_parameters": ["theta"]}


@pytest.mark.slow  # planted-bug power (docs/architecture.md, "What runs where")
@pytest.mark.parametrize("twin", ["memberships", "bernoulli parameters",
                                  "gaussian parameters"])
def test_planted_bugs_are_caught(twin):
    if twin == "memberships":
        result = _gir(bernoulli_model(), _bernoulli_stats(),
                      memberships=OtherPointsOddsMemberships, seed=1)
    elif twin == "bernoulli parameters":
        result = _gir(bernoulli_model(), _bernoulli_stats(), parameters=NoHastingsParameters,
                      seed=1)
    else:
        m = gaussian_model()
        result = _gir(m, _gaussian_stats(iomm.get_spec(m).background),
                      parameters=NoJacobianParameters, seed=3)
    print(f"\n{twin}:\n{result}")
    assert not result.passed(0.01)


@pytest.mark.slow
def test_false_alarm_rate():
    """10 seeds per likelihood: the correct sampler is rarely rejected at the 1 %
    family-wise level."""
    rejections = sum(not _gir(bernoulli_model(), _bernoulli_stats(), seed=s).passed(0.01)
                     for s in range(100, 110))
    m = gaussian_model()
    stats = _gaussian_stats(iomm.get_spec(m).background)
    rejections += sum(not _gir(m, stats, seed=s).passed(0.01) for s in range(100, 110))
    print("rejections out of 20:", rejections)
    assert rejections <= 1
