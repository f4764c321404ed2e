"""The tempered IOMM steps sample the power posteriors p(Z, Theta) p(X | Z, Theta)^beta.

At beta in {0, 0.3, 1}, set through the tempering contract (``set_inverse_temperature``):

- **memberships** (Bernoulli experts, N = 3 points, C = 3 slots, Theta fixed): exact
  draws from the enumerated conditional ``p(Z | Theta, X)`` with the likelihood to the
  power beta (``tests/oracles/iomm.py``, the 512 matrices) are passed through one step; the step's
  output must have the same distribution (pooled chi-square);
- **parameters** (Z fixed): a chain of the step against the power posterior of the used
  slots' parameters, computed on a grid: Bernoulli experts with two overlapping clusters
  (one point in both, so its expert is their product, Eq. 7.7) and Gaussian experts with
  one cluster of three points; unused slots hold prior draws;
- the twins that accept a beta and ignore it fail the same checks at beta < 1.
"""

import numpy as np
import pytest
from scipy import special

from inference.gibbs.iomm import IOMMMemberships, IOMMParameters
from pp_models import iomm
from tests.helpers.stationary import compare_with_exact
from tests.inference.gibbs.iomm.twins import IgnoresBetaMemberships, IgnoresBetaParameters
from tests.oracles.iomm import (
    bernoulli_loglik,
    exact_membership_conditional,
    grid_expectations,
    matrix_states,
    pooled_chisquare,
    state_index,
)

BETAS = (0.0, 0.3, 1.0)
N, C = 3, 3
ALPHA = 1.3
N_TRANSPORTED = 6000
N_SWEEPS = 3000
#: comparisons of the correct parameter chains (Bonferroni family per likelihood)
N_COMPARISONS = 8 * len(BETAS)

X_BIN = np.array([[1, 0], [1, 1], [0, 1]])
THETA = np.random.default_rng(7).beta(0.6, 0.6, size=(C, 2))
STATES = matrix_states(N, C)


@pytest.fixture(scope="module")
def bernoulli_memberships():
    m = iomm.model(X_BIN, alpha=ALPHA, capacity=C, theta_prior=(0.6, 0.6))
    point = m.initial_point()
    point["theta_logodds__"] = np.log(THETA / (1 - THETA))
    return m, point


def transport_pvalue(step_cls, model, point, beta, seed):
    step = step_cls.from_model(model, ["Z"], spec=iomm.get_spec(model))
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed + 100)
    probs = exact_membership_conditional(STATES, ALPHA,
                                         lambda Z: bernoulli_loglik(Z, X_BIN, THETA), beta)
    rng = np.random.default_rng(seed)
    counts = np.zeros(len(STATES))
    point = dict(point)
    for s in rng.choice(len(STATES), size=N_TRANSPORTED, p=probs):
        point["Z"] = STATES[s]
        new, _ = step.step(point)
        counts[state_index(new["Z"])] += 1
    return pooled_chisquare(counts, probs)


@pytest.mark.parametrize("beta", BETAS)
def test_tempered_memberships_leave_the_power_conditional_invariant(bernoulli_memberships,
                                                                    beta):
    p = transport_pvalue(IOMMMemberships, *bernoulli_memberships, beta, seed=1)
    assert p > 1e-3, p


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_memberships_twin_that_ignores_beta_is_caught(bernoulli_memberships, beta):
    p = transport_pvalue(IgnoresBetaMemberships, *bernoulli_memberships, beta, seed=1)
    assert p < 1e-6, p


# ----------------------------------------------------------------------- parameters
Z_OVERLAP = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 0]], dtype=np.int8)
X_OVERLAP = np.array([[1, 1], [1, 0], [0, 0]])
BETA_PRIOR = (0.8, 1.2)
Z_ONE = np.array([[1, 0, 0], [1, 0, 0], [1, 0, 0]], dtype=np.int8)
X_REAL = np.array([[0.9], [1.6], [1.2]])
GAUSS = dict(mean_prior=(0.0, 1.0), precision_prior=(2.0, 2.0))


def bernoulli_exact(beta):
    """Power posterior of (theta_0d, theta_1d) given Z_OVERLAP, per dimension d, on a
    grid of logits (the Beta prior's density in logit space: theta^a (1 - theta)^b)."""
    u = np.linspace(-25.0, 25.0, 1201)
    a, b = BETA_PRIOR
    means, sds = {}, {}
    for d in range(2):
        x = X_OVERLAP[:, d]

        def log_density(U, V, x=x):
            prior = (a * np.log(special.expit(U)) + b * np.log(special.expit(-U))
                     + a * np.log(special.expit(V)) + b * np.log(special.expit(-V)))
            lik = 0.0
            for i, s in enumerate((U, U + V, V)):  # point 1 is in both clusters
                lik = lik + x[i] * s - np.logaddexp(0.0, s)
            return prior + beta * lik

        mu, sd = grid_expectations(log_density, u, u, {
            f"theta0[{d}]": lambda U, V: special.expit(U),
            f"theta1[{d}]": lambda U, V: special.expit(V),
            f"theta0*theta1[{d}]": lambda U, V: special.expit(U) * special.expit(V)})
        means.update(mu)
        sds.update(sd)
    means["theta2 (unused)"] = a / (a + b)
    sds["theta2 (unused)"] = float(np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1))))
    return means, sds


