"""``fit``: one door from a PyMC model to NUTS, Gibbs steps or ADVI.

Every method returns an ``xarray.DataTree`` (ArviZ 1.x) with the same layout: a
``posterior`` group with dims ``(chain, draw, ...)``, ``sample_stats`` for MCMC (or the
ADVI loss history in ``fit_history``), ``observed_data``; label-invariant statistics a
zoo factory declares are added to ``posterior``; the root attributes record the method,
the step each variable got, the seed and the package versions.
"""

from __future__ import annotations

import contextlib
import functools
import json
import numbers
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import pymc as pm
import pytensor
import xarray as xr
from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods.compound import BlockedStep, CompoundStep, flatten_steps
from pymc.vartypes import discrete_types

from inference.chains import all_zoo_gibbs, model_cache, sample_gibbs
from inference.executors import ChainsLost
from inference.fit_options import check_method_options, pop_step_options
from inference.gibbs.registry import PYMC_STEPS, get_step, step_for
from inference.interrupt import raising_sigint, stop_requested
from inference.log_likelihood import compute_log_likelihood, needed_for_log_likelihood
from inference.nutpie_cache import reusing_compiled_model
from inference.posterior_layout import add_derived, move_labels
from inference.progress import (
    ChainProgress,
    DrawCounter,
    ElapsedProgress,
    compiling,
    in_ci,
    progress_enabled,
    pymc_table_fits,
)
from inference.tempering.options import check_tempering
from inference.tempering.sampling import check_tempering_request, fit_tempered
from inference.trace_store import check_trace_path
from pp_models.model_info import ZooModelInfo, get_info
from pp_models.validation import (
    check_executor,
    check_int,
    check_positive,
    check_random_seed,
    check_real,
)

__all__ = ["METHODS", "assign_steps", "check_method", "describe_steps", "fit",
           "select_pymc_steps"]

#: The methods ``fit`` understands.
METHODS = ("auto", "nuts", "gibbs", "advi")

_VERSIONED_PACKAGES = ("pp-models", "pymc", "pytensor", "arviz", "numpy", "numba", "nutpie")


