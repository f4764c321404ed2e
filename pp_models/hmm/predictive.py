"""The HMM's pointwise log-likelihood for LOO and its posterior predictive replicates.

The pointwise term of observation ``t`` is its conditional predictive density given the
rest of the series, the path summed out::

    log p(y_t | y_{-t}, theta) = log p(y | theta) - log p(y_{-t} | theta)
                               = -log sum_k gamma_t(k) / p(y_t | s_t = k)

(``gamma_t`` the smoothed marginals: ``p(s_t = k | y_{-t}) ∝ gamma_t(k) / p(y_t | k)``).
The observations of a series are not exchangeable; this term is the one leave-one-out
asks for (the rest of the series held, ``y_t`` predicted), not the one-step-ahead
``log p(y_t | y_{1:t-1})``. Replicates draw ``y`` given each draw's path ``z`` and
emission parameters.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from custom_ops.hmm.forward_backward import forward_backward_kernel
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.model import get_spec
from pp_models.hmm.outputs import draw_parameters
from pp_models.model_info import draws_dataset, observed_data

__all__ = ["pointwise_log_likelihood", "posterior_predictive"]


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"y": (chain, draw, time)}``: ``log p(y_t | y_{-t}, theta)`` (module docstring)."""
    spec = get_spec(model)
    emission = get_emission(spec.emission)
    y = emission.check(observed_data(model, "y"))
    params = draw_parameters(posterior, spec)
    chains, draws = params["pi0"].shape[:2]
    out = np.empty((chains, draws, y.shape[0]))
    with np.errstate(divide="ignore"):
        for c in range(chains):
            log_lik = emission.log_lik({n: params[n][c] for n in emission.parameters}, y)
            for s in range(draws):
                ll = np.ascontiguousarray(log_lik[s])
                gamma = forward_backward_kernel(
                    np.log(params["pi0"][c, s]), np.log(params["P"][c, s]), ll, spec.offsets
                )[1]
                out[c, s] = -logsumexp(np.log(gamma) - ll, axis=1)
    return draws_dataset(posterior, model, "y", out, dims=("time",))


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset:
    """``{"y": (chain, draw, time)}`` replicates given each draw's path and emission
    parameters."""
    spec = get_spec(model)
    emission = get_emission(spec.emission)
    params = draw_parameters(posterior, spec)
    z = np.asarray(posterior["z"].values)
    chains, draws = z.shape[:2]
    out = np.empty(z.shape)
    for c in range(chains):
        for s in range(draws):
            out[c, s] = emission.draw(
                rng, {n: params[n][c, s] for n in emission.parameters}, z[c, s]
            )
    return draws_dataset(posterior, model, "y", out, dims=("time",))
