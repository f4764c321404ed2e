"""What ``fit`` does with the draws once they are made: label-invariant statistics added
to ``posterior``, the labels of a model with exchangeable labels matched across draws
(:func:`inference.relabelling.relabel`), the family's post-processing, the pointwise
``log_likelihood`` group when asked, and the root attributes that say how the result was
made and which variable is which. The raw variables stay in ``posterior`` under their
model names, as PyMC writes them, so PyMC's own functions on the result find them.

:func:`finish_fit` and :func:`record_fit` are ``fit``'s last two steps;
:func:`trim_unfinished` keeps the draws every chain completed before a Ctrl-C.
:func:`lay_out` applies the same layout to draws read back from a trace folder, so ``ppzoo
check TRACE`` scores the statistics ``ppzoo check OUT`` scores.
"""

from __future__ import annotations

import functools
import json
import numbers
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import xarray as xr

from inference.interrupt import stop_requested
from inference.log_likelihood import compute_log_likelihood
from inference.relabelling import relabel
from pp_models.model_info import ZooModelInfo, get_info

__all__ = ["add_derived", "complete", "finish_fit", "lay_out", "plottable", "record_fit",
           "relabel_labels", "trim_unfinished"]

_VERSIONED_PACKAGES = ("pp-models", "pymc", "pytensor", "arviz", "numpy", "numba", "nutpie")


def finish_fit(dt: xr.DataTree, model, info: ZooModelInfo | None, *, postprocess: bool,
               log_likelihood: bool, draws: int, chains: int) -> tuple[xr.DataTree, list[str]]:
    """The derived statistics, the labels matched across draws, the family's
    post-processing and, when asked, the pointwise log-likelihood, added to the draws
    ``fit`` made.

    A Ctrl-C now (or one that ended the sampling: ``pp_models_interrupted``) keeps the
    draws and skips the optional outputs (post-processing, log-likelihood), with a
    ``UserWarning``; chains lost with their workers are named in a
    :class:`~inference.executors.ChainsLost` warning.

    Parameters
    ----------
    dt : xarray.DataTree
        The draws, as the sampler returned them.
    model : pymc.Model
    info : ZooModelInfo or None
        The factory's hints.
    postprocess : bool
        Run the family's ``info.postprocess``.
    log_likelihood : bool
        Add the ``log_likelihood`` group
        (:func:`inference.log_likelihood.compute_log_likelihood`).
    draws, chains : int
        What was asked for (recorded, and named in the warnings).

    Returns
    -------
    tuple
        The DataTree and the names of the derived statistics added.
    """
    with stop_requested() as stop:
        stop.arm()  # there are draws to keep: a Ctrl-C now skips the optional outputs
        interrupted = bool(dt.attrs.get("pp_models_interrupted", 0)) or stop.is_set()
        derived = add_derived(dt, info)
        dt = relabel_labels(dt, info)
        if postprocess and info is not None and info.postprocess is not None:
            if interrupted:
                # the user asked to stop: keep the draws, skip the optional outputs
                dt.attrs["pp_models_postprocess_skipped"] = 1
            else:
                dt = info.postprocess(dt)
                if not dt.attrs.get("pp_models_relabelled", 1):
                    # the allocations are drawn by the post-processing (a marginalised HMM)
                    dt = relabel_labels(dt, info)
        interrupted = interrupted or stop.is_set()
        if log_likelihood and not interrupted:
            compute_log_likelihood(dt, model)
    if dt.attrs.get("pp_models_lost_chains") is not None:
        _warn_lost(dt, chains)
    if interrupted:
        dt.attrs["pp_models_interrupted"] = 1
        dt.attrs["pp_models_draws_requested"] = draws
        warnings.warn(
            "sampling was interrupted (Ctrl-C): the result holds the draws completed "
            f"before it ({dt['posterior'].sizes.get('draw', 0)} per chain); "
            "dt.attrs['pp_models_interrupted'] == 1",
            UserWarning,
            stacklevel=3,
        )
    return dt, derived