def fit(
    model: pm.Model,
    *,
    method: str = "auto",
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 4,
    cores: int | None = None,
    random_seed=None,
    progressbar: bool = True,
    step=None,
    postprocess: bool = True,
    trace=None,
    resume: bool = False,
    trace_flush: float | None = None,
    tempering=None,
    log_likelihood: bool = False,
    executor=None,
    **method_kwargs,
) -> xr.DataTree:
    """Sample (or approximate) the posterior of ``model``.

    Parameters
    ----------
    model : pymc.Model
        Any PyMC model; zoo factories attach hints (preferred method, Gibbs steps,
        label-invariant statistics) that ``fit`` uses.
    method : {"auto", "nuts", "gibbs", "advi"}
        - ``"nuts"``: NUTS for an all-continuous model (nutpie when installed and no
          ``step`` is given, PyMC's own NUTS otherwise). nutpie compiles a model once:
          later fits of the same model object, with other seeds or sizes or with new data
          values of the same shapes (``pm.set_data``), reuse it (see
          :mod:`inference.nutpie_cache`).
        - ``"gibbs"``: every free variable gets a step: the user's ``step``, then the
          factory's step hints, then registered zoo steps by distribution, then PyMC's
          assignment (NUTS for continuous variables, its discrete Gibbs/Metropolis for
          discrete ones).
        - ``"advi"``: mean-field ADVI (``fullrank=True`` for full-rank) optimised with
          Adam, then ``chains * draws`` draws from the approximation.
        - ``"auto"``: the factory's preferred method; otherwise ``"nuts"`` for an
          all-continuous model and ``"gibbs"`` for one with discrete variables.
    draws, tune, chains : int
        Kept draws per chain (>= 1), tuning iterations (>= 0), chains (>= 1).
    cores : int, optional
        Parallel chains (processes); default PyMC's choice.
    random_seed : int, sequence of int or numpy Generator, optional
    progressbar : bool
        Progress of sampling (PyMC's bar, or the zoo's chain line) and of ADVI (with its
        running loss), and a "compiling ..." line while a first call compiles; off when
        the ``CI`` environment variable is set.
    step : step method or list of step methods, optional
        Steps for some variables; the rest are assigned as for ``"gibbs"``.
    postprocess : bool
        Let a zoo model add its post-fit outputs (e.g. the DP mixture's co-clustering
        matrix and point-estimate partition, see ``ZooModelInfo.postprocess``).
    trace : str or os.PathLike, optional
        A folder (that must not exist yet) where the draws are written while they are
        made (:mod:`inference.trace_store`): a crash or a kill loses at most the last
        ``trace_flush`` seconds, ``ppzoo check PATH`` reads the run while it goes and
        ``resume=True`` continues it. Methods ``"gibbs"`` and ``"nuts"`` (PyMC's NUTS).
    resume : bool
        Continue the run stored at ``trace``: every chain goes on from its last stored
        point and step state, up to the ``draws`` it was started with (``draws``,
        ``tune``, ``chains`` must be those of the stored run). With zoo Gibbs steps the
        continuation is exact (their random generators are stored too); PyMC's own steps
        (NUTS, Metropolis) restart from the stored point with their adaptation redone
        during the ``tune`` iterations not yet made (their adapted state is not stored).
    trace_flush : float, optional
        Seconds between two writes of each chain's new draws (default 5; ``0``: after
        every draw).
    tempering : bool, int, sequence of float or dict, optional
        Parallel tempering (:mod:`inference.tempering`): each chain runs replicas of the
        model's steps at inverse temperatures from 1 down to 0, each sampling the power
        posterior ``p(theta) p(X | theta)^beta`` (the replica at 0 draws from the prior
        exactly), and neighbours swap states after every sweep (non-reversible even/odd
        swaps, Syed et al. 2022); while tuning, the ladder is adapted so all neighbours
        swap equally often. ``True``: 8 temperatures; an int: that many; a sequence: the
        starting ladder (increasing, ending at 1); a dict: ``n_temperatures`` or
        ``ladder``, ``adapt`` (default True), ``prior_draws`` (default True). Chains stay
        independent tempered runs (R-hat keeps its meaning); ``posterior`` holds the draws
        at beta = 1 and a ``tempering`` group the ladder, each temperature's
        log-likelihood per draw, swap rates, round trips and the communication barrier.
        Every step must be able to temper (zoo steps with ``can_temper``, NUTS): a model
        with another step is refused with a ``ValueError`` naming it. Methods
        ``"gibbs"`` and ``"nuts"`` (PyMC's NUTS, tempered), on the zoo's chain loop.
    log_likelihood : bool
        Add the pointwise log-likelihood as a ``log_likelihood`` group, so ``az.loo(dt)``
        and ``az.compare`` work (:func:`inference.log_likelihood.compute_log_likelihood`:
        for collapsed models the conditional predictive of each observation given the
        others, otherwise its density with its own latent variable summed out). Variables
        it needs that the model does not record by default are recorded (collapsed LDA:
        ``z``). Skipped after a Ctrl-C.
    executor : concurrent.futures.Executor, optional
        Where the chains run, one task per chain (:mod:`inference.executors`): a
        ``ProcessPoolExecutor``, a Dask ``Client(address).get_executor()``, ... The
        same seed gives the same draws as without it. The model and its steps are
        pickled to the workers; ``trace=`` must then be a folder the workers can write
        (checked on a worker first), and ``resume=True`` continues it there. A chain
        whose worker is lost (killed, out of memory) is left out of the result with a
        :class:`~inference.executors.ChainsLost` warning naming it (its draws stored in
        ``trace=`` stay there for ``resume``); the other chains' draws are kept. NUTS
        runs PyMC's sampler (nutpie samples all chains in one call, so it cannot hand
        a chain to a worker); ``cores`` does not apply; methods ``"gibbs"`` and
        ``"nuts"``.
    **method_kwargs
        Passed on: to ``pm.sample`` for ``"nuts"``/``"gibbs"`` (e.g. ``target_accept``,
        ``nuts_sampler``, ``initvals``, ``var_names``); for ``"advi"``: ``n``
        (iterations, default 30000), ``learning_rate`` (default 0.01), ``fullrank``,
        ``obj_optimizer``, ``callbacks`` and any other ``pm.fit`` option.

    Returns
    -------
    xarray.DataTree
        The raw labels of a zoo model are in the ``posterior_labels`` group, so PyMC's
        :func:`pymc.sample_posterior_predictive` and :func:`pymc.compute_log_likelihood`
        do not find them there (and cannot draw a collapsed model's posterior predictive);
        use :func:`inference.sample_posterior_predictive` and
        :func:`inference.compute_log_likelihood`, which take the same arguments.
        After a Ctrl-C during sampling by the zoo's chain loop (every variable updated by
        a zoo Gibbs step): the draws every chain had completed, root attributes
        ``pp_models_interrupted = 1`` and ``pp_models_draws_completed`` (per chain),
        post-processing skipped, and a ``UserWarning`` saying so.

    Raises
    ------
    ValueError, TypeError
        For an unknown method, bad sizes, a bad ``random_seed``, an option in
        ``**method_kwargs`` the method does not take, ``var_names`` or ``initvals``
        naming no variable of the model, a model with discrete free variables sent to
        NUTS or ADVI; all raised before anything is compiled.
    """
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    draws = check_int(draws, "draws", minimum=1)
    tune = check_int(tune, "tune", minimum=0)
    chains = check_int(chains, "chains", minimum=1)
    if cores is not None:
        cores = check_int(cores, "cores", minimum=1)
    random_seed = check_random_seed(random_seed)
    if executor is not None:
        executor = check_executor(executor)
        if cores is not None:
            raise ValueError("cores is for chains in local processes; with executor= the "
                             "executor's workers run the chains (drop cores=)")
    user_steps = _as_step_list(step)
    if trace_flush is not None:
        trace_flush = check_real(trace_flush, "trace_flush (seconds)", minimum=0.0)
    tempering = check_tempering(tempering)
    if trace is not None:
        trace = check_trace_path(trace, resume=bool(resume))
    elif resume:
        raise ValueError("resume=True needs trace=PATH (the trace to continue)")
    elif trace_flush is not None:
        raise ValueError("trace_flush needs trace=PATH (how often the trace is written)")
    # PyMC's bars (NUTS, ADVI with its running loss) and ours are off in CI logs
    progressbar = bool(progressbar) and not in_ci()

    info = get_info(model)
    discrete = [rv.name for rv in model.free_RVs if rv.dtype in discrete_types]
    chosen = _resolve_method(method, info, discrete, user_steps)
    _check_continuous(chosen, info, discrete)
    if chosen == "advi" and user_steps:
        raise ValueError("step is not used by method='advi'; drop it or use method='gibbs'")
    if chosen == "advi" and trace is not None:
        raise ValueError("trace= stores MCMC draws; method='advi' makes none (drop trace=)")
    if chosen == "advi" and executor is not None:
        raise ValueError("executor= runs MCMC chains; method='advi' has none (drop executor=)")
    if executor is not None and method_kwargs.get("nuts_sampler", "pymc") != "pymc":
        raise ValueError(f"executor= needs PyMC's NUTS (nuts_sampler='pymc'): "
                         f"nuts_sampler={method_kwargs['nuts_sampler']!r} samples every "
                         "chain in one call, which cannot be handed to the workers")
    if log_likelihood and chosen != "advi":
        # record what the pointwise terms need (collapsed LDA: z) before any sampling
        needed = needed_for_log_likelihood(model, method_kwargs.get("var_names"))
        if needed is not None:
            method_kwargs["var_names"] = needed
    method_kwargs = check_method_options(model, chosen, method_kwargs)
    if tempering is not None:
        check_tempering_request(model, chosen, method_kwargs)
    trace_options = (None if trace is None
                     else {"trace": trace, "resume": bool(resume), "flush_seconds": trace_flush})

    with stop_requested() as stop:
        if chosen == "advi":
            with raising_sigint(stop):
                dt, assignment, sampler = _fit_advi(
                    model, draws, chains, random_seed, progressbar, method_kwargs
                )
        else:
            dt, assignment, sampler = _fit_mcmc(
                model,
                chosen,
                info,
                user_steps,
                dict(draws=draws, tune=tune, chains=chains, cores=cores),
                random_seed,
                progressbar,
                method_kwargs,
                stop,
                trace_options,
                tempering,
                executor,
            )
        if stop.is_set() and sampler != "zoo":
            # PyMC / nutpie / ADVI stopped on the KeyboardInterrupt and returned what
            # they had: drop draws never made (nutpie leaves them NaN), mark the result
            dt = _trim_unfinished(dt)
            dt.attrs["pp_models_interrupted"] = 1

    with stop_requested() as stop:
        stop.arm()  # there are draws to keep: a Ctrl-C now skips the optional outputs
        interrupted = bool(dt.attrs.get("pp_models_interrupted", 0)) or stop.is_set()
        derived = add_derived(dt, info)
        if postprocess and info is not None and info.postprocess is not None:
            if interrupted:
                # the user asked to stop: keep the draws, skip the optional outputs
                dt.attrs["pp_models_postprocess_skipped"] = 1
            else:
                dt = info.postprocess(dt)
        move_labels(dt, info)
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
            stacklevel=2,
        )
    dt.attrs.update(
        {
            "pp_models_method": chosen,
            "pp_models_requested_method": method,
            "pp_models_sampler": sampler,
            "pp_models_steps": json.dumps(assignment),
            "pp_models_random_seed": json.dumps(_seed_repr(random_seed)),
            "pp_models_versions": json.dumps(dict(_versions())),
            "pp_models_family": info.family if info else "",
            "pp_models_label_invariant": json.dumps(derived),
            "pp_models_label_variables": json.dumps(list(info.label_variables) if info else []),
        }
    )
    if tempering is not None:
        dt.attrs["pp_models_tempering"] = json.dumps(
            {"initial_ladder": list(tempering.ladder), "adapt": tempering.adapt,
             "prior_draws": tempering.prior_draws})
    return dt


