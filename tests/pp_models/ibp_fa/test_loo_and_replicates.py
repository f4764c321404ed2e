"""IBP factor analysis' pointwise log-likelihood (the factor scores integrated out)
against quadrature (pp_models.ibp_fa.predictive)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.stats import norm

from pp_models import ibp_fa
from pp_models.ibp_fa import predictive

D, N, C = 3, 4, 3
RNG = np.random.default_rng(0)
Y = RNG.normal(size=(D, N))


def _posterior(**arrays):
    return xr.Dataset({k: (("chain", "draw", *[f"{k}_{i}" for i in range(np.ndim(v) - 1)]),
                           np.asarray(v)[None]) for k, v in arrays.items()})


def _quadrature(y, G, tau, rows):
    """∫ prod_d N(y_d | (G x)_d, 1/tau_d) N(x | 0, I) dx over the two active features, on
    a grid (log)."""
    grid = np.linspace(-9, 9, 721)
    x1, x2 = np.meshgrid(grid, grid, indexing="ij")
    x = np.stack([x1.ravel(), x2.ravel()])  # (2, G)
    mean = G[rows] @ x
    lp = norm.logpdf(y[rows, None], mean, 1 / np.sqrt(tau[rows, None])).sum(0)
    lp += norm.logpdf(x).sum(0)
    step = grid[1] - grid[0]
    top = lp.max()
    return top + np.log(np.exp(lp - top).sum() * step**2)


@pytest.mark.parametrize("missing", [False, True])
def test_sample_density_integrates_its_factor_scores(missing):
    data = Y.copy()
    if missing:
        data[1, 2] = np.nan
        data[0, 3] = np.nan
    m = ibp_fa.model(data, capacity=C)
    Z = np.array([[[1, 0, 1], [1, 0, 0], [0, 0, 1]], [[0, 0, 1], [1, 0, 1], [1, 0, 0]]])
    V = RNG.normal(size=(2, D, C))
    tau = np.array([[2.0, 0.5, 1.0], [1.0, 3.0, 0.8]])
    post = _posterior(Z=Z, V=V, X=RNG.normal(size=(2, C, N)), noise_precision=tau,
                      **{"lambda": np.ones((2, C))})
    got = predictive.pointwise_log_likelihood(post, m)["Y"].values[0]
    observed = ~np.isnan(data)
    for s in range(2):
        G = Z[s] * V[s]
        active = np.flatnonzero(G.any(0))
        assert active.size == 2
        for n in range(N):
            rows = np.flatnonzero(observed[:, n])
            expected = _quadrature(np.nan_to_num(data[:, n]), G[:, active], tau[s], rows)
            np.testing.assert_allclose(got[s, n], expected, rtol=1e-8)


def test_a_fixed_noise_is_read_from_the_model():
    m = ibp_fa.model(Y, capacity=C, noise_prior=2.5)
    Z = np.array([[[1, 0, 0], [1, 0, 0], [0, 0, 0]]])
    V = RNG.normal(size=(1, D, C))
    post = _posterior(Z=Z, V=V, X=RNG.normal(size=(1, C, N)), **{"lambda": np.ones((1, C))})
    got = predictive.pointwise_log_likelihood(post, m)["Y"].values[0, 0]
    G = (Z[0] * V[0])[:, :1]
    cov = G @ G.T + np.eye(D) / 2.5
    from scipy.stats import multivariate_normal

    np.testing.assert_allclose(got, multivariate_normal(np.zeros(D), cov).logpdf(Y.T))
