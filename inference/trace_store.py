"""Draws on disk as they are made: ``fit(..., trace=path)``.

A long run writes its draws into a Zarr (v3) folder while it samples, so a crash, a
``kill -9`` or a power cut loses at most the last few seconds of work, another process
can read the run while it goes (``ppzoo check PATH``), and ``fit(..., trace=path,
resume=True)`` continues every chain from the last state stored.

Why not PyMC's ``ZarrTrace``: it is written against zarr 2 (``zarr.storage.BaseStore``,
``zarr.sync``), while nutpie, a dependency of ours, needs zarr >= 3; with zarr 3
installed PyMC reports its backend unavailable. The layout below follows PyMC's (and
xarray's) so the groups open with ``xarray.open_zarr`` / ``xarray.open_datatree``.

The layout of ``path`` (format 1):

- root attributes: ``pp_models_trace`` (the format, 1), ``status`` (``"running"``,
  ``"complete"`` or ``"interrupted"``; a run killed outright stays ``"running"``),
  ``chains``, ``draws``, ``tune``, ``var_names``, ``value_vars`` and ``family``;
- ``posterior/<name>``: ``(chain, draw, ...)`` arrays of the full requested size, one
  Zarr chunk per chain and block of draws, so chains written by different processes never
  share a chunk; draws not made yet hold the fill value;
- ``sample_stats/<name>``: the steps' per-draw statistics, the same way;
- ``observed_data``, ``constant_data``: written once, at creation;
- ``_chains/chain-<c>.npz``: chain ``c``'s commit record, replaced atomically (write,
  then rename) after its draws are written: the number of kept draws and tuning
  iterations completed, the last point (every value variable: the Markov state of a
  Gibbs sampler) and each step's own state (its random generator, see
  :meth:`inference.gibbs.ZooGibbsStep.chain_state`). A reader trusts only the draws
  this record counts, so a kill in the middle of a write never shows a half-written draw.
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import xarray as xr

__all__ = ["ChainState", "ChainWriter", "TraceStore", "check_trace_path", "is_trace",
           "model_attributes", "read_trace", "record_build"]

FORMAT = 1
_CHAINS_DIR = "_chains"
#: Default seconds between two writes of a chain's new draws (bounded cost: one write of
#: the new draws and of the chain state per interval, whatever the speed of a draw).
FLUSH_SECONDS = 5.0
#: Target size of one chunk (chain x block of draws) of an array, in bytes.
_CHUNK_BYTES = 1 << 18


def _zarr():
    import zarr

    return zarr


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def is_trace(path) -> bool:
    """Whether ``path`` is a folder holding a pp-models trace."""
    meta = Path(path) / "zarr.json"
    if not meta.is_file():
        return False
    try:
        attrs = json.loads(meta.read_text()).get("attributes", {})
    except (OSError, ValueError):
        return False
    return "pp_models_trace" in attrs


def check_trace_path(path, *, resume: bool) -> Path:
    """Validate ``trace=`` before any work; returns the path. Raises ``ValueError``.

    A new trace needs a path that does not exist in a folder we can write; ``resume``
    needs an existing trace. Nothing is created or overwritten here.
    """
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"trace must be a path (str or os.PathLike), got {type(path).__name__}")
    path = Path(path).expanduser()
    if resume:
        if not path.exists():
            raise ValueError(f"trace: nothing to resume at {path} (no such folder)")
        if not is_trace(path):
            raise ValueError(f"trace: {path} is not a pp-models trace, cannot resume it")
        if not os.access(path, os.W_OK | os.X_OK):
            raise ValueError(f"trace: {path} is not writable, cannot resume it")
        writer = _live_writer(path)
        if writer is not None:
            raise ValueError(f"trace: {path} is still being written by process {writer} "
                             "(wait for it or stop it first)")
        return path
    if path.exists():
        if is_trace(path):
            raise ValueError(f"trace: {path} already holds a trace; pass resume=True "
                             "(ppzoo: --resume) to continue it, or name a new path "
                             "(nothing was overwritten)")
        kind = "folder" if path.is_dir() else "file"
        raise ValueError(f"trace: {path} is an existing {kind} that is not a pp-models trace; "
                         "name a path that does not exist yet (nothing was overwritten)")
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        raise ValueError(f"trace: cannot create {path}: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ValueError(f"trace: cannot create {path}: the folder {parent} is not writable")
    return path


#: the model attribute holding how ``ppzoo`` built it (see :func:`record_build`)
_BUILD_ATTRIBUTE = "_pp_models_build"


def record_build(model, recipe: dict) -> None:
    """Remember on ``model`` how to build it again (``ppzoo``: the family, its options,
    the data set or CSV file); a trace of it stores the recipe, so ``ppzoo check TRACE``
    can compute the model's label-invariant statistics from the stored draws."""
    object.__setattr__(model, _BUILD_ATTRIBUTE, dict(recipe))


