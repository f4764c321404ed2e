"""The DP mixture's truncated stick-breaking form: its component likelihoods, the
assignments drawn after sampling and the check that the truncation holds the posterior.

``model.py``'s ``_stick_breaking_model`` builds the model from these: the component log
densities (:func:`niw_components` for the full-covariance NIW mixture, :func:`normal_logp`
for diagonal normals), the assignments drawn from ``p(z | w, theta, X)`` per draw
(:func:`sb_assignments`, from :func:`component_logp`), the number of occupied
components (:func:`sb_n_clusters`) and :func:`warn_if_truncated`.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy import special, stats

from pp_models import partitions
from pp_models.dpm.spec import DPMSpec

__all__ = [
    "TRUNCATION_WARN",
    "component_logp",
    "niw_components",
    "normal_logp",
    "sb_assignments",
    "sb_n_clusters",
    "warn_if_truncated",
]


#: Share of draws with every stick-breaking component occupied above which ``fit`` warns
#: that the truncation cuts the posterior.
TRUNCATION_WARN = 0.05


def warn_if_truncated(n_clusters, truncation: int) -> float:
    """Warn when more than :data:`TRUNCATION_WARN` of the draws occupy every one of the
    ``truncation`` stick-breaking components (the truncation then cuts the posterior of
    K); returns that share."""
    at_t = float((np.asarray(n_clusters) >= truncation).mean())
    if at_t > TRUNCATION_WARN:
        warnings.warn(
            f"the number of clusters reached the truncation T = {truncation} in "
            f"{at_t:.0%} of the draws: the truncation cuts the posterior of K; fit again "
            f"with a larger truncation= (e.g. {2 * truncation})", UserWarning, stacklevel=3)
    return at_t


def niw_components(h, Xc, T, start):
    """(n, T) log N(x_i | mu_k, Lambda_k^-1) under the collapsed model's NIW prior,
    ``Sigma_k ~ IW(nu0, S0)``, ``mu_k | Sigma_k ~ N(m0, Sigma_k / kappa0)``, with
    free variables NUTS can move in.

    The precision ``Lambda_k = Sigma_k^-1 ~ Wishart(nu0, S0^-1)`` by Bartlett's
    decomposition: ``Lambda_k = U_k U_k'``, ``U_k = L A_k``, ``L`` the Cholesky factor of
    ``S0^-1``, ``A_k`` lower triangular with ``A_k[j, j]^2 ~ chi2(nu0 - j)``
    (``bartlett_diag``) and standard normal entries below the diagonal
    (``bartlett_offdiag``). The mean is whitened by the component's covariance:
    ``mu_k = m0 + U_k^-T r_k`` with ``r_k ~ N(0, I / kappa0)`` (``mu_raw``), which has
    covariance ``(kappa0 Lambda_k)^-1``; a unit of ``r_k`` (e.g. the start's jitter) is
    one sd of the component, and ``U_k'(x - mu_k) = U_k'(x - m0) - r_k``, so the
    likelihood needs no solve. ``mu`` and ``precision_chol`` (``U_k``) are kept as
    deterministics. ``start``: initial values by name (:mod:`pp_models.dpm.start`).
    """
    m0, kappa0, nu0, S0 = (np.asarray(h[k], dtype=np.float64) for k in ("m0", "kappa0",
                                                                         "nu0", "S0"))
    d = m0.size
    L = np.linalg.cholesky(np.linalg.inv(S0))
    below = np.tril_indices(d, -1)
    diag = pm.ChiSquared("bartlett_diag", nu=float(nu0) - np.arange(d),
                         dims=("component", "feature"), initval=start.get("bartlett_diag"))
    A = pt.zeros((T, d, d))
    A = A[:, np.arange(d), np.arange(d)].set(pt.sqrt(diag))
    if d > 1:
        off = pm.Normal("bartlett_offdiag", 0.0, 1.0, shape=(T, below[0].size),
                        initval=start.get("bartlett_offdiag"))
        A = A[:, below[0], below[1]].set(off)
    U = pm.Deterministic("precision_chol", pt.matmul(L, A),
                         dims=("component", "feature", "feature_"))
    mu_raw = pm.Normal("mu_raw", 0.0, 1.0 / np.sqrt(float(kappa0)),
                       dims=("component", "feature"), initval=start.get("mu_raw"))
    pm.Deterministic("mu", m0 + pt.linalg.solve_triangular(
        U.transpose(0, 2, 1), mu_raw[..., None], lower=False)[..., 0],
        dims=("component", "feature"))
    y = pt.matmul(Xc - m0, U) - mu_raw[:, None, :]  # (T, n, d): U_k'(x_i - mu_k)
    log_det = np.log(np.diag(L)).sum() + 0.5 * pt.log(diag).sum(-1)  # log |Lambda_k|^1/2
    return (-0.5 * pt.sqr(y).sum(-1) + log_det[:, None] - 0.5 * d * np.log(2 * np.pi)).T


def normal_logp(Xc, mu, sigma):
    r = (Xc[:, None, :] - mu[None]) / sigma[None]
    return (-0.5 * r**2 - pt.log(sigma)[None] - 0.5 * np.log(2 * np.pi)).sum(-1)


def component_logp(spec, params, X):
    """(n, T) log F(x_i | theta_k) from one draw's parameter arrays (NumPy)."""
    lik = spec.likelihood
    if lik == "gaussian":
        mu, U = params  # (T, d), (T, d, d): Lambda_k = U_k U_k'
        y = np.einsum("nkj,kji->nki", X[:, None, :] - mu[None], U)
        log_det = np.log(np.diagonal(U, axis1=1, axis2=2)).sum(-1)
        return -0.5 * (y**2).sum(-1) + log_det[None] - 0.5 * X.shape[1] * np.log(2 * np.pi)
    if lik in ("diag_gaussian", "normal"):
        mu, sigma = params
        return stats.norm.logpdf(X[:, None, :], mu[None], sigma[None]).sum(-1)
    if lik == "bernoulli":
        (p,) = params
        return (X[:, None, :] * np.log(p)[None] + (1 - X[:, None, :]) * np.log1p(-p)[None]).sum(-1)
    if lik == "multinomial":
        (p,) = params
        coef = special.gammaln(X.sum(1) + 1) - special.gammaln(X + 1).sum(1)
        return (X[:, None, :] * np.log(p)[None]).sum(-1) + coef[:, None]
    (rate,) = params
    return stats.poisson.logpmf(X[:, None, :], rate[None]).sum(-1)


def sb_assignments(posterior: xr.Dataset, spec: DPMSpec, params) -> xr.DataArray:
    w = posterior["w"].values
    arrays = [posterior[p].values for p in params]
    C, S = w.shape[:2]
    X = spec.X
    out = np.empty((C, S, X.shape[0]), dtype=np.int64)
    for c in range(C):
        for s in range(S):
            logits = np.log(w[c, s])[None, :] + component_logp(
                spec, [a[c, s] for a in arrays], X)
            rng = np.random.default_rng([c, s])
            g = rng.gumbel(size=logits.shape)
            out[c, s] = partitions.canonical_labels(np.argmax(logits + g, axis=1))
    return xr.DataArray(out, dims=("chain", "draw", "obs"))


def sb_n_clusters(posterior: xr.Dataset, spec: DPMSpec, params) -> xr.DataArray:
    z = sb_assignments(posterior, spec, params).values
    return xr.DataArray(partitions.n_blocks(z.reshape(-1, z.shape[-1])).reshape(z.shape[:2]),
                        dims=("chain", "draw"))
