"""The zoo's own chain loop for models whose every variable has a zoo Gibbs step.

``pm.sample`` costs more than the sweeps of a fast Gibbs kernel: it rebuilds the model's
log density to assign steps, compiles the initial point and the trace function on every
call, records every deterministic per draw and copies the whole trace into ArviZ at the
end. When every free variable is updated by a :class:`~inference.gibbs.ZooGibbsStep`,
``fit`` drives the steps with :func:`sample_gibbs` instead:

- the compiled functions (initial point, traced variables) are cached per model, so a
  second ``fit`` on the same model compiles nothing;
- only the traced variables (``var_names``) are computed and stored, into arrays
  allocated once;
- chains run in worker processes (``fork``: the workers inherit the built steps and
  their compiled kernels, nothing is pickled on the way in; a throwaway first draw in
  this process compiles those kernels once before the fork), one after the other, or
  as tasks of a ``concurrent.futures.Executor`` (``executor=``: the steps are pickled
  to its workers, see :mod:`inference.executors`), with the same draws every way;
- Ctrl-C (SIGINT) is caught between draws, never inside a Numba kernel: every chain
  stops after the draw it is making, the draws completed so far are kept and the result
  is marked interrupted (:class:`SamplingInterrupted` carries it when the caller wants an
  exception instead). A second Ctrl-C aborts at once.

The returned DataTree has PyMC's layout (``posterior``, ``sample_stats``,
``observed_data``, ``constant_data``) so everything downstream reads it unchanged.
"""

from __future__ import annotations

import datetime
import json
import multiprocessing
import os
import signal
import time
import traceback
import warnings
from dataclasses import dataclass, field, replace

import numpy as np
import pymc as pm
import xarray as xr
from pymc.initial_point import make_initial_point_fn
from pymc.step_methods.compound import CompoundStep, flatten_steps
from pymc.util import get_random_generator

from inference.gibbs.base import ZooGibbsStep
from inference.interrupt import stop_requested
from inference.progress import ChainProgress, compiling
from inference.sampling_core import (
    SamplingInterrupted,
    check_resumable,
    coord_values,
    create_trace,
    data_groups,
    initial_point_fn,
    merged_stats,
    model_cache,
    per_chain_initvals,
    store_row,
)

__all__ = ["all_zoo_gibbs", "sample_gibbs"]


def all_zoo_gibbs(steps) -> bool:
    """Whether every leaf step is a zoo Gibbs step (which :func:`sample_gibbs` can drive)."""
    leaves = [leaf for s in steps for leaf in flatten_steps(s)]
    return bool(leaves) and all(isinstance(leaf, ZooGibbsStep) for leaf in leaves)


@dataclass
class _TraceSpec:
    names: list[str]
    dims: dict[str, tuple[str, ...]]
    # names read straight from the point (untransformed free variables)
    direct: list[str]
    computed: list[str]
    fn: object = None


def _trace_spec(model, var_names) -> _TraceSpec:
    if var_names is None:
        rvs = [v for v in model.unobserved_RVs]
        names = [v.name for v in rvs]
    else:
        names = list(var_names)
        missing = [n for n in names if n not in model.named_vars or n in
                   {rv.name for rv in model.observed_RVs}]
        if missing:
            raise ValueError(f"var_names: not free variables or deterministics of the "
                             f"model: {', '.join(missing)}")
    key = ("trace", tuple(names))
    cache = model_cache(model)
    if key in cache:
        return cache[key]
    value_names = {v.name for v in model.value_vars}
    direct = [n for n in names if n in value_names]
    computed = [n for n in names if n not in value_names]
    fn = None
    if computed:
        outs = model.replace_rvs_by_values([model[n] for n in computed])
        fn = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore",
                              point_fn=True)
    dims = {n: tuple(model.named_vars_to_dims.get(n, ())) for n in names}
    spec = _TraceSpec(names, dims, direct, computed, fn)
    cache[key] = spec
    return spec


