"""The finite mixture's pointwise log-likelihood for LOO
(:func:`inference.log_likelihood.compute_log_likelihood`): the mixture density with the
row's label summed out,

    log p(x_i | w, mu, sigma) = log sum_k w_k prod_j N(x_ij | mu_kj, sigma_kj),

a term per row (PyMC's own ``logp`` of ``X`` would condition on ``z_i`` and count each
of the ``d`` columns as an observation). Its posterior predictive is PyMC's forward draw
of ``X`` given ``z, mu, sigma`` (``inference.predictive``). Kept beside the single-module
factory (``pp_models.finite_mixture``) until the family becomes a package.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import logsumexp
from scipy.stats import norm

from pp_models.model_info import draws_dataset, observed_data, row_dim

__all__ = ["pointwise_log_likelihood"]


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, obs)}``: ``log sum_k w_k prod_j N(x_ij | mu_kj, sigma_kj)``."""
    for name in ("w", "mu", "sigma"):
        if name not in posterior.data_vars:
            raise ValueError(f"the posterior lacks {name!r}, which the log-likelihood needs")
    X = np.asarray(observed_data(model, "X"), dtype=float)
    w = np.asarray(posterior["w"].values, dtype=float)  # (c, s, K)
    mu = np.asarray(posterior["mu"].values, dtype=float)  # (c, s, K, d)
    sigma = np.asarray(posterior["sigma"].values, dtype=float)
    chains, draws = w.shape[:2]
    out = np.empty((chains, draws, X.shape[0]))
    for c in range(chains):
        # (s, n, K): each component's log density of each row
        comp = norm.logpdf(X[None, :, None, :], mu[c][:, None], sigma[c][:, None]).sum(-1)
        out[c] = logsumexp(comp + np.log(w[c])[:, None, :], axis=-1)
    return draws_dataset(posterior, model, "X", out, dims=(row_dim(model, "X"),))

