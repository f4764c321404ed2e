"""The IOMM's split-merge move leaves the joint p(Z, Theta | X)^beta invariant.

The move changes ``Z`` and one slot's expert parameters together, so its stationary
distribution is checked on the joint of a tiny problem (N = 3 points, C = 3 slots, D = 2),
by passing exact draws of the joint through a few moves
(:func:`custom_ops.iomm.split_merge.split_merge_moves`) and testing the result against
the joint on cells of (the membership matrix, how many of its used clusters have a first
parameter above its prior median); every test's false-failure rate is 1e-4 (a chi-square
p-value below 1e-4 fails):

- Bernoulli and Gaussian experts at beta = 1: draws of the joint prior of ``(Z, Theta,
  X)``; given its ``X`` a move leaves ``(Z, Theta)`` a draw from the prior, whose cell
  probabilities are exact (the slot IBP prior times a binomial);
- Bernoulli experts at beta = 0.4 (a tempered run's power posterior ``P(Z) p(theta)
  L(Z, theta)^beta``, which no data-generating process has): exact draws by rejection
  (``Z`` and ``theta`` from the prior, kept with probability ``L^beta <= 1``; the slot
  IBP prior and Eq. 7.7 written out in tests/oracles/iomm.py), the moved
  draws against an independent set of exact draws (a two-sample chi-square test).

Planted-bug twins of the kernel must fail the same tests: the acceptance ratio without
the reverse proposal's probability (a split's choice of the merge, a merge's replayed
split and the density of the expert it removes), and without the new expert's proposal
density both ways, and ignoring beta. Each is a second compile of the kernel (about 4
CPU-s cold): the first runs by default, the other two in ``-m slow``.
"""

import numpy as np
import pytest
from scipy import stats

from custom_ops.iomm.experts import BERNOULLI, GAUSSIAN
from custom_ops.iomm.split_merge import SPLIT_MERGE_STATS, Experts, split_merge_moves
from custom_ops.jit import njit_exact
from tests.custom_ops.iomm.twins import without_reverse_proposal
from tests.helpers.twin_kernels import twin_kernel
from tests.oracles.iomm import (
    bernoulli_joint_draws,
    joint_cell,
    matrix_states,
    slot_ibp_log_prior,
    two_sample_pvalue,
)

N, C, D = 3, 3, 2
ALPHA = 1.3
N_DRAWS = 6000
MOVES = 10
#: exact reference draws per moved draw (Bernoulli)
REFERENCE = 4
STATES = matrix_states(N, C)
LEVEL = 1e-4
BETA_PRIOR = (1.5, 1.2)
GAUSSIAN_PRIOR = np.column_stack(
    [np.full(D, 0.3), np.full(D, 1.2), np.full(D, 2.0), np.full(D, 1.5)]
)  # mu ~ N(mean, sd), tau ~ Gamma
BACKGROUND = np.array([[0.0, 3.0], [0.5, 2.0]])
BERNOULLI_X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])


@njit_exact
def untempered_likelihood(log_prior_ratio, log_lik_ratio, beta, log_q_reverse, log_q_forward):
    return log_prior_ratio + log_lik_ratio + log_q_reverse - log_q_forward


@njit_exact
def without_expert_density(code, prior, fit, params_k):
    """The new expert's proposal density left out (a flat one)."""
    return 0.0


def _ibp_probs():
    logp = np.array([slot_ibp_log_prior(Z, ALPHA) for Z in STATES])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def _moved(kernel, code, X, Z, params, prior, background, beta, rng, counts):
    params = np.ascontiguousarray(params, dtype=np.float64)
    if code == BERNOULLI:
        E = np.log(params / (1.0 - params))
    else:
        E = np.stack([params[..., 1], params[..., 1] * params[..., 0]], axis=-1)
    Z = Z.copy()
    experts = Experts(
        code, np.ascontiguousarray(X), np.ascontiguousarray(E), params, prior, background
    )
    kernel(rng, experts, Z, ALPHA, beta, MOVES, counts)
    return Z, params


def bernoulli_transport(kernel, beta, seed, n_draws=N_DRAWS):
    """p-value of ``n_draws`` moved exact draws against ``REFERENCE`` times as many fresh
    ones, and the move's counts."""
    rng = np.random.default_rng(seed)
    prior = np.column_stack(
        [np.full(D, BETA_PRIOR[0]), np.full(D, BETA_PRIOR[1]), np.zeros((D, 2))]
    )
    Zs, thetas = bernoulli_joint_draws(
        (1 + REFERENCE) * n_draws, STATES, _ibp_probs(), BERNOULLI_X, BETA_PRIOR, beta, rng
    )
    median = stats.beta.median(*BETA_PRIOR)
    moves_rng = np.random.default_rng(seed + 100)
    counts = np.zeros(len(SPLIT_MERGE_STATS), dtype=np.int64)
    moved = np.empty(n_draws, dtype=np.int64)
    for s in range(n_draws):
        Z, params = _moved(
            kernel,
            BERNOULLI,
            BERNOULLI_X,
            Zs[s],
            thetas[s][:, :, None],
            prior,
            np.zeros((D, 2)),
            beta,
            moves_rng,
            counts,
        )
        moved[s] = joint_cell(Z, params[:, 0, 0], median)
    fresh = np.array(
        [
            joint_cell(Z, theta[:, 0], median)
            for Z, theta in zip(Zs[n_draws:], thetas[n_draws:], strict=True)
        ]
    )
    return two_sample_pvalue(moved, fresh), dict(zip(SPLIT_MERGE_STATS, counts, strict=True))


