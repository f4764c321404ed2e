"""The evidence of finite mixtures with explicit weights and component parameters against
the exact sum over every labelled assignment.

``w ~ Dirichlet(1, 1)``, ``z_i ~ Categorical(w)``, each component's parameters from the
conjugate prior of one of the zoo's conjugate families, written as a PyMC model the way
the zoo's finite mixture is (the categorical Gibbs step for ``z`` with the likelihood part
of its logits, tempered NUTS for the rest). Integrating ``w`` and the parameters out,
``p(X) = sum_z DirMult(z) prod_k p(X_k)`` over the 2^6 labelled assignments
(``oracles``: SciPy only); the stepping-stone estimate must be within 3 se of it.
The full-covariance Gaussian's Wishart precision is written by its Bartlett decomposition
(chi-square diagonal, normal off-diagonal), which NUTS can sample.

Each case compiles a NUTS density of its own (10-15 CPU-s cold at the tests' -O1): the
diagonal Gaussian (the zoo's finite mixture's family) and the Bernoulli run by default,
the full Gaussian, multinomial and categorical cases in ``-m slow``; every family is in
the default run through the DP-mixture oracles (``test_evidence_dpm.py``).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from inference import evidence
from pp_models.model_info import StepHint, ZooModelInfo, attach_info
from tests.helpers.evidence_checks import check_against_exact
from tests.oracles import mixtures as oracles

K, N, GAMMA = 2, 6, 1.0
RNG = np.random.default_rng(8)


def _logits(component_logp):
    """A step hint's options builder: (n, K) likelihood logits -> categorical options."""

    def options(model):
        lik = component_logp(model)
        return {"logits": pt.log(model["w"])[None, :] + lik, "likelihood_logits": lik}

    return options


def _mixture(build, component_logp):
    with pm.Model() as m:
        w = pm.Dirichlet("w", a=np.full(K, GAMMA))
        z = pm.Categorical("z", p=w, shape=N)
        build(z)
    info = ZooModelInfo(family="test_finite_mixture", preferred_method="gibbs",
                        step_hints=(StepHint("categorical_gibbs", ("z",),
                                             _logits(component_logp)),))
    return attach_info(m, info)


def diag_gaussian_case():
    X = np.concatenate([RNG.normal(-1.0, 0.7, (3, 2)), RNG.normal(1.5, 0.7, (3, 2))])
    m0, k0, a0, b0 = np.zeros(2), np.full(2, 0.5), np.full(2, 2.0), np.full(2, 1.0)

    def build(z):
        tau = pm.Gamma("tau", alpha=a0, beta=b0, shape=(K, 2))
        mu = pm.Normal("mu", mu=m0, sigma=1 / pt.sqrt(k0 * tau), shape=(K, 2))
        pm.Normal("X", mu=mu[z], sigma=1 / pt.sqrt(tau[z]), observed=X)

    def lik(m):
        dist = pm.Normal.dist(m["mu"][None], 1 / pt.sqrt(m["tau"][None]))
        return pm.logp(dist, m["X"][:, None, :]).sum(-1)

    return _mixture(build, lik), X, oracles.block_function("diag_gaussian", (m0, k0, a0, b0))


def _precision_normal_logp(x, mu, lam):
    """log N(x | mu, lam^-1) with a precision matrix, batched over leading axes."""
    r = x - mu
    quad = (r[..., :, None] * lam * r[..., None, :]).sum((-1, -2))
    return 0.5 * pt.log(pt.linalg.det(lam)) - np.log(2 * np.pi) - 0.5 * quad


def gaussian_case():
    X = np.concatenate([RNG.normal(-1.0, 0.7, (3, 2)), RNG.normal(1.5, 0.7, (3, 2))])
    m0, k0, nu0, S0 = np.zeros(2), 0.5, 4.0, np.array([[1.0, 0.3], [0.3, 1.5]])
    L = np.linalg.cholesky(np.linalg.inv(S0))

    def build(z):
        # Lambda_k = (L A_k)(L A_k)' ~ Wishart(nu0, S0^-1), i.e. Sigma_k ~ IW(nu0, S0), by
        # Bartlett: A_k lower triangular, chi-square(nu0 - i) squared diagonal, N(0, 1) below
        c = pm.ChiSquared("c", nu=nu0 - np.arange(2), shape=(K, 2))
        off = pm.Normal("off", 0.0, 1.0, shape=K)
        a, b, d = pt.sqrt(c[:, 0]), off, pt.sqrt(c[:, 1])
        # B = L A (lower triangular 2 x 2, per component)
        b11 = L[0, 0] * a
        b21 = L[1, 0] * a + L[1, 1] * b
        b22 = L[1, 1] * d
        zero = pt.zeros(K)
        B = pt.stack([pt.stack([b11, zero], -1), pt.stack([b21, b22], -1)], -2)
        Lam = pm.Deterministic("Lam", B @ B.transpose(0, 2, 1))
        # mu_k ~ N(m0, (kappa0 Lambda_k)^-1): mu = m0 + B^-T eps / sqrt(kappa0)
        eps = pm.Normal("eps", 0.0, 1.0, shape=(K, 2))
        binv_t = pt.stack([pt.stack([1 / b11, -b21 / (b11 * b22)], -1),
                           pt.stack([zero, 1 / b22], -1)], -2)  # (B^-1)'
        mu = pm.Deterministic("mu", m0 + (binv_t @ eps[..., None])[..., 0] / np.sqrt(k0))
        pm.CustomDist("X", mu[z], Lam[z], logp=_precision_normal_logp,
                      signature="(d),(d,d)->(d)", observed=X)

    def lik(m):
        return _precision_normal_logp(m["X"][:, None, :], m["mu"][None], m["Lam"][None])

    return _mixture(build, lik), X, oracles.block_function("gaussian", (m0, k0, nu0, S0))


