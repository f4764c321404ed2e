"""Getting-it-right (Geweke 2004) for the PYDT sampler the factory asks for:
detach-reattach with the full Metropolis-Hastings ratio, slice-sampled divergence times,
the non-centred update of c, theta and alpha (moved with the standardised time gaps
fixed; inference/gibbs/pydt.py item 3), the branch-point moves (collapse an internal
edge / expand a branch point; item 4, n per sweep) and the slice update of c, theta, alpha
and the precision on their log / logit scale with the tree fixed (item 5), on 5 leaves
in 1 dimension; and planted-bug twins:

- the slice sampler of the divergence times without the t <-> log(1 - t) Jacobian and
  the non-centred update without log |dt/dw| (each caught on every seed measured, so
  the default tests do not depend on their seeds);
- the detach-reattach move without the proposal-density ratio g_R(old) / g_R(new), and
  the one accepting every subtree move by the likelihood ratio alone (the thesis's
  prior-as-proposal shortcut, exact only for single leaves; digest §3.8, errata item 14):
  both are caught on only some seeds at 5 leaves, and only with the branch-point moves
  off (those moves, exact, undo most of the bias the twins put into the number of branch
  points), so they are slow measurements (the exact kernel test,
  test_kernel_exact.py, catches them by default).

Why the non-centred update: without it (the successive-conditional chain of NUTS on the
hyperparameters given the times and the slice sampler on the times given them) c and
the times trade off and the chain is sticky (root-time ESS 2-3 in 800 draws on some
seeds); the correct sampler was rejected on 3 of 30 seeds at 400 draws (measured on
seeds 200-229, the earlier priors below) and, from a cold compile cache,
on seeds 3 and 100 at 800. The rest of the false alarms came from the priors: with c
small or theta large the gaps u_v - u_parent (rate c H_{m-1}) run to 10-50, the times
to within e^-10 of 1, and the regenerated data (points within e^-5 of each other) pin
them there for hundreds of iterations whatever the sampler (the data-augmentation
chain of getting-it-right is slow where the data are informative), so the test priors
keep c H_{m-1} away from 0.
"""

import numpy as np
import pytest

from inference.gibbs.pydt import PYDTTreeStep
from inference.testing import getting_it_right
from pp_models import pydt
from pp_models.trees import DiffusionTree
from tests.inference.gibbs.pydt.gir_priors import GIR_PRIORS
from tests.inference.gibbs.pydt.twins import (
    BranchNoTimeDensityTreeStep,
    NoJacobianTreeStep,
    NoncentredNoJacobianTreeStep,
    NoProposalRatioTreeStep,
    ShortcutTreeStep,
)

N_SAMPLES = 800


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


def _run(step_cls, seed, n_samples=N_SAMPLES, binary=False, d=1, noncentred=True,
         branch_moves=None):
    """The factory's steps (test_factory_asks_for_these_steps), with ``step_cls`` for the
    tree; ``noncentred=False``: the centred sampler of before; ``branch_moves=0``: the
    branch-point moves off (``None``: the step's default, n per sweep)."""
    def build(model):
        hyper = ["c", "precision"] if binary else ["c", "theta", "alpha", "precision"]
        return [step_cls([model["tree"], *(model[h] for h in hyper)], model=model,
                         noncentred=hyper if noncentred else (),
                         branch_moves=branch_moves)]

    stats = dict(STATISTICS)
    if binary:
        stats.pop("theta")
        stats.pop("alpha")
    return getting_it_right(gir_model(d=d, binary=binary), data_vars=["X"], step=build,
                            statistics=stats, n_samples=n_samples, tune=200,
                            random_seed=seed)


def test_factory_asks_for_these_steps():
    """``fit``'s assignment on ``pydt.model`` gives the steps tested here: the tree step
    with 2n - 2 moves, the non-centred update of the tree's free hyperparameters and
    their centred slice update: one step for every free variable, no NUTS."""
    from pymc.step_methods.compound import flatten_steps

    from inference.fitting import assign_steps
    from pp_models.model_info import get_info

    X = np.random.default_rng(0).normal(size=(6, 2))
    for binary, names in ((False, ["c_log__", "theta_log__", "alpha_logodds__",
                                   "precision_log__"]),
                          (True, ["c_log__", "precision_log__"])):
        model = pydt.model(X, binary=binary)
        with model:
            steps = [leaf for s in assign_steps(model, get_info(model), [], None)
                     for leaf in flatten_steps(s)]
        tree = [s for s in steps if isinstance(s, PYDTTreeStep)]
        assert len(tree) == 1
        assert tree[0].moves == 10
        assert tree[0].branch_moves == 6
        assert tree[0]._noncentred_values == names
        assert tree[0]._noncentred_fast
        assert tree[0]._centred_values == names
        assert len(steps) == 1


