"""Registry mapping step names and zoo distributions to Gibbs step classes.

A zoo step registers itself with :func:`register_step` (a class decorator). ``fit``
resolves a factory's :class:`~pp_models.model_info.StepHint` by name with
:func:`get_step`, and claims the remaining free variables whose distribution some
registered step declares in its ``distributions`` (:func:`step_for`).

The lookups see every built-in step without loading them: importing this module (or any
module of :mod:`inference.gibbs`) runs the package's ``__init__`` first, which imports
every step module.
"""

from __future__ import annotations

import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence

__all__ = ["PYMC_STEPS", "get_step", "register_step", "registered_steps", "step_for"]

#: PyMC's own steps, reachable from a StepHint by these names.
PYMC_STEPS: dict[str, type[BlockedStep]] = {
    "nuts": pm.NUTS,
    "hmc": pm.HamiltonianMC,
    "slice": pm.Slice,
    "metropolis": pm.Metropolis,
    "binary_gibbs_metropolis": pm.BinaryGibbsMetropolis,
    "categorical_gibbs_metropolis": pm.CategoricalGibbsMetropolis,
}

_ZOO_STEPS: dict[str, type[BlockedStep]] = {}


def register_step(cls: type[BlockedStep]) -> type[BlockedStep]:
    """Class decorator: make a zoo step reachable by its ``name``."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a non-empty string `name` to be registered")
    if name in PYMC_STEPS:
        raise ValueError(f"step name {name!r} is taken by PyMC's {PYMC_STEPS[name].__name__}")
    existing = _ZOO_STEPS.get(name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise ValueError(f"step name {name!r} is already registered to {existing.__qualname__}")
    _ZOO_STEPS[name] = cls
    return cls


def registered_steps() -> dict[str, type[BlockedStep]]:
    """All steps by name: the zoo's and PyMC's."""
    return {**PYMC_STEPS, **_ZOO_STEPS}


def get_step(name: str) -> type[BlockedStep]:
    """The step class registered under ``name``."""
    steps = registered_steps()
    if name not in steps:
        raise ValueError(f"unknown step {name!r}; registered steps: {', '.join(sorted(steps))}")
    return steps[name]


def step_for(rv, has_grad: bool = False) -> type[BlockedStep] | None:
    """The zoo step most competent for random variable ``rv``, or ``None``."""
    best, best_competence = None, Competence.INCOMPATIBLE
    for cls in _ZOO_STEPS.values():
        competence = cls._competence([rv], [has_grad])[0]
        if competence > best_competence:
            best, best_competence = cls, competence
    return best
