"""The tempered HMM steps sample the power posteriors p(theta, z) p(y | z, theta)^beta.

At beta in {0, 0.3, 1}, set through the tempering contract (``set_inverse_temperature``):

- **FFBS** (Poisson emissions, T = 4, K = 2, parameters fixed): each draw is
  independent of the previous path, so N draws are compared with the enumerated
  conditional ``p(z) p(y | z)^beta`` of the 16 paths by a chi-square test;
- **conjugate** (path fixed): Poisson rates, and the Gaussian precision and mean, against
  their Gamma / Normal conditionals with every observation counted beta times
  (Kolmogorov-Smirnov on independent single-step draws from one point);
- the twins that accept a beta and ignore it fail the same checks at beta = 0.3.

Each test's false-failure rate is at most ALPHA.
"""

import itertools

import numpy as np
import pytest
from scipy import stats

from inference.gibbs.hmm import HMMConjugate, HMMPathFFBS
from pp_models import hmm
from tests.helpers.backends import PYTHON_UNOPTIMISED
from tests.inference.gibbs.hmm.twins import IgnoresBetaConjugate, IgnoresBetaFFBS

BETAS = (0.0, 0.3, 1.0)
ALPHA = 1e-4
N_DRAWS = 3000
Y_COUNTS = np.array([0, 0, 6, 6])
RATES = np.array([0.5, 5.0])
Y_REAL = np.array([-1.0, 0.5, 2.0, 3.0])


def _step(m, cls, hint_name):
    hint = next(h for h in m._pp_models_info.step_hints if h.step == hint_name)
    options = hint.options(m) if callable(hint.options) else hint.options
    return cls.from_model(m, hint.var_names, **options)


def _natural_fn(m, names):
    # the reference reads the natural values through PyMC's own transforms (the Python
    # backend unoptimised: nothing to compile for a few reads)
    outputs = m.replace_rvs_by_values([m[n] for n in names])
    fn = m.compile_fn(
        outputs,
        inputs=m.value_vars,
        on_unused_input="ignore",
        point_fn=True,
        mode=PYTHON_UNOPTIMISED,
    )
    return lambda point: [np.asarray(v) for v in fn(point)]


#: a point of the two-state models in value space (uniform pi0 and P), written out:
#: ``initial_point`` would compile a Numba graph per model
POINT = {"pi0_simplex__": np.array([0.0]), "P_simplex__": np.zeros((2, 1))}


@pytest.fixture(scope="module")
def poisson_model():
    m = hmm.model(Y_COUNTS, 2, emission="poisson")
    point = dict(POINT, rate_log__=np.log(RATES), z=np.zeros(4, dtype=np.int64))
    return m, point


def _ffbs_pvalue(m, point, cls, beta, seed):
    step = _step(m, cls, hmm.STEP_PATH)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    pi0, P = _natural_fn(m, ["pi0", "P"])(point)
    paths = np.array(list(itertools.product(range(2), repeat=4)))
    log_lik = stats.poisson.logpmf(Y_COUNTS[None, :], RATES[paths])
    score = (
        np.log(pi0[paths[:, 0]])
        + np.log(P[paths[:, :-1], paths[:, 1:]]).sum(1)
        + beta * log_lik.sum(1)
    )
    exact = np.exp(score - np.logaddexp.reduce(score))
    counts = np.zeros(16)
    for _ in range(N_DRAWS):
        z = step.step(point)[0]["z"]
        counts[int(z @ (2 ** np.arange(3, -1, -1)))] += 1
    expected = exact * N_DRAWS
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    return stats.chisquare(obs[keep], exp[keep] * obs.sum() / exp[keep].sum()).pvalue


@pytest.mark.parametrize("beta", BETAS)
def test_ffbs_samples_the_power_posterior(poisson_model, beta):
    m, point = poisson_model
    assert _ffbs_pvalue(m, point, HMMPathFFBS, beta, seed=1) > ALPHA


