"""IBP factor analysis' pointwise log-likelihood for LOO (``inference.log_likelihood``).

Sample ``n`` (column ``y_n`` of ``Y``) has its own factor scores ``x_n ~ N(0, I)``; with
them integrated out, ``y_n ~ N(0, G G^T + Psi)`` given the loadings ``G`` (``Z o V``, or the
finite approximation's ``G``) and the noise ``Psi = diag(1 / tau)`` (Knowles 2012 Eq. 3.1).
The pointwise log-likelihood is that density at each posterior draw, on the sample's
observed entries (PyMC's own ``logp`` of ``Y`` would condition on ``x_n`` and count every
entry as an observation). Computed through ``K x K`` matrices over the ``K`` active
features (Woodbury), so it stays linear in the number of observed dimensions.

The posterior predictive is PyMC's forward draw of ``Y`` given ``G``, ``X`` and the
noise (``inference.predictive``): replicates of the same samples.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr
from pymc.model.transform.conditioning import remove_value_transforms

from pp_models.ibp_fa.model import get_spec
from pp_models.model_info import draws_dataset, observed_data

__all__ = ["pointwise_log_likelihood"]


def _flat(posterior, name):
    values = np.asarray(posterior[name].values, dtype=np.float64)
    return values.reshape(-1, *values.shape[2:])


def _noise_precision(posterior, model, spec, size) -> np.ndarray:
    """``tau`` (draws, D): the posterior's, or the fixed value read off ``Y``'s scale."""
    if "noise_precision" in posterior.data_vars:
        tau = _flat(posterior, "noise_precision")
        return np.broadcast_to(tau.reshape(size, -1), (size, spec.D)).copy()
    umodel = remove_value_transforms(model)
    (sd,) = umodel.replace_rvs_by_values([umodel["Y"].owner.inputs[3]])
    sd = np.asarray(pm.draw(sd), dtype=np.float64)  # constants only: the noise is fixed
    if spec.observed is None:
        per_dim = np.broadcast_to(sd.reshape(-1, 1), (spec.D, 1))[:, 0]
    else:
        per_dim = np.empty(spec.D)
        rows, _cols = np.nonzero(spec.observed)
        per_dim[rows] = sd
    return np.broadcast_to(1.0 / per_dim**2, (size, spec.D)).copy()


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"Y": (chain, draw, obs)}``: ``log N(y_n | 0, G G^T + Psi)`` on each sample's
    observed entries."""
    spec = get_spec(model)
    if spec is None:
        raise ValueError("model must be built by pp_models.ibp_fa.model")
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    size = chains * draws
    if spec.finite:
        G = _flat(posterior, "G")
    else:
        G = _flat(posterior, "Z") * _flat(posterior, "V")
    tau = _noise_precision(posterior, model, spec, size)
    data = observed_data(model, "Y").astype(np.float64)
    mask = np.ones((spec.D, spec.N), dtype=bool) if spec.observed is None else spec.observed
    Y = np.zeros((spec.D, spec.N))
    Y[mask] = data.reshape(-1) if spec.observed is not None else data[mask]
    out = np.empty((size, spec.N))
    patterns = {}
    for n in range(spec.N):
        patterns.setdefault(mask[:, n].tobytes(), []).append(n)
    for s in range(size):
        active = np.flatnonzero(np.any(G[s] != 0, axis=0))
        Gs = G[s][:, active]
        for key, columns in patterns.items():
            rows = np.frombuffer(key, dtype=bool)
            out[s, columns] = _marginal_logpdf(Y[np.ix_(rows, columns)], Gs[rows], tau[s, rows])
    return draws_dataset(posterior, model, "Y", out.reshape(chains, draws, spec.N),
                         dims=("obs",))


def _marginal_logpdf(Y, G, tau) -> np.ndarray:
    """``log N(y | 0, G G^T + diag(1/tau))`` for each column ``y`` of ``Y`` (Woodbury:
    ``A = I + G^T diag(tau) G``, ``log|Sigma| = -sum log tau + log|A|``)."""
    D, K = G.shape
    quad = np.einsum("dn,d,dn->n", Y, tau, Y)
    logdet = -np.log(tau).sum()
    if K:
        A = np.eye(K) + G.T @ (tau[:, None] * G)
        L = np.linalg.cholesky(A)
        b = np.linalg.solve(L, G.T @ (tau[:, None] * Y))
        quad = quad - (b**2).sum(0)
        logdet += 2.0 * np.log(np.diag(L)).sum()
    return -0.5 * (D * np.log(2 * np.pi) + logdet + quad)
