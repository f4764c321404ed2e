"""Which step updates which variable, for ``inference.fit`` and for ``pm.sample`` on a zoo
model (:mod:`inference.gibbs.pymc_assignment` builds its steps here).

The order (docs/architecture.md, "How a model reaches a sampler"): the user's steps, the
factory's step hints (resolved by name through :mod:`inference.gibbs.registry`),
registered zoo steps that claim a variable by its distribution, then PyMC's own
assignment of the rest (NUTS for continuous variables, its discrete Gibbs/Metropolis for
the other discrete ones).
"""

from __future__ import annotations

from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers
from pymc.step_methods.compound import flatten_steps
from pymc.vartypes import discrete_types

from inference.gibbs.registry import PYMC_STEPS, get_step, step_for
from pp_models.step_assignment import ZooStepsNotLoaded

__all__ = ["assign_steps", "describe_steps", "pymc_methods", "select_pymc_steps",
           "untransformed"]


def assign_steps(model, info, user_steps, step_kwargs, *, only=None) -> list:
    """User steps, then factory hints, then registered zoo steps, then PyMC's choice.

    Parameters
    ----------
    model : pymc.Model
    info : ZooModelInfo or None
        The factory's hints (:func:`pp_models.model_info.get_info`).
    user_steps : list
        Instantiated steps the user gave; their variables are not assigned again.
    step_kwargs : dict or None
        Options of the steps PyMC assigns (:func:`inference.fit_options.pop_step_options`).
    only : collection of str, optional
        Names of the random variables to assign (default: every free variable).

    Returns
    -------
    list
        The instantiated steps, the user's first.
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
        provided, selected = assign_step_methods(model, steps or None, methods=pymc_methods())
    else:
        # PyMC's assignment covers every free variable; assign only the targets.
        provided, selected = steps, select_pymc_steps(model, target_values - claimed)
    built = instantiate_steppers(model, provided, selected, step_kwargs=step_kwargs)
    return built if isinstance(built, list) else [built]


def pymc_methods() -> list:
    """PyMC's step classes without the zoo's entries (the provider of the zoo's steps,
    which declares ``zoo_steps_provider``, and ``pp_models``' stand-in for it): here the
    zoo's steps are already assigned, what is left is PyMC's to choose (and the zoo's
    entries would call back here)."""
    from pymc.step_methods import STEP_METHODS

    return [m for m in STEP_METHODS
            if not getattr(m, "zoo_steps_provider", False) and m is not ZooStepsNotLoaded]


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
        best = max(pymc_methods(), key=lambda m, rv=rv, g=has_grad: m._competence(rv, g))
        selected.setdefault(best, []).append(value)
    return selected


def describe_steps(steps) -> dict[str, list[str]]:
    """Step name -> the (untransformed) names of the variables it updates."""
    out: dict[str, list[str]] = {}
    for s in steps:
        for leaf in flatten_steps(s):
            key = getattr(leaf, "name", type(leaf).__name__)
            key = type(leaf).__name__ if key in PYMC_STEPS else key
            out.setdefault(key, []).extend(untransformed(v.name) for v in leaf.vars)
    return out


def untransformed(name: str) -> str:
    """A value variable's name without its transform's suffix (``sigma_log__`` ->
    ``sigma``)."""
    from pymc.util import get_untransformed_name, is_transformed_name

    return get_untransformed_name(name) if is_transformed_name(name) else name