def bernoulli_case():
    X = (RNG.random((N, 3)) < np.repeat([[0.9, 0.2, 0.7], [0.1, 0.8, 0.3]], 3, 0)).astype(float)
    a, b = np.array([1.0, 0.5, 2.0]), np.array([1.0, 1.5, 1.0])

    def build(z):
        p = pm.Beta("p", alpha=a, beta=b, shape=(K, 3))
        pm.Bernoulli("X", p=p[z], observed=X)

    def lik(m):
        return pm.logp(pm.Bernoulli.dist(m["p"][None]), m["X"][:, None, :]).sum(-1)

    return _mixture(build, lik), X, oracles.block_function("bernoulli", (a, b))


def multinomial_case():
    X = np.array([RNG.multinomial(4, q) for q in np.repeat([[0.7, 0.2, 0.1],
                                                            [0.1, 0.3, 0.6]], 3, 0)])
    conc = np.array([1.0, 0.7, 1.5])

    def build(z):
        p = pm.Dirichlet("p", a=conc, shape=(K, 3))
        pm.Multinomial("X", n=X.sum(1), p=p[z], observed=X)

    def lik(m):
        n = m["X"].sum(-1)
        return pm.logp(pm.Multinomial.dist(n[:, None], m["p"][None]), m["X"][:, None, :])

    return _mixture(build, lik), X.astype(float), oracles.block_function(
        "multinomial", (conc,))


def categorical_case():
    x = np.concatenate([RNG.choice(3, 3, p=[0.8, 0.1, 0.1]),
                        RNG.choice(3, 3, p=[0.1, 0.2, 0.7])])
    conc = np.array([1.0, 0.7, 1.5])

    def build(z):
        p = pm.Dirichlet("p", a=conc, shape=(K, 3))
        pm.Categorical("X", p=p[z], observed=x)

    def lik(m):
        return pm.logp(pm.Categorical.dist(m["p"][None]), m["X"][:, None])

    # one-hot rows: the Dirichlet-categorical marginal is the multinomial one
    return _mixture(build, lik), np.eye(3)[x], oracles.block_function("categorical", (conc,))


CASES = {"gaussian": gaussian_case, "diag_gaussian": diag_gaussian_case,
         "bernoulli": bernoulli_case, "multinomial": multinomial_case,
         "categorical": categorical_case}


SLOW = pytest.mark.slow


@pytest.mark.parametrize("case", ["diag_gaussian", "bernoulli",
                                  pytest.param("gaussian", marks=SLOW),
                                  pytest.param("multinomial", marks=SLOW),
                                  pytest.param("categorical", marks=SLOW)])
def test_finite_mixture_evidence_matches_the_sum_over_assignments(case):
    m, X, block = CASES[case]()
    exact = oracles.finite_log_evidence(X, block, K, GAMMA)
    result = evidence(m, n_temperatures=6, draws=600, tune=300, chains=2, cores=1,
                      random_seed=2)
    print(f"finite mixture, {case}: exact {exact:.4f}, {result}")
    # an error of 2.2 nats is caught (tests/helpers/evidence_checks.py)
    check_against_exact(result, exact, detect=2.2)


# three tight groups of three: at beta = 1 the two components cover two groups and the
# third joins one of them, three labelled modes (six with the labels switched)
BIMODAL_X = np.r_[-4.1, -4.0, -3.9, -0.1, 0.0, 0.1, 4.4, 4.5, 4.6]


@pytest.mark.slow
def test_standard_error_is_calibrated_on_the_zoo_s_bimodal_mixture():
    """``finite_mixture.model(x, 2, weight_concentration=1, resolution=0.1)`` on
    :data:`BIMODAL_X`, exact by enumeration and quadrature (``oracles``): the exact value
    within ±2 se on >= 90% of 20 seeds. Measured (docs/benchmarks.md, "Evidence: AIS
    speed and se calibration"): not met; both chains of a run often miss the same mode,
    agree, and are biased low together, which no se made from the draws can show."""
    from pp_models import finite_mixture

    exact = oracles.finite_mixture_log_evidence(BIMODAL_X, 2, 1.0, 0.1)
    m = finite_mixture.model(BIMODAL_X.reshape(-1, 1), n_components=2,
                             weight_concentration=1, resolution=0.1)
    z = []
    for seed in range(20):
        r = evidence(m, n_temperatures=16, draws=300, tune=200, chains=2, cores=1,
                     random_seed=300 + seed)
        z.append((r.log_evidence - exact) / r.se)
    z = np.array(z)
    print(f"|z| < 2 on {np.mean(np.abs(z) < 2):.2f}, mean z {z.mean():.2f}, sd {z.std():.2f}")
    assert np.mean(np.abs(z) < 2) >= 0.9
