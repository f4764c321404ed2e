"""BHC's hyperparameter model tempered: ``fit(bhc.model(X, tree, ...), tempering=...)``
runs the core's tempered NUTS and targets the power posterior

    p_beta(alpha)  ∝  p(alpha) exp(beta L(alpha)),

with ``L`` the model's potential (Corollary 3.1's lower bound on the DP-mixture
evidence for the fixed tree: the model's ``datalogp``, a potential being a likelihood
term for tempering) and ``alpha ~ LogNormal(0, 1.5)`` the one free variable.

The reference is a quadrature over ``u = log alpha`` (4001 nodes on [-8, 8]) of the
tempered density, with ``L`` from the tree recursion of the BHC kernels called from
NumPy (as the untempered quadrature test of ``test_api.py`` does), not from the Op's
graph that NUTS differentiates. Checked, with z scores from the Monte Carlo standard
errors (ArviZ's ``mcse``, chains pooled): the posterior mean of ``log alpha`` of the cold
chain, and at every temperature of a fixed ladder the mean of the log likelihood that
the tempering group records (``E_beta[L]``, the integrand of thermodynamic integration),
against the quadrature. A run that ignored beta would be caught: the test also checks
that ``E_beta[L]`` at 0.1 and 0.3 differ from ``E_1[L]`` by more than twice the z limit
in those standard errors.
"""

import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import stats

from custom_ops import conjugate as cj
from inference import fit
from pp_models import bhc
from tests.pp_models.bhc.cases import binary_mixture, tree_objective

LADDER = (0.0, 0.1, 0.3, 1.0)
PRIOR = stats.lognorm(1.5)


@pytest.fixture(scope="module")
def setting():
    X, _ = binary_mixture(16, 6, 2, 0.1, np.random.default_rng(4))
    tree = bhc.greedy(X)
    model = bhc.model(X, tree, priors={"alpha": pm.LogNormal.dist(0.0, 1.5)})
    H = cj.pack_hyper("bernoulli", (tree.hyper["a"], tree.hyper["b"]))
    ps = cj.point_stats(0, X)
    u = np.linspace(-8.0, 8.0, 4001)
    lik = np.array([tree_objective(ps, tree.merges, math.exp(v), H, "lower_bound")
                    for v in u])
    log_prior = PRIOR.logpdf(np.exp(u)) + u  # the density of u = log alpha
    return model, u, lik, log_prior


def quadrature(u, lik, log_prior, beta):
    """(E_beta[log alpha], E_beta[L], sd_beta[L]) on the grid."""
    logw = log_prior + beta * lik
    w = np.exp(logw - logw.max())
    w /= w.sum()
    mean_l = float(np.sum(w * lik))
    return (float(np.sum(w * u)), mean_l, math.sqrt(float(np.sum(w * (lik - mean_l) ** 2))))


def test_tempered_fit_targets_the_power_posteriors(setting):
    model, u, lik, log_prior = setting
    dt = fit(model, draws=600, tune=300, chains=2, cores=1, random_seed=5,
             progressbar=False, postprocess=False,
             tempering={"ladder": LADDER, "adapt": False})
    group = dt["tempering"].to_dataset()
    np.testing.assert_allclose(group["beta"].values, np.broadcast_to(LADDER,
                                                                     group["beta"].shape))
    z = {}
    log_alpha = np.log(dt["posterior"]["alpha"].values)
    exact = quadrature(u, lik, log_prior, 1.0)[0]
    z["log alpha at beta = 1"] = (log_alpha.mean() - exact) / float(az.mcse(log_alpha))
    logliks = group["log_likelihood"].values  # (chain, draw, temperature)
    separations = []
    for k, beta in enumerate(LADDER):
        values = logliks[:, :, k]
        _mean_u, mean_l, sd_l = quadrature(u, lik, log_prior, beta)
        mcse = float(az.mcse(values))
        z[f"E[L] at beta = {beta}"] = (values.mean() - mean_l) / mcse
        if 0 < beta < 1:
            separations.append(abs(mean_l - quadrature(u, lik, log_prior, 1.0)[1]) / mcse)
        print(f"beta {beta}: E[L] sampled {values.mean():.4f} (MCSE {mcse:.4f}), "
              f"quadrature {mean_l:.4f} (sd {sd_l:.3f})")
    print("z scores:", z, "separations (MCSE):", separations)
    # five z scores: Bonferroni at 0.01 two-sided
    limit = stats.norm.isf(0.01 / (2 * len(z)))
    assert all(abs(v) < limit for v in z.values()), z
    # the check has power against a run that ignored beta (every replica at beta = 1;
    # beta = 0 is drawn from the prior apart): at 0.1 and 0.3 its z score would be
    assert min(separations) > 2 * limit, separations