def test_ffbs_twin_ignoring_beta_is_caught(poisson_model):
    m, point = poisson_model
    assert _ffbs_pvalue(m, point, IgnoresBetaFFBS, 0.3, seed=1) < ALPHA


def _conjugate_draws(m, point, cls, beta, names, seed):
    step = _step(m, cls, hmm.STEP_PARAMETERS)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    natural = _natural_fn(m, names)
    out = [natural(step.step(point)[0]) for _ in range(N_DRAWS)]
    return [np.array(v) for v in zip(*out, strict=True)]


Z_FIXED = np.array([0, 0, 1, 1])


def _poisson_pvalue(m, point, cls, beta):
    point = dict(point, z=Z_FIXED)
    spec = hmm.get_spec(m)
    (rate,) = _conjugate_draws(m, point, cls, beta, ["rate"], seed=2)
    a, b = spec.hyper["rate_shape"], spec.hyper["rate_rate"]
    pvalues = [
        stats.kstest(
            rate[:, k],
            stats.gamma(a + beta * Y_COUNTS[Z_FIXED == k].sum(), scale=1.0 / (b + beta * 2)).cdf,
        ).pvalue
        for k in range(2)
    ]
    return min(pvalues) * 2  # Bonferroni over the two states


@pytest.mark.parametrize("beta", BETAS)
def test_poisson_rates_at_beta(poisson_model, beta):
    m, point = poisson_model
    assert _poisson_pvalue(m, point, HMMConjugate, beta) > ALPHA


def test_conjugate_twin_ignoring_beta_is_caught(poisson_model):
    m, point = poisson_model
    assert _poisson_pvalue(m, point, IgnoresBetaConjugate, 0.3) < ALPHA


@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_gaussian_precision_and_mean_at_beta(beta):
    m = hmm.model(Y_REAL, 2, emission="gaussian")
    spec = hmm.get_spec(m)
    h = spec.hyper
    mu0 = np.array([0.0, 2.0])
    point = dict(POINT, mu=mu0, tau_log__=np.zeros(2), z=Z_FIXED)
    mu, tau = _conjugate_draws(m, point, HMMConjugate, beta, ["mu", "tau"], seed=3)
    pvalues = []
    for k in range(2):
        yk = Y_REAL[Z_FIXED == k]
        tau_law = stats.gamma(
            h["tau_shape"] + beta * yk.size / 2,
            scale=1.0 / (h["tau_rate"] + beta * ((yk - mu0[k]) ** 2).sum() / 2),
        )
        pvalues.append(stats.kstest(tau[:, k], tau_law.cdf).pvalue)
        precision = 1.0 / h["mu_sd"] ** 2 + beta * tau[:, k] * yk.size
        mean = (h["mu_mean"] / h["mu_sd"] ** 2 + beta * tau[:, k] * yk.sum()) / precision
        pvalues.append(stats.kstest((mu[:, k] - mean) * np.sqrt(precision), "norm").pvalue)
    assert min(pvalues) * len(pvalues) > ALPHA


@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_initial_and_transition_draws(poisson_model, beta):
    """Given the path 0, 0, 1, 1 (one sequence), ``pi0 ~ Dirichlet(1 + 1, 1)``,
    ``P[0] ~ Dirichlet(1 + 1, 1 + 1)`` and ``P[1] ~ Dirichlet(1, 1 + 1)``, whatever beta
    (the path is not data)."""
    m, point = poisson_model
    point = dict(point, z=Z_FIXED)
    pi0, P = _conjugate_draws(m, point, HMMConjugate, beta, ["pi0", "P"], seed=4)
    pvalues = [
        stats.kstest(pi0[:, 0], stats.beta(2, 1).cdf).pvalue,
        stats.kstest(P[:, 0, 0], stats.beta(2, 2).cdf).pvalue,
        stats.kstest(P[:, 1, 0], stats.beta(1, 2).cdf).pvalue,
    ]
    assert min(pvalues) * len(pvalues) > ALPHA
