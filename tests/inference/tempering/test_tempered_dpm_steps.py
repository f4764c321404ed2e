"""Each tempered DP-mixture step leaves the enumerated power posterior invariant.

For n = 5 items every partition can be listed (Bell(5) = 52), so the power posterior
``p_beta(z) ∝ p(z) p(X | z)^beta`` is known exactly (``oracles``: SciPy only). A chain
of the step at beta in {0, 0.3, 1} must match it: the total-variation distance of its
partition frequencies is compared with its expectation under the chain's own batch-means
Monte Carlo errors (``tests.helpers.stationary.tv_against_mcse``). A twin that ignores
beta is caught by the same test at beta = 0.3 (at beta = 1 it is the correct step).
"""

import math

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

from inference.gibbs import CRPAuxiliaryGibbs, CRPCollapsedGibbs, EscobarWestAlpha
from inference.gibbs.dpm.niw_hyper import NIWHyperGibbs
from pp_models.distributions import CRP, CollapsedGaussian
from tests.helpers.stationary import state_codes, tv_against_mcse
from tests.inference.tempering.twins import (
    AuxiliaryIgnoringBeta,
    CollapsedIgnoringBeta,
    NIWIgnoringBeta,
    SplitMergeUntemperedAcceptance,
)
from tests.oracles import mixtures as oracles

N = 5
RNG = np.random.default_rng(11)
X5 = np.concatenate([RNG.normal(-1.0, 0.5, (2, 2)), RNG.normal(1.2, 0.5, (3, 2))])
NIW = [np.zeros(2), 0.5, 4.0, np.eye(2)]
ALPHA = 1.0
PARTS = oracles.partitions(N)
BATCHES = 40


def partition_tv(states, probs):
    """:func:`tv_against_mcse` of a chain's partitions against ``probs`` over ``PARTS``."""
    return tv_against_mcse(state_codes(states, PARTS), probs)


def run(steps, model, n_steps, seed, record=("z",)):
    rngs = np.random.default_rng(seed).spawn(len(steps))
    for s, r in zip(steps, rngs, strict=True):
        s.setup_chain(r, 0, n_steps)
    point = model.initial_point()
    out = {name: [] for name in record}
    for _ in range(n_steps):
        for s in steps:
            point, _ = s.step(point)
        for name in record:
            out[name].append(np.copy(point[name]))
    return {name: np.array(v) for name, v in out.items()}


# ---------------------------------------------------------------- collapsed (Algorithm 3)
@pytest.fixture(scope="module")
def collapsed():
    with pm.Model() as m:
        z = CRP("z", alpha=ALPHA, n=N)
        CollapsedGaussian("X", z, *NIW, observed=X5)
    _parts, prior, lik = oracles.dp_table(X5, oracles.block_function("gaussian", NIW), ALPHA)
    return m, prior, lik


GIBBS = dict(split_merge_every=0)
SPLIT_MERGE = dict(sweeps=0, split_merge_every=1, split_merge_proposals=2)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
@pytest.mark.parametrize(("label", "options"), [("gibbs", GIBBS), ("split-merge", SPLIT_MERGE)])
def test_collapsed_step_matches_power_posterior(collapsed, label, options, beta):
    m, prior, lik = collapsed
    with m:
        step = CRPCollapsedGibbs([m["z"]], greedy_start=False, **options)
    step.set_inverse_temperature(beta)
    states = run([step], m, 12_000, seed=4)["z"]
    tv, expected = partition_tv(states, oracles.power_posterior(prior, lik, beta))
    print(f"{label} beta={beta}: TV {tv:.4f}, null expectation {expected:.4f}")
    assert tv < 1.6 * expected, (tv, expected)


@pytest.mark.parametrize(("twin", "options"), [(CollapsedIgnoringBeta, GIBBS),
                                               (SplitMergeUntemperedAcceptance, SPLIT_MERGE)])
def test_collapsed_twins_are_caught(collapsed, twin, options):
    m, prior, lik = collapsed
    with m:
        step = twin([m["z"]], greedy_start=False, **options)
    step.set_inverse_temperature(0.3)
    states = run([step], m, 12_000, seed=4)["z"]
    tv, expected = partition_tv(states, oracles.power_posterior(prior, lik, 0.3))
    print(f"twin: TV {tv:.4f}, null expectation {expected:.4f}")
    assert tv > 3 * expected, (tv, expected)