def _warn_lost(dt: xr.DataTree, chains: int) -> None:
    lost = [int(c) for c in dt.attrs["pp_models_lost_chains"]]
    reasons = list(dt.attrs.get("pp_models_lost_reasons", [""] * len(lost)))
    kept = dt["posterior"].sizes.get("chain", 0)
    what = "; ".join(f"chain {c}: {why}" for c, why in zip(lost, reasons))
    warnings.warn(
        f"{len(lost)} of {chains} chains lost with their workers ({what}); the result holds "
        f"the draws of the {kept} other chains (dt.attrs['pp_models_lost_chains'])",
        ChainsLost, stacklevel=3)


def _as_step_list(step) -> list:
    if step is None:
        return []
    steps = list(step) if isinstance(step, Sequence) else [step]
    for s in steps:
        if not isinstance(s, BlockedStep | CompoundStep):
            raise TypeError(
                f"step must be an instantiated PyMC step method (or a list of them), got {s!r}"
            )
    return steps


def check_method(model: pm.Model, method: str = "auto") -> str:
    """The method ``fit(model, method=method)`` would use, or the ``ValueError`` it would
    raise for it (an unknown method; NUTS or ADVI for a model with discrete free
    variables, naming the factory option that builds a continuous form when there is
    one, e.g. the DP mixture's ``truncation=``). Compiles nothing: callers (the CLI)
    ask before announcing a run.
    """
    if not isinstance(model, pm.Model):
        raise TypeError(f"model must be a pymc.Model, got {type(model).__name__}")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    info = get_info(model)
    discrete = [rv.name for rv in model.free_RVs if rv.dtype in discrete_types]
    chosen = _resolve_method(method, info, discrete, [])
    _check_continuous(chosen, info, discrete)
    return chosen


