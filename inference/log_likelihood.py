"""Pointwise log-likelihood of a fit's draws: the ``log_likelihood`` group that
``az.loo`` and ``az.compare`` read.

PSIS-LOO (Vehtari, Gelman & Gabry 2017) needs, for every posterior draw ``theta^s`` and
every observation ``i``, a term ``log p(y_i | theta^s, ...)`` whose inverse, averaged over
the posterior, is ``1 / p(y_i | y_{-i})``. PyMC's :func:`pymc.compute_log_likelihood`
evaluates the observed variables' elementwise ``logp`` at the posterior draws, which is
such a term when the observations are independent given the sampled variables. Several
zoo models integrate parameters out (the collapsed DP mixture, LDA, mixtures of trees,
the diffusion tree, BHC) or sample a latent variable per observation (the mixtures'
labels, the factor scores): their observed variable's ``logp`` is one joint number, or a
term conditional on observation ``i``'s own latent variable. :func:`compute_log_likelihood`
therefore gives, per family (each family's module says which and how):

- the **conditional predictive** ``log p(x_i | z_{-i}, X_{-i}, ...)`` with ``x_i``'s own
  label summed out under its conditional prior, for the collapsed models: DP mixture
  (CRP form, conjugate likelihoods), LDA (collapsed; per token), mixtures of trees, the
  Pitman-Yor diffusion tree (per row, the internal locations integrated out) and BHC
  (per row, under the fixed tree). The identity ``E_post[1 / p(x_i | z_{-i}, X_{-i},
  ...)] = 1 / p(x_i | X_{-i})`` holds because ``p(z_{-i}, ... | X)`` is ``p(z_{-i}, ... |
  X_{-i})`` reweighted by that term;
- the **mixture density** with the per-observation latent variable summed out for the
  models that sample parameters: the finite mixture (``log sum_k w_k N(x_i | mu_k,
  sigma_k)``), the stick-breaking DP mixture, IBP factor analysis (``log N(y_n | 0, G G^T
  + Psi)``, the factor scores integrated out);
- the row given its own sampled latent variables for the infinite overlapping mixture
  (its memberships: summing them out is a sum over every subset of the clusters);
- PyMC's own elementwise ``logp`` otherwise (the GGM's rows given ``Omega``, the explicit
  LDA's documents, the non-conjugate DP mixture's rows given their cluster's
  parameters, any model not built by a zoo factory).

Each family's function takes the posterior with its raw labels
(:func:`pp_models.model_info.posterior_with_labels`) and the model, and returns one array
``(chain, draw, observation)`` per observed variable; it lives in the family's
``predictive`` module (``Family.pointwise_log_likelihood`` of its
:class:`pp_models.registry.Family`).
"""

from __future__ import annotations

import xarray as xr

from pp_models.model_info import get_info, posterior_with_labels
from pp_models.registry import family_of_model
from pp_models.validation import check_model

__all__ = ["PYMC_POINTWISE", "compute_log_likelihood", "needed_for_log_likelihood"]

#: ``attrs["pp_models_pointwise"]`` of a ``log_likelihood`` group that is PyMC's own
#: elementwise ``logp`` (what ``pm.compute_log_likelihood`` gives on the same draws)
PYMC_POINTWISE = "PyMC's elementwise logp"

def needed_for_log_likelihood(model, var_names):
    """``var_names`` (``fit``'s, ``None`` for the model's default) with the variables the
    pointwise log-likelihood of ``model`` needs added (collapsed LDA: the token topics
    ``z``, which it does not record by default)."""
    info = get_info(model)
    family = family_of_model(model)
    needed = family.log_likelihood_needs if family is not None else ()
    needed = [v for v in needed if v in model.named_vars]
    if not needed:
        return var_names
    if var_names is None:
        if info.trace_var_names is None:
            return None  # everything is recorded
        var_names = list(info.trace_var_names)
    return list(var_names) + [v for v in needed if v not in var_names]


def compute_log_likelihood(dt: xr.DataTree, model, *, extend_inferencedata: bool = True):
    """The pointwise log-likelihood of ``dt`` (a ``fit`` result of ``model``), as the
    ``log_likelihood`` group ``az.loo`` and ``az.compare`` read.

    The zoo's counterpart of :func:`pymc.compute_log_likelihood`, for ``fit`` results
    (and older results that kept raw labels in a ``posterior_labels`` group): for the
    zoo's families it computes the per-observation term each needs (module docstring: the
    conditional predictive for collapsed models, the mixture density with the
    per-observation latent variable summed out otherwise); any other model gets PyMC's
    elementwise ``logp``. ``fit(..., log_likelihood=True)`` calls it.

    Parameters
    ----------
    dt : xarray.DataTree
        What ``inference.fit`` returned for ``model`` (or any DataTree with a posterior).
    model : pymc.Model
        The model that was fitted.
    extend_inferencedata : bool
        Add the group to ``dt`` (in place) and return ``dt``; otherwise return the
        group's Dataset.

    Returns
    -------
    xarray.DataTree or xarray.Dataset
        One variable per observed variable, named after it, dims ``(chain, draw,
        observation)``.

    Raises
    ------
    ValueError
        When a variable the terms need was not recorded (``var_names``), naming it.
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group (from fit)")
    check_model(model)
    posterior = posterior_with_labels(dt)
    result = None
    family = family_of_model(model)
    hook = family.pointwise_log_likelihood if family is not None else None
    if hook is not None:
        result = hook(posterior, model)
    if result is None:
        result = _pymc_elementwise(posterior, model)
        result.attrs["pp_models_pointwise"] = PYMC_POINTWISE
    else:
        result.attrs["pp_models_pointwise"] = f"{family.name}: see {hook.__module__}"
    if extend_inferencedata:
        dt["log_likelihood"] = xr.DataTree(result)
        return dt
    return result


def _pymc_elementwise(posterior: xr.Dataset, model) -> xr.Dataset:
    import pymc as pm

    free = [rv.name for rv in model.free_RVs]
    missing = [v for v in free if v not in posterior.data_vars]
    if missing:
        raise ValueError(f"the posterior lacks {', '.join(missing)}, which the "
                         "log-likelihood needs: fit again with var_names including them")
    tree = xr.DataTree.from_dict({"posterior": posterior[free]})
    return pm.compute_log_likelihood(tree, model=model, extend_inferencedata=False,
                                     progressbar=False)