FULL_SAMPLER_SEED = 3


@pytest.mark.slow
def test_full_sampler_passes():
    # Slow (32 of the default run's cold worker-s): each move
    # of this sampler has an exact invariance test with its planted bugs in the default
    # run (detach-reattach: test_kernel_exact.py; branch points:
    # tests/custom_ops/pydt/test_branch.py; the non-centred and variance updates and the
    # time slice sampler: test_noncentred.py), and test_factory_asks_for_these_steps checks that fit
    # composes exactly these steps; this whole-sampler run guards their composition.
    # seed 3 was one of the two cold-cache false alarms of the centred sampler (800
    # draws, earlier priors); the false-alarm rate is measured in the slow test below.
    # With the slice moves of the hyperparameters (no NUTS) this seed's chain drifts to
    # c ~ 0.3 and a root time ~ 1 by draw ~350 and stays there (root-time ESS 1.5), and
    # the test rejects (mean(X^2) ranks); seeds 4, 5 and 100-105 pass
    result = _run(PYDTTreeStep, seed=FULL_SAMPLER_SEED)
    print(result)
    result.assert_passed(0.01)


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
def test_branch_moves_without_time_density_are_caught():
    # the branch-point moves without the time proposal's density q_t: caught on 10 of
    # 10 seeds (100-109) at 800 draws, measured (the exact test of
    # tests/custom_ops/pydt/test_branch.py catches it and two other twins at once)
    assert _caught(BranchNoTimeDensityTreeStep, 100, N_SAMPLES)


@pytest.mark.slow
def test_ddt_sampler_passes_in_two_dimensions():
    result = _run(PYDTTreeStep, seed=4, binary=True, d=2)
    print(result)
    result.assert_passed(0.01)


# The twins of the time slice sampler (no t <-> log(1 - t) Jacobian) and of the
# non-centred update (no log |dt/dw|) are caught at once by the exact tests of
# test_noncentred.py (independent joint draws pushed through the move); here their
# detection rates in the getting-it-right chain are slow measurements.
TWIN_SAMPLES = 200


def _caught(step_cls, seed, n_samples):
    """A twin is caught when the test rejects, or when it drives the chain to a state
    where NUTS cannot start (a bad initial energy: the density is not finite)."""
    from pymc.exceptions import SamplingError

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        try:
            return not _run(step_cls, seed=seed, n_samples=n_samples).passed(0.01)
        except SamplingError:
            return True


FALSE_ALARM_SEEDS = range(100, 120)


@pytest.mark.slow
def test_false_alarm_and_power():
    correct = sum(not _run(PYDTTreeStep, seed=s).passed(0.01) for s in FALSE_ALARM_SEEDS)
    branch_twin = sum(_caught(BranchNoTimeDensityTreeStep, s, 800)
                      for s in FALSE_ALARM_SEEDS)
    nc_twin = sum(_caught(NoncentredNoJacobianTreeStep, s, TWIN_SAMPLES)
                  for s in FALSE_ALARM_SEEDS)
    time_twin = sum(_caught(NoJacobianTreeStep, s, 800) for s in FALSE_ALARM_SEEDS)
    print("rejections out of 20: correct", correct, "non-centred no-Jacobian twin",
          nc_twin, "time-slice no-Jacobian twin", time_twin, "branch no-q_t twin",
          branch_twin)
    # measured (seeds 100-119): correct 0 of 20 at 800 draws (0 of 30 on
    # seeds 100-129, N_SAMPLES comment); the non-centred twin 20 of 20 at 200 draws;
    # the time-slice twin 5 of 20 at 800 (1 of 10 at 400, seeds 100-109): the
    # non-centred update pulls the times back, so that twin is left to the exact test
    # of test_noncentred.py. With the branch-point moves on (default n per sweep,
    # seeds 100-119, 7.4 min in all): correct 0 of 20 at
    # 800 draws; the branch twin without the time proposal's density caught 20 of 20;
    # the non-centred twin 20 of 20; the time-slice twin 6 of 20
    assert correct <= 2
    assert branch_twin >= 18
    assert nc_twin >= 18
    assert time_twin >= 2


