"""What ``fit``'s two sampler drivers share, and where the line between them runs.

``fit`` samples a model by one of two drivers:

- **the zoo's chain loop** (:mod:`inference.chains`, :func:`~inference.chains.sample_gibbs`),
  when every free variable is updated by a zoo Gibbs step (tempered runs included: the
  tempering driver is such a step). It owns: setting each chain's steps up
  (``setup_chain`` with the chain's own generator), running the chains (in turn, in
  forked workers after one compiling draw, or as tasks of an executor), storing and
  restoring every step's state (``chain_state``, :mod:`inference.step_state`) so a
  resumed chain continues exactly, and building the DataTree from its arrays;
- **PyMC's** ``pm.sample`` (:mod:`inference.mcmc`, with the per-draw callback of
  :mod:`inference.pymc_callback`; :mod:`inference.executors` for chains on an
  executor), for everything else: NUTS and PyMC's own steps. PyMC owns assigning and
  initialising its steps (NUTS's ``init``), its chain loop and progress table, and its
  DataTree; a resumed chain restarts from the stored point and adapts again.

Both drivers do the rest the same way, through this module:

- the per-model cache of compiled functions and built steps (:func:`model_cache`) and
  the model's initial point (:func:`initial_point`, :func:`initial_point_fn`);
- each chain's ``initvals`` (:func:`per_chain_initvals`: one dict for every chain or
  one per chain, as ``pm.sample`` takes them);
- the kept draws and statistics of a chain in arrays grown by doubling
  (:func:`store_row`, :func:`merged_stats`);
- the coordinates of the posterior's dimensions (:func:`coord_values`) and the
  ``observed_data`` / ``constant_data`` groups (:func:`data_groups`), laid out as PyMC
  lays them out;
- a trace folder: created with the run's sizes, the model's attributes and its data
  groups (:func:`create_trace`), and checked before a resume (:func:`check_resumable`);
- a Ctrl-C that leaves no draw to keep (:class:`SamplingInterrupted`).

The Ctrl-C flag itself is :mod:`inference.interrupt` and the chain loop's progress line
:mod:`inference.progress`; both drivers use them too.
"""

from __future__ import annotations

import json
import weakref

import numpy as np
import pymc as pm
import xarray as xr
from pymc.backends.arviz import find_constants, find_observations
from pymc.initial_point import make_initial_point_fn

__all__ = [
    "SamplingInterrupted",
    "check_resumable",
    "coord_values",
    "create_trace",
    "data_groups",
    "initial_point",
    "initial_point_fn",
    "merged_stats",
    "model_cache",
    "per_chain_initvals",
    "store_row",
]


class SamplingInterrupted(KeyboardInterrupt):
    """Ctrl-C during sampling; ``result`` holds the draws completed before it (or None)."""

    def __init__(self, result: xr.DataTree | None = None):
        super().__init__("sampling interrupted")
        self.result = result


# ---------------------------------------------------------------------------------------
# per-model caches of compiled functions
# ---------------------------------------------------------------------------------------
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def model_cache(model: pm.Model) -> dict:
    """A dict that lives as long as ``model`` (compiled functions, built steps)."""
    try:
        return _CACHE.setdefault(model, {})
    except TypeError:  # pragma: no cover - a model that cannot be weakly referenced
        return {}


def initial_point_fn(model):
    """The model's initial-point function (PyMC's layout, no jitter), compiled once per
    model: call it with a seed."""
    cache = model_cache(model)
    if "initial_point" not in cache:
        cache["initial_point"] = make_initial_point_fn(
            model=model, jitter_rvs=set(), return_transformed=True
        )
    return cache["initial_point"]


def initial_point(model, seed: int = 0) -> dict:
    """The model's initial point (PyMC's layout, no jitter), its function compiled once
    per model."""
    return initial_point_fn(model)(seed)


def per_chain_initvals(initvals, chains: int) -> list:
    """``initvals`` as one dict (or None) per chain: one dict is every chain's, a list
    has one per chain (as ``pm.sample`` takes them). Raises ``ValueError`` for a list
    of another length."""
    per_chain = [initvals] * chains if isinstance(initvals, dict) else list(initvals)
    if len(per_chain) != chains:
        raise ValueError(
            f"initvals: a list needs one dict per chain ({chains}), got {len(per_chain)}"
        )
    return per_chain


# ---------------------------------------------------------------------------------------
# draws in memory
# ---------------------------------------------------------------------------------------
def store_row(arrays: dict, row: dict, k: int, draws: int) -> None:
    """``arrays[name][k] = value``, growing each array by doubling (up to ``draws``) so a
    long run interrupted early never reserved memory for draws it did not make."""
    for name, value in row.items():
        arr = arrays.get(name)
        if arr is None or k >= arr.shape[0]:
            value = np.asarray(value)
            size = min(draws, max(64, 2 * k))
            grown = np.empty((size, *value.shape), dtype=value.dtype)
            if arr is not None:
                grown[:k] = arr[:k]
            arrays[name] = arr = grown
        arr[k] = value


