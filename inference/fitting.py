"""``fit``: one door from a PyMC model to NUTS, Gibbs steps or ADVI.

Every method returns an ``xarray.DataTree`` (ArviZ 1.x) with the same layout: a
``posterior`` group with dims ``(chain, draw, ...)``, ``sample_stats`` for MCMC (or the
ADVI loss history in ``fit_history``), ``observed_data``; label-invariant statistics a
zoo factory declares are added to ``posterior``; the root attributes record the method,
the step each variable got, the seed and the package versions.

This module checks ``fit``'s arguments, chooses the method and sends the model on: to
:mod:`inference.mcmc` (NUTS or Gibbs: nutpie, ``pm.sample``, the zoo's chain loop or a
tempered run) or :mod:`inference.advi`; :mod:`inference.posterior_layout` then adds
what ``fit`` adds to the draws. Which step updates which variable is
:mod:`inference.gibbs.assignment`'s (its :func:`assign_steps`, :func:`describe_steps`
and :func:`select_pymc_steps` are importable from here too).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pymc as pm
import xarray as xr
from pymc.step_methods.compound import BlockedStep, CompoundStep
from pymc.vartypes import discrete_types

from inference.advi import fit_advi
from inference.fit_options import check_method_options
from inference.gibbs.assignment import assign_steps, describe_steps, select_pymc_steps
from inference.interrupt import raising_sigint, stop_requested
from inference.log_likelihood import needed_for_log_likelihood
from inference.mcmc import fit_mcmc
from inference.posterior_layout import finish_fit, record_fit, trim_unfinished
from inference.progress import in_ci
from inference.tempering.options import TemperingOptions, check_tempering
from inference.tempering.sampling import check_tempering_request
from inference.trace_store import check_trace_path
from pp_models.model_info import ZooModelInfo, get_info
from pp_models.validation import (
    check_executor,
    check_model,
    check_random_seed,
    check_real,
    check_sampling_sizes,
    checking_input,
)

__all__ = ["METHODS", "assign_steps", "check_method", "describe_steps", "fit",
           "select_pymc_steps"]

#: The methods ``fit`` understands.
METHODS = ("auto", "nuts", "gibbs", "advi")


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
        The labelled variables of a zoo model with exchangeable labels are relabelled
        (:func:`inference.relabel`) and stay in ``posterior``, where PyMC's
        :func:`pymc.sample_posterior_predictive` and :func:`pymc.compute_log_likelihood`
        find them; for a collapsed model those raise an error naming
        :func:`inference.sample_posterior_predictive` and
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
    run = _check_request(
        model, method=method, draws=draws, tune=tune, chains=chains, cores=cores,
        random_seed=random_seed, progressbar=progressbar, step=step, trace=trace,
        resume=resume, trace_flush=trace_flush, tempering=tempering,
        log_likelihood=log_likelihood, executor=executor, method_kwargs=method_kwargs)
    with stop_requested() as stop:
        if run.chosen == "advi":
            with raising_sigint(stop):
                dt, assignment, sampler = fit_advi(
                    model, draws=run.sizes["draws"], chains=run.sizes["chains"],
                    random_seed=run.random_seed, progressbar=run.progressbar,
                    options=run.kwargs)
        else:
            dt, assignment, sampler = fit_mcmc(
                model, chosen=run.chosen, info=run.info, user_steps=run.user_steps,
                sizes=dict(run.sizes), random_seed=run.random_seed,
                progressbar=run.progressbar, kwargs=run.kwargs, stop=stop,
                trace_options=run.trace_options, tempering=run.tempering,
                executor=run.executor)
        if stop.is_set() and sampler != "zoo":
            # PyMC / nutpie / ADVI stopped on the KeyboardInterrupt and returned what
            # they had: drop draws never made (nutpie leaves them NaN), mark the result
            dt = trim_unfinished(dt)
            dt.attrs["pp_models_interrupted"] = 1
    dt, derived = finish_fit(dt, model, run.info, postprocess=postprocess,
                             log_likelihood=log_likelihood, draws=run.sizes["draws"],
                             chains=run.sizes["chains"])
    record_fit(dt, run.info, derived, method=method, chosen=run.chosen, sampler=sampler,
               assignment=assignment, random_seed=run.random_seed, tempering=run.tempering)
    return dt


@dataclass(frozen=True)
class _Request:
    """A ``fit`` call's arguments, checked, and the method chosen for them."""

    chosen: str
    info: ZooModelInfo | None
    user_steps: list
    #: ``draws``, ``tune``, ``chains``, ``cores``
    sizes: dict
    random_seed: object
    progressbar: bool
    #: ``**method_kwargs``, checked (:mod:`inference.fit_options`)
    kwargs: dict
    #: ``{"trace", "resume", "flush_seconds"}``, or None without ``trace=``
    trace_options: dict | None
    tempering: TemperingOptions | None
    executor: object


@checking_input()
def _check_request(model, *, method, draws, tune, chains, cores, random_seed, progressbar,
                   step, trace, resume, trace_flush, tempering, log_likelihood, executor,
                   method_kwargs) -> _Request:
    """Every argument of :func:`fit` checked and the method chosen, before anything is
    compiled (``fit``'s Raises)."""
    check_model(model)
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}; got {method!r}")
    draws, tune, chains, cores = check_sampling_sizes(draws, tune, chains, cores)
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
    return _Request(
        chosen=chosen, info=info, user_steps=user_steps,
        sizes=dict(draws=draws, tune=tune, chains=chains, cores=cores),
        random_seed=random_seed,
        # PyMC's bars (NUTS, ADVI with its running loss) and ours are off in CI logs
        progressbar=bool(progressbar) and not in_ci(),
        kwargs=method_kwargs,
        trace_options=(None if trace is None else
                       {"trace": trace, "resume": bool(resume), "flush_seconds": trace_flush}),
        tempering=tempering, executor=executor)


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


@checking_input()
def check_method(model: pm.Model, method: str = "auto") -> str:
    """The method ``fit(model, method=method)`` would use, or the ``ValueError`` it would
    raise for it (an unknown method; NUTS or ADVI for a model with discrete free
    variables, naming the factory option that builds a continuous form when there is
    one, e.g. the DP mixture's ``truncation=``). Compiles nothing: callers (the CLI)
    ask before announcing a run.
    """
    check_model(model)
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
