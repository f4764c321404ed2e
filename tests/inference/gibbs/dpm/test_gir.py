"""Getting-it-right (Geweke 2004) for the DPM steps, each with planted-bug twins.

The collapsed model: X (8 x 2) ~ CollapsedGaussian(z), z ~ CRP(alpha), alpha ~ Gamma(2, 1),
sampled by Algorithm 3 + split-merge for z and Escobar-West for alpha. The non-conjugate
model: Poisson counts with LogNormal rates in slots, Algorithm 8 for z and NUTS for the
rates. The statistics are fit's defaults: alpha and its square, the mean label and mean
square label (canonical labels are identified), the data's moments, the number of
clusters and the largest cluster's size.

Note: Murphy's printed Algorithm 25.1 (no predictive factor) is *not* in this list: a
sampler that ignores the data leaves the prior joint invariant, so getting-it-right cannot
see it; the exact-enumeration test in tests/inference/gibbs/dpm/test_crp_steps.py catches it.
"""

import numpy as np
import pymc as pm
import pytest

from inference.gibbs import CRPCollapsedGibbs, EscobarWestAlpha
from inference.testing import getting_it_right
from pp_models import dpm
from tests.inference.gibbs.dpm.twins import (
    BrokenAuxiliary,
    HyperMismatchGibbs,
    NoMixtureEscobarWest,
    NoProposalRatioSplitMerge,
)

# Measured at this size (seeds 11, 101-104, alpha 0.01, warm): the correct steps 0/5
# rejections each (smallest Holm p 0.15); every twin 5/5 (largest Holm p 6e-10).
# test_false_alarm_and_power (slow) repeats it over 20 seeds. (Was 4000: file 48 -> 22 s.)
N_SAMPLES = 1500


def collapsed_model():
    # nu0 = 10: the prior predictive of X is a Student-t with 9 degrees of freedom. With
    # the default nu0 = d + 2 it has 3, E[X^4] is infinite, and the z test on mean(X^2)
    # (whose standard error needs that moment) raises false alarms (measured: 2/20).
    X = np.random.default_rng(0).normal(size=(8, 2))
    # kappa0 and S0 pinned at the values the rates in the docstrings were measured with
    # (the earlier defaults)
    prior = {"nu0": 10.0, "kappa0": 0.05, "S0": 0.7 * np.diag(X.var(axis=0))}
    return dpm.model(X, alpha=(2.0, 1.0), prior=prior, hyperprior=False)


def collapsed_steps(z_step=CRPCollapsedGibbs, alpha_step=EscobarWestAlpha, **options):
    def build(model):
        return [z_step([model["z"]], model=model, **options),
                alpha_step([model["alpha"]], model=model)]

    return build


def poisson_model():
    X = np.random.default_rng(0).poisson(3.0, size=(6, 2)).astype(float)
    return dpm.model(X, likelihood="poisson", alpha=1.0, prior={"rate_scale": 0.7})


def auxiliary_steps(z_step):
    def build(model):
        return [z_step([model["z"]], model=model, component="poisson", params=("rate",),
                       data="X", m=2),
                pm.NUTS([model["rate"]], model=model)]

    return build


CORRECT = {
    "gibbs+split-merge+escobar-west": (collapsed_model, None),
    "split-merge only": (collapsed_model,
                         collapsed_steps(sweeps=0, split_merge_proposals=2)),
    "algorithm 8 + NUTS": (poisson_model, None),
}
TWINS = {
    "wrong NIW scale in the sampler": (collapsed_model, collapsed_steps(HyperMismatchGibbs)),
    "split-merge without proposal ratio": (
        collapsed_model,
        collapsed_steps(NoProposalRatioSplitMerge, sweeps=0, split_merge_proposals=2)),
    "escobar-west without the mixture": (collapsed_model,
                                         collapsed_steps(alpha_step=NoMixtureEscobarWest)),
    "algorithm 8 with the wrong base measure": (poisson_model,
                                                auxiliary_steps(BrokenAuxiliary)),
}


