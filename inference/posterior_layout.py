"""Where ``fit`` puts what it adds to the draws: label-invariant statistics in
``posterior``, raw labels in ``posterior_labels``, and the root attributes that say which
is which.

:func:`lay_out` applies the same to draws read back from a trace folder, so ``ppzoo
check TRACE`` scores the statistics ``ppzoo check OUT`` scores.
"""

from __future__ import annotations

import json

import numpy as np
import xarray as xr

from pp_models.model_info import LABELS_GROUP, ZooModelInfo, get_info

__all__ = ["add_derived", "lay_out", "move_labels", "plottable"]


def lay_out(dt: xr.DataTree, model) -> xr.DataTree:
    """``dt`` (raw draws of ``model``, e.g. :func:`inference.trace_store.read_trace`)
    with the model's label-invariant statistics added, its raw labels moved to
    ``posterior_labels`` and the attributes ``pp_models_family``,
    ``pp_models_label_invariant`` and ``pp_models_label_variables`` set, as ``fit``
    returns them (without the model's post-processing)."""
    info = get_info(model)
    dt = dt.copy()
    derived = add_derived(dt, info)
    move_labels(dt, info)
    dt.attrs.update({
        "pp_models_family": info.family if info else "",
        "pp_models_label_invariant": json.dumps(derived),
        "pp_models_label_variables": json.dumps(list(info.label_variables) if info else []),
    })
    return dt


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


def move_labels(dt: xr.DataTree, info: ZooModelInfo | None) -> None:
    """Move the model's raw labelled variables from ``posterior`` to ``posterior_labels``.

    ArviZ summarises and plots the ``posterior`` group by default; there the labels'
    R-hat looks like a failed fit (chains visit different permutations) and LDA's are
    tens of thousands of rows. They stay in the result, one group over
    (:func:`pp_models.model_info.posterior_with_labels` joins the two).
    """
    if info is None or not info.label_variables:
        return
    posterior = dt["posterior"].to_dataset()
    moved = [v for v in info.label_variables if v in posterior.data_vars]
    if not moved:
        return
    labels = posterior[moved]
    kept = posterior.drop_vars(moved)
    used = {d for v in kept.data_vars.values() for d in v.dims} | {"chain", "draw"}
    # coordinates of dimensions only the labels had would show as empty dims
    kept = kept.drop_vars([c for c in kept.coords if not set(kept[c].dims) <= used])
    dt["posterior"] = xr.DataTree(kept)
    dt[LABELS_GROUP] = xr.DataTree(labels)
