"""The DPM posterior predictive under Pitman-Yor seating, against enumeration.

The expected values are computed here from first principles, independently of the
package: the seating probabilities of a new row by enumerating its K + 1 possible tables
and taking ratios of the Pitman-Yor exchangeable partition probability function (Pitman
2006, Eq. 3.6), and each table's predictive density as a ratio of Normal-Gamma marginal
likelihoods (Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution",
Eq. 95).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy.special import gammaln

from pp_models import dpm
from pp_models.distributions import CollapsedMultinomial


def log_eppf(sizes, alpha, discount):
    """log P(partition with these block sizes) under PY(alpha, discount)."""
    sizes = np.asarray(sizes)
    n, K = sizes.sum(), sizes.size
    out = sum(np.log(alpha + i * discount) for i in range(1, K))
    out -= sum(np.log(alpha + i) for i in range(1, n))
    for nk in sizes:
        out += sum(np.log(j - discount) for j in range(1, nk))
    return out


def log_normal_gamma_evidence(x, m0, kappa0, a0, b0):
    """log ∫ prod_i N(x_i | mu, 1/tau) NG(mu, tau | m0, kappa0, a0, b0) (1-D)."""
    k0 = kappa0
    x = np.asarray(x, dtype=float)
    n = x.size
    if n == 0:
        return 0.0
    xbar = x.mean()
    kn, an = k0 + n, a0 + n / 2
    bn = b0 + 0.5 * np.sum((x - xbar) ** 2) + k0 * n * (xbar - m0) ** 2 / (2 * kn)
    return (gammaln(an) - gammaln(a0) + a0 * np.log(b0) - an * np.log(bn)
            + 0.5 * np.log(k0 / kn) - n / 2 * np.log(2 * np.pi))


def test_pitman_yor_predictive_density_matches_enumeration():
    n, alpha, discount = 10, 0.5, 0.6
    X = np.array([-2.1, -1.8, -2.4, -1.9, 0.1, 0.3, -0.2, 2.2, 2.6, 1.9])[:, None]
    z = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    hyper = dict(m0=0.0, kappa0=0.3, a0=2.0, b0=0.5)
    m = dpm.model(X, likelihood="diag_gaussian", alpha=alpha, discount=discount,
                  prior={k: np.array([v]) for k, v in hyper.items()})
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"z": (("chain", "draw", "obs"), z[None, None, :])})})
    grid = np.array([-2.0, -1.0, 0.5, 3.5])
    got = dpm.predictive_density(dt, m, dims=0, grid=grid)["density"].values

    sizes = np.bincount(z)
    base = log_eppf(sizes, alpha, discount)
    expected = np.zeros(grid.size)
    total_seating = 0.0
    for table in range(sizes.size + 1):  # every way to seat row n + 1
        new_sizes = np.append(sizes, 0)
        new_sizes[table] += 1
        seat = np.exp(log_eppf(new_sizes[new_sizes > 0], alpha, discount) - base)
        total_seating += seat
        rows = X[z == table, 0]
        for g, x in enumerate(grid):
            expected[g] += seat * np.exp(
                log_normal_gamma_evidence(np.append(rows, x), **hyper)
                - log_normal_gamma_evidence(rows, **hyper))
    assert total_seating == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # the Dirichlet-process weights (the former bug) would be far off here
    assert abs(alpha / (n + alpha) - (alpha + sizes.size * discount) / (n + alpha)) > 0.1


def test_collapsed_multinomial_rejects_fractional_counts():
    z = np.array([0, 1, 0])
    dist = CollapsedMultinomial.dist(z, concentration=np.ones(2), n_trials=2)
    fractional = np.array([[0.5, 1.5], [1.0, 1.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="whole numbers"):
        pm.logp(dist, fractional)
    value = pt.matrix("value")
    fn = pm.logp(dist, value).eval
    assert fn({value: fractional}) == -np.inf
    assert np.isfinite(fn({value: np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.0]])}))
