"""Posterior predictive draws of a fit's result: ``sample_posterior_predictive``.

:func:`pymc.sample_posterior_predictive` forward-samples a model's observed variables
at the posterior draws of the variables it finds in the ``posterior`` group and samples
the ones it does not find from their prior. ``fit`` keeps every variable there (the
labelled ones relabelled), so PyMC finds them; but for the zoo's collapsed models it
would be wrong: their observed variable's forward draw samples the integrated-out
parameters (cluster means, topics, CPTs, internal node locations) from their *prior*,
so there it raises ``custom_ops.pymc_guard.CollapsedLikelihoodError`` naming this
module's function.

:func:`sample_posterior_predictive` gives the posterior predictive of every family: one
replicate of the observed data per posterior draw, of the same units (rows, tokens),
conditional on the latent variables the fit sampled (labels, factor scores, trees) and
with any integrated-out parameter drawn from its conditional posterior given them and the
data. The family's ``predictive`` module does that where PyMC cannot
(``Family.posterior_predictive`` of its :class:`pp_models.registry.Family`); otherwise
PyMC's own function runs on the posterior with the labels joined (finite mixture, GGM,
IBP factor analysis, the non-conjugate DP mixture, the explicit LDA, models not built by
a zoo factory).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pp_models.model_info import posterior_with_labels
from pp_models.registry import family_of_model
from pp_models.validation import check_model, rng_from_seed

__all__ = ["sample_posterior_predictive"]

def sample_posterior_predictive(dt: xr.DataTree, model, *, random_seed=None,
                                extend_inferencedata: bool = False,
                                progressbar: bool = False) -> xr.DataTree:
    """One replicate of the observed data per posterior draw of ``dt``.

    The zoo's counterpart of :func:`pymc.sample_posterior_predictive`, for ``fit``
    results (module docstring: where the labels are, and why collapsed models need their
    parameters drawn from the posterior). Every draw is used; thin ``dt`` first
    (``dt.isel(draw=slice(None, None, 10))``) for fewer.

    Parameters
    ----------
    dt : xarray.DataTree
        What ``inference.fit`` returned for ``model``.
    model : pymc.Model
        The model that was fitted.
    random_seed : int, sequence of int or numpy Generator, optional
    extend_inferencedata : bool
        Add the ``posterior_predictive`` group (and ``observed_data`` if missing) to
        ``dt`` in place and return ``dt``.
    progressbar : bool
        PyMC's progress bar, where PyMC draws.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior_predictive`` (each observed variable, dims ``(chain, draw,
        ...)`` as the data) and ``observed_data``.
    """
    import pymc as pm

    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group (from fit)")
    check_model(model)
    rng = rng_from_seed(random_seed, "random_seed")
    posterior = posterior_with_labels(dt)
    draws = observed = None
    family = family_of_model(model)
    hook = family.posterior_predictive if family is not None else None
    if hook is not None:
        # the family's function: (posterior, model, rng) -> Dataset, (Dataset, observed
        # data) for a model without observed variables (BHC's data enter through a
        # potential), or None where PyMC's forward draw is right for that form
        draws = hook(posterior, model, rng)
        if isinstance(draws, tuple):
            draws, observed = draws
    if draws is None:
        free = [rv.name for rv in model.free_RVs]
        missing = [v for v in free if v not in posterior.data_vars]
        if missing:
            raise ValueError(f"the posterior lacks {', '.join(missing)}, which the "
                             "replicates are drawn from: fit again with var_names "
                             "including them")
        tree = xr.DataTree.from_dict({"posterior": posterior[free]})
        out = pm.sample_posterior_predictive(
            tree, model=model, random_seed=rng, progressbar=progressbar,
            extend_inferencedata=False)
        draws = out["posterior_predictive"].to_dataset()
    if observed is None:
        observed = _observed_data(dt, model)
    if extend_inferencedata:
        dt["posterior_predictive"] = xr.DataTree(draws)
        if "observed_data" not in dt.children:
            dt["observed_data"] = xr.DataTree(observed)
        return dt
    return xr.DataTree.from_dict({"posterior_predictive": draws, "observed_data": observed})


def _observed_data(dt: xr.DataTree, model) -> xr.Dataset:
    if "observed_data" in dt.children:
        return dt["observed_data"].to_dataset()
    values = {}
    for rv in model.observed_RVs:
        data = model.rvs_to_values[rv]
        value = data.get_value() if hasattr(data, "get_value") else getattr(data, "data", None)
        if value is not None:
            values[rv.name] = (model.named_vars_to_dims.get(rv.name)
                               or tuple(f"{rv.name}_dim_{i}" for i in range(np.ndim(value))),
                               np.asarray(value))
    return xr.Dataset(values)