# ---------------------------------------------------------------------------------------
# one chain
# ---------------------------------------------------------------------------------------
@dataclass
class _ChainOutput:
    values: dict[str, np.ndarray]
    stats: dict[str, np.ndarray]
    completed: int  # kept draws completed
    tuned: int  # tuning iterations completed
    seconds: float
    error: str | None = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class _ChainJob:
    """One chain's work: ``tune`` tuning iterations and ``draws`` kept draws from
    ``start`` with the chain's own generator; ``trace``: a :class:`_ChainTrace` (write
    draws to a trace folder, and continue a stored chain when it holds a state);
    ``announce``: say when the first draw compiles."""

    chain: int
    start: dict
    rng: object
    tune: int
    draws: int
    trace: object = None
    announce: bool = False


def _run_chain(step, spec, job: _ChainJob, flag, progress) -> _ChainOutput:
    """Run one chain (``job``); ``progress[job.chain]`` counts its iterations."""
    start, tune, draws = job.start, job.tune, job.draws
    chain, announce, trace = job.chain, job.announce, job.trace
    step.setup_chain(job.rng, tune, draws)
    if trace is not None and trace.state is not None:
        for leaf, leaf_state in zip(flatten_steps(step), trace.state.step_states, strict=True):
            leaf.restore_chain_state(leaf_state)
    step.tune = bool(tune)
    if hasattr(step, "reset_tuning"):
        step.reset_tuning()
    writer = trace.open() if trace is not None else None
    values: dict[str, np.ndarray] = {}
    stats: dict[str, np.ndarray] = {}
    point = start
    completed = tuned = 0
    t0 = time.perf_counter()
    try:
        for i in range(tune + draws):
            if flag.is_set():
                break
            if i == tune:
                step.stop_tuning()
            if i == 0:
                # Numba compiles a kernel at its first call: tens of silent seconds on a
                # cold cache (the line shows only if the first draw takes over two seconds)
                with compiling("the first draw (Numba kernels on a cold cache)",
                               enabled=announce, delay=2.0):
                    point, step_stats = step.step(point)
                # compiled: from here on a Ctrl-C keeps the draws made
                flag.arm()
            else:
                point, step_stats = step.step(point)
            if i < tune:
                tuned += 1
            else:
                _record(values, stats, spec, point, step_stats, completed, draws)
                completed += 1
            progress[chain] = i + 1
            if writer is not None and writer.due():
                writer.flush(values, stats, completed, trace.tuned + tuned, point,
                             _step_states(step))
    finally:
        if writer is not None and (completed > writer.flushed or tuned):
            # the last draws (also after Ctrl-C or a failing step: the draws before it)
            writer.flush(values, stats, completed, trace.tuned + tuned, point,
                         _step_states(step))
    return _ChainOutput(values, stats, completed, tuned, time.perf_counter() - t0)


def _step_states(step) -> list:
    return [leaf.chain_state() for leaf in flatten_steps(step)]


@dataclass
class _ChainTrace:
    """Where a chain's draws go on disk and the stored state it continues from."""

    path: str
    chain: int
    flush_seconds: float
    state: object = None  # inference.trace_store.ChainState or None

    @property
    def offset(self) -> int:
        return self.state.completed if self.state is not None else 0

    @property
    def tuned(self) -> int:
        return self.state.tuned if self.state is not None else 0

    def open(self):
        from inference.trace_store import ChainWriter

        seconds = self.state.seconds if self.state is not None else 0.0
        return ChainWriter(self.path, self.chain, offset=self.offset,
                           flush_seconds=self.flush_seconds, start_seconds=seconds)


def _record(values, stats, spec, point, step_stats, k, draws):
    row = {n: point[n] for n in spec.direct}
    if spec.fn is not None:
        row.update(zip(spec.computed, spec.fn(point), strict=True))
    store_row(values, row, k, draws)
    store_row(stats, merged_stats(step_stats), k, draws)


class _WorkerFlag:
    def __init__(self, event):
        self.event = event

    def is_set(self) -> bool:
        return self.event.is_set()

    def arm(self) -> None:
        """A worker only notes Ctrl-C (its handler sets the event), armed or not."""


