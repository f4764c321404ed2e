"""The IOMM's split-merge move leaves the exact conditional p(Z | Theta, X)^beta invariant.

With N = 3 points and C = 3 slots every one of the 512 membership matrices is enumerated
(the slot IBP prior times the product likelihood to the power beta, written from Eqs 7.5
and 7.7 directly: tests/inference/gibbs/iomm/oracle.py). Exact draws are passed through
a few split-merge proposals (:func:`custom_ops.iomm.split_merge.split_merge_moves`); the
result must have the same distribution (a chi-square test, cells pooled to expected
counts of at least 5; false-failure rate 1e-3 per test). Planted-bug twins of the
kernel must fail the same test (``-m slow``: each is a second compile of the kernel): the
acceptance ratio without the proposal probabilities (the reverse merge's and the forward
split's), and without the ``beta`` of the likelihood (caught at beta < 1).
"""

import numpy as np
import pytest

from custom_ops.iomm.experts import BERNOULLI, GAUSSIAN
from custom_ops.iomm.split_merge import SPLIT_MERGE_STATS, split_merge_moves
from custom_ops.jit import njit_exact
from tests.helpers.twin_kernels import twin_kernel
from tests.inference.gibbs.iomm.oracle import (
    bernoulli_loglik,
    exact_membership_conditional,
    gaussian_loglik,
    matrix_states,
    pooled_chisquare,
    state_index,
)
from tests.inference.gibbs.iomm.twins import without_proposal_terms

N, C, D = 3, 3, 2
ALPHA = 1.3
N_DRAWS = 6000
MOVES = 3
STATES = matrix_states(N, C)


@njit_exact
def untempered_likelihood(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    return log_prior_ratio + log_lik_ratio + log_q_reverse - log_q_forward


def bernoulli_problem():
    rng = np.random.default_rng(7)
    X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    theta = rng.beta(0.6, 0.6, size=(C, D))
    E = np.ascontiguousarray(np.log(theta / (1 - theta))[:, :, None])
    return BERNOULLI, X, E, np.zeros((D, 2)), lambda Z: bernoulli_loglik(Z, X, theta)


def gaussian_problem():
    rng = np.random.default_rng(8)
    X = np.array([[-1.0, 0.5], [0.2, 0.1], [1.5, -0.4]])
    mu = rng.normal(size=(C, D))
    tau = rng.gamma(2.0, 1.0, size=(C, D))
    E = np.ascontiguousarray(np.stack([tau, tau * mu], axis=-1))
    background = np.array([[0.0, 3.0], [0.0, 2.0]])
    return GAUSSIAN, X, E, background, lambda Z: gaussian_loglik(Z, X, mu, tau, background)


def transport(kernel, problem, beta, seed):
    code, X, E, background, loglik = problem
    probs = exact_membership_conditional(STATES, ALPHA, loglik, beta)
    rng = np.random.default_rng(seed)
    moves_rng = np.random.default_rng(seed + 100)
    counts = np.zeros(len(STATES))
    stats = np.zeros(len(SPLIT_MERGE_STATS), dtype=np.int64)
    for s in rng.choice(len(STATES), size=N_DRAWS, p=probs):
        Z = STATES[s].copy()
        kernel(moves_rng, code, X, Z, E, background, ALPHA, beta, MOVES, stats)
        counts[state_index(Z)] += 1
    return pooled_chisquare(counts, probs), dict(zip(SPLIT_MERGE_STATS, stats, strict=True))


@pytest.mark.parametrize(
    ("problem", "beta"),
    [(bernoulli_problem, 1.0), (bernoulli_problem, 0.3), (gaussian_problem, 1.0)],
)
def test_split_merge_leaves_the_conditional_invariant(problem, beta):
    p, stats = transport(split_merge_moves, problem(), beta, seed=1)
    print(stats)
    assert stats["splits_accepted"] > 0 and stats["merges_accepted"] > 0
    assert p > 1e-3, p


def test_split_merge_at_beta_zero_samples_the_prior():
    p, _ = transport(split_merge_moves, bernoulli_problem(), 0.0, seed=3)
    assert p > 1e-3, p


@pytest.mark.slow  # a second compile of the kernel
def test_twin_without_the_proposal_probabilities_is_caught():
    # at beta = 1 the likelihood dominates these proposals' terms on this tiny problem
    # (the twin's p-values ~1e-3); at beta = 0.3 they decide (~1e-10)
    twin = twin_kernel(split_merge_moves, split_merge_log_ratio=without_proposal_terms)
    p, _ = transport(twin, bernoulli_problem(), 0.3, seed=1)
    assert p < 1e-6, p


@pytest.mark.slow
def test_twin_that_ignores_beta_is_caught():
    twin = twin_kernel(split_merge_moves, split_merge_log_ratio=untempered_likelihood)
    p, _ = transport(twin, bernoulli_problem(), 0.3, seed=1)
    assert p < 1e-6, p


def test_factory_checks_split_merge():
    from pp_models import iomm

    with pytest.raises(ValueError, match="split_merge"):
        iomm.model(np.array([[1, 0], [0, 1]]), split_merge=-1)
