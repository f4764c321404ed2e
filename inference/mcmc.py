"""``fit``'s MCMC path (methods ``"nuts"`` and ``"gibbs"``): a tempered run
(:mod:`inference.tempering`), nutpie, the zoo's chain loop (:mod:`inference.chains`) when
every variable has a zoo Gibbs step, else ``pm.sample`` with the steps
:mod:`inference.gibbs.assignment` chose, the zoo's Ctrl-C and, with ``trace=``, the
draws written as they are made."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pymc as pm

from inference.chains import all_zoo_gibbs, sample_gibbs
from inference.fit_options import pop_step_options
from inference.gibbs.assignment import assign_steps, describe_steps, untransformed
from inference.interrupt import raising_sigint
from inference.nutpie_cache import reusing_compiled_model
from inference.progress import (
    ChainProgress,
    DrawCounter,
    ElapsedProgress,
    compiling,
    progress_enabled,
    pymc_table_fits,
)
from inference.sampling_core import SamplingInterrupted, check_resumable, model_cache
from inference.tempering.sampling import fit_tempered

__all__ = ["fit_mcmc"]

#: pm.sample options the zoo's own chain loop (inference.chains) honours; any other one
#: sends the run through pm.sample.
_ZOO_DRIVER_KWARGS = frozenset({"var_names", "initvals", "compute_convergence_checks"})


def _nutpie_available() -> bool:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def fit_mcmc(model: pm.Model, *, chosen: str, info, user_steps: list, sizes: dict,
             random_seed, progressbar: bool, kwargs: dict, stop, trace_options=None,
             tempering=None, executor=None):
    """Sample ``model`` by ``chosen`` (``"nuts"`` or ``"gibbs"``), ``fit``'s arguments
    checked.

    Parameters
    ----------
    model : pymc.Model
    chosen : {"nuts", "gibbs"}
    info : ZooModelInfo or None
        The factory's hints.
    user_steps : list
        The user's instantiated steps.
    sizes : dict
        ``draws``, ``tune``, ``chains``, ``cores``.
    random_seed : int, sequence of int or numpy Generator, optional
    progressbar : bool
    kwargs : dict
        ``fit``'s ``**method_kwargs``, checked (:mod:`inference.fit_options`).
    stop : threading.Event
        Set by a Ctrl-C (:func:`inference.interrupt.stop_requested`).
    trace_options : dict, optional
        ``trace``, ``resume``, ``flush_seconds``: the draws written as they are made.
    tempering : TemperingOptions, optional
    executor : concurrent.futures.Executor, optional

    Returns
    -------
    tuple
        The DataTree, the step assignment (step name -> variable names) and the sampler
        (``"zoo"``, ``"pymc"``, ``"nutpie"``, ...).
    """
    kwargs = dict(kwargs)
    if info is not None and info.trace_var_names is not None:
        kwargs.setdefault("var_names", list(info.trace_var_names))
    if info is not None and info.label_variables:
        # PyMC's own checks look at raw labels, which label switching makes meaningless;
        # check_convergence / summary look at the label-invariant statistics instead.
        kwargs.setdefault("compute_convergence_checks", False)
    if tempering is not None:
        dt, assignment = fit_tempered(
            model, info, user_steps, tempering, sizes=sizes, random_seed=random_seed,
            progressbar=progressbar, kwargs=kwargs, trace_options=trace_options,
            executor=executor)
        return dt, assignment, "zoo"
    if chosen == "nuts" and not user_steps:
        default_sampler = ("nutpie" if _nutpie_available() and trace_options is None
                           and executor is None else "pymc")
        sampler = kwargs.pop("nuts_sampler", default_sampler)
        if trace_options is not None and sampler != "pymc":
            raise ValueError(f"trace= needs PyMC's NUTS (nuts_sampler='pymc'), not {sampler!r}")
        if sampler == "pymc":
            dt = _pm_sample(model, None, sizes=sizes, random_seed=random_seed,
                            progressbar=progressbar, kwargs=kwargs, stop=stop,
                            trace_options=trace_options, executor=executor)
        else:
            # a second fit of the same model (other seed, sizes or data values) reuses
            # the first one's compiled model
            reuse = (reusing_compiled_model(model, progressbar=progressbar)
                     if sampler == "nutpie" and _nutpie_available()
                     else contextlib.nullcontext())
            # nutpie reports to PyMC's table only; where the table would be cut, a line
            # with the elapsed time stands in for it
            own_line = bool(progressbar) and progress_enabled(True) and not pymc_table_fits()
            waiting = ElapsedProgress(
                f"sampling {sizes['chains']} chains x {sizes['draws']:,} draws "
                f"(+{sizes['tune']:,} tuning) with {sampler}", enabled=own_line)
            with raising_sigint(stop), reuse, waiting:
                dt = pm.sample(
                    model=model,
                    random_seed=random_seed,
                    progressbar=progressbar and not own_line,
                    nuts_sampler=sampler,
                    **sizes,
                    **kwargs,
                )
        names = [untransformed(v.name) for v in model.value_vars]
        return dt, {"NUTS" if sampler == "pymc" else f"NUTS ({sampler})": names}, sampler

    if kwargs.pop("nuts_sampler", "pymc") != "pymc":
        raise ValueError("nuts_sampler must be 'pymc' when Gibbs steps are combined with NUTS")
    step_kwargs = pop_step_options(kwargs)
    steps = _steps_for(model, info, user_steps, step_kwargs, progressbar)
    if all_zoo_gibbs(steps) and set(kwargs) <= _ZOO_DRIVER_KWARGS:
        dt, _interrupted = sample_gibbs(
            model,
            steps,
            random_seed=random_seed,
            progressbar=progressbar,
            var_names=kwargs.get("var_names"),
            initvals=kwargs.get("initvals"),
            **(trace_options or {}),
            **sizes,
            executor=executor,
        )
        return dt, describe_steps(steps), "zoo"
    if kwargs.get("var_names") is not None and not list(kwargs["var_names"]):
        raise ValueError("var_names=[] (no variable traced per draw) needs a model whose "
                         "every variable has a zoo Gibbs step; name at least one variable")
    dt = _pm_sample(model, steps, sizes=sizes, random_seed=random_seed,
                    progressbar=progressbar, kwargs=kwargs, stop=stop,
                    trace_options=trace_options, executor=executor)
    return dt, describe_steps(steps), "pymc"


def _pm_sample(model, steps, *, sizes, random_seed, progressbar, kwargs, stop, trace_options,
               executor=None):
    """``pm.sample`` with the zoo's Ctrl-C (every chain stops, between two draws) and,
    with ``trace_options``, the draws written to a trace folder as they are made."""
    from inference.pymc_callback import SampleCallback, resume_initvals
    from inference.trace_store import TraceStore

    kwargs = dict(kwargs)
    sizes = dict(sizes)
    if executor is not None and trace_options is not None:
        raise ValueError("trace= with executor= needs the zoo's chain loop (every variable "
                         "updated by a zoo Gibbs step, or tempering=); PyMC's sampler "
                         "writes the trace from the process that runs the chain loop")
    store = states = None
    resumed = trace_options is not None and trace_options["resume"]
    if resumed:
        store = TraceStore(trace_options["trace"])
        check_resumable(store, draws=sizes["draws"], tune=sizes["tune"],
                        chains=sizes["chains"])
        stored = json.loads(store.attrs.get("value_vars", "{}"))
        point = model.initial_point()
        if {k: list(np.shape(v)) for k, v in point.items()} != {
                k: v[0] for k, v in stored.items()}:
            raise ValueError(f"trace: {store.path} was written by another model; it "
                             "cannot be resumed with this one")
        states = [store.chain_state(c) for c in range(store.chains)]
        left = [store.draws - (s.completed if s else 0) for s in states]
        if max(left) <= 0:
            return store.read()
        store.set_status("running")
        # every chain goes on from its stored point; PyMC's steps keep no state we can
        # store, so they adapt again during the tuning iterations (not stored)
        sizes["draws"] = max(left)
        kwargs["initvals"] = resume_initvals(model, states)
        if steps is None:
            kwargs.setdefault("init", "adapt_diag")  # no jitter away from the stored point
    user = kwargs.pop("callback", None)
    # PyMC's table needs ~100 columns (rich cuts its columns below): a narrower terminal
    # gets the zoo's one-line progress instead, counted by a callback
    own_bar = bool(progressbar) and progress_enabled(True) and not pymc_table_fits()
    bar = ChainProgress(sizes["chains"], sizes["tune"] + sizes["draws"], enabled=own_bar)
    if own_bar:
        user = DrawCounter(bar, sizes["chains"], then=user)
        progressbar = False
    callback = SampleCallback(
        model, stop, user=user,
        trace=None if trace_options is None else trace_options["trace"],
        sizes=None if trace_options is None else dict(
            draws=sizes["draws"], tune=sizes["tune"], chains=sizes["chains"]),
        flush_seconds=None if trace_options is None else trace_options["flush_seconds"],
        resume_states=states, store=store)
    step_kwarg = {} if steps is None else {"step": steps}
    on_executor = contextlib.nullcontext({"lost": {}})
    if executor is not None:
        from inference.executors import pymc_chains_on

        sizes["cores"] = 1  # pm.sample's sequential chain loop is the one handed over
        on_executor = pymc_chains_on(executor, stop)
    try:
        with bar, on_executor as report:
            dt = pm.sample(model=model, random_seed=random_seed, progressbar=progressbar,
                           nuts_sampler="pymc", callback=callback, **step_kwarg, **sizes,
                           **kwargs)
        if report["lost"]:
            lost = report["lost"]
            dt.attrs["pp_models_lost_chains"] = sorted(lost)
            dt.attrs["pp_models_lost_reasons"] = [lost[c] for c in sorted(lost)]
    except ValueError as err:
        if stop.is_set() and "Not enough samples" in str(err):
            raise SamplingInterrupted(None) from None
        raise
    finally:
        if trace_options is not None:
            callback.finish(stop.is_set())
    if resumed:
        dt = store.read()
        if stop.is_set():
            dt.attrs["pp_models_interrupted"] = 1
    return dt


def _steps_for(model, info, user_steps, step_kwargs, progressbar) -> list:
    """The steps :func:`~inference.gibbs.assignment.assign_steps` chooses, built once
    per model when nothing user-specific is asked.

    Steps compile point functions and kernels; a second ``fit`` on the same model reuses
    them (each chain re-seeds and resets them through ``setup_chain``).
    """
    cacheable = not user_steps and step_kwargs is None
    cache = model_cache(model) if cacheable else {}
    if "zoo_steps" in cache:
        return cache["zoo_steps"]
    family = f" ({info.family})" if info is not None and info.family else ""
    with compiling(f"the samplers of the model{family}", enabled=progressbar):
        steps = assign_steps(model, info, user_steps, step_kwargs)
    if cacheable and all_zoo_gibbs(steps):
        # PyMC's own steps (NUTS) adapt in place, so only zoo steps are reused
        cache["zoo_steps"] = steps
    return steps
