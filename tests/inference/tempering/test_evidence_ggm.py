"""Evidence of a Gaussian graphical model with a fixed decomposable graph, whose value is
closed form, against ``inference.evidence``.

The zoo's GGM priors (the Bayesian graphical lasso, the spike and slab) have no
closed-form evidence, so this checks the machinery (parallel tempering of NUTS, the
stepping-stone and thermodynamic estimators) on the GGM whose evidence is known: the
chain graph 0 - 1 - 2 (cliques {0, 1}, {1, 2}, separator {1}) with a G-Wishart prior
``W_G(delta, D)``, density ``∝ det(Omega)^((delta - 2)/2) exp(-tr(D Omega)/2)`` on
precisions with ``omega_02 = 0`` (the hyper-inverse Wishart of Dawid & Lauritzen 1993 for
``Sigma``). For a decomposable graph the normaliser factorises over cliques and
separators (Roverato 2002),

    I_G(b, D) = prod_C I(b, D_C) / prod_S I(b, D_S),
    I(b, D) = 2^((b+k-1) k/2) Gamma_k((b+k-1)/2) det(D)^(-(b+k-1)/2)   (k = |C|),

and ``p(X) = (2 pi)^(-n p/2) I_G(delta + n, D + S) / I_G(delta, D)``. The PyMC model
draws the prior exactly by Atay-Kayis & Massam's (2005) decomposition ``Omega = Phi' Phi
/ d`` (``D = d I``, ``Phi`` upper triangular with the graph's zeros, ``Phi_ii^2 ~
chi2(delta + nu_i)``, ``nu_i`` the neighbours after ``i``, ``Phi_ij ~ N(0, 1)`` on the
edges); 2e6 prior draws of it reproduce the closed form (importance sampling, within
0.5 se at n = 3, 1.4 se at n = 10).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import special

from inference import evidence, fit
from inference.tempering import estimate_from_tempering
from tests.helpers.evidence_checks import check_against_exact

DELTA, SCALE, P, N = 3.0, 1.0, 3, 10
CLIQUES, SEPARATORS = [(0, 1), (1, 2)], [(1,)]
X = np.random.default_rng(2).multivariate_normal(
    np.zeros(P), np.linalg.inv([[2.0, 0.8, 0.0], [0.8, 1.5, -0.6], [0.0, -0.6, 1.2]]), N)


def _log_complete(b, D):
    k = D.shape[0]
    df = b + k - 1
    return (df * k / 2 * np.log(2.0) + special.multigammaln(df / 2, k)
            - df / 2 * np.linalg.slogdet(D)[1])


def _log_normaliser(b, D):
    return (sum(_log_complete(b, D[np.ix_(c, c)]) for c in CLIQUES)
            - sum(_log_complete(b, D[np.ix_(s, s)]) for s in SEPARATORS))


def exact_log_evidence():
    D = SCALE * np.eye(P)
    return (-N * P / 2 * np.log(2 * np.pi) + _log_normaliser(DELTA + N, D + X.T @ X)
            - _log_normaliser(DELTA, D))


def g_wishart_model():
    with pm.Model() as m:
        # chi-square degrees of freedom delta + nu_i, nu = (1, 1, 0) on the chain graph
        q = pm.ChiSquared("q", nu=np.array([DELTA + 1, DELTA + 1, DELTA]))
        edge = pm.Normal("edge", 0.0, 1.0, shape=2)
        root = pt.sqrt(q)
        phi = pt.zeros((P, P))
        phi = pt.set_subtensor(phi[np.arange(P), np.arange(P)], root)
        phi = pt.set_subtensor(phi[[0, 1], [1, 2]], edge)
        omega = pm.Deterministic("Omega", phi.T @ phi / SCALE)
        pm.MvNormal("X", mu=np.zeros(P), tau=omega, observed=X)
    return m


@pytest.fixture(scope="module")
def model():
    return g_wishart_model()


def test_the_model_has_the_graph_zero():
    draws = pm.draw(g_wishart_model()["Omega"], draws=5, random_seed=1)
    assert np.all(draws[:, 0, 2] == 0.0)


def test_decomposable_ggm_evidence_matches_the_closed_form(model):
    exact = exact_log_evidence()
    dt = fit(model, draws=400, tune=300, chains=2, cores=1, random_seed=5,
             progressbar=False, tempering=8)
    for method in ("stepping_stone", "thermodynamic"):
        result = estimate_from_tempering(dt, method)
        print(f"exact {exact:.4f}, {result}")
        # an error of 2 nats is caught (tests/helpers/evidence_checks.py)
        check_against_exact(result, exact, detect=2.0, comparisons=2)


@pytest.mark.slow
def test_standard_error_is_calibrated(model):
    """The exact value within ±2 se on >= 80% of 20 seeds."""
    exact = exact_log_evidence()
    z = np.array([(r.log_evidence - exact) / r.se for r in (
        evidence(model, n_temperatures=8, draws=500, tune=300, chains=2, cores=1,
                 random_seed=200 + seed) for seed in range(20))])
    print(f"|z| < 2 on {np.mean(np.abs(z) < 2):.2f}, mean z {z.mean():.2f}, sd {z.std():.2f}")
    assert np.mean(np.abs(z) < 2) >= 0.8