def gaussian_exact(beta):
    """Power posterior of (mu_0, tau_0) given Z_ONE: N(0, 1) x Gamma(2, 2) x the three
    points' N(x | mu, 1/tau)^beta, on a grid of (mu, log tau)."""
    mu_grid = np.linspace(-6.0, 6.0, 1201)
    log_tau = np.linspace(-12.0, 5.0, 1201)
    x = X_REAL[:, 0]

    def log_density(M, L):
        tau = np.exp(L)
        prior = -0.5 * M**2 + 2.0 * L - 2.0 * tau  # Gamma(2, 2) in log tau: tau^2 e^(-2 tau)
        lik = sum(0.5 * L - 0.5 * tau * (xi - M) ** 2 for xi in x)
        return prior + beta * lik

    means, sds = grid_expectations(log_density, mu_grid, log_tau, {
        "mu0": lambda M, L: M, "tau0": lambda M, L: np.exp(L),
        "mu0^2": lambda M, L: M**2, "log tau0": lambda M, L: L})
    means["mu1 (unused)"], sds["mu1 (unused)"] = 0.0, 1.0
    means["tau1 (unused)"], sds["tau1 (unused)"] = 1.0, float(np.sqrt(0.5))
    return means, sds


def parameter_chain(step_cls, likelihood, beta, seed):
    if likelihood == "bernoulli":
        m = iomm.model(X_OVERLAP, alpha=ALPHA, capacity=C, theta_prior=BETA_PRIOR)
        Z = Z_OVERLAP
    else:
        m = iomm.model(X_REAL, likelihood="gaussian", alpha=ALPHA, capacity=C, **GAUSS)
        Z = Z_ONE
    hint = {h.step: h for h in m._pp_models_info.step_hints}[iomm.STEP_PARAMETERS]
    step = step_cls.from_model(m, hint.var_names, **hint.options)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    point = m.initial_point()
    point["Z"] = Z
    keep = []
    for _ in range(N_SWEEPS):
        point, _ = step.step(point)
        keep.append({k: np.copy(v) for k, v in point.items() if k != "Z"})
    if likelihood == "bernoulli":
        theta = special.expit(np.array([p["theta_logodds__"] for p in keep]))
        out = {"theta2 (unused)": theta[:, 2, 0]}
        for d in range(2):
            out[f"theta0[{d}]"] = theta[:, 0, d]
            out[f"theta1[{d}]"] = theta[:, 1, d]
            out[f"theta0*theta1[{d}]"] = theta[:, 0, d] * theta[:, 1, d]
        return out
    mu = np.array([p["mu"] for p in keep])
    tau = np.exp(np.array([p["tau_log__"] for p in keep]))
    return {"mu0": mu[:, 0, 0], "tau0": tau[:, 0, 0], "mu0^2": mu[:, 0, 0] ** 2,
            "log tau0": np.log(tau[:, 0, 0]), "mu1 (unused)": mu[:, 1, 0],
            "tau1 (unused)": tau[:, 1, 0]}


EXACT = {"bernoulli": bernoulli_exact, "gaussian": gaussian_exact}


@pytest.mark.parametrize("likelihood", ["bernoulli", "gaussian"])
@pytest.mark.parametrize("beta", BETAS)
def test_tempered_parameters_sample_the_power_posterior(likelihood, beta):
    means, sds = EXACT[likelihood](beta)
    result = compare_with_exact(parameter_chain(IOMMParameters, likelihood, beta, seed=3),
                                means, exact_sd=sds, n_comparisons=N_COMPARISONS)
    print(f"\n{likelihood}, beta = {beta}:\n{result}")
    assert result.passed


@pytest.mark.parametrize("likelihood", ["bernoulli", "gaussian"])
def test_parameters_twin_that_ignores_beta_is_caught(likelihood):
    means, sds = EXACT[likelihood](0.0)
    result = compare_with_exact(parameter_chain(IgnoresBetaParameters, likelihood, 0.0,
                                                seed=3),
                                means, exact_sd=sds, n_comparisons=N_COMPARISONS)
    print(result)
    assert not result.passed


def test_steps_take_part_in_tempering():
    assert IOMMMemberships.can_temper and IOMMParameters.can_temper
    assert IOMMMemberships.tempering_error({}) is None
    m = iomm.model(X_BIN, alpha=(2.0, 1.0), capacity=4)
    hints = {h.step: h for h in m._pp_models_info.step_hints}
    step = IOMMMemberships.from_model(m, hints[iomm.STEP_MEMBERSHIPS].var_names,
                                      **hints[iomm.STEP_MEMBERSHIPS].options)
    other = step.replica()
    other.set_inverse_temperature(0.3)
    assert step.beta == 1.0 and other.beta == 0.3 and other.rng is not step.rng
    with pytest.raises(ValueError, match="beta must be in"):
        step.set_inverse_temperature(1.5)
