"""The tempered NSFA step samples the power posterior p(theta) P(Y | theta)^beta.

At D = 2 rows and N = 1 column the power posterior's class probabilities of ``Z`` and
the expectations of ``G X``, ``tau`` and ``alpha`` are known exactly (``tests/oracles/ibp_fa.py``:
``Z``'s classes enumerated, loadings and factors integrated in closed form, ``tau`` and
``alpha`` by quadrature). Chains of the step at beta in {0, 0.3, 1} must match them
within their Monte Carlo error (``tests.helpers.stationary``); the twin that ignores
beta must not. Configurations: diagonal noise with a Gamma prior on ``alpha`` (the
step's hint), isotropic noise with ``alpha`` fixed, and the kernel's per-column ``X``
path (the one missing data take) driven directly. The loading precision is fixed (the
oracle needs it; its update involves no likelihood term, so beta does not enter it).

The step with ``sweeps > 1`` draws the auxiliary values (unused slots' ``X`` rows,
loadings where ``Z = 0``) after its last sweep only (:func:`custom_ops.ibp_fa.nsfa.nsfa_sweeps`):
its recorded states must match the same power posterior, and the auxiliary values their
prior (mean square 1 at ``lambda = 1``), which the twin that never draws them fails.
"""

import numpy as np
import pytest

from custom_ops.ibp_fa.nsfa import (
    FIXED,
    PER_ELEMENT,
    FactorState,
    SweepSettings,
    collapsed_singleton_log_ratio,
    nsfa_sweep,
    nsfa_sweeps,
)
from inference.gibbs.ibp_fa import NSFAGibbs
from tests.helpers.stationary import compare_with_exact
from tests.inference.gibbs.ibp_fa.tiny import (
    CAPACITY,
    LAM,
    NOISE,
    Y,
    oracle,
    statistics,
    tiny_model,
)
from tests.inference.gibbs.ibp_fa.twins import IgnoresBetaNSFA, NoAuxiliaryDrawsNSFA

N_SWEEPS = 4000
BETAS = (0.0, 0.3, 1.0)
CONFIGS = {
    "diagonal, alpha ~ Gamma": dict(noise="diagonal", alpha=(2.0, 2.0)),
    "isotropic, alpha fixed": dict(noise="isotropic", alpha=1.5),
}
#: sweeps per recorded state of the thinned chains, their betas and number of states
THIN, THIN_BETAS, N_THINNED = 4, (0.3, 1.0), 1000
#: every comparison of the default run's correct chains, for one family-wise level
N_COMPARISONS = 11 * len(BETAS) * len(CONFIGS) + 11 + 13 * len(THIN_BETAS)


def auxiliary_statistics(Z, V, X):
    """Mean squares of the unused slots' X rows and of the loadings where Z = 0 (prior
    N(0, 1) at lambda = 1: exact mean 1 whatever Z is)."""
    on = Z != 0
    unused = ~on.any(axis=1)
    x2 = (X[:, :, 0] ** 2 * unused).sum(1) / np.maximum(unused.sum(1), 1)
    v2 = (V**2 * ~on).sum((1, 2)) / np.maximum((~on).sum((1, 2)), 1)
    return {"aux X^2": x2, "aux V^2": v2}


def step_chain(step_cls, beta, seed, n=N_SWEEPS, sweeps=1, auxiliary=False, **config):
    m = tiny_model(**config)
    hint = m._pp_models_info.step_hints[0]
    step = step_cls.from_model(m, hint.var_names, **{**hint.options, "sweeps": sweeps})
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    point = m.initial_point()
    keep = {"Z": [], "V": [], "X": [], "noise_precision_log__": [], "alpha_log__": []}
    for _ in range(n):
        point, _ = step.step(point)
        for key, values in keep.items():
            if key in point:
                values.append(point[key])
    tau = np.exp(np.array(keep["noise_precision_log__"]).reshape(n, -1))
    alpha = np.exp(np.array(keep["alpha_log__"])) if keep["alpha_log__"] else None
    Z, V, X = (np.array(keep[k]) for k in ("Z", "V", "X"))
    out = statistics(Z, V, X, tau, alpha)
    if auxiliary:
        out.update(auxiliary_statistics(Z, V, X))
    return out


def kernel_chain(beta, seed, n=N_SWEEPS):
    """The kernel on its per-column X path (``complete=False``, taken with missing data),
    diagonal noise, alpha ~ Gamma(2, 2)."""
    rng = np.random.default_rng(seed)
    W = np.ones_like(Y)
    Z = np.zeros((2, CAPACITY), np.int8)
    V = np.zeros((2, CAPACITY))
    X = np.zeros((CAPACITY, 1))
    lam = np.full(CAPACITY, LAM)
    tau = np.ones(2)
    alpha = 1.0
    hyper = np.array([1.0, 1.0, NOISE[0], NOISE[1], 2.0, 2.0])
    work = np.empty_like(Y)
    state = FactorState(Y, W, Z, V, X, lam, tau, work)
    settings = SweepSettings(False, hyper, FIXED, PER_ELEMENT, True, 2.0, 0.1)
    keep = {"Z": [], "V": [], "X": [], "tau": [], "alpha": []}
    for _ in range(n):
        alpha = nsfa_sweep(rng, state, beta, alpha, settings)[0]
        for key, value in (("Z", Z), ("V", V), ("X", X), ("tau", tau), ("alpha", alpha)):
            keep[key].append(np.copy(value))
    return statistics(*(np.array(keep[k]) for k in ("Z", "V", "X", "tau", "alpha")))


