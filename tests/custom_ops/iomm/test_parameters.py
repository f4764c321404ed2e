"""Each parameter move of Eq. 7.13 leaves its exact one-dimensional conditional
invariant.

For one cluster parameter with everything else fixed, the conditional is a density on
the line (the prior times the product likelihood of the cluster's points, to the power
beta), tabulated here on a fine grid. Draws from it (inverse CDF) are passed through a
few moves; a Kolmogorov-Smirnov test compares the result with the grid CDF. The
planted-bug twins (no Hastings term for the Beta proposal; no Jacobian for the log-scale
walk) fail the same test.
"""

import numpy as np
import pytest
from scipy import special, stats

from custom_ops.iomm.parameters import (
    BernoulliColumn,
    BetaPrior,
    GaussianColumn,
    GaussianPrior,
    MoveSettings,
    bernoulli_coordinate_move,
    gaussian_mean_move,
    gaussian_precision_move,
)
from tests.custom_ops.iomm.twins import (
    no_hastings_coordinate_move,
    no_jacobian_precision_move,
)

N_DRAWS = 4000
MOVES = 3
ROWS = np.arange(5)
X_BIN = np.array([1.0, 1.0, 0.0, 1.0, 1.0])
ETA_REST = np.array([0.0, 1.2, -0.4, 0.0, 2.0])  # the other clusters' logit sums
X_REAL = np.array([0.3, -0.2, 1.1, 0.4, 0.9])
P_REST = np.array([0.0, 1.5, 0.0, 0.7, 2.0])  # other clusters' precisions
H_REST = np.array([0.0, -0.6, 0.0, 0.5, 1.0])  # and precision-weighted means


class GridDensity:
    """A density known up to a constant, tabulated on ``grid``: CDF and exact draws."""

    def __init__(self, grid, log_density):
        self.grid = grid
        w = np.exp(log_density - log_density.max())
        cdf = np.concatenate([[0.0], np.cumsum(0.5 * (w[1:] + w[:-1]) * np.diff(grid))])
        self.cdf_values = cdf / cdf[-1]

    def cdf(self, x):
        return np.interp(x, self.grid, self.cdf_values)

    def draw(self, rng, size):
        return np.interp(rng.random(size), self.cdf_values, self.grid)


def bernoulli_conditional(a, b, beta):
    u = np.linspace(-30, 30, 400_001)  # logit theta
    loglik = (X_BIN[:, None] * (ETA_REST[:, None] + u)
              - np.logaddexp(0, ETA_REST[:, None] + u)).sum(axis=0)
    theta = special.expit(u)
    # density of u = logit theta: Beta prior times the Jacobian theta (1 - theta)
    log_density = a * np.log(theta) + b * np.log1p(-theta) + beta * loglik
    return GridDensity(u, log_density)


def gaussian_loglik(mu, tau):
    P = P_REST[:, None] + tau
    mean = (H_REST[:, None] + tau * mu) / P
    return stats.norm.logpdf(X_REAL[:, None], mean, 1 / np.sqrt(P)).sum(axis=0)


def ks_after_moves(move, density, start, args, seed, to_param=lambda v: v,
                   from_param=lambda v: v):
    rng = np.random.default_rng(seed)
    values = density.draw(rng, N_DRAWS)
    out = np.empty(N_DRAWS)
    for n, v in enumerate(values):
        out[n] = from_param(start(rng, to_param(v), move, args))
    return stats.kstest(out, density.cdf).pvalue


BUF = np.empty(len(ROWS))


def _bernoulli_start(rng, theta, move, args):
    a, b, omega, beta = args
    eta = ETA_REST + np.log(theta / (1 - theta))
    p, q = special.expit(eta), special.expit(-eta)
    for _ in range(MOVES):
        theta = move(rng, BernoulliColumn(X_BIN, eta, p, q), ROWS, theta, BetaPrior(a, b),
                     MoveSettings(omega, beta))
    # the cached sums and sigmoids follow the accepted moves
    np.testing.assert_allclose(eta, ETA_REST + np.log(theta / (1 - theta)), rtol=1e-9,
                               atol=1e-9)
    np.testing.assert_allclose(p, special.expit(eta), rtol=1e-12)
    np.testing.assert_allclose(q, special.expit(-eta), rtol=1e-12)
    return theta


