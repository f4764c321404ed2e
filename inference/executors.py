"""Chains on any ``concurrent.futures.Executor``: ``fit(..., executor=...)``.

One task per chain: "run chain ``c`` of this model with these steps to completion". The
task carries the built steps (and the model they hold) by ``cloudpickle``, the chain's
start point and its own random generator, the very ones the local run gives chain ``c``,
so a process pool, a Dask cluster (``Client.get_executor()``) or this process give the
same draws for the same seed. A tempered chain is one zoo step (its whole ladder), so it
is one task too.

Why the built steps rather than the factory and its arguments: the steps are what the
local run forks into its workers, whatever built them (a user's ``step=``, a factory's
hints, PyMC's assignment), and PyMC's own multiprocess sampler pickles them the same way.
Compiled PyTensor functions pickle as their graphs and are compiled again on the worker,
from PyTensor's and Numba's disk caches when the worker has seen them.

Two paths use it:

- the zoo's chain loop (:mod:`inference.chains`): :func:`run_chain_tasks` submits
  ``inference.chains``' chain task and collects the outputs;
- ``pm.sample`` (NUTS and PyMC's other steps): :func:`pymc_chains_on` hands the chain
  loop of ``pm.sample``'s sequential path to the executor, so PyMC prepares everything
  (initial points, NUTS initialisation, traces) and builds the result as it does for a
  local run; only where each chain's iterations run changes.

A worker that dies mid-chain (killed, out of memory, a lost node) is not an error of the
chain: the chain is reported lost (:class:`ChainsLost`, naming it), the other chains'
draws are kept, and with ``trace=`` the lost chain's stored draws are kept too and
``resume=True`` continues it.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import threading
import traceback

import cloudpickle

from pp_models.pymc_internals import iter_chain, replace_sequential_chains, sequential_chains

__all__ = ["ChainsLost", "is_worker_loss", "pickled", "pymc_chains_on", "run_chain_tasks"]

#: Exceptions (by class name, so Dask need not be imported) that mean the task's worker
#: went away rather than that the task failed.
_LOSS_NAMES = frozenset({"KilledWorker", "CommClosedError", "FutureCancelledError",
                         "CancelledError", "BrokenProcessPool", "BrokenThreadPool",
                         "BrokenExecutor"})


class ChainsLost(UserWarning):
    """Some chains were lost with their workers; the result holds the others."""


def is_worker_loss(err: BaseException) -> bool:
    """Whether ``err`` (raised by a future) says the task's worker was lost."""
    if isinstance(err, cf.BrokenExecutor | cf.CancelledError):
        return True
    return any(cls.__name__ in _LOSS_NAMES for cls in type(err).__mro__)


def pickled(obj, what: str) -> bytes:
    """``cloudpickle.dumps(obj)``, or a ``ValueError`` saying ``what`` cannot reach the
    executor's workers."""
    try:
        return cloudpickle.dumps(obj)
    except Exception as err:
        raise ValueError(f"executor: {what} cannot be pickled to reach the executor's "
                         f"workers ({type(err).__name__}: {err}); run without executor= "
                         "or make it picklable") from err


def run_chain_tasks(executor, fn, jobs: dict[int, tuple], flag, *, on_done=None):
    """Submit ``fn(*jobs[c])`` for every chain ``c``; wait for them all.

    Returns ``(results, lost)``: chain -> the task's return value for the chains that
    finished, chain -> a sentence saying why for the chains whose worker was lost. A
    task that raised anything else re-raises here. ``flag`` (``is_set()``, Ctrl-C)
    cancels the tasks not started and stops waiting for the others, and so does a
    ``KeyboardInterrupt`` while waiting, which then propagates; ``on_done(c, result)``
    is called as each chain finishes.
    """
    futures = {}
    try:
        for c, args in jobs.items():
            futures[executor.submit(fn, *args)] = c
    except RuntimeError as err:  # shut down (or broken) between the check and here
        for f in futures:
            f.cancel()
        raise ValueError(f"executor: cannot submit the chains: {err}") from err
    results: dict[int, object] = {}
    lost: dict[int, str] = {}
    pending = set(futures)
    while pending:
        try:
            done, pending = cf.wait(pending, timeout=0.2, return_when=cf.FIRST_COMPLETED)
        except KeyboardInterrupt:  # raised by Ctrl-C on pm.sample's path
            for f in pending:
                f.cancel()
            raise
        for f in done:
            c = futures[f]
            try:
                results[c] = f.result()
            except BaseException as err:
                if not is_worker_loss(err):
                    raise
                lost[c] = f"its worker was lost ({type(err).__name__}: {err})".replace(
                    ": )", ")")
                continue
            if on_done is not None:
                on_done(c, results[c])
        if pending and flag.is_set():
            for f in pending:
                f.cancel()
            break
    return results, lost


