"""LDA's pointwise log-likelihood (for LOO) and posterior predictive draws
(``inference.log_likelihood``, ``inference.predictive``).

Collapsed model, per token ``i`` at each posterior draw of the topics ``z``:

- pointwise log-likelihood: the conditional predictive ``log p(w_i | z_{-i}, w_{-i})``,
  token ``i``'s topic summed out under its document's proportions given the other
  tokens and the topics' word distributions integrated out
  (:func:`custom_ops.lda.predictive.loo_log_predictive`);
- posterior predictive: each topic's word distribution drawn from its posterior given
  the draw's topics, then a word for every token from its topic's distribution
  (:func:`custom_ops.lda.predictive.replicate_words`; the collapsed ``w``'s own forward
  draw takes the word distributions from their prior).

Both need ``z`` per draw, which the collapsed model does not record by default:
``fit(..., log_likelihood=True)`` records it; otherwise ``fit(..., var_names=["z", ...])``.
The explicit model (``collapsed=False``) gets PyMC's own: each document's counts given
``theta_d`` and ``phi`` (``None`` here).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.lda.predictive import loo_log_predictive, replicate_words
from pp_models.lda.model import CollapsedStepOptions
from pp_models.model_info import draws_dataset, get_info, observed_data

__all__ = ["pointwise_log_likelihood", "posterior_predictive"]


def _collapsed(model, posterior):
    """The collapsed model's step options, words and draws of z; None when explicit."""
    options = [h.options for h in get_info(model).step_hints
               if isinstance(h.options, CollapsedStepOptions)]
    if not options:
        return None
    if "z" not in posterior.data_vars:
        raise ValueError("the posterior has no token topics 'z', which LDA's pointwise "
                         "log-likelihood and replicates need: fit with log_likelihood=True "
                         "or var_names including 'z'")
    z = np.asarray(posterior["z"].values, dtype=np.int64)
    words = np.ascontiguousarray(observed_data(model, "w"), dtype=np.int64)
    return options[0], words, z.reshape(-1, z.shape[-1])


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset | None:
    """``{"w": (chain, draw, token)}``: each token's conditional predictive."""
    found = _collapsed(model, posterior)
    if found is None:
        return None
    opts, words, z = found
    doc_ptr = np.ascontiguousarray(opts.doc_ptr, dtype=np.int64)
    alpha = np.ascontiguousarray(opts.alpha, dtype=np.float64)
    eta = np.ascontiguousarray(opts.eta, dtype=np.float64)
    out = np.empty(z.shape)
    for s in range(z.shape[0]):
        loo_log_predictive(words, doc_ptr, np.ascontiguousarray(z[s]), opts.n_words,
                           opts.n_topics, alpha, eta, out[s])
    return draws_dataset(posterior, model, "w",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1))


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset | None:
    """``{"w": (chain, draw, token)}``: replicated words, one per token and draw."""
    found = _collapsed(model, posterior)
    if found is None:
        return None
    opts, words, z = found
    doc_ptr = np.ascontiguousarray(opts.doc_ptr, dtype=np.int64)
    eta = np.ascontiguousarray(opts.eta, dtype=np.float64)
    out = np.empty(z.shape, dtype=np.int64)
    for s in range(z.shape[0]):
        replicate_words(rng, words, doc_ptr, np.ascontiguousarray(z[s]), opts.n_words,
                        opts.n_topics, eta, out[s])
    return draws_dataset(posterior, model, "w",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], -1))