def prior_data_transport(kernel, code, seed):
    """p-value of moved draws of the joint prior of ``(Z, Theta, X)`` (beta = 1) against
    the exact prior cell probabilities, and the move's counts."""
    rng = np.random.default_rng(seed)
    probs = _ibp_probs()
    moves_rng = np.random.default_rng(seed + 100)
    counts = np.zeros(len(SPLIT_MERGE_STATS), dtype=np.int64)
    observed = np.zeros((C + 1) * (N * C + 1) * (C + 1))
    if code == BERNOULLI:
        prior = np.column_stack(
            [np.full(D, BETA_PRIOR[0]), np.full(D, BETA_PRIOR[1]), np.zeros((D, 2))]
        )
        background, median = np.zeros((D, 2)), stats.beta.median(*BETA_PRIOR)
    else:
        prior, background, median = GAUSSIAN_PRIOR, BACKGROUND, GAUSSIAN_PRIOR[0, 0]
    Zs = STATES[rng.choice(len(STATES), size=N_DRAWS, p=probs)]
    Zf = Zs.astype(np.float64)
    if code == BERNOULLI:
        params = rng.beta(*BETA_PRIOR, size=(N_DRAWS, C, D, 1))
        eta = Zf @ np.log(params[..., 0] / (1 - params[..., 0]))
        Xs = (rng.random((N_DRAWS, N, D)) < 1 / (1 + np.exp(-eta))).astype(np.float64)
    else:
        mean, sd, shape, rate = GAUSSIAN_PRIOR.T
        mu = rng.normal(mean, sd, size=(N_DRAWS, C, D))
        tau = rng.gamma(shape, 1.0 / rate, size=(N_DRAWS, C, D))
        params = np.stack([mu, tau], axis=-1)
        # Eq. 7.5: summed precisions, precision-weighted mean; no cluster: background
        precision = Zf @ tau
        empty = precision == 0
        safe = np.where(empty, 1.0, precision)
        centre = np.where(empty, BACKGROUND[:, 0], (Zf @ (tau * mu)) / safe)
        scale = np.where(empty, BACKGROUND[:, 1], 1.0 / np.sqrt(safe))
        Xs = centre + scale * rng.standard_normal((N_DRAWS, N, D))
    for Z, X, theta in zip(Zs, Xs, params, strict=True):
        Z2, moved = _moved(kernel, code, X, Z, theta, prior, background, 1.0, moves_rng, counts)
        observed[joint_cell(Z2, moved[:, 0, 0], median)] += 1
    expected = np.zeros_like(observed)
    for s, Z in enumerate(STATES):
        K = int(Z.any(axis=0).sum())
        first = joint_cell(Z, np.zeros(C), 1.0)  # the cell with no parameter above
        expected[first : first + K + 1] += probs[s] * stats.binom.pmf(np.arange(K + 1), K, 0.5)
    return _pooled_pvalue(observed, expected * N_DRAWS), dict(
        zip(SPLIT_MERGE_STATS, counts, strict=True)
    )


def _pooled_pvalue(observed, expected):
    order = np.argsort(expected)
    cells_o, cells_e, acc_o, acc_e = [], [], 0.0, 0.0
    for t in order:
        acc_o += observed[t]
        acc_e += expected[t]
        if acc_e >= 5:
            cells_o.append(acc_o)
            cells_e.append(acc_e)
            acc_o = acc_e = 0.0
    cells_o[-1] += acc_o
    cells_e[-1] += acc_e
    return float(stats.chisquare(cells_o, cells_e).pvalue)


def test_split_merge_leaves_the_bernoulli_power_posterior_invariant():
    p, counts = bernoulli_transport(split_merge_moves, 0.4, seed=1)
    print(counts)
    assert counts["splits_accepted"] > 200 and counts["merges_accepted"] > 200
    assert p > LEVEL, p


@pytest.mark.parametrize("code", [BERNOULLI, GAUSSIAN])
def test_split_merge_leaves_the_joint_invariant(code):
    p, counts = prior_data_transport(split_merge_moves, code, seed=2)
    print(counts)
    assert counts["splits_accepted"] > 200 and counts["merges_accepted"] > 200
    assert p > LEVEL, p


def test_twin_without_the_reverse_proposal_is_caught():
    twin = twin_kernel(split_merge_moves, split_merge_log_ratio=without_reverse_proposal)
    p, _ = prior_data_transport(twin, GAUSSIAN, seed=2)
    assert p < LEVEL, p


@pytest.mark.slow  # a second compile of the kernel
def test_twin_without_the_expert_density_is_caught():
    twin = twin_kernel(split_merge_moves, expert_log_density=without_expert_density)
    p, _ = prior_data_transport(twin, BERNOULLI, seed=2)
    assert p < LEVEL, p


@pytest.mark.slow
def test_twin_that_ignores_beta_is_caught():
    twin = twin_kernel(split_merge_moves, split_merge_log_ratio=untempered_likelihood)
    p, _ = bernoulli_transport(twin, 0.4, seed=1, n_draws=4 * N_DRAWS)
    assert p < LEVEL, p


def test_factory_checks_split_merge():
    from pp_models import iomm

    with pytest.raises(ValueError, match="split_merge"):
        iomm.model(np.array([[1, 0], [0, 1]]), split_merge=-1)
