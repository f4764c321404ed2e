"""Getting-it-right for the DPM with a learned base measure.

X (20 x 2) ~ CollapsedGaussian(z; m0, kappa0, nu0, S0) with kappa0, nu0 = d - 1 +
nu0_excess and S0 = S0_scale * nu0 * diag(v) all random, z ~ CRP(1); collapsed Gibbs +
split-merge for z, NUTS for the three hyperparameters. The hyperpriors keep X's fourth
moments finite (the z tests on mean(X^2) need them; cf. test_gir.py: shape > 2 for
kappa0, nu0 well above d + 3) yet let the hyperparameters vary enough for the planted
bug to matter: the z step caches the hyperparameters of its first call instead of
reading them from the point. With 8 rows that bug was caught on 1 of 10 seeds (the
partition barely depends on the hyperparameters); with 20 rows (measured by the slow
test, seeds 100-109, 2000 draws): twin caught 9 of 10, correct steps rejected 0 of 10.
"""

import numpy as np
import pytest

from inference.gibbs import CRPCollapsedGibbs
from inference.testing import getting_it_right
from pp_models import dpm
from tests.inference.gibbs.dpm.twins import StaleHyperGibbs

N_SAMPLES = 2000
HYPERPRIOR = {"kappa0": (4.0, 4.0), "nu0": (20.0, 2.0), "S0": (6.0, 6.0)}


def learned_model():
    X = np.random.default_rng(0).normal(size=(20, 2))
    return dpm.model(X, alpha=1.0, hyperprior=HYPERPRIOR)


def steps(z_step):
    def build(model):
        import pymc as pm

        return [z_step([model["z"]], model=model),
                pm.NUTS([model["kappa0"], model["nu0_excess"], model["S0_scale"]],
                        model=model)]

    return build


def _gir(step, seed, n_samples=N_SAMPLES):
    return getting_it_right(learned_model(), data_vars=["X"], step=step,
                            n_samples=n_samples, random_seed=seed)


def test_learned_base_measure_passes():
    result = _gir(steps(CRPCollapsedGibbs), seed=11)
    print(result)
    result.assert_passed(0.01)
    assert {"kappa0", "nu0_excess", "S0_scale", "n_clusters"} <= set(result.table.index)


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
def test_stale_hyperparameters_are_caught():
    result = _gir(steps(StaleHyperGibbs), seed=11)
    assert not result.passed(0.01), str(result)


@pytest.mark.slow
def test_false_alarm_and_power():
    seeds = range(100, 110)
    correct = sum(not _gir(steps(CRPCollapsedGibbs), seed=s).passed(0.01) for s in seeds)
    twin = sum(not _gir(steps(StaleHyperGibbs), seed=s).passed(0.01) for s in seeds)
    print(f"rejections out of 10: correct {correct}, stale twin {twin}")
    assert correct <= 1 and twin >= 9
