"""The LDS's pointwise log-likelihood for LOO and its posterior predictive replicates.

The pointwise term of step ``t`` is the conditional predictive density of its observed
entries given the rest of the series, the states summed out. Since ``y_t`` depends on
the rest only through ``x_t``, deleting it from the smoothed moments
``x_t | y ~ N(m, P)`` (RTS smoother) gives ``x_t | y_{-t} ~ N(m_, P_)`` with::

    P_^{-1} = P^{-1} - C_o' R_oo^{-1} C_o,   P_^{-1} m_ = P^{-1} m - C_o' R_oo^{-1} y_t,o,

and ``y_t,o | y_{-t} ~ N(C_o m_, C_o P_ C_o' + R_oo)`` (``o`` the observed entries;
0 for a step with none). The steps are not exchangeable; this is the term leave-one-out
asks for, not the one-step-ahead ``log p(y_t | y_{1:t-1})``. Replicates draw ``y``
given each draw's path ``x`` and noise: ``y_t = C x_t + N(0, R)``.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.stats import multivariate_normal

from custom_ops.lds.kalman import kalman_filter_kernel, rts_smoother_kernel
from pp_models.lds.model import get_spec
from pp_models.lds.outputs import draw_parameters
from pp_models.model_info import draws_dataset, observed_data

__all__ = ["leave_one_out_log_density", "pointwise_log_likelihood", "posterior_predictive"]


def leave_one_out_log_density(y, A, C, Q, R, m0, P0) -> np.ndarray:
    """``log p(y_t,o | y_{-t})`` per step ``t`` (module docstring), shape ``(T,)``."""
    y = np.ascontiguousarray(y, dtype=np.float64)
    log_lik, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
    out = np.full(y.shape[0], np.nan)
    if np.isnan(log_lik).any():
        return out
    ms, Ps, _ = rts_smoother_kernel(A, mf, Pf, mp, Pp)
    for t in range(y.shape[0]):
        o = ~np.isnan(y[t])
        if not o.any():
            out[t] = 0.0
            continue
        Co, Roo, yo = C[o], R[np.ix_(o, o)], y[t, o]
        Pi = np.linalg.inv(Ps[t])
        Rinv = np.linalg.inv(Roo)
        prec = Pi - Co.T @ Rinv @ Co
        cov = np.linalg.inv(prec)
        mean = cov @ (Pi @ ms[t] - Co.T @ Rinv @ yo)
        S = Co @ cov @ Co.T + Roo
        out[t] = multivariate_normal(Co @ mean, 0.5 * (S + S.T)).logpdf(yo)
    return out


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"y": (chain, draw, time)}``: ``log p(y_t | y_{-t}, theta)`` (module
    docstring)."""
    spec = get_spec(model)
    y = np.asarray(observed_data(model, "y"), dtype=np.float64).reshape(-1, spec.obs_dim)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    out = np.empty((chains, draws, y.shape[0]))
    for c in range(chains):
        for s in range(draws):
            out[c, s] = leave_one_out_log_density(y, *draw_parameters(posterior, spec, c, s))
    return draws_dataset(posterior, model, "y", out, dims=("time",))


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset:
    """``{"y": (chain, draw, time, obs)}`` replicates given each draw's path ``x`` and
    noise."""
    spec = get_spec(model)
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    x = np.asarray(posterior["x"].values, dtype=np.float64)
    out = np.empty((chains, draws, x.shape[2], spec.obs_dim))
    for c in range(chains):
        for s in range(draws):
            _, C, _, R, _, _ = draw_parameters(posterior, spec, c, s)
            noise = rng.standard_normal((x.shape[2], spec.obs_dim)) * np.sqrt(np.diag(R))
            out[c, s] = x[c, s] @ C.T + noise
    return draws_dataset(posterior, model, "y", out, dims=("time", "obs"))
