"""The membership step leaves the exact conditional p(Z | Theta, X) invariant.

With N = 3 points and C = 3 slots there are 2^9 = 512 membership matrices; their exact
conditional is enumerated (the slot IBP probability times the product likelihood, written
from Eqs 7.5 and 7.7 directly, to the power beta: tests/oracles/iomm.py).
States drawn from it are passed through one step; the step's output must have the same
distribution (a chi-square test over the 512 states, cells pooled to expected counts of
at least 5). The planted-bug twin (prior odds over the N - 1 other points) must fail the
same test. Tempered (beta = 1/2) and Gaussian variants run the same check. With its
split-merge proposals after the sweep the step moves ``Z`` and the parameters together,
so that variant is checked on the joint ``(Z, theta)`` instead.
"""

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit

from inference.gibbs.iomm import IOMMMemberships
from pp_models import iomm
from tests.inference.gibbs.iomm.twins import OtherPointsOddsMemberships
from tests.oracles.iomm import (
    bernoulli_joint_draws,
    bernoulli_loglik,
    exact_membership_conditional,
    gaussian_loglik,
    joint_cell,
    matrix_states,
    pooled_chisquare,
    slot_ibp_log_prior,
    state_index,
    two_sample_pvalue,
)

N, C, D = 3, 3, 2
ALPHA = 1.3
N_DRAWS = 8000

STATES = matrix_states(N, C)


def transported(step, point, probs, seed):
    """Counts of the states one step reaches from ``N_DRAWS`` exact draws."""
    rng = np.random.default_rng(seed)
    starts = rng.choice(len(STATES), size=N_DRAWS, p=probs)
    counts = np.zeros(len(STATES))
    for s in starts:
        point["Z"] = STATES[s]
        new, _ = step.step(point)
        counts[state_index(new["Z"])] += 1
    return counts


@pytest.fixture(scope="module")
def bernoulli_problem():
    rng = np.random.default_rng(7)
    X = np.array([[1, 0], [1, 1], [0, 1]])
    theta = rng.beta(0.6, 0.6, size=(C, D))
    m = iomm.model(X, alpha=ALPHA, capacity=C, theta_prior=(0.6, 0.6))
    point = m.initial_point()
    point["theta_logodds__"] = np.log(theta / (1 - theta))
    return m, point, lambda Z: bernoulli_loglik(Z, X, theta)


@pytest.fixture(scope="module")
def gaussian_problem():
    rng = np.random.default_rng(8)
    X = np.array([[-1.0, 0.5], [0.2, 0.1], [1.5, -0.4]])
    mu = rng.normal(size=(C, D))
    tau = rng.gamma(2.0, 1.0, size=(C, D))
    m = iomm.model(X, likelihood="gaussian", alpha=ALPHA, capacity=C)
    point = m.initial_point()
    point["mu"] = mu
    point["tau_log__"] = np.log(tau)
    background = iomm.get_spec(m).background
    return m, point, lambda Z: gaussian_loglik(Z, X, mu, tau, background)


def _run(problem, step_cls, beta=1.0, seed=0):
    m, point, loglik = problem
    step = step_cls.from_model(m, ["Z"], spec=iomm.get_spec(m))
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed + 100)
    probs = exact_membership_conditional(STATES, ALPHA, loglik, beta)
    counts = transported(step, dict(point), probs, seed)
    return pooled_chisquare(counts, probs)


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_bernoulli_memberships_leave_the_conditional_invariant(bernoulli_problem, beta):
    p = _run(bernoulli_problem, IOMMMemberships, beta=beta, seed=1)
    assert p > 1e-3, p


def test_memberships_with_split_merge_leave_the_joint_invariant():
    """The step with split-merge moves writes the parameters of the slots they fill and
    free: exact draws of the joint (Z, theta) at beta = 0.4 must stay exact draws
    (against fresh ones; false-failure rate 1e-4)."""
    X = np.array([[1, 0], [1, 1], [0, 1]])
    prior = (1.5, 1.2)
    m = iomm.model(X, alpha=ALPHA, capacity=C, theta_prior=prior, split_merge=3)
    step = IOMMMemberships.from_model(m, ["Z"], spec=iomm.get_spec(m), split_merge=3)
    step.set_inverse_temperature(0.4)
    step.rng = np.random.default_rng(11)
    rng = np.random.default_rng(5)
    logp = np.array([slot_ibp_log_prior(Z, ALPHA) for Z in STATES])
    probs = np.exp(logp - logp.max())
    n = 3000
    Zs, thetas = bernoulli_joint_draws(5 * n, STATES, probs / probs.sum(), X, prior, 0.4,
                                       rng)
    point = m.initial_point()
    median = stats.beta.median(*prior)
    moved, accepted = [], 0
    for Z, theta in zip(Zs[:n], thetas[:n], strict=True):
        point["Z"] = Z
        point["theta_logodds__"] = np.log(theta / (1 - theta))
        new, [st] = step.step(point)
        accepted += st["splits_accepted"] + st["merges_accepted"]
        moved.append(joint_cell(new["Z"], expit(new["theta_logodds__"][:, 0]), median))
    fresh = [joint_cell(Z, theta[:, 0], median) for Z, theta in zip(Zs[n:], thetas[n:],
                                                                   strict=True)]
    assert accepted > 500
    p = two_sample_pvalue(np.array(moved), np.array(fresh))
    assert p > 1e-4, p


def test_gaussian_memberships_leave_the_conditional_invariant(gaussian_problem):
    p = _run(gaussian_problem, IOMMMemberships, seed=2)
    assert p > 1e-3, p


def test_the_other_points_odds_twin_is_caught(bernoulli_problem):
    p = _run(bernoulli_problem, OtherPointsOddsMemberships, seed=1)
    assert p < 1e-6, p