def _chain_worker(conn, step, spec, job, stop_event, progress):
    flag = _WorkerFlag(stop_event)
    # a terminal's Ctrl-C reaches every process of the group: the worker only notes it
    signal.signal(signal.SIGINT, lambda signum, frame: stop_event.set())
    try:
        out = _run_chain(step, spec, job, flag, progress)
    except BaseException as err:  # reported to the parent, which raises it
        out = _ChainOutput({}, {}, 0, 0, 0.0, error="".join(
            traceback.format_exception(type(err), err, err.__traceback__)))
    try:
        conn.send(out)
    finally:
        conn.close()


def _fork_context():
    try:
        return multiprocessing.get_context("fork")
    except ValueError:  # pragma: no cover - platforms without fork
        return None


def _compile_before_fork(step, spec, start, tune, draws, announce):
    """One throwaway draw in this process, so the chain workers fork with every kernel
    the first draw needs already compiled.

    Numba (and PyTensor's Numba backend) compiles at a function's first call; without
    this each worker would compile the same kernels again, in parallel, and this
    process, which never drew, would compile them again at its next fit. The steps'
    attributes (arrays copied) are put back afterwards and each chain calls
    ``setup_chain`` with its own generator, so the chains are the ones they would be
    without the throwaway draw. A failing draw is left to the chains, which report it.
    """
    objects = list({id(o): o for o in [step, *flatten_steps(step)]}.values())
    saved = [{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in vars(o).items()}
             for o in objects]
    try:
        with compiling("the first draw (Numba kernels on a cold cache)", enabled=announce,
                       delay=2.0):
            step.setup_chain(np.random.default_rng(0), tune, draws)
            step.tune = bool(tune)
            if hasattr(step, "reset_tuning"):
                step.reset_tuning()
            point, _stats = step.step({k: np.copy(v) for k, v in start.items()})
            if spec.fn is not None:
                spec.fn(point)
    except Exception:  # the chains meet it again and report it
        pass
    finally:
        for o, attributes in zip(objects, saved, strict=True):
            vars(o).clear()
            vars(o).update(attributes)


def _run_parallel(step, spec, jobs, flag, bar, cores, announce):
    todo = [job for job in jobs if job.tune + job.draws > 0]
    if todo:
        job = todo[0]
        _compile_before_fork(step, spec, job.start, job.tune, job.draws, announce)
    # compiled: from here on a Ctrl-C keeps the draws the workers make
    flag.arm()
    ctx = _fork_context()
    event = ctx.Event()
    flag.link(event)
    try:
        return _run_workers(ctx, event, step, spec, jobs, flag, bar, cores)
    finally:
        flag.unlink(event)


def _run_workers(ctx, event, step, spec, jobs, flag, bar, cores):
    """Chain ``c`` runs ``jobs[c]``, in a forked worker, at most ``cores`` at a time."""
    chains = len(jobs)
    progress = ctx.Array("q", chains, lock=False)
    outputs: list[_ChainOutput | None] = [None] * chains
    pending = list(range(chains))
    running: dict[int, tuple] = {}
    while pending or running:
        while pending and len(running) < cores and not flag.is_set():
            c = pending.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            with warnings.catch_warnings():
                # Python warns that fork() in a threaded process may deadlock; the
                # worker only runs our steps (no locks held across the fork by us).
                warnings.simplefilter("ignore", DeprecationWarning)
                proc = ctx.Process(
                    target=_chain_worker,
                    args=(child, step, spec, jobs[c], event, progress),
                    daemon=True,
                )
                proc.start()
            child.close()
            running[c] = (proc, parent)
        if flag.is_set() and pending:
            for c in pending:
                outputs[c] = _ChainOutput({}, {}, 0, 0, 0.0)
            pending = []
        for c, (proc, conn) in list(running.items()):
            try:
                ready = conn.poll(0.05)
            except (EOFError, OSError):
                ready = True
            if ready:
                try:
                    outputs[c] = conn.recv()
                except (EOFError, OSError):
                    proc.join()
                    outputs[c] = _ChainOutput({}, {}, 0, 0, 0.0, error=(
                        f"chain {c}: worker process died (exit code {proc.exitcode})"))
                proc.join()
                conn.close()
                del running[c]
        bar.update(list(progress))
    return outputs