def _check_continuous(chosen: str, info: ZooModelInfo | None, discrete: list[str]) -> None:
    if chosen not in ("nuts", "advi") or not discrete:
        return
    alternative = ""
    if info is not None and info.continuous_form:
        alternative = f", or build the model with {info.continuous_form}"
    raise ValueError(
        f"method={chosen!r} needs an all-continuous model, but these free variables "
        f"are discrete: {', '.join(discrete)}. Use method='gibbs' (or 'auto'){alternative}."
    )


def _resolve_method(
    method: str, info: ZooModelInfo | None, discrete: list[str], user_steps: list
) -> str:
    if method != "auto":
        return method
    if info is not None and info.preferred_method in METHODS[1:]:
        return info.preferred_method
    return "gibbs" if (discrete or user_steps) else "nuts"


def _nutpie_available() -> bool:
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def _fit_mcmc(model, chosen, info, user_steps, sizes, random_seed, progressbar, kwargs, stop,
              trace_options=None, tempering=None, executor=None):
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
            dt = _pm_sample(model, None, sizes, random_seed, progressbar, kwargs, stop,
                            trace_options, executor)
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
        names = [_untransformed(v.name) for v in model.value_vars]
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
    dt = _pm_sample(model, steps, sizes, random_seed, progressbar, kwargs, stop,
                    trace_options, executor)
    return dt, describe_steps(steps), "pymc"


