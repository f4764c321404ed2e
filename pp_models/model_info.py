"""What a zoo factory tells the inference layer about the model it built.

A factory returns a plain :class:`pymc.Model`; the extra knowledge a generic PPL cannot
infer (which Gibbs step suits a variable, which statistics are label-invariant, which
method works best) travels with the model as a :class:`ZooModelInfo` attached by
:func:`attach_info`. ``pp_models`` never imports ``inference``: steps are named by their
registry key (a string) and resolved by ``inference.gibbs.registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pymc as pm
import xarray as xr

from pp_models.step_assignment import register_zoo_steps
from pp_models.validation import check_model
from pp_models.zoo_models import get_info, remember_info, zoo_model_of

__all__ = [
    "LABELS_GROUP",
    "DerivedStatistic",
    "Relabelling",
    "StepHint",
    "ZooModelInfo",
    "attach_info",
    "draws_dataset",
    "get_info",
    "observed_data",
    "posterior_with_labels",
    "row_dim",
    "weights_sorted",
    "zoo_model_of",
]

@dataclass(frozen=True)
class StepHint:
    """Ask for a registered step for some free variables.

    Parameters
    ----------
    step : str
        Registry key of the step (``inference.gibbs.registry.get_step``), e.g.
        ``"categorical_gibbs"``, or one of PyMC's ``"nuts"``, ``"slice"``,
        ``"metropolis"``.
    var_names : tuple of str
        Names of the model's random variables the step updates (as one block).
    options : mapping, or callable ``model -> mapping``
        Keyword options for the step's ``from_model`` constructor. Options holding
        symbolic PyTensor expressions should be given as a callable that builds them
        from the model it is handed (``model["w"]``, ``model["X"]``, ...): ``fit`` and the
        testing tools may hand it a copy of the model (e.g. with the data variables
        free), and expressions must refer to that copy's variables.
    """

    step: str
    var_names: tuple[str, ...]
    options: Mapping[str, Any] | Callable[[pm.Model], Mapping[str, Any]] = field(
        default_factory=dict
    )


@dataclass(frozen=True)
class DerivedStatistic:
    """A label-invariant statistic computed from the posterior after sampling.

    ``function`` maps the posterior ``xarray.Dataset`` (dims ``chain, draw, ...``) to a
    ``DataArray`` with dims starting ``chain, draw``. Convergence diagnostics are
    reported on these instead of on unidentified labels.
    """

    name: str
    function: Callable[[xr.Dataset], xr.DataArray]
    description: str = ""


@dataclass(frozen=True)
class Relabelling:
    """How the labels of a model with exchangeable labels are matched across draws
    (``inference.relabel``: the ECR algorithm, Papastamoulis & Iliopoulos 2010).

    Parameters
    ----------
    label_dim : str
        The dimension the labels run along (``"component"``, ``"topic"``, ...): every
        posterior variable with it is permuted along it.
    allocations : str
        The variable that says which unit (observation, document, row) has which label:
        ``kind="labels"``, integer labels ``(chain, draw, unit)``; ``"memberships"``,
        a binary matrix ``(chain, draw, ..., label_dim)``; ``"proportions"``, rows of
        label probabilities ``(chain, draw, ..., label_dim)`` (LDA's ``theta``).
    kind : str
        ``"labels"``, ``"memberships"`` or ``"proportions"``.
    label_valued : tuple of str
        Variables whose values are labels (the assignments ``z``): relabelled by value.
    also_dims : tuple of str
        Other dimensions that run over the same labels, permuted like ``label_dim`` (an
        HMM's transition matrix ``P[state, state_to]``: its rows and its columns).
    """

    label_dim: str
    allocations: str
    kind: str = "labels"
    label_valued: tuple[str, ...] = ()
    also_dims: tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in ("labels", "memberships", "proportions"):
            raise ValueError("kind must be 'labels', 'memberships' or 'proportions', "
                             f"got {self.kind!r}")


@dataclass(frozen=True)
class ZooModelInfo:
    """Inference-relevant facts about a model built by a zoo factory.

    Parameters
    ----------
    family : str
        Model family, e.g. ``"finite_mixture"``: its :class:`~pp_models.registry.Family`
        record's ``name``. A zoo factory passes
        ``pp_models.registry.family_of_module(__name__)`` rather than typing it.
    preferred_method : str
        What ``fit(method="auto")`` uses: ``"nuts"``, ``"gibbs"`` or ``"advi"``.
    step_hints : tuple of StepHint
        Steps the factory knows suit some variables better than automatic assignment.
    derived : tuple of DerivedStatistic
        Label-invariant statistics added to the posterior after sampling.
    label_variables : tuple of str
        Variables whose raw values are not identified (component labels, feature
        order); summaries leave them out of R-hat / ESS.
    trace_var_names : tuple of str, optional
        Variables ``fit`` records by default (PyMC's ``var_names``), for models whose
        full state is too big to keep per draw (LDA's token topics); ``None`` records
        everything. A user's own ``var_names`` wins.
    postprocess : callable ``DataTree -> DataTree``, optional
        Outputs without a (chain, draw) shape that ``fit`` adds after sampling (a
        co-clustering matrix, a point-estimate partition, a predictive density on a
        grid); ``fit(..., postprocess=False)`` skips it.
    notes : str
        One line a user sees in the fitted data's attributes.
    continuous_form : str
        For a model with discrete free variables whose factory can also build an
        all-continuous form (for NUTS and ADVI): the factory option that does, as the
        user writes it, e.g. ``"truncation=T (truncated stick-breaking, T components)"``;
        ``fit`` names it when asked for NUTS or ADVI on this model.
    relabelling : Relabelling, optional
        For a model with exchangeable labels: how ``fit`` matches them across draws
        (``inference.relabel``), so the raw variables are identified in ``posterior``.
    """

    family: str
    preferred_method: str = "nuts"
    step_hints: tuple[StepHint, ...] = ()
    derived: tuple[DerivedStatistic, ...] = ()
    label_variables: tuple[str, ...] = ()
    trace_var_names: tuple[str, ...] | None = None
    postprocess: Callable[[xr.DataTree], xr.DataTree] | None = None
    notes: str = ""
    continuous_form: str = ""
    relabelling: Relabelling | None = None


def attach_info(model: pm.Model, info: ZooModelInfo) -> pm.Model:
    """Attach ``info`` to ``model`` (in place) and return the model."""
    check_model(model)
    if not isinstance(info, ZooModelInfo):
        raise TypeError(f"info must be a ZooModelInfo, got {type(info).__name__}")
    remember_info(model, info)
    # the first zoo model registers the zoo with PyMC's step assignment, so pm.sample
    # uses the zoo's steps (or warns that they are not loaded); later ones find it there
    register_zoo_steps()
    return model


def observed_data(model: pm.Model, name: str) -> np.ndarray:
    """The values observed for the variable ``name`` of ``model`` (a constant or
    ``pm.Data``)."""
    data = model.rvs_to_values[model[name]]
    return np.asarray(data.get_value() if hasattr(data, "get_value") else data.data)


def draws_dataset(posterior: xr.Dataset, model: pm.Model, name: str, values,
                  dims=None) -> xr.Dataset:
    """``{name: values}`` with dims ``(chain, draw, *dims)`` and the posterior's chain and
    draw coordinates; ``dims`` default to the model's dims of ``name`` (named
    ``<name>_dim_<i>`` when it has none), with the model's coordinates where it has them
    (as PyMC lays out its own draws)."""
    values = np.asarray(values)
    if dims is None:
        dims = model.named_vars_to_dims.get(name) or tuple(
            f"{name}_dim_{i}" for i in range(values.ndim - 2))
    coords = {"chain": posterior["chain"].values, "draw": posterior["draw"].values}
    for d, size in zip(dims, values.shape[2:], strict=True):
        known = model.coords.get(d)
        coords[d] = (np.asarray(known) if known is not None and len(known) == size
                     else np.arange(size))
    return xr.Dataset({name: (("chain", "draw", *dims), values)}, coords=coords)


def row_dim(model: pm.Model, name: str) -> str:
    """The dimension of the observed variable ``name`` that indexes its observations
    (its first: the model's name for it, or PyMC's ``<name>_dim_0``)."""
    dims = model.named_vars_to_dims.get(name)
    return dims[0] if dims else f"{name}_dim_0"


def weights_sorted(posterior: xr.Dataset, name: str = "w") -> xr.DataArray:
    """Mixture weights ``posterior[name]`` (chain, draw, K) in decreasing order: a
    label-invariant :class:`DerivedStatistic` function shared by the mixture families."""
    w = posterior[name].values
    return xr.DataArray(-np.sort(-w, axis=-1), dims=("chain", "draw", "by_size"))


#: The DataTree group into which ``inference.fit`` used to move a zoo model's
#: ``label_variables``; ``fit`` now relabels them and keeps them in ``posterior``.
#: Results written before, and AD-LDA's, may still hold it.
LABELS_GROUP = "posterior_labels"


def posterior_with_labels(dt: xr.DataTree) -> xr.Dataset:
    """The ``posterior`` group of a fitted DataTree, with the variables of a
    ``posterior_labels`` group (results written before labels were kept in
    ``posterior``) joined to it."""
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group (from fit)")
    posterior = dt["posterior"].to_dataset()
    if LABELS_GROUP in dt.children:
        posterior = posterior.assign(dt[LABELS_GROUP].to_dataset().data_vars)
    return posterior


#: The DataTree groups into which :func:`per_chain_moments` moves labelled variables:
#: their posterior mean and standard deviation over the draws of each chain.
MEAN_GROUP = "posterior_mean"
SD_GROUP = "posterior_sd"


def per_chain_moments(dt: xr.DataTree, names) -> xr.DataTree:
    """A copy of ``dt`` whose labelled variables ``names`` are kept only as their mean and
    standard deviation over each chain's draws (groups ``posterior_mean`` and
    ``posterior_sd``, dims ``(chain, ...)``), not per draw.

    Labels switch between chains but rarely within one (LDA's topics), so a chain's mean
    is an answer where the mean over chains mixes labels; the result's size is then
    independent of the number of draws.
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise ValueError("dt has no 'posterior' group to summarise")
    group = LABELS_GROUP if LABELS_GROUP in dt.children else "posterior"
    labels = dt[group].to_dataset()
    missing = [n for n in names if n not in labels]
    if missing:
        raise ValueError(f"dt's {group!r} has no variable(s) {missing}")
    out = dt.copy()
    chosen = labels[list(names)]
    out[MEAN_GROUP] = xr.DataTree(chosen.mean("draw", keep_attrs=True))
    out[SD_GROUP] = xr.DataTree(chosen.std("draw", keep_attrs=True))
    rest = labels.drop_vars(list(names))
    used = {d for v in rest.data_vars.values() for d in v.dims} | {"chain", "draw"}
    # coordinates of dimensions only the summarised variables had would show as empty
    rest = rest.drop_vars([c for c in rest.coords if not set(rest[c].dims) <= used])
    if rest.data_vars or group == "posterior":
        out[group] = xr.DataTree(rest)
    else:
        del out[group]
    return out