def record_fit(dt: xr.DataTree, info: ZooModelInfo | None, derived: list[str], *,
               method: str, chosen: str, sampler: str, assignment: dict, random_seed,
               tempering=None) -> None:
    """Set the root attributes of ``fit``'s result (docs/architecture.md): the method
    asked for and the one used, the sampler, the step of each variable, the seed, the
    package versions, the family, the label-invariant statistics and raw labels, and the
    tempering options (``tempering``, a ``TemperingOptions``)."""
    dt.attrs.update({
        "pp_models_method": chosen,
        "pp_models_requested_method": method,
        "pp_models_sampler": sampler,
        "pp_models_steps": json.dumps(assignment),
        "pp_models_random_seed": json.dumps(_seed_repr(random_seed)),
        "pp_models_versions": json.dumps(dict(_versions())),
        **_layout_attrs(info, derived),
    })
    if tempering is not None:
        dt.attrs["pp_models_tempering"] = json.dumps(
            {"initial_ladder": list(tempering.ladder), "adapt": tempering.adapt,
             "prior_draws": tempering.prior_draws})


def lay_out(dt: xr.DataTree, model) -> xr.DataTree:
    """``dt`` (raw draws of ``model``, e.g. :func:`inference.trace_store.read_trace`)
    with the model's label-invariant statistics added, its labels matched across draws
    and the attributes ``pp_models_family``,
    ``pp_models_label_invariant`` and ``pp_models_label_variables`` set, as ``fit``
    returns them (without the model's post-processing)."""
    info = get_info(model)
    dt = dt.copy()
    derived = add_derived(dt, info)
    dt = relabel_labels(dt, info)
    dt.attrs.update(_layout_attrs(info, derived))
    return dt


def complete(dt: xr.DataTree, model) -> xr.DataTree:
    """A ``pm.sample(model=model)`` result (or any raw draws of a zoo model) laid out as
    ``fit`` lays out its own: the model's label-invariant statistics added to
    ``posterior``, its labels matched across draws (:func:`inference.relabelling.relabel`)
    and the attributes ``inference.summary`` and ``inference.convergence`` read
    (``pp_models_family``, ``pp_models_label_invariant``, ``pp_models_label_variables``).

    Parameters
    ----------
    dt : xarray.DataTree
        With a ``posterior`` group of ``model``'s draws.
    model : pymc.Model
        The model sampled (a model without zoo information gets only the attributes).

    Returns
    -------
    xarray.DataTree
        A copy; ``dt`` is unchanged.
    """
    import pymc as pm

    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    return lay_out(dt, model)


def _layout_attrs(info: ZooModelInfo | None, derived: list[str]) -> dict[str, str]:
    return {
        "pp_models_family": info.family if info else "",
        "pp_models_label_invariant": json.dumps(derived),
        "pp_models_label_variables": json.dumps(list(info.label_variables) if info else []),
    }


def add_derived(dt: xr.DataTree, info: ZooModelInfo | None) -> list[str]:
    """Add the model's label-invariant statistics (``info.derived``) to ``dt``'s
    ``posterior`` (in place); returns the names added. A statistic whose inputs were not
    recorded (``var_names``) is left out."""
    if info is None or not info.derived:
        return []
    posterior = dt["posterior"].to_dataset()
    # a statistic may come from the step's per-draw stats (e.g. computed from counts the
    # step holds) instead of traced variables: offer both, the posterior's names first
    source = posterior
    if "sample_stats" in dt.children:
        stats = dt["sample_stats"].to_dataset()
        extra = {k: v for k, v in stats.data_vars.items() if k not in posterior}
        if extra:
            source = posterior.assign(extra)
    added = {}
    for stat in info.derived:
        try:
            value = stat.function(source)
        except KeyError:
            # A variable the statistic needs was left out of the trace (var_names).
            continue
        value = value.assign_coords(chain=posterior["chain"], draw=posterior["draw"])
        # ArviZ's plots select by coordinate: every dim needs one (as PyMC gives its own)
        value = value.assign_coords({d: np.arange(value.sizes[d]) for d in value.dims
                                     if d not in value.coords})
        if stat.description:
            value.attrs["description"] = stat.description
        added[stat.name] = plottable(value)
    dt["posterior"] = xr.DataTree(posterior.assign(added))
    return list(added)