def merged_stats(stats) -> dict:
    """The statistics of a draw's steps (a list of dicts) as one dict, without PyMC's
    per-draw ``warning`` objects (not a number per draw)."""
    out: dict = {}
    for s in stats or ():
        for k, v in s.items():
            if k == "warning":
                continue
            out[k] = v
    return out


# ---------------------------------------------------------------------------------------
# coordinates and data groups
# ---------------------------------------------------------------------------------------
def coord_values(model, dim: str, size: int) -> np.ndarray:
    """The model's coordinate values of ``dim`` when it has ``size`` of them, else
    ``0..size-1``."""
    values = model.coords.get(dim)
    if values is None or len(values) != size:
        return np.arange(size)
    return np.asarray(values)


def data_groups(model, attrs: dict) -> dict[str, xr.Dataset]:
    """``observed_data`` and ``constant_data`` as PyMC lays them out, with ``attrs``.

    Built once per model and data: PyMC hands back the same arrays while the data are
    unchanged (``pm.set_data`` gives new ones), and building the Datasets (coordinates
    of every token of a corpus) costs more than a short run's bookkeeping otherwise.
    """
    found = (
        ("observed_data", find_observations(model)),
        ("constant_data", find_constants(model)),
    )
    key = [(g, name, value) for g, values in found for name, value in values.items()]
    key += [(dim, values) for dim, values in model.coords.items()]
    cache = model_cache(model)
    cached = cache.get("data_groups")
    if cached is None or not _same_objects(cached[0], key):
        cached = cache["data_groups"] = (key, _build_data_groups(model, found))
    out = {}
    for group, ds in cached[1].items():
        out[group] = ds = ds.copy(deep=False)
        ds.attrs = {**attrs, "sample_dims": []}
    return out


def _same_objects(a, b) -> bool:
    """Whether two lists of tuples hold the very same objects (``is``), in order."""
    return len(a) == len(b) and all(
        len(x) == len(y) and all(u is v or (isinstance(u, str) and u == v) for u, v in zip(x, y))
        for x, y in zip(a, b)
    )


def _build_data_groups(model, groups) -> dict[str, xr.Dataset]:
    out = {}
    for group, found in groups:
        if not found:
            continue
        data, group_coords = {}, {}
        for name, value in found.items():
            value = np.asarray(value)
            dims = tuple(model.named_vars_to_dims.get(name, ())) or tuple(
                f"{name}_dim_{i}" for i in range(value.ndim)
            )
            data[name] = (dims, value)
            for d, size in zip(dims, value.shape, strict=True):
                group_coords.setdefault(d, coord_values(model, d, size))
        out[group] = xr.Dataset(data, coords=group_coords)
    return out


# ---------------------------------------------------------------------------------------
# trace folders
# ---------------------------------------------------------------------------------------
def create_trace(
    path,
    model,
    *,
    posterior: dict,
    stats: dict,
    value_vars: dict,
    steps: list[str],
    chains: int,
    draws: int,
    tune: int,
):
    """A new trace folder for a run of ``model`` (:meth:`inference.trace_store.
    TraceStore.create`): ``posterior`` (name -> dtype, shape of one draw, dims) and
    ``stats`` (name -> dtype, shape) as both drivers find them, the coordinates of the
    posterior's dims and the data groups from the model, and the run's attributes
    (``var_names``, ``value_vars``: name -> [shape, dtype] of the stored point,
    ``steps``, the model's family and build recipe)."""
    from inference.trace_store import TraceStore, model_attributes

    coords = {
        d: coord_values(model, d, size)
        for _name, (_dtype, shape, dims) in posterior.items()
        for d, size in zip(dims, shape)
    }
    attrs = {
        "var_names": list(posterior),
        "value_vars": json.dumps(value_vars),
        "steps": list(steps),
        **model_attributes(model),
    }
    return TraceStore.create(
        path,
        chains=chains,
        draws=draws,
        tune=tune,
        posterior=posterior,
        stats=stats,
        coords=coords,
        data_groups=data_groups(model, {}),
        attrs=attrs,
    )


def check_resumable(store, *, draws: int, tune: int, chains: int) -> None:
    """Refuse (``ValueError``) to resume ``store`` with other sizes than its run's."""
    asked = {"chains": chains, "draws": draws, "tune": tune}
    stored = {"chains": store.chains, "draws": store.draws, "tune": store.tune}
    wrong = [
        f"{k}={asked[k]} (the trace has {k}={stored[k]})" for k in asked if asked[k] != stored[k]
    ]
    if wrong:
        raise ValueError(f"trace: resume with the sizes the run started with: {', '.join(wrong)}")