def _pm_sample(model, steps, sizes, random_seed, progressbar, kwargs, stop, trace_options,
               executor=None):
    """``pm.sample`` with the zoo's Ctrl-C (every chain stops, between two draws) and,
    with ``trace_options``, the draws written to a trace folder as they are made."""
    from inference.chains import SamplingInterrupted
    from inference.pymc_callback import SampleCallback, check_resumable, resume_initvals
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


#: pm.sample options the zoo's own chain loop (inference.chains) honours; any other one
#: sends the run through pm.sample.
_ZOO_DRIVER_KWARGS = frozenset({"var_names", "initvals", "compute_convergence_checks"})


def _steps_for(model, info, user_steps, step_kwargs, progressbar) -> list:
    """:func:`assign_steps`, built once per model when nothing user-specific is asked.

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


def assign_steps(model, info, user_steps, step_kwargs, *, only=None) -> list:
    """User steps, then factory hints, then registered zoo steps, then PyMC's choice.

    ``only``: names of the random variables to assign (default: every free variable).
    """
    targets = [rv for rv in model.free_RVs if only is None or rv.name in only]
    target_values = {model.rvs_to_values[rv] for rv in targets}
    steps = list(user_steps)
    claimed = {v for s in steps for v in s.vars}

    for hint in info.step_hints if info else ():
        values = [model.rvs_to_values[model[name]] for name in hint.var_names]
        if claimed.intersection(values) or not target_values.issuperset(values):
            continue
        options = hint.options(model) if callable(hint.options) else dict(hint.options)
        if hint.step in PYMC_STEPS:
            step = PYMC_STEPS[hint.step](vars=values, model=model, **options)
        else:
            step = get_step(hint.step).from_model(model, hint.var_names, **options)
        steps.append(step)
        claimed.update(values)

    for rv in targets:
        value = model.rvs_to_values[rv]
        if value in claimed:
            continue
        zoo_step = step_for(rv)
        if zoo_step is not None:
            steps.append(zoo_step.from_model(model, [rv.name]))
            claimed.add(value)

    if not target_values - claimed:
        if step_kwargs:
            raise ValueError(
                f"options for the step(s) {', '.join(sorted(step_kwargs))} (e.g. "
                "target_accept) have no variable to apply to: every variable already has a "
                f"step ({', '.join(describe_steps(steps))}); drop them")
        provided, selected = steps, {}
    elif only is None:
        provided, selected = assign_step_methods(model, steps or None, methods=_pymc_methods())
    else:
        # PyMC's assignment covers every free variable; assign only the targets.
        provided, selected = steps, select_pymc_steps(model, target_values - claimed)
    built = instantiate_steppers(model, provided, selected, step_kwargs=step_kwargs)
    return built if isinstance(built, list) else [built]


def _pymc_methods() -> list:
    """PyMC's step classes without the zoo's entries: here the zoo's steps are already
    assigned, what is left is PyMC's to choose (and the zoo's entries would call back
    here)."""
    from pymc.step_methods import STEP_METHODS

    from inference.gibbs.pymc_assignment import ZooAssignment
    from pp_models.step_assignment import ZooStepsNotLoaded

    return [m for m in STEP_METHODS if m is not ZooAssignment and m is not ZooStepsNotLoaded]


def select_pymc_steps(model, values) -> dict:
    """PyMC's competence-based choice of step class for each of ``values``."""
    import pytensor.gradient as tg

    selected: dict = {}
    logp = model.logp()
    for value in model.value_vars:
        if value not in values:
            continue
        has_grad = value.dtype not in discrete_types
        if has_grad:
            try:
                tg.grad(logp, value)
            except (NotImplementedError, tg.NullTypeGradError):
                has_grad = False
        rv = model.values_to_rvs[value]
        best = max(_pymc_methods(), key=lambda m, rv=rv, g=has_grad: m._competence(rv, g))
        selected.setdefault(best, []).append(value)
    return selected