def plottable(value: xr.DataArray) -> xr.DataArray:
    """``value`` as floats when it is an integer statistic with an element constant over
    every draw (e.g. the number of occupied components): ArviZ's rank plot of a
    constant integer fails (its discrete ECDF needs two distinct values)."""
    if not np.issubdtype(value.dtype, np.integer):
        return value
    flat = np.asarray(value.values).reshape(value.shape[0] * value.shape[1], -1)
    if flat.size and np.any(np.ptp(flat, axis=0) == 0):
        return value.astype(np.float64)
    return value


def relabel_labels(dt: xr.DataTree, info: ZooModelInfo | None) -> xr.DataTree:
    """``dt`` with the labels of a model with exchangeable labels (``info.relabelling``)
    matched across draws and chains (:func:`inference.relabelling.relabel`); others as they
    are. The raw variables stay in ``posterior``."""
    if info is None or info.relabelling is None:
        return dt
    return relabel(dt, relabelling=info.relabelling)


def trim_unfinished(dt: xr.DataTree) -> xr.DataTree:
    """Keep, in every chain that made any, the draws all those chains completed.

    A draw counts as not made when every floating-point posterior variable is NaN in it
    (no real draw is NaN throughout); chains without a single draw are dropped. Records
    ``pp_models_draws_completed`` per chain.
    """
    posterior = dt["posterior"].to_dataset()
    floats = [v for v in posterior.data_vars.values()
              if np.issubdtype(v.dtype, np.floating) and {"chain", "draw"} <= set(v.dims)]
    if not floats:
        return dt
    made = None
    for v in floats:
        other = [d for d in v.dims if d not in ("chain", "draw")]
        ok = ~np.isnan(v).all(other) if other else ~np.isnan(v)
        made = ok if made is None else (made | ok)
    made = made.transpose("chain", "draw").values
    # completed draws: those before the first draw not made
    completed = np.where(made.all(1), made.shape[1], np.argmin(made, axis=1))
    dt.attrs["pp_models_draws_completed"] = [int(c) for c in completed]
    keep = np.flatnonzero(completed > 0)
    if keep.size == made.shape[0] and completed.min() == made.shape[1]:
        return dt
    length = int(completed[keep].min()) if keep.size else 0
    out = dt.copy()
    for name, node in dt.children.items():
        ds = node.to_dataset()
        if "chain" in ds.dims and "draw" in ds.dims:
            ds = ds.isel(chain=keep, draw=slice(0, length))
            out[name] = xr.DataTree(ds.assign_coords(chain=np.arange(keep.size)))
    return out


def _warn_lost(dt: xr.DataTree, chains: int) -> None:
    from inference.executors import ChainsLost

    lost = [int(c) for c in dt.attrs["pp_models_lost_chains"]]
    reasons = list(dt.attrs.get("pp_models_lost_reasons", [""] * len(lost)))
    kept = dt["posterior"].sizes.get("chain", 0)
    what = "; ".join(f"chain {c}: {why}" for c, why in zip(lost, reasons))
    warnings.warn(
        f"{len(lost)} of {chains} chains lost with their workers ({what}); the result holds "
        f"the draws of the {kept} other chains (dt.attrs['pp_models_lost_chains'])",
        ChainsLost, stacklevel=4)


def _seed_repr(seed):
    if seed is None or isinstance(seed, numbers.Integral):
        return None if seed is None else int(seed)
    if isinstance(seed, Sequence):
        return [int(s) for s in seed]
    return repr(seed)


@functools.cache
def _versions() -> dict[str, str]:
    out = {}
    for pkg in _VERSIONED_PACKAGES:
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            continue
    return out
