"""The membership step leaves the exact conditional p(Z | Theta, X) invariant.

With N = 3 points and C = 3 slots there are 2^9 = 512 membership matrices; their exact
conditional is enumerated (the slot IBP probability, ``custom_ops.ibp_fa.ibp``, times
the product likelihood written from Eqs 7.5 and 7.7 directly, to the power beta).
States drawn from it are passed through one step; the step's output must have the same
distribution (a chi-square test over the 512 states, cells pooled to expected counts of
at least 5). The planted-bug twin (prior odds over the N - 1 other points) must fail the
same test. Tempered (beta = 1/2) and Gaussian variants run the same check.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from custom_ops.ibp_fa.ibp import ibp_log_matrix
from inference.gibbs.iomm import IOMMMemberships
from pp_models import iomm
from tests.inference.gibbs.iomm.twins import OtherPointsOddsMemberships

N, C, D = 3, 3, 2
ALPHA = 1.3
N_DRAWS = 8000

STATES = np.array([np.array(bits, dtype=np.int8).reshape(N, C)
                   for bits in itertools.product([0, 1], repeat=N * C)])
WEIGHTS = 1 << np.arange(N * C)


def state_index(Z):
    return int(np.asarray(Z, dtype=np.int64).reshape(-1) @ WEIGHTS[::-1])


def bernoulli_loglik(Z, X, theta):
    total = 0.0
    for i in range(N):
        z = Z[i][:, None]
        num = np.prod(theta ** z, axis=0)
        p = num / (np.prod((1 - theta) ** z, axis=0) + num)  # Eq. 7.7
        total += np.sum(stats.bernoulli.logpmf(X[i], p))
    return total


def gaussian_loglik(Z, X, mu, tau, background):
    total = 0.0
    for i in range(N):
        members = np.flatnonzero(Z[i])
        if members.size == 0:
            total += np.sum(stats.norm.logpdf(X[i], background[:, 0], background[:, 1]))
            continue
        S = 1.0 / tau[members].sum(axis=0)  # Eq. 7.5, diagonal: S^-1 = sum Sigma_k^-1
        mean = S * (tau[members] * mu[members]).sum(axis=0)
        total += np.sum(stats.norm.logpdf(X[i], mean, np.sqrt(S)))
    return total


def exact_conditional(loglik, beta):
    logp = np.array([ibp_log_matrix(Z, ALPHA) + beta * loglik(Z) for Z in STATES])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def pooled_chisquare(counts, probs):
    """Chi-square p-value of ``counts`` against ``probs``, the rarest states pooled into
    cells of expected count >= 5."""
    order = np.argsort(probs)
    expected = probs[order] * counts.sum()
    observed = counts[order]
    cells_obs, cells_exp, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            cells_obs.append(acc_o)
            cells_exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        cells_obs[-1] += acc_o
        cells_exp[-1] += acc_e
    return stats.chisquare(cells_obs, cells_exp).pvalue


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
    step.beta = beta
    step.rng = np.random.default_rng(seed + 100)
    probs = exact_conditional(loglik, beta)
    counts = transported(step, dict(point), probs, seed)
    return pooled_chisquare(counts, probs)


@pytest.mark.parametrize("beta", [1.0, 0.5])
def test_bernoulli_memberships_leave_the_conditional_invariant(bernoulli_problem, beta):
    p = _run(bernoulli_problem, IOMMMemberships, beta=beta, seed=1)
    assert p > 1e-3, p


def test_gaussian_memberships_leave_the_conditional_invariant(gaussian_problem):
    p = _run(gaussian_problem, IOMMMemberships, seed=2)
    assert p > 1e-3, p


def test_the_other_points_odds_twin_is_caught(bernoulli_problem):
    p = _run(bernoulli_problem, OtherPointsOddsMemberships, seed=1)
    assert p < 1e-6, p