def describe_steps(steps) -> dict[str, list[str]]:
    """Step name -> the (untransformed) names of the variables it updates."""
    out: dict[str, list[str]] = {}
    for s in steps:
        for leaf in flatten_steps(s):
            key = getattr(leaf, "name", type(leaf).__name__)
            key = type(leaf).__name__ if key in PYMC_STEPS else key
            out.setdefault(key, []).extend(_untransformed(v.name) for v in leaf.vars)
    return out


def _untransformed(name: str) -> str:
    from pymc.util import get_untransformed_name, is_transformed_name

    return get_untransformed_name(name) if is_transformed_name(name) else name


def _fit_advi(model, draws, chains, random_seed, progressbar, kwargs):
    kwargs = dict(kwargs)
    n = check_int(kwargs.pop("n", 30_000), "n", minimum=1)
    learning_rate = kwargs.pop("learning_rate", 0.01)
    learning_rate = check_positive(learning_rate, "learning_rate")
    fullrank = bool(kwargs.pop("fullrank", False))
    user_optimizer = kwargs.pop("obj_optimizer", None)
    rng = np.random.default_rng(random_seed)
    fit_seed, sample_seed = (int(s) for s in rng.integers(2**31, size=2))
    with model:
        inference = pm.FullRankADVI(random_seed=fit_seed) if fullrank else pm.ADVI(
            random_seed=fit_seed
        )
        if user_optimizer is not None:
            approx = inference.fit(n, obj_optimizer=user_optimizer, progressbar=progressbar,
                                   **kwargs)
        else:
            # Adam's last iterate jitters around the optimum by about the step size; a
            # second, shorter phase at a tenth of the rate settles it (a two-step
            # learning-rate schedule), so the returned approximation is the optimum's.
            # The rate is a shared variable: both phases build the same graph, so the
            # second loads the first's compiled step function from PyTensor's cache
            # instead of compiling one with another constant.
            rate = pytensor.shared(np.float64(learning_rate), name="advi_learning_rate")
            inference.fit(n, obj_optimizer=pm.adam(learning_rate=rate),
                          progressbar=progressbar, **kwargs)
            rate.set_value(np.float64(learning_rate / 10))
            approx = inference.fit(max(n // 5, 1), obj_optimizer=pm.adam(learning_rate=rate),
                                   progressbar=progressbar, **kwargs)
        sampled = approx.sample(draws * chains, random_seed=sample_seed)

    posterior = sampled["posterior"].to_dataset()
    reshaped = {}
    for name, arr in posterior.data_vars.items():
        values = arr.values.reshape(chains, draws, *arr.shape[2:])
        reshaped[name] = (("chain", "draw", *arr.dims[2:]), values)
    coords = {k: v for k, v in posterior.coords.items() if k not in ("chain", "draw")}
    coords.update(chain=np.arange(chains), draw=np.arange(draws))
    new_posterior = xr.Dataset(reshaped, coords=coords, attrs=posterior.attrs)

    dt = xr.DataTree()
    dt["posterior"] = xr.DataTree(new_posterior)
    for group in sampled.children:
        if group != "posterior":
            dt[group] = sampled[group].copy()
    hist = np.asarray(approx.hist, dtype=np.float64)
    dt["fit_history"] = xr.DataTree(
        xr.Dataset(
            {"loss": (("iteration",), hist)},
            coords={"iteration": np.arange(hist.size)},
            attrs={"description": "negative ELBO per iteration (Monte Carlo estimate)"},
        )
    )
    kind = "FullRankADVI" if fullrank else "ADVI"
    names = [_untransformed(v.name) for v in model.value_vars]
    return dt, {kind: names}, kind.lower()


def _trim_unfinished(dt: xr.DataTree) -> xr.DataTree:
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