# ---------------------------------------------------------------------------------------
# pm.sample's chains on an executor
# ---------------------------------------------------------------------------------------
_LOCAL = threading.local()
_INSTALL_LOCK = threading.Lock()
_INSTALLED = {"count": 0, "original": None}


@contextlib.contextmanager
def pymc_chains_on(executor, flag):
    """While inside, ``pm.sample`` calls made by this thread with ``cores=1`` run each
    chain as a task on ``executor``; yields a dict that receives ``"lost"`` (chain ->
    reason). Other threads' ``pm.sample`` calls are untouched; PyMC's function is put
    back when the last user leaves."""
    report: dict = {"lost": {}}
    with _INSTALL_LOCK:
        if _INSTALLED["count"] == 0:
            _INSTALLED["original"] = sequential_chains()
            replace_sequential_chains(_sample_many_dispatch)
        _INSTALLED["count"] += 1
    previous = getattr(_LOCAL, "target", None)
    _LOCAL.target = (executor, flag, report)
    try:
        yield report
    finally:
        _LOCAL.target = previous
        with _INSTALL_LOCK:
            _INSTALLED["count"] -= 1
            if _INSTALLED["count"] == 0:
                replace_sequential_chains(_INSTALLED["original"])
                _INSTALLED["original"] = None


def _sample_many_dispatch(**kwargs):
    target = getattr(_LOCAL, "target", None)
    if target is None:
        return _INSTALLED["original"](**kwargs)
    return _sample_many_on(*target, **kwargs)


def _sample_many_on(executor, flag, report, *, draws, chains, traces, start, rngs, step,
                    callback=None, **kwargs):
    """PyMC's sequential chain loop (every chain from the same initial step
    state, chain ``i`` from ``start[i]`` with ``rngs[i]``), one task per chain."""
    tune = int(kwargs.get("tune", 0) or 0)
    model = kwargs.get("model")
    payload = pickled((step, model), "the model and its step methods")
    # the chains' traces differ only in their own attributes (chain number, arrays):
    # the model and the compiled trace function are pickled once
    trace_payload = pickled(traces[0], "the trace")
    jobs = {i: (payload, trace_payload, _own_attributes(traces[i]), i, start[i], rngs[i],
                draws, tune) for i in range(chains)}
    results, lost = run_chain_tasks(executor, _pymc_chain, jobs, flag)
    report["lost"].update(lost)
    for i, state in results.items():
        if isinstance(state, str):
            raise RuntimeError(f"chain {i} failed:\n{state}")
        vars(traces[i]).update(state)
    if not results:
        raise RuntimeError("every chain was lost with its worker: " + "; ".join(
            f"chain {c}: {why}" for c, why in sorted(lost.items())))
    missing = [i for i in range(chains) if i not in results]
    if missing:
        # chains lost or never run (Ctrl-C): PyMC builds its result from the others
        kept = [t for i, t in enumerate(traces) if i in results]
        traces[:] = kept


#: Attributes of a PyMC chain trace that are the same for every chain (sent once).
_TRACE_SHARED = frozenset({"model", "fn", "vars"})


def _own_attributes(trace) -> dict:
    return {k: v for k, v in vars(trace).items() if k not in _TRACE_SHARED}


def _pymc_chain(payload, trace_payload, shell, chain, start, rng, draws, tune):
    """One chain of ``pm.sample`` on a worker; returns the trace's recorded state (or the
    traceback of a failure, as text)."""
    try:
        step, model = cloudpickle.loads(payload)
        trace = cloudpickle.loads(trace_payload)
        vars(trace).update(shell)
        for _stats in iter_chain(draws=draws, step=step, start=start, trace=trace,
                                 chain=chain, tune=tune, model=model, rng=rng):
            pass
    except Exception as err:
        return "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return _own_attributes(trace)