def model_attributes(model) -> dict:
    """Root attributes a new trace of ``model`` records besides the sizes: the family,
    the raw label variables (which a check leaves out) and the build recipe, if any."""
    from pp_models.model_info import get_info

    info = get_info(model)
    attrs = {"family": info.family if info else "",
             "label_variables": list(info.label_variables) if info else []}
    recipe = getattr(model, _BUILD_ATTRIBUTE, None)
    if recipe is not None:
        attrs["build"] = json.dumps(recipe)
    return attrs


def _writer_id() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def _live_writer(path) -> int | None:
    """The pid of another live process on this host that is writing the trace, if any."""
    try:
        attrs = json.loads((Path(path) / "zarr.json").read_text()).get("attributes", {})
    except (OSError, ValueError):
        return None
    writer = attrs.get("writer") or {}
    pid = writer.get("pid")
    if (attrs.get("status") != "running" or writer.get("host") != socket.gethostname()
            or not isinstance(pid, int) or pid == os.getpid()):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:
        return pid
    return pid


@dataclass
class ChainState:
    """What a chain's commit record holds (see the module docstring)."""

    completed: int
    tuned: int
    point: dict[str, np.ndarray]
    step_states: list
    seconds: float


def _chunk_draws(shape, dtype, draws) -> int:
    per_draw = max(1, int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize)
    return int(max(1, min(draws, _CHUNK_BYTES // per_draw)))


def _write_dataset(group, ds: xr.Dataset) -> None:
    """``ds`` into ``group`` as xarray lays a Dataset out in Zarr v3 (dimension names on
    every array), written directly: ``Dataset.to_zarr`` is much slower for these small
    writes."""
    for name, var in {**ds.coords, **ds.data_vars}.items():
        values = np.asarray(var.values)
        arr = group.create_array(str(name), shape=values.shape, dtype=values.dtype,
                                 dimension_names=tuple(map(str, var.dims)),
                                 compressors=_fast_compressor())
        arr[...] = values
        if var.attrs:
            arr.attrs.update(var.attrs)
    if ds.attrs:
        group.attrs.update(ds.attrs)


def _fast_compressor():
    # lz4 with byte shuffling: labels and counts shrink several-fold at a small fraction
    # of zstd's cost (a flush rewrites the chunk it ends in)
    from zarr.codecs import BloscCodec

    return BloscCodec(cname="lz4", clevel=1, shuffle="shuffle")


def _fill(dtype):
    dtype = np.dtype(dtype)
    if np.issubdtype(dtype, np.floating):
        return np.nan
    if dtype == np.bool_:
        return False
    return 0


class TraceStore:
    """A trace folder: created once per run, opened again to read or resume it."""

    def __init__(self, path):
        self.path = Path(path)
        self.root = _zarr().open_group(str(self.path), mode="r+")
        self.attrs = dict(self.root.attrs)
        self.chains = int(self.attrs["chains"])
        self.draws = int(self.attrs["draws"])
        self.tune = int(self.attrs["tune"])

    # ----------------------------------------------------------------- creation
    @classmethod
    def create(cls, path, *, chains: int, draws: int, tune: int,
               posterior: dict[str, tuple[np.dtype, tuple, tuple]],
               stats: dict[str, tuple[np.dtype, tuple]],
               coords: dict[str, np.ndarray], data_groups: dict[str, xr.Dataset],
               attrs: dict) -> TraceStore:
        """Write an empty trace at ``path`` (which must not exist).

        ``posterior``: name -> (dtype, shape of one draw, dims); ``stats``: name ->
        (dtype, shape of one draw); ``coords``: values of the posterior's dims;
        ``data_groups``: e.g. ``{"observed_data": dataset}`` written as they are.
        """
        zarr = _zarr()
        path = Path(path)
        # build in a staging folder and rename into place: a kill during creation leaves
        # no half-made trace at ``path``
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
        try:
            # mkdtemp makes a private folder; a trace is as readable as any new folder
            os.chmod(staging, 0o777 & ~_umask())
            root = zarr.open_group(str(staging), mode="a", zarr_format=3)
            for name, ds in data_groups.items():
                _write_dataset(root.create_group(name), ds)
            root.attrs.update({
                "pp_models_trace": FORMAT, "status": "running", "writer": _writer_id(),
                "chains": int(chains),
                "draws": int(draws), "tune": int(tune),
                "created_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **attrs,
            })
            for group_name, spec in (("posterior", posterior), ("sample_stats", stats)):
                group = root.create_group(group_name)
                used: dict[str, np.ndarray] = {"chain": np.arange(chains),
                                               "draw": np.arange(draws)}
                for name, entry in spec.items():
                    dtype, shape = np.dtype(entry[0]), tuple(entry[1])
                    dims = tuple(entry[2]) if len(entry) > 2 else ()
                    dims = dims or tuple(f"{name}_dim_{i}" for i in range(len(shape)))
                    group.create_array(
                        name, shape=(chains, draws, *shape), dtype=dtype,
                        chunks=(1, _chunk_draws(shape, dtype, draws), *shape),
                        fill_value=_fill(dtype), dimension_names=("chain", "draw", *dims),
                        compressors=_fast_compressor())
                    for d, size in zip(dims, shape, strict=True):
                        used.setdefault(d, coords.get(d, np.arange(size)))
                for d, values in used.items():
                    values = np.asarray(values)
                    arr = group.create_array(d, shape=values.shape, dtype=values.dtype,
                                             dimension_names=(d,))
                    arr[...] = values
            (staging / _CHAINS_DIR).mkdir()
            os.replace(staging, path)
        except BaseException:
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
            raise
        return cls(path)

    def set_status(self, status: str) -> None:
        """``"running"`` (this process writes it now), ``"complete"`` or ``"interrupted"``."""
        update = {"status": status}
        if status == "running":
            update["writer"] = _writer_id()
        self.root.attrs.update(update)
        self.attrs.update(update)

    # ----------------------------------------------------------------- reading
    def chain_state(self, chain: int, *, load_point: bool = True) -> ChainState | None:
        """Chain ``chain``'s last commit record, or None if it never wrote one."""
        file = self.path / _CHAINS_DIR / f"chain-{chain}.npz"
        if not file.exists():
            return None
        with np.load(file, allow_pickle=False) as npz:
            meta = json.loads(str(npz["__meta__"]))
            point = ({k[len("point/"):]: npz[k] for k in npz.files if k.startswith("point/")}
                     if load_point else {})
        return ChainState(int(meta["completed"]), int(meta["tuned"]), point,
                          meta["step_states"], float(meta["seconds"]))

    def completed(self) -> list[int]:
        """Kept draws committed by each chain."""
        states = [self.chain_state(c, load_point=False) for c in range(self.chains)]
        return [s.completed if s is not None else 0 for s in states]

    def read(self, chains=None) -> xr.DataTree:
        """The trace as a DataTree in memory, trimmed to the committed draws.

        Chains keep a common length (the least any chain with a draw has committed;
        chains without a draw are dropped). Unless the run completed, the root attributes
        say so: ``pp_models_interrupted = 1``, ``pp_models_trace_status`` and
        ``pp_models_draws_completed`` (per chain). ``chains``: read only these (e.g.
        leave out a chain lost with its worker, which would shorten the others).
        """
        completed = self.completed()
        wanted = range(self.chains) if chains is None else chains
        keep = [c for c in wanted if completed[c] > 0]
        length = min((completed[c] for c in keep), default=0)
        dt = xr.DataTree()
        status = self.attrs.get("status", "running")
        for group in ("posterior", "sample_stats", "observed_data", "constant_data"):
            if group not in self.root:
                continue
            ds = xr.open_zarr(str(self.path), group=group, consolidated=False,
                              mask_and_scale=False, zarr_format=3)
            if "chain" in ds.dims:
                ds = ds.isel(chain=keep, draw=slice(0, length))
                ds = ds.assign_coords(chain=np.arange(len(keep)), draw=np.arange(length))
            ds = ds.load()
            for v in ds.variables.values():
                v.encoding = {}
            dt[group] = xr.DataTree(ds)
        dt.attrs["pp_models_trace_status"] = status
        dt.attrs["pp_models_draws_completed"] = [int(c) for c in completed]
        if (status != "complete" and chains is None) or length < self.draws:
            dt.attrs["pp_models_interrupted"] = 1
        return dt

    def writer(self, chain: int, *, offset: int = 0, flush_seconds: float = FLUSH_SECONDS,
               start_seconds: float = 0.0) -> ChainWriter:
        return ChainWriter(self.path, chain, offset=offset, flush_seconds=flush_seconds,
                           start_seconds=start_seconds)


def read_trace(path, *, model=None) -> xr.DataTree:
    """Read a trace folder (complete or partial) as a DataTree, see :meth:`TraceStore.read`.

    With the ``model`` that made it, the model's label-invariant statistics are added and
    its labels matched across draws, as ``fit`` lays its result out
    (:func:`inference.posterior_layout.lay_out`); without it, the root attribute
    ``pp_models_label_variables`` still names the raw labels (from the trace).
    """
    if not is_trace(path):
        raise ValueError(f"{path} is not a pp-models trace")
    store = TraceStore(path)
    dt = store.read()
    if model is not None:
        from inference.posterior_layout import lay_out

        return lay_out(dt, model)
    dt.attrs["pp_models_family"] = store.attrs.get("family", "")
    dt.attrs["pp_models_label_variables"] = json.dumps(
        list(store.attrs.get("label_variables", [])))
    return dt


def _write_all(writes, selection) -> None:
    """``array[selection] = value`` for every pair, in one trip to zarr's event loop
    (one synchronous write per array costs a thread hand-off each: on a loaded machine
    that, not the bytes, is most of a flush)."""
    import asyncio

    from zarr.core.sync import sync

    async def gather():
        await asyncio.gather(*(array.async_array.setitem(selection, value)
                               for array, value in writes))

    sync(gather())


class ChainWriter:
    """Writes one chain's new draws and its commit record, at most every
    ``flush_seconds`` (and at the end). Opened in the process that runs the chain."""

    def __init__(self, path, chain: int, *, offset: int, flush_seconds: float,
                 start_seconds: float = 0.0):
        self.path = Path(path)
        self.chain = int(chain)
        self.offset = int(offset)  # kept draws already in the trace before this run
        self.flushed = 0  # draws of this run already written
        self.flush_seconds = float(flush_seconds)
        self.start_seconds = float(start_seconds)
        self._t_start = self._last = time.perf_counter()
        root = _zarr().open_group(str(self.path), mode="r+")
        self._posterior = root["posterior"]
        self._stats = root["sample_stats"]

    def due(self) -> bool:
        return time.perf_counter() - self._last >= self.flush_seconds

    def flush(self, values: dict, stats: dict, completed: int, tuned: int, point: dict,
              step_states: list) -> None:
        """Write draws ``flushed:completed`` of this run, then the commit record."""
        lo, hi = self.flushed, completed
        if hi > lo:
            sel = (self.chain, slice(self.offset + lo, self.offset + hi))
            writes = [(self._posterior[name], arr[lo:hi]) for name, arr in values.items()]
            writes += [(self._stats[name], arr[lo:hi]) for name, arr in stats.items()
                       if name in self._stats]
            _write_all(writes, sel)
        meta = {
            "completed": self.offset + completed,
            "tuned": int(tuned),
            "step_states": step_states,
            "seconds": self.start_seconds + time.perf_counter() - self._t_start,
        }
        arrays = {f"point/{k}": np.asarray(v) for k, v in point.items()}
        arrays["__meta__"] = np.array(json.dumps(meta))
        folder = self.path / _CHAINS_DIR
        fd, tmp = tempfile.mkstemp(prefix=f".chain-{self.chain}.", suffix=".npz", dir=folder)
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, **arrays)
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, folder / f"chain-{self.chain}.npz")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        self.flushed = hi
        self._last = time.perf_counter()
