"""The mixture of trees' pointwise log-likelihood (for LOO) and posterior predictive
draws (``inference.log_likelihood``, ``inference.predictive``), at each posterior draw of
``w``, ``trees`` and ``z``:

- pointwise log-likelihood of row ``i``: the conditional predictive
  ``log sum_k w_k p(x_i | rows of k but i, T_k)``, its assignment summed out under the
  weights and each component's parameters (CPTs, or the Gaussian's) integrated out
  given its other rows (:mod:`custom_ops.mixture_of_trees.predictive`);
- posterior predictive: a replicate of every row from its component's tree, the
  component's parameters drawn from their posterior given its rows (the collapsed
  ``X``'s own forward draw takes them from the prior).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.mixture_of_trees.gaussian import NIWPrior
from custom_ops.mixture_of_trees.predictive import (
    gaussian_loo_log_predictive,
    gaussian_replicate_rows,
    loo_log_predictive,
    replicate_rows,
)
from pp_models.mixture_of_trees.model import GAUSSIAN_STEP_NAME, STEP_NAME
from pp_models.model_info import draws_dataset, get_info, observed_data, row_dim

__all__ = ["pointwise_log_likelihood", "posterior_predictive"]


def _inputs(posterior, model):
    hint = next(h for h in get_info(model).step_hints
                if h.step in (STEP_NAME, GAUSSIAN_STEP_NAME))
    for name in ("w", "trees", "z"):
        if name not in posterior.data_vars:
            raise ValueError(f"the posterior lacks {name!r}, which the mixture of trees' "
                             "pointwise log-likelihood and replicates need")

    def flat(name, dtype):
        values = np.asarray(posterior[name].values, dtype=dtype)
        return values.reshape(-1, *values.shape[2:])

    data = observed_data(model, "X")
    return (hint.step == GAUSSIAN_STEP_NAME, dict(hint.options), data, flat("w", np.float64),
            flat("trees", np.int64), flat("z", np.int64))


def _niw_prior(opts):
    """The Gaussian step's hyperparameters as the kernels take them."""
    return NIWPrior(np.asarray(opts["m0"], dtype=np.float64), float(opts["kappa0"]),
                    float(opts["delta"]), np.asarray(opts["S0"], dtype=np.float64))


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, obs)}``: each row's conditional predictive."""
    gaussian, opts, data, w, trees, z = _inputs(posterior, model)
    out = np.empty(z.shape)
    with np.errstate(divide="ignore"):
        log_w = np.log(w)
    for s in range(z.shape[0]):
        if gaussian:
            gaussian_loo_log_predictive(
                np.ascontiguousarray(data, dtype=np.float64), z[s], trees[s], log_w[s],
                _niw_prior(opts), out[s])
        else:
            loo_log_predictive(np.ascontiguousarray(data, dtype=np.int64), z[s], trees[s],
                               log_w[s], np.asarray(opts["n_categories"], dtype=np.int64),
                               float(opts["ess"]), out[s])
    return draws_dataset(posterior, model, "X",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1),
                         dims=(row_dim(model, "X"),))


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset:
    """``{"X": (chain, draw, obs, node)}``: one replicate of every row per draw."""
    gaussian, opts, data, _w, trees, z = _inputs(posterior, model)
    out = np.empty((z.shape[0], *data.shape), dtype=np.float64 if gaussian else np.int64)
    for s in range(z.shape[0]):
        if gaussian:
            gaussian_replicate_rows(rng, np.ascontiguousarray(data, dtype=np.float64), z[s],
                                    trees[s], _niw_prior(opts), out[s])
        else:
            replicate_rows(rng, np.ascontiguousarray(data, dtype=np.int64), z[s], trees[s],
                           np.asarray(opts["n_categories"], dtype=np.int64),
                           float(opts["ess"]), out[s])
    return draws_dataset(posterior, model, "X", out.reshape(
        posterior.sizes["chain"], posterior.sizes["draw"], *data.shape))