def _check(draws, exact):
    mean = {k: exact.mean[k] if k in exact.mean else 1.0 for k in draws}
    return compare_with_exact(draws, mean, exact_sd=exact.sd, n_comparisons=N_COMPARISONS)


def test_singleton_log_ratio_is_the_collapsed_likelihood_ratio():
    """Eqs 3.13-3.15 in precision form: sum_n log N(e_n; 0, 1/p + |g|^2) - log N(e_n; 0,
    1/p), from scipy; 0 at p = 0 (beta = 0)."""
    from scipy import stats

    e = np.array([0.7, -1.9, 2.4])
    for p in (0.35, 1.0, 4.0):
        for g_sq in (0.0, 0.4, 3.0):
            expected = (stats.norm.logpdf(e, 0, np.sqrt(1 / p + g_sq)).sum()
                        - stats.norm.logpdf(e, 0, np.sqrt(1 / p)).sum())
            got = collapsed_singleton_log_ratio(3.0, float(e @ e), p, g_sq)
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert collapsed_singleton_log_ratio(3.0, float(e @ e), 0.0, 2.0) == 0.0


def test_oracle_truncation_is_negligible():
    """The classes the oracle leaves out (a count above n_max) weigh less than the last
    ones it keeps; those weigh < 1e-6, which moves no mean by more than ~1e-5 (the Monte
    Carlo errors are ~1e-2)."""
    for config in CONFIGS.values():
        for beta in BETAS:
            prob = oracle(beta, **config).class_probability
            edge = prob[-1].sum() + prob[:, -1].sum() + prob[:, :, -1].sum()
            assert edge < 1e-6, (beta, edge)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("beta", BETAS)
def test_tempered_step_samples_the_power_posterior(config, beta):
    result = _check(step_chain(NSFAGibbs, beta, seed=11, **CONFIGS[config]),
                    oracle(beta, **CONFIGS[config]))
    print(f"\n{config}, beta = {beta}:\n{result}")
    assert result.passed


def test_tempered_kernel_per_column_x_path():
    result = _check(kernel_chain(0.3, seed=12), oracle(0.3))
    print(result)
    assert result.passed


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_twin_that_ignores_beta_is_caught(beta):
    result = _check(step_chain(IgnoresBetaNSFA, beta, seed=11), oracle(beta))
    print(result)
    assert not result.passed


def test_replicas_do_not_share_the_workspace():
    m = tiny_model()
    hint = m._pp_models_info.step_hints[0]
    step = NSFAGibbs.from_model(m, hint.var_names, **hint.options)
    other = step.replica()
    other.set_inverse_temperature(0.3)
    assert step.beta == 1.0 and other.beta == 0.3
    assert other._work is not step._work and other.rng is not step.rng
    assert NSFAGibbs.can_temper and NSFAGibbs.tempering_error({}) is None


@pytest.mark.parametrize("beta", THIN_BETAS)
def test_thinned_step_samples_the_power_posterior(beta):
    """``sweeps=4`` per recorded state, the auxiliary values drawn after the last only."""
    draws = step_chain(NSFAGibbs, beta, seed=13, n=N_THINNED, sweeps=THIN, auxiliary=True)
    result = _check(draws, oracle(beta))
    print(f"\nbeta = {beta}:\n{result}")
    assert result.passed


@pytest.mark.slow  # compiles a twin of the whole sweep
def test_twin_that_never_draws_the_auxiliary_values_is_caught():
    draws = step_chain(NoAuxiliaryDrawsNSFA, 1.0, seed=13, n=N_THINNED, sweeps=THIN,
                       auxiliary=True)
    result = _check(draws, oracle(1.0))
    print(result)
    assert not result.passed
    assert (result.table.loc[["aux X^2", "aux V^2"], "|z|"] > result.bound).all()


def test_one_sweep_of_nsfa_sweeps_is_nsfa_sweep():
    """``nsfa_sweeps(..., 1)`` is :func:`nsfa_sweep` draw for draw (the step's path with
    feature moves)."""
    def run(kernel, n_calls, *extra):
        rng = np.random.default_rng(4)
        Yc = np.array([[2.2, 0.3, -1.0], [-1.4, 0.8, 0.5]])
        Z = np.zeros((2, CAPACITY), np.int8)
        Z[0, 0] = 1
        V = np.ones((2, CAPACITY))
        X = np.ones((CAPACITY, 3))
        state = FactorState(Yc, np.ones_like(Yc), Z, V, X, np.full(CAPACITY, LAM),
                            np.ones(2), np.empty_like(Yc))
        settings = SweepSettings(True, np.array([1.0, 1.0, *NOISE, 2.0, 2.0]), FIXED,
                                 PER_ELEMENT, True, 2.0, 0.1)
        alpha = 1.0
        for _ in range(n_calls):
            alpha = kernel(rng, state, 1.0, alpha, settings, *extra)[0]
        return state, alpha, rng.random()

    one, alpha_one, next_one = run(nsfa_sweep, 25)
    ones, alpha_ones, next_ones = run(nsfa_sweeps, 25, 1)
    assert alpha_one == alpha_ones and next_one == next_ones
    for a, b in zip(one, ones, strict=True):
        np.testing.assert_array_equal(a, b)
