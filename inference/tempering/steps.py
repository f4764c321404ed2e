"""Which step samples which variable of a tempered run, decided before anything compiles.

:func:`plan_steps` follows the order of :func:`inference.gibbs.assignment.assign_steps`
(the user's steps, the factory's step hints, registered zoo steps by distribution, then
PyMC's choice for the rest) but builds nothing: it returns the step classes with their
variables and options, and raises ``ValueError`` naming the first step that cannot
sample a power posterior (a zoo step whose ``can_temper`` is false or whose
``tempering_error`` objects to the options; a PyMC step with no tempered version).
Where PyMC (or a factory's hint) would use NUTS/HMC the plan has
:class:`~inference.tempering.nuts.TemperedNUTS`, and where it would use ``Metropolis``,
``Slice``, ``BinaryGibbsMetropolis`` or ``CategoricalGibbsMetropolis`` their tempered
versions (:mod:`inference.tempering.pymc_steps`). :func:`build_steps` then builds them:
zoo steps from their options, the continuous rest as one ``TemperedNUTS``, the rest of
PyMC's choice as one tempered step per class.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pymc as pm
from pymc.step_methods.compound import flatten_steps

from inference.gibbs.assignment import select_pymc_steps
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import PYMC_STEPS, get_step, step_for
from inference.tempering.nuts import TemperedNUTS
from inference.tempering.pymc_steps import TEMPERED_PYMC_STEPS
from pp_models.validation import UserInputError

__all__ = ["PlannedStep", "build_steps", "plan_steps"]

_GRADIENT_STEPS = ("nuts", "hmc")


@dataclass
class PlannedStep:
    """A step to build: its class, variables (random-variable names) and options, or an
    already built step of the user's."""

    cls: type
    var_names: tuple[str, ...]
    options: dict = field(default_factory=dict)
    built: object = None


def _refuse(reason: str):
    # the model and steps the caller chose: their error, not a bug of the run
    raise UserInputError(f"tempering: {reason}")


def plan_steps(model: pm.Model, info, user_steps) -> list[PlannedStep]:
    """The steps of a tempered run of ``model`` (module docstring); ``ValueError``
    naming a step that cannot temper."""
    plan: list[PlannedStep] = []
    claimed: set[str] = set()
    for step in user_steps:
        for leaf in flatten_steps(step):
            names = tuple(model.values_to_rvs[v].name for v in leaf.vars)
            if isinstance(leaf, ZooGibbsStep):
                reason = leaf.instance_tempering_error()
                if reason is not None:
                    _refuse(reason)
            elif not getattr(leaf, "can_temper", False):
                _refuse(f"step {getattr(leaf, 'name', type(leaf).__name__)!r} "
                        f"({type(leaf).__name__}, for {', '.join(names)}) cannot temper; "
                        f"{_what_to_do(type(leaf))}")
            plan.append(PlannedStep(type(leaf), names, built=leaf))
            claimed.update(names)

    continuous: list[str] = []
    for hint in info.step_hints if info else ():
        names = tuple(hint.var_names)
        if claimed.intersection(names):
            continue
        options = hint.options(model) if callable(hint.options) else dict(hint.options)
        if hint.step in PYMC_STEPS:
            pymc_cls = PYMC_STEPS[hint.step]
            if hint.step in _GRADIENT_STEPS:
                plan.append(PlannedStep(TemperedNUTS, names, dict(options)))
            elif pymc_cls in TEMPERED_PYMC_STEPS:
                plan.append(PlannedStep(TEMPERED_PYMC_STEPS[pymc_cls], names, dict(options)))
            else:
                _refuse(f"step {hint.step!r} (PyMC's {pymc_cls.__name__}, the factory's "
                        f"choice for {', '.join(names)}) cannot temper; "
                        f"{_what_to_do(pymc_cls)}")
        else:
            cls = get_step(hint.step)
            reason = cls.tempering_error(options)
            if reason is not None:
                _refuse(reason)
            plan.append(PlannedStep(cls, names, dict(options)))
        claimed.update(names)

    for rv in model.free_RVs:
        if rv.name in claimed:
            continue
        cls = step_for(rv)
        if cls is not None:
            reason = cls.tempering_error({})
            if reason is not None:
                _refuse(reason)
            plan.append(PlannedStep(cls, (rv.name,)))
            claimed.add(rv.name)

    rest = [rv for rv in model.free_RVs if rv.name not in claimed]
    if rest:
        values = {model.rvs_to_values[rv] for rv in rest}
        for cls, chosen in select_pymc_steps(model, values).items():
            names = [model.values_to_rvs[v].name for v in chosen]
            if cls is pm.NUTS or cls is pm.HamiltonianMC:
                continuous.extend(names)
            elif cls in TEMPERED_PYMC_STEPS:
                plan.append(PlannedStep(TEMPERED_PYMC_STEPS[cls], tuple(names)))
            else:
                _refuse(f"{', '.join(names)} would get PyMC's {cls.__name__}, which cannot "
                        f"temper; {_what_to_do(cls)}")
    if continuous:
        plan.append(PlannedStep(TemperedNUTS, tuple(continuous)))
    return plan


def _what_to_do(pymc_cls: type) -> str:
    """What a user can do about a PyMC step that cannot temper."""
    tempered = TEMPERED_PYMC_STEPS.get(pymc_cls)
    if tempered is not None:
        return (f"pass inference.tempering.{tempered.__name__} (the same options) instead, "
                "or give no step for these variables and the tempered run chooses it")
    names = ", ".join(c.__name__ for c in (TemperedNUTS, *TEMPERED_PYMC_STEPS.values()))
    return (f"give these variables a step that can temper with step=: one of "
            f"inference.tempering's {names}, or a zoo step with can_temper")


def build_steps(model: pm.Model, plan: list[PlannedStep], *, initial_point,
                nuts_options: dict | None = None) -> list:
    """Build the planned steps (compiling their functions); the user's built steps are
    passed through."""
    steps = []
    for item in plan:
        if item.built is not None:
            steps.append(item.built)
        elif item.cls is TemperedNUTS:
            options = {**(nuts_options or {}), **item.options}
            steps.append(TemperedNUTS([model[n] for n in item.var_names], model=model,
                                      initial_point=initial_point, **options))
        elif item.cls in TEMPERED_PYMC_STEPS.values():
            steps.append(item.cls([model[n] for n in item.var_names], model=model,
                                  initial_point=initial_point, **item.options))
        else:
            steps.append(item.cls.from_model(model, item.var_names, **item.options))
    return steps
