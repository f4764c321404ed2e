"""Getting-it-right (Geweke 2004) for the HMM's two steps together (FFBS for the path,
conjugate draws of pi0, P and the emission parameters), alternated with fresh data:
Gaussian and Poisson emissions, two sequences. The planted-bug twins
(tests/inference/gibbs/hmm/twins.py) must fail the same test (slow; FFBS's exact twin
runs by default in tests/custom_ops/hmm/test_forward_backward.py)."""

import numpy as np
import pytest

from inference.gibbs.assignment import assign_steps, describe_steps
from inference.gibbs.hmm import HMMConjugate, HMMPathFFBS
from inference.testing import getting_it_right
from inference.testing.generative import GenerativeModel
from pp_models import hmm
from pp_models.model_info import get_info
from tests.inference.gibbs.hmm.twins import CountsAcrossSequences, FilteredFFBS

N_SAMPLES = 1500


def _model(emission):
    y = (
        np.array([0.0, 1.0, 2.0, 1.0, 0.0, 3.0])
        if emission == "gaussian"
        else np.array([0, 1, 2, 1, 0, 3])
    )
    # sticky transitions: the path's structure (what FFBS's backward pass must get
    # right) shows in the statistics
    return hmm.model(y, 2, emission=emission, lengths=[4, 2], stickiness=3.0)


def _statistics(emission):
    mean = "mu" if emission == "gaussian" else "rate"

    def switches(s):
        z = np.asarray(s["z"])
        return float(np.sum(z[1:4] != z[:3]) + (z[5] != z[4]))

    return {
        "switches": switches,
        "P00": lambda s: float(s["P"][0, 0]),
        "P10": lambda s: float(s["P"][1, 0]),
        "pi0_0": lambda s: float(s["pi0"][0]),
        "mean y": lambda s: float(np.mean(s["y"])),
        "y0 y1": lambda s: float(s["y"][0] * s["y"][1]),
        "y in state 0": lambda s: (
            float(np.mean(np.asarray(s["y"])[np.asarray(s["z"]) == 0]))
            if np.any(np.asarray(s["z"]) == 0)
            else 0.0
        ),
        f"{mean} spread": lambda s: float(np.ptp(s[mean])),
        f"{mean}[z0] * y0": lambda s: float(s[mean][s["z"][0]] * s["y"][0]),
    }


def _gir(emission, path=HMMPathFFBS, parameters=HMMConjugate, seed=0):
    m = _model(emission)
    hints = {h.step: h for h in m._pp_models_info.step_hints}

    def build(model):
        z_hint, p_hint = hints[hmm.STEP_PATH], hints[hmm.STEP_PARAMETERS]
        return [
            path.from_model(model, z_hint.var_names, **z_hint.options(model)),
            parameters.from_model(model, p_hint.var_names, **p_hint.options),
        ]

    return getting_it_right(
        m,
        data_vars=["y"],
        step=build,
        n_samples=N_SAMPLES,
        statistics=_statistics(emission),
        random_seed=seed,
    )


# Every move has an exact test in the default run (FFBS against the enumerated path
# posterior, the conjugate draws against their power posteriors in test_tempered.py),
# so the whole-sampler run is in -m slow ("What runs where", docs/architecture.md).
@pytest.mark.slow
@pytest.mark.parametrize("emission", ["gaussian", "poisson"])
def test_steps_get_it_right(emission):
    result = _gir(emission, seed=1)
    print(result)
    result.assert_passed(0.01)


def test_getting_it_right_assigns_the_two_steps_and_they_read_free_data():
    """With the data free (as getting-it-right has them), the step assignment fit uses
    gives z to FFBS and the rest to the conjugate step, and both read y from the point.
    (No prior draw: its forward-sampling graph is compiled by the slow test above.)"""
    gen = GenerativeModel(_model("poisson"), ["y"])
    m = gen.model
    with m:
        steps = assign_steps(m, get_info(m), [], None, only=set(gen.param_names))
    assert describe_steps(steps) == {"hmm_ffbs": ["z"], "hmm_conjugate": ["pi0", "P", "rate"]}
    ffbs, conjugate = steps
    # y far from one state's rate: every path puts all observations in state 1
    point = {
        "pi0_simplex__": np.array([0.0]),
        "P_simplex__": np.zeros((2, 1)),
        "rate_log__": np.log([1e-3, 50.0]),
        "z": np.zeros(6, dtype=np.int64),
        "y": np.full(6, 50, dtype=np.int64),
    }
    ffbs.rng = np.random.default_rng(0)
    new, _ = ffbs.step(point)
    np.testing.assert_array_equal(new["z"], np.ones(6))
    conjugate.rng = np.random.default_rng(0)
    rates = np.exp(conjugate.step(new)[0]["rate_log__"])
    assert rates[1] > 30.0  # Gamma(1 + 300, rate 1/mean + 6): about 50, sd 3


@pytest.mark.slow  # planted-bug power (docs/architecture.md, "What runs where")
@pytest.mark.parametrize("twin", ["filtered ffbs", "counts across sequences"])
def test_planted_bugs_are_caught(twin):
    if twin == "filtered ffbs":
        result = _gir("poisson", path=FilteredFFBS, seed=1)
    else:
        result = _gir("poisson", parameters=CountsAcrossSequences, seed=1)
    print(f"\n{twin}:\n{result}")
    assert not result.passed(0.01)
