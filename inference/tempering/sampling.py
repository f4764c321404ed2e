"""``fit(..., tempering=...)``: plan and build the tempered steps, run the chains with
the zoo's chain loop, add the ``tempering`` group."""

from __future__ import annotations

from inference.chains import sample_gibbs
from inference.fit_options import pop_step_options
from inference.gibbs.assignment import describe_steps
from inference.progress import compiling
from inference.sampling_core import initial_point, model_cache
from inference.tempering.driver import TemperedStep, tempering_group
from inference.tempering.options import TemperingOptions
from inference.tempering.power import check_has_likelihood
from inference.tempering.steps import build_steps, plan_steps

__all__ = ["check_tempering_request", "fit_tempered"]

#: ``fit`` options a tempered run takes (it runs on the zoo's chain loop, not pm.sample).
_TEMPERED_KWARGS = frozenset({"var_names", "initvals", "compute_convergence_checks",
                              "nuts_sampler", "target_accept", "step_kwargs", "nuts"})


def check_tempering_request(model, chosen: str, kwargs: dict) -> None:
    """Refuse what a tempered ``fit`` cannot do, before anything compiles."""
    if chosen == "advi":
        raise ValueError("tempering: method='advi' makes no MCMC draws to temper; use "
                         "method='gibbs', 'nuts' or 'auto'")
    check_has_likelihood(model, "tempering")
    sampler = kwargs.get("nuts_sampler", "pymc")
    if sampler != "pymc":
        raise ValueError(f"tempering: nuts_sampler={sampler!r} cannot temper; the tempered "
                         "run uses PyMC's NUTS (nuts_sampler='pymc')")
    other = sorted(set(kwargs) - _TEMPERED_KWARGS)
    if other:
        raise ValueError(f"tempering: the tempered run does not take {', '.join(other)} "
                         f"(it takes {', '.join(sorted(_TEMPERED_KWARGS))})")


def fit_tempered(model, info, user_steps, options: TemperingOptions, *, sizes, random_seed,
                 progressbar, kwargs, trace_options, executor=None):
    """Run ``fit``'s chains as tempered runs; returns (DataTree, step assignment).
    ``executor``: each chain's whole ladder is one task there (see
    :mod:`inference.executors`)."""
    kwargs = dict(kwargs)
    kwargs.pop("nuts_sampler", None)
    step_kwargs = pop_step_options(kwargs) or {}
    nuts_options = dict(step_kwargs.pop("nuts", {}))
    if step_kwargs:
        raise ValueError(f"tempering: options for {', '.join(sorted(step_kwargs))} have no "
                         "step to apply to (a tempered run takes options for NUTS only; give "
                         "other steps built, e.g. inference.tempering.TemperedMetropolis)")
    cacheable = not user_steps and not nuts_options
    cache = model_cache(model) if cacheable else {}
    steps = cache.get("tempered_steps")
    if steps is None:
        # builds PyMC's log density symbolically to choose the rest's steps (a second
        # of graph walking on a small model): once per model
        plan = plan_steps(model, info, user_steps)
        family = f" ({info.family})" if info is not None and info.family else ""
        with compiling(f"the tempered samplers of the model{family}", enabled=progressbar):
            steps = build_steps(model, plan, initial_point=initial_point(model),
                                nuts_options=nuts_options)
        if cacheable:
            cache["tempered_steps"] = steps
    tempered = TemperedStep(steps, model=model, ladder=options.ladder, adapt=options.adapt,
                            prior_draws=options.prior_draws)
    dt, _interrupted = sample_gibbs(
        model, [tempered], random_seed=random_seed, progressbar=progressbar,
        var_names=kwargs.get("var_names"), initvals=kwargs.get("initvals"),
        **(trace_options or {}), **sizes, executor=executor)
    tempering_group(dt, tune=sizes["tune"])
    assignment = describe_steps(steps)
    return dt, assignment