@pytest.mark.parametrize(("a", "b", "omega", "beta"),
                         [(0.6, 0.6, 3.0, 1.0), (2.0, 1.0, 20.0, 1.0), (0.6, 0.6, 3.0, 0.4)])
def test_bernoulli_move_is_invariant(a, b, omega, beta):
    density = bernoulli_conditional(a, b, beta)
    p = ks_after_moves(bernoulli_coordinate_move, density, _bernoulli_start,
                       (a, b, omega, beta), seed=1, to_param=special.expit,
                       from_param=special.logit)
    assert p > 1e-3, p


def test_no_hastings_twin_is_caught():
    density = bernoulli_conditional(0.6, 0.6, 1.0)
    p = ks_after_moves(no_hastings_coordinate_move, density, _bernoulli_start,
                       (0.6, 0.6, 3.0, 1.0), seed=1, to_param=special.expit,
                       from_param=special.logit)
    assert p < 1e-6, p


TAU = 1.7
MU = 0.4


def _gaussian_ll(P, H):
    return stats.norm.logpdf(X_REAL, H / P, 1 / np.sqrt(P))


def _mean_start(rng, mu, move, args):
    m0, s0, omega, beta = args
    P = P_REST + TAU
    H = H_REST + TAU * mu
    ll = _gaussian_ll(P, H)
    for _ in range(MOVES):
        mu = move(rng, GaussianColumn(X_REAL, P, H, ll), ROWS, mu, TAU,
                  GaussianPrior(m0, s0, np.nan, np.nan), MoveSettings(omega, beta), BUF)
    np.testing.assert_allclose(ll, _gaussian_ll(P, H), rtol=1e-10)
    return mu


@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_gaussian_mean_move_is_invariant(beta):
    m0, s0, omega = -0.5, 1.3, 2.0
    grid = np.linspace(-12, 12, 200_001)
    density = GridDensity(grid, stats.norm.logpdf(grid, m0, s0)
                          + beta * gaussian_loglik(grid, TAU))
    p = ks_after_moves(gaussian_mean_move, density, _mean_start, (m0, s0, omega, beta),
                       seed=2)
    assert p > 1e-3, p


def _precision_start(rng, tau, move, args):
    shape, rate, omega, beta = args
    P = P_REST + tau
    H = H_REST + tau * MU
    ll = _gaussian_ll(P, H)
    for _ in range(MOVES):
        tau = move(rng, GaussianColumn(X_REAL, P, H, ll), ROWS, MU, tau,
                   GaussianPrior(np.nan, np.nan, shape, rate), MoveSettings(omega, beta), BUF)
    np.testing.assert_allclose(ll, _gaussian_ll(P, H), rtol=1e-10)
    return tau


def precision_conditional(shape, rate, beta):
    v = np.linspace(-14, 6, 200_001)  # log tau
    tau = np.exp(v)
    # density of log tau: Gamma prior times the Jacobian tau
    return GridDensity(v, shape * v - rate * tau + beta * gaussian_loglik(MU, tau))


@pytest.mark.parametrize("beta", [1.0, 0.4])
def test_gaussian_precision_move_is_invariant(beta):
    density = precision_conditional(1.5, 0.8, beta)
    p = ks_after_moves(gaussian_precision_move, density, _precision_start,
                       (1.5, 0.8, 2.0, beta), seed=3, to_param=np.exp, from_param=np.log)
    assert p > 1e-3, p


def test_no_jacobian_twin_is_caught():
    density = precision_conditional(1.5, 0.8, 1.0)
    p = ks_after_moves(no_jacobian_precision_move, density, _precision_start,
                       (1.5, 0.8, 2.0, 1.0), seed=3, to_param=np.exp, from_param=np.log)
    assert p < 1e-6, p