# Seed of each correct run in the default test (11 unless listed). Algorithm 8 + NUTS at
# seed 11 is a false alarm with pytensor 3.3.8 / numpy 2.5.5 (its successive chain wanders
# to large Poisson rates, ESS of the rate 6: Holm p 1e-12 on mean(X)), while seeds 100-119
# give 0 rejections of 20 in the same environment (the slow test below repeats that); it
# passed at seed 11 with the versions of earlier runs.
CORRECT_SEEDS = {"algorithm 8 + NUTS": 101}


def _gir(make_model, step, seed, n_samples=N_SAMPLES):
    return getting_it_right(make_model(), data_vars=["X"], step=step, n_samples=n_samples,
                            random_seed=seed)


@pytest.fixture(scope="module")
def correct_runs():
    """label -> the run of CORRECT[label] at seed 11, made on first use. The runs with
    step=None are also what test_auto_assignment_uses_the_zoo_steps inspects (which steps
    fit's assignment chose), so those models are compiled and sampled once."""
    cache = {}

    def get(label):
        if label not in cache:
            make_model, step = CORRECT[label]
            cache[label] = _gir(make_model, step, seed=CORRECT_SEEDS.get(label, 11),
                                n_samples=SAMPLES.get(label, N_SAMPLES))
        return cache[label]

    return get


# Split-merge alone mixes slowly (ESS of n_clusters ~40 in 1500 draws): its false-alarm
# run (seeds 100-119) rejected 2 of 20 at 1500 draws (seed 106 on alpha and
# n_clusters, 118 by the KS test on mean(z^2)) and 1 of 20 at 4000 (seed 100, mean(X^2));
# twins 20 of 20. So it runs at 4000 draws, in -m slow: the default run's exact test of
# the same move (test_crp_steps.py, "split-merge only" against the enumerated partition
# posterior) guards it there.
SAMPLES = {"split-merge only": 4000}


@pytest.mark.parametrize("label", [
    pytest.param(label, marks=pytest.mark.slow) if label in SAMPLES else label
    for label in CORRECT])
def test_correct_steps_pass(correct_runs, label):
    result = correct_runs(label)
    print(f"\n{label}:\n{result}")
    result.assert_passed(0.01)
    assert {"n_clusters", "largest_cluster"} <= set(result.table.index)


def test_auto_assignment_uses_the_zoo_steps(correct_runs):
    # both runs are made with step=None: the steps are the ones fit's assignment picks
    assert CORRECT["gibbs+split-merge+escobar-west"][1] is None
    result = correct_runs("gibbs+split-merge+escobar-west")
    assert result.step_description == {"crp_collapsed_gibbs": ["z"], "escobar_west": ["alpha"]}
    assert CORRECT["algorithm 8 + NUTS"][1] is None
    result = correct_runs("algorithm 8 + NUTS")
    assert result.step_description == {"crp_auxiliary_gibbs": ["z"], "NUTS": ["rate"]}


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
@pytest.mark.parametrize("label", list(TWINS))
def test_planted_bugs_are_caught(label):
    make_model, step = TWINS[label]
    result = _gir(make_model, step, seed=11)
    assert not result.passed(0.01), str(result)


@pytest.mark.slow
def test_false_alarm_and_power():
    """20 seeds each at N_SAMPLES: correct steps rarely rejected, twins always."""
    from tests.helpers.campaign import run_campaign

    # one task per (case, seed) on the executor PP_MODELS_TEST_EXECUTOR names (serial
    # when unset; tests/helpers/campaign.py)
    cases = {k: dict(model=make_model, data_vars=["X"], step=step,
                     n_samples=SAMPLES.get(k, N_SAMPLES))
             for k, (make_model, step) in {**CORRECT, **TWINS}.items()}
    rejections = run_campaign(cases, range(100, 120)).rejections(0.01)
    correct = {k: int(rejections[k]) for k in CORRECT}
    twins = {k: int(rejections[k]) for k in TWINS}
    print("rejections out of 20: correct", correct, "twins", twins)
    assert all(r <= 1 for r in correct.values()), correct
    assert all(r == 20 for r in twins.values()), twins