# ---------------------------------------------------------------------------------------
# chains as tasks of an executor
# ---------------------------------------------------------------------------------------
class _NeverSet:
    """A task's flag: a Ctrl-C reaches the caller, which stops waiting for the tasks."""

    def is_set(self) -> bool:
        return False

    def arm(self) -> None:
        pass


def _executor_chain(payload, job) -> _ChainOutput:
    """Chain ``job.chain`` to completion on an executor's worker: the steps and the
    trace spec arrive pickled (fresh objects, as a fork would give), the generator is
    the chain's own."""
    import cloudpickle

    try:
        step, spec = cloudpickle.loads(payload)
        return _run_chain(step, spec, job, _NeverSet(), [0] * (job.chain + 1))
    except BaseException as err:  # reported to the caller, which raises it
        return _ChainOutput({}, {}, 0, 0, 0.0, error="".join(
            traceback.format_exception(type(err), err, err.__traceback__)))


def _trace_reachable(path: str) -> str | None:
    """On a worker: ``None`` when the trace folder is there and writable, else why not."""
    if not os.path.isdir(path):
        return f"{path} does not exist on the worker"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"{path} is not writable on the worker"
    return None


def _run_on_executor(executor, step, spec, jobs, flag, bar):
    """Every chain with work left as one task; returns (outputs, lost chains)."""
    from inference.executors import pickled, run_chain_tasks

    chains = len(jobs)
    todo = [c for c in range(chains) if jobs[c].tune + jobs[c].draws > 0]
    payload = pickled((step, spec), "the model and its steps")
    stored = next((job.trace for job in jobs if job.trace is not None), None)
    if stored is not None and todo:
        problem = executor.submit(_trace_reachable, stored.path).result()
        if problem is not None:
            raise ValueError(f"trace: the executor's workers cannot write the trace: "
                             f"{problem}; give a path on storage they share")
    progress = [0] * chains

    def done(c, _output):
        progress[c] = jobs[c].tune + jobs[c].draws
        bar.update(progress)

    # a worker's first draw is not announced (its output is not the caller's terminal)
    tasks = {c: (payload, replace(jobs[c], announce=False)) for c in todo}
    flag.arm()  # from here a first Ctrl-C keeps the chains finished before it
    results, lost = run_chain_tasks(executor, _executor_chain, tasks, flag, on_done=done)
    outputs = [results.get(c, _ChainOutput({}, {}, 0, 0, 0.0)) for c in range(chains)]
    return outputs, lost


