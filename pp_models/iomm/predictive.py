"""The infinite overlapping mixture's pointwise log-likelihood for LOO
(``inference.log_likelihood``): ``log p(x_i | z_i, Theta)``, the point's density under
the normalised product of its clusters' experts (Heller 2007 Eq. 7.2; Eq. 7.7 for
Bernoulli experts, Eq. 7.5 for diagonal Gaussians, the background density for a point in
no cluster), summed over its features: the point given its sampled memberships (its
memberships are not summed out: that is a sum over every subset of the clusters).

Computed here rather than by :func:`pymc.compute_log_likelihood`, which rebuilds the
model without its transforms and cannot for this one (``Z``'s initial value is a prior
draw). The posterior predictive is PyMC's forward draw of ``X`` given ``Z`` and the
experts' parameters (``inference.predictive``).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.stats import norm

from pp_models.iomm.model import get_spec
from pp_models.model_info import draws_dataset, observed_data, row_dim

__all__ = ["pointwise_log_likelihood"]


def _flat(posterior, name):
    if name not in posterior.data_vars:
        raise ValueError(f"the posterior lacks {name!r}, which the pointwise "
                         "log-likelihood needs")
    values = np.asarray(posterior[name].values, dtype=np.float64)
    return values.reshape(-1, *values.shape[2:])


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, point)}``: each point's density given its memberships."""
    spec = get_spec(model)
    if spec is None:
        raise ValueError("model must be built by pp_models.iomm.model")
    X = np.asarray(observed_data(model, "X"), dtype=np.float64)
    Z = _flat(posterior, "Z")
    out = np.empty((Z.shape[0], X.shape[0]))
    if spec.likelihood == "bernoulli":
        theta = _flat(posterior, "theta")
        for s in range(Z.shape[0]):
            eta = Z[s] @ (np.log(theta[s]) - np.log1p(-theta[s]))
            out[s] = (X * eta - np.logaddexp(0.0, eta)).sum(1)
    else:
        mu, tau = _flat(posterior, "mu"), _flat(posterior, "tau")
        for s in range(Z.shape[0]):
            precision = Z[s] @ tau[s]
            empty = Z[s].sum(1) == 0
            safe = np.where(empty[:, None], 1.0, precision)
            mean = np.where(empty[:, None], spec.background[:, 0],
                            (Z[s] @ (tau[s] * mu[s])) / safe)
            sd = np.where(empty[:, None], spec.background[:, 1], 1.0 / np.sqrt(safe))
            out[s] = norm.logpdf(X, mean, sd).sum(1)
    return draws_dataset(posterior, model, "X",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1),
                         dims=(row_dim(model, "X"),))
