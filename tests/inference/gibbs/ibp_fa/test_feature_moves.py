"""The NSFA step with whole-feature birth/death proposals samples the exact (power)
posterior.

At D = 2 rows and N = 1 column the power posterior's class probabilities of ``Z`` and
the expectations of ``G X``, ``tau`` and ``alpha`` are known exactly
(``tests/oracles/ibp_fa.py``). Chains of the step with its whole-feature moves
(:mod:`custom_ops.ibp_fa.feature_moves`: births and deaths of features of two rows, at
D = 2 the pattern ``11``, and two-feature row updates) at beta in {0.3, 1} must match
them within their Monte Carlo error
(``tests.helpers.stationary``, one family-wise level over every comparison); the twin
whose birth/death ratio leaves out the proposal probabilities must not (``-m slow``).
The two-feature row update's own exact test and twin (which this oracle is too weak to
catch: the sweep alone mixes the tiny case) are in tests/custom_ops/ibp_fa/.
"""

import numpy as np
import pytest

from custom_ops.ibp_fa.feature_moves import FEATURE_MOVE_STATS, feature_birth_death_moves
from custom_ops.ibp_fa.nsfa import FactorState
from inference.gibbs.ibp_fa import NSFAGibbs
from pp_models import ibp_fa
from tests.helpers.stationary import compare_with_exact
from tests.inference.gibbs.ibp_fa.tiny import CAPACITY, LAM, NOISE, Y, oracle, statistics
from tests.inference.gibbs.ibp_fa.twins import NoProposalTermsFeatureMoves

N_SWEEPS = 4000
MOVES = 4
N_COMPARISONS = 11 * 3


def chain(step_cls, beta, seed, n=N_SWEEPS):
    m = ibp_fa.model(
        Y,
        alpha=(2.0, 2.0),
        loading_prior=LAM,
        noise_prior=NOISE,
        capacity=CAPACITY,
        birth_proposal=(2.0, 0.1),
        feature_moves=MOVES,
    )
    hint = m._pp_models_info.step_hints[0]
    step = step_cls.from_model(m, hint.var_names, **hint.options)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    point = m.initial_point()
    keep = {"Z": [], "V": [], "X": [], "noise_precision_log__": [], "alpha_log__": []}
    accepted = 0
    for _ in range(n):
        point, stats = step.step(point)
        accepted += stats[0]["feature_moves_accepted"] + stats[0]["row_moves"]
        for key, values in keep.items():
            values.append(point[key])
    tau = np.exp(np.array(keep["noise_precision_log__"]).reshape(n, -1))
    alpha = np.exp(np.array(keep["alpha_log__"]))
    draws = statistics(np.array(keep["Z"]), np.array(keep["V"]), np.array(keep["X"]), tau, alpha)
    return draws, accepted


def check(draws, beta):
    exact = oracle(beta)
    return compare_with_exact(
        draws, {k: exact.mean[k] for k in draws}, exact_sd=exact.sd, n_comparisons=N_COMPARISONS
    )


@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_step_with_feature_moves_samples_the_power_posterior(beta):
    draws, accepted = chain(NSFAGibbs, beta, seed=21)
    result = check(draws, beta)
    print(f"\nbeta = {beta}, feature moves accepted: {accepted}\n{result}")
    assert accepted > 100
    assert result.passed


@pytest.mark.slow  # planted-bug power (a chain of 4000 sweeps and a twin compile)
def test_twin_without_the_proposal_probabilities_is_caught():
    draws, _ = chain(NoProposalTermsFeatureMoves, 1.0, seed=21)
    result = check(draws, 1.0)
    print(result)
    assert not result.passed


def test_moves_need_two_rows():
    """With one row there is no feature of two rows to add or remove."""
    rng = np.random.default_rng(0)
    Z = np.zeros((1, 4), np.int8)
    counts = np.zeros(len(FEATURE_MOVE_STATS), np.int64)
    state = FactorState(
        np.ones((1, 3)),
        np.ones((1, 3)),
        Z,
        np.ones((1, 4)),
        np.zeros((4, 3)),
        np.ones(4),
        np.ones(1),
        np.empty((1, 3)),
    )
    feature_birth_death_moves(rng, state, 1.0, 1.0, 5, counts)
    assert not Z.any() and not counts.any()


def test_factory_checks_feature_moves():
    with pytest.raises(ValueError, match="feature_moves"):
        ibp_fa.model(Y, feature_moves=-1)