# The two MH-ratio twins bias the number of branch points (n_internal, and alpha, which
# governs it). The factory's step follows its detach-reattach moves with n branch-point
# moves per sweep (collapse / expand, exact), which change that number directly and pull
# it back towards the target: the whole sampler's stationary law with a twin inside is
# then too close to the truth for getting-it-right to see. Measured (seeds
# 100-109, Holm-adjusted 0.01), E[n_internal] under the chain minus under independent
# draws (whose mean is 2.3), averaged over the seeds:
#   branch moves off (branch_moves=0): shortcut +0.17 at 3000 draws (every seed positive,
#   rank z 2.5-5.1), rejected 5 of 10; no proposal ratio -0.49 at 400 (every seed
#   negative, rank z -1.3 to -5.3), rejected 5 of 10;
#   branch moves on (the default): shortcut +0.02 at 3000, rejected 1 of 10 (seed 109 at
#   c); no proposal ratio +0.04 at 400, 0 of 10 (every adjusted p 1), and -0.02 at 3000,
#   1 of 10 (seed 105 at theta): more draws do not bring the power back.
# When the test was written (b04d902, 3 of 10 each) the step had neither the branch-point
# moves nor the non-centred update and the priors were c ~ G(2, 2), theta ~ G(2, 2):
# in those conditions (the moves per sweep now fixed at 2n - 2) the no-proposal-ratio
# twin is rejected on 3 of 10 at 400 draws today (at c, theta, or every statistic), and
# with the non-centred update and today's priors on 5 of 10 (as below).
# So the twins run with the branch-point moves off, and the correct step runs in the
# same configuration at the same sizes on the same seeds as the false-alarm control.
WEAK_TWIN_SEEDS = range(100, 110)
SHORTCUT_SAMPLES = 3000
NO_PROPOSAL_RATIO_SAMPLES = 400


def _rejections_without_branch_moves(step_cls, n_samples):
    return sum(not _run(step_cls, seed=s, n_samples=n_samples, branch_moves=0).passed(0.01)
               for s in WEAK_TWIN_SEEDS)


@pytest.mark.slow
def test_weak_twins_detection_rate():
    """Measurement, not a guarantee: with the branch-point moves off, the MH-ratio bugs
    shift the 5-leaf joint's number of branch points on every seed, by enough to be
    rejected on some (comment above); the correct step in the same configuration is the
    control."""
    shortcut = _rejections_without_branch_moves(ShortcutTreeStep, SHORTCUT_SAMPLES)
    correct_long = _rejections_without_branch_moves(PYDTTreeStep, SHORTCUT_SAMPLES)
    no_q = _rejections_without_branch_moves(NoProposalRatioTreeStep,
                                            NO_PROPOSAL_RATIO_SAMPLES)
    correct_short = _rejections_without_branch_moves(PYDTTreeStep,
                                                     NO_PROPOSAL_RATIO_SAMPLES)
    print("branch moves off, rejections out of 10: shortcut", shortcut, "correct",
          correct_long, f"({SHORTCUT_SAMPLES} draws); no proposal ratio", no_q, "correct",
          correct_short, f"({NO_PROPOSAL_RATIO_SAMPLES} draws)")
    # measured (seeds 100-109): shortcut 5 of 10 (seeds 100, 101, 105, 106,
    # 108, all at n_internal; adjusted p 0.010-0.028 on 102, 104, 109), correct 0 of 10
    # (smallest adjusted p 0.2) at 3000 draws; no proposal ratio 5 of 10 (101, 102, 103,
    # 105 at n_internal and alpha, 109 at mean(X^2), where the correct step's smallest
    # adjusted p is 0.022), correct 0 of 10 (smallest 0.012) at 400 draws. Deterministic
    # given the seed (a rerun reproduced the p-values); the margins are for other
    # platforms. At 1600 draws the correct step without branch moves was rejected on 1 of
    # 10 of these seeds (N_SAMPLES comment), hence <= 1.
    assert shortcut >= 3
    assert no_q >= 3
    assert correct_long <= 1
    assert correct_short <= 1