def test_collapsed_with_escobar_west_matches_power_posterior():
    """alpha ~ Gamma(2, 1) integrated out of the partition's prior numerically."""
    with pm.Model() as m:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        z = CRP("z", alpha=alpha, n=N)
        CollapsedGaussian("X", z, *NIW, observed=X5)
    block = oracles.block_function("gaussian", NIW)
    grid = stats.gamma(2.0).ppf((np.arange(4000) + 0.5) / 4000)  # prior quantiles
    prior = np.array([special.logsumexp([oracles.log_eppf(z, a) for a in grid[::10]])
                      for z in PARTS])
    lik = np.array([oracles.log_marginal(z, X5, block) for z in PARTS])
    with m:
        steps = [CRPCollapsedGibbs([m["z"]], greedy_start=False), EscobarWestAlpha([m["alpha"]])]
    for s in steps:
        s.set_inverse_temperature(0.3)
    states = run(steps, m, 12_000, seed=6)["z"]
    tv, expected = partition_tv(states, oracles.power_posterior(prior, lik, 0.3))
    assert tv < 1.6 * expected, (tv, expected)


# ---------------------------------------------------------------- Algorithm 8
A_RATE, B_RATE = 2.0, 0.5
COUNTS = np.array([[0, 1], [6, 4], [1, 0], [5, 7], [8, 5]], dtype=float)


def tempered_poisson_gamma_block(X, beta):
    """log ∫ Gamma(r | A, B) prod_i Poisson(x_i | r)^beta dr, per column."""
    s, nk = X.sum(0), X.shape[0]
    return float(np.sum(A_RATE * np.log(B_RATE) - special.gammaln(A_RATE)
                        + special.gammaln(A_RATE + beta * s)
                        - (A_RATE + beta * s) * np.log(B_RATE + beta * nk)
                        - beta * special.gammaln(X + 1).sum(0)))


class TemperedGammaRates:
    """Test helper: the exact conditional of every rate slot at beta (Gamma(A + beta s,
    B + beta n_k) for occupied slots, the Gamma prior for the others)."""

    def __init__(self):
        self.beta = 1.0

    def setup_chain(self, rng, tune, draws):
        self.rng = rng

    def step(self, point):
        z = point["z"]
        rate = self.rng.gamma(A_RATE, 1 / B_RATE, size=(N, 2))
        for k in np.unique(z):
            Xk = COUNTS[z == k]
            rate[k] = self.rng.gamma(A_RATE + self.beta * Xk.sum(0),
                                     1 / (B_RATE + self.beta * Xk.shape[0]))
        return dict(point, rate_log__=np.log(rate)), []


@pytest.fixture(scope="module")
def auxiliary_model():
    with pm.Model() as m:
        z = CRP("z", alpha=1.2, n=N)
        rate = pm.Gamma("rate", alpha=A_RATE, beta=B_RATE, shape=(N, 2))
        pm.Poisson("X", mu=rate[z], observed=COUNTS)
    return m


def _auxiliary_tv(m, cls, beta, n_steps=5000):
    with m:
        step = cls([m["z"]], component="poisson", params=("rate",), data="X", m=2)
    step.set_inverse_temperature(beta)
    rates = TemperedGammaRates()
    rates.beta = beta
    states = run([step, rates], m, n_steps, seed=3)["z"]
    prior = np.array([oracles.log_eppf(z, 1.2) for z in PARTS])
    lik = np.array([sum(tempered_poisson_gamma_block(COUNTS[z == k], beta)
                        for k in np.unique(z)) for z in PARTS])
    # the power posterior of this model tempers the complete-data likelihood: its
    # partition marginal is p(z) prod_k ∫ H prod F^beta (lik already holds the beta)
    return partition_tv(states, oracles.power_posterior(prior, lik, 1.0))


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_algorithm8_matches_power_posterior(auxiliary_model, beta):
    tv, expected = _auxiliary_tv(auxiliary_model, CRPAuxiliaryGibbs, beta)
    print(f"algorithm 8 beta={beta}: TV {tv:.4f}, null expectation {expected:.4f}")
    assert tv < 1.6 * expected, (tv, expected)


def test_algorithm8_twin_is_caught(auxiliary_model):
    tv, expected = _auxiliary_tv(auxiliary_model, AuxiliaryIgnoringBeta, 0.3)
    print(f"twin: TV {tv:.4f}, null expectation {expected:.4f}")
    assert tv > 3 * expected, (tv, expected)