# ---------------------------------------------------------------------------------------
# public entry
# ---------------------------------------------------------------------------------------
def sample_gibbs(
    model: pm.Model,
    steps: list,
    *,
    draws: int,
    tune: int,
    chains: int,
    cores: int | None,
    random_seed,
    progressbar: bool,
    var_names=None,
    initvals=None,
    trace=None,
    resume: bool = False,
    flush_seconds: float | None = None,
    executor=None,
) -> tuple[xr.DataTree, bool]:
    """Run ``chains`` chains of ``steps`` (all zoo Gibbs steps) on ``model``.

    Returns the DataTree and whether sampling was interrupted (Ctrl-C). When it was,
    every chain holds the same number of draws: the ones all chains had completed
    (chains with no kept draw are dropped); the root attributes
    ``pp_models_interrupted`` and ``pp_models_draws_completed`` (per chain) say so.
    Raises :class:`SamplingInterrupted` (with ``result=None``) when no draw was kept.

    ``trace``: a path (already checked by :func:`inference.trace_store.check_trace_path`)
    where the draws are written as they are made (see :mod:`inference.trace_store`),
    at most every ``flush_seconds``; the result is then read back from it. ``resume``:
    continue the chains stored there (each from its last stored point and step state;
    ``draws``, ``tune`` and ``chains`` must be the ones the trace was started with).

    ``executor``: a checked ``concurrent.futures.Executor`` that runs each chain as one
    task (``cores`` is then unused). A chain whose worker is lost is left out of the
    result (with ``trace``, its stored draws stay in it) and named in the root
    attribute ``pp_models_lost_chains``; a chain that fails raises, as locally.
    """
    spec = _trace_spec(model, var_names)
    step = CompoundStep(list(steps)) if len(steps) > 1 else steps[0]
    rngs = get_random_generator(random_seed).spawn(chains)
    seeds = [int(r.integers(2**30)) for r in rngs]
    if initvals is None:
        ipfn = initial_point_fn(model)
        starts = [ipfn(s) for s in seeds]
    else:
        per_chain = per_chain_initvals(initvals, chains)
        starts = [make_initial_point_fn(model=model, overrides=iv or {}, jitter_rvs=set(),
                                        return_transformed=True)(s)
                  for iv, s in zip(per_chain, seeds, strict=True)]
    tunes, lengths = [tune] * chains, [draws] * chains
    traces: list = [None] * chains
    store = None
    if trace is not None:
        store, states = _open_trace(model, spec, step, trace, resume, starts[0],
                                    draws=draws, tune=tune, chains=chains)
        from inference.trace_store import FLUSH_SECONDS

        every = FLUSH_SECONDS if flush_seconds is None else float(flush_seconds)
        for c, state in enumerate(states):
            # absolute: an executor's workers may run in another folder
            traces[c] = _ChainTrace(os.path.abspath(store.path), c, every, state)
            if state is not None:
                starts[c] = {k: state.point[k] for k in starts[c]}
                tunes[c] = max(0, tune - state.tuned)
                lengths[c] = max(0, draws - state.completed)
    if cores is None:
        cores = min(chains, os.cpu_count() or 1, 4)
    cores = max(1, min(cores, chains))
    # daemonic processes (e.g. Dask or ProcessPool workers) may not start children
    # a step on threads of its own runs its chains here, one after another (its threads
    # take the cores; ZooGibbsStep.uses_threads says why it cannot fork)
    parallel = (cores > 1 and _fork_context() is not None
                and not multiprocessing.current_process().daemon
                and not any(getattr(m, "uses_threads", False) for m in flatten_steps(step)))
    t0 = time.perf_counter()
    todo = [c for c in range(chains) if tunes[c] + lengths[c] > 0]
    total = max((tunes[c] + lengths[c] for c in todo), default=1)
    lost: dict[int, str] = {}
    jobs = [_ChainJob(c, starts[c], rngs[c], tunes[c], lengths[c], traces[c],
                      announce=progressbar and c == 0) for c in range(chains)]
    with ChainProgress(chains, total, enabled=progressbar) as bar, \
            stop_requested() as flag:
        if executor is not None:
            outputs, lost = _run_on_executor(executor, step, spec, jobs, flag, bar)
        elif parallel:
            outputs = _run_parallel(step, spec, jobs, flag, bar, cores, progressbar)
        else:
            progress = [0] * chains
            outputs = []
            for c in range(chains):
                if flag.is_set() or c not in todo:
                    outputs.append(_ChainOutput({}, {}, 0, 0, 0.0))
                    continue
                bar.attach(progress)
                outputs.append(_run_chain(step, spec, jobs[c], flag, progress))
            bar.update(progress)
    errors = [o.error for o in outputs if o.error]
    interrupted = flag.is_set()
    if store is not None:
        finished = not errors and not interrupted and not lost
        store.set_status("complete" if finished and all(
            o.completed == lengths[c] for c, o in enumerate(outputs)) else "interrupted")
    if errors:
        raise RuntimeError("a chain failed:\n" + errors[0])
    if lost and len(lost) == len([c for c in range(chains) if tunes[c] + lengths[c] > 0]):
        raise RuntimeError("every chain was lost with its worker: " + "; ".join(
            f"chain {c}: {why}" for c, why in sorted(lost.items())))
    if store is not None:
        # a lost chain's stored draws stay in the trace (resume continues it); the result
        # holds the other chains, at their full length
        dt = store.read(None if not lost else [c for c in range(chains) if c not in lost])
        if interrupted:
            dt.attrs["pp_models_interrupted"] = 1
        if dt["posterior"].sizes.get("draw", 0) == 0:
            raise SamplingInterrupted(None)
        dt.attrs.pop("pp_models_trace_status", None)
        dt.attrs["pp_models_trace"] = str(store.path)
        _note_lost(dt, lost)
        return dt, interrupted
    dt = _to_datatree(model, spec, outputs, draws, tune, time.perf_counter() - t0)
    if dt is None:
        raise SamplingInterrupted(None)
    _note_lost(dt, lost)
    if interrupted:
        dt.attrs["pp_models_interrupted"] = 1
    dt.attrs["pp_models_draws_completed"] = [int(o.completed) for o in outputs]
    return dt, interrupted


def _note_lost(dt, lost: dict[int, str]) -> None:
    if lost:
        dt.attrs["pp_models_lost_chains"] = sorted(lost)
        dt.attrs["pp_models_lost_reasons"] = [lost[c] for c in sorted(lost)]


def _open_trace(model, spec, step, path, resume, start, *, draws, tune, chains):
    """Create the trace folder (or open it to resume, checking it matches the run);
    returns the store and each chain's stored state (None for a new chain)."""
    from inference.trace_store import TraceStore

    value_vars = {k: [list(np.shape(v)), str(np.asarray(v).dtype)] for k, v in start.items()}
    if resume:
        store = TraceStore(path)
        check_resumable(store, draws=draws, tune=tune, chains=chains)
        if (json.loads(store.attrs.get("value_vars", "{}")) != value_vars
                or list(store.attrs.get("var_names", [])) != list(spec.names)):
            raise ValueError(f"trace: {path} was written by another model (or other "
                             "var_names); it cannot be resumed with this one")
        store.set_status("running")
        return store, [store.chain_state(c) for c in range(chains)]
    row = {n: start[n] for n in spec.direct}
    if spec.fn is not None:
        row.update(zip(spec.computed, spec.fn(start), strict=True))
    posterior = {}
    for name in spec.names:
        value = np.asarray(row[name])
        posterior[name] = (value.dtype, value.shape, spec.dims.get(name, ()))
    stats = {}
    for leaf in flatten_steps(step):
        for name, (dtype, shape) in leaf.stats_dtypes_shapes.items():
            stats[name] = (np.dtype(dtype), tuple(shape or ()))
    store = create_trace(path, model, posterior=posterior, stats=stats,
                         value_vars=value_vars,
                         steps=[type(leaf).__name__ for leaf in flatten_steps(step)],
                         chains=chains, draws=draws, tune=tune)
    return store, [None] * chains


def _to_datatree(model, spec, outputs, draws, tune, seconds) -> xr.DataTree | None:
    kept = [o for o in outputs if o.completed > 0]
    if not kept:
        return None
    length = min(o.completed for o in kept)
    coords = {"chain": np.arange(len(kept)), "draw": np.arange(length)}
    posterior = {}
    for name in spec.names:
        arr = np.stack([o.values[name][:length] for o in kept])
        dims = spec.dims.get(name) or tuple(f"{name}_dim_{i}" for i in range(arr.ndim - 2))
        posterior[name] = (("chain", "draw", *dims), arr)
        for d, size in zip(dims, arr.shape[2:], strict=True):
            if d not in coords:
                coords[d] = coord_values(model, d, size)
    stats = {name: (("chain", "draw", *(f"{name}_dim_{i}" for i in range(v.ndim - 1))),
                    np.stack([o.stats[name][:length] for o in kept]))
             for name, v in kept[0].stats.items()}
    attrs = {
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(),
        "inference_library": "pp_models",
        "sampler": "zoo Gibbs steps (inference.chains)",
        "sample_dims": ["chain", "draw"],
        "sampling_time": float(seconds),
        "tuning_steps": int(tune),
    }
    dt = xr.DataTree()
    dt["posterior"] = xr.DataTree(xr.Dataset(posterior, coords=coords, attrs=attrs))
    stat_coords = {"chain": coords["chain"], "draw": coords["draw"]}
    dt["sample_stats"] = xr.DataTree(xr.Dataset(stats, coords=stat_coords, attrs=attrs))
    for group, ds in data_groups(model, attrs).items():
        dt[group] = xr.DataTree(ds)
    return dt