# ---------------------------------------------------------------- learned NIW base measure
X1 = np.array([[2.1], [2.9], [3.4], [1.2], [4.0]])
M0_MEAN, M0_VAR, K_SHAPE, K_RATE, NU0, S0 = 0.0, 1.0, 3.0, 2.0, 3.0, 1.0


def _niw_1d_log_marginal(X, m0, kappa0):
    """d = 1 NIW = Normal-Inverse-Gamma(a0 = nu0/2, b0 = S0/2): the closed form of the
    Normal-Gamma marginal, vectorised over (m0, kappa0) grids."""
    n, xbar = X.shape[0], X.mean()
    ss = ((X - xbar) ** 2).sum()
    a0, b0 = NU0 / 2, S0 / 2
    kn, an = kappa0 + n, a0 + n / 2
    bn = b0 + ss / 2 + kappa0 * n * (xbar - m0) ** 2 / (2 * kn)
    return (special.gammaln(an) - special.gammaln(a0) + a0 * np.log(b0) - an * np.log(bn)
            + 0.5 * np.log(kappa0 / kn) - n / 2 * np.log(2 * np.pi))


@pytest.fixture(scope="module")
def niw_exact():
    """Per beta: (p_beta(z) over PARTS, E_beta[m0], E_beta[kappa0]) by a quantile grid
    over the (independent) priors of m0 and kappa0."""
    G = 300
    u = (np.arange(G) + 0.5) / G
    m0 = stats.norm(M0_MEAN, math.sqrt(M0_VAR)).ppf(u)[:, None]
    k0 = stats.gamma(K_SHAPE, scale=1 / K_RATE).ppf(u)[None, :]
    lik = np.array([sum(_niw_1d_log_marginal(X1[z == k], m0, k0) for k in np.unique(z))
                    for z in PARTS])  # (P, G, G)
    prior = np.array([oracles.log_eppf(z, ALPHA) for z in PARTS])
    out = {}
    for beta in (0.3, 1.0):
        lw = prior[:, None, None] + beta * lik
        w = np.exp(lw - lw.max())
        total = w.sum()
        out[beta] = (w.sum((1, 2)) / total, float((w * m0).sum() / total),
                     float((w * k0).sum() / total))
    return out


def _niw_run(cls, beta, n_steps=5000):
    with pm.Model() as m:
        z = CRP("z", alpha=ALPHA, n=N)
        kappa0 = pm.Gamma("kappa0", alpha=K_SHAPE, beta=K_RATE)
        m0 = pm.MvNormal("m0", mu=np.full(1, M0_MEAN), cov=np.full((1, 1), M0_VAR))
        CollapsedGaussian("X", z, m0=m0, kappa0=kappa0, nu0=NU0, S0=np.full((1, 1), S0),
                          observed=X1)
    with m:
        steps = [CRPCollapsedGibbs([m["z"]], greedy_start=False),
                 cls([m["m0"], m["kappa0"]])]
    for s in steps:
        s.set_inverse_temperature(beta)
    out = run(steps, m, n_steps, seed=8, record=("z", "m0", "kappa0_log__"))
    return out


def _mean_and_mcse(x):
    b = x[: x.size // BATCHES * BATCHES].reshape(BATCHES, -1).mean(1)
    return x.mean(), b.std(ddof=1) / math.sqrt(BATCHES)


@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_niw_hyper_step_matches_power_posterior(niw_exact, beta):
    probs, m0_mean, k0_mean = niw_exact[beta]
    out = _niw_run(NIWHyperGibbs, beta)
    tv, expected = partition_tv(out["z"], probs)
    assert tv < 1.6 * expected, (tv, expected)
    for draws, exact in ((out["m0"][:, 0], m0_mean), (np.exp(out["kappa0_log__"]), k0_mean)):
        mean, mcse = _mean_and_mcse(draws)
        assert abs(mean - exact) < 4 * mcse, (mean, exact, mcse)


def test_niw_twin_is_caught(niw_exact):
    _probs, m0_mean, _k0 = niw_exact[0.3]
    out = _niw_run(NIWIgnoringBeta, 0.3)
    mean, mcse = _mean_and_mcse(out["m0"][:, 0])
    print(f"niw twin: {mean:.3f} vs {m0_mean:.3f}, mcse {mcse:.4f}")
    assert abs(mean - m0_mean) > 6 * mcse, (mean, m0_mean, mcse)
