"""The zoo's place in PyMC's step assignment, so ``pm.sample`` on a zoo model uses the
zoo's Gibbs steps.

Nothing is registered with PyMC on import. :func:`register_zoo_steps` is the one
registration, idempotent; the first zoo model a factory builds
(:func:`pp_models.model_info.attach_info`) calls it, and so does every later one (which
then finds it done). It puts the provider of the zoo's steps first in PyMC's list of step
classes (``pymc.step_methods.STEP_METHODS``). The provider is a class of the inference
layer (``inference.gibbs.pymc_assignment.ZooAssignment``), which ``pp_models`` cannot
import (the layering runs one way); it is known

1. when it has named itself with :func:`register_provider` (importing
   ``inference.gibbs``, as ``inference.fit`` does, imports it), or else
2. through the ``pp_models.step_providers`` entry-point group (the installed package
   declares ``inference.gibbs.pymc_assignment:ZooAssignment`` there in
   ``pyproject.toml``; ``pp_models`` only knows the group's name), which the registration
   loads.

A user who imports only a factory (``from pp_models import dpm``) and calls ``pm.sample``
would otherwise get PyMC's Metropolis on the partition -- which can sit in one wrong
clustering for the whole run -- without a word. So when no provider is installed (e.g.
running from a source tree whose package metadata predates the entry point), the
registration puts :class:`ZooStepsNotLoaded` first instead: it claims nothing and warns,
once, when PyMC asks it about a variable a zoo step should update, naming the fix. A later
registration that finds a provider replaces it.

First place matters: PyMC takes the first of the classes that claim a variable equally
(``Competence.IDEAL``), and its own Gibbs steps claim categorical and binary variables so.
"""

from __future__ import annotations

import warnings

from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import Competence

from pp_models.zoo_models import get_info, zoo_model_of

__all__ = ["ZooStepsNotLoaded", "register_provider", "register_zoo_steps", "zoo_steps_loaded"]

#: Step names a StepHint may use for PyMC's own samplers (kept in step with
#: ``inference.gibbs.registry.PYMC_STEPS``; a test checks that).
PYMC_STEP_NAMES = frozenset({"nuts", "hmc", "slice", "metropolis",
                             "binary_gibbs_metropolis", "categorical_gibbs_metropolis"})

_warned: list[bool] = []

#: The entry-point group a package providing the zoo's steps to PyMC declares.
PROVIDER_GROUP = "pp_models.step_providers"

_provider: list = []  # the loaded provider class, once found


def _load_provider():
    """The provider named with :func:`register_provider`, else the first one the entry
    point group offers (loading it names it), or None."""
    if _provider:
        return _provider[0]
    from importlib.metadata import entry_points

    for entry in entry_points(group=PROVIDER_GROUP):
        provider = entry.load()  # importing the provider's package registers it
        if getattr(provider, "zoo_steps_provider", False):
            if provider not in _provider:
                _provider.append(provider)
            return provider
    return None


def zoo_steps_loaded() -> bool:
    """Whether a class that assigns the zoo's steps (``zoo_steps_provider``) is in
    PyMC's list of step classes."""
    return any(getattr(method, "zoo_steps_provider", False) for method in STEP_METHODS)


def _wants_zoo_step(var, info) -> bool:
    hinted = {name for hint in info.step_hints if hint.step not in PYMC_STEP_NAMES
              for name in hint.var_names}
    if var.name in hinted:
        return True
    # a random variable from the zoo's own distributions (CRP, IBP, trees, ...): its
    # step is claimed by distribution in the inference layer's registry
    owner = getattr(var, "owner", None)
    if owner is not None and not getattr(owner.op, "zoo_step", True):
        return False  # a zoo distribution that PyMC's own samplers take
    module = type(owner.op).__module__ if owner is not None else ""
    return module.startswith(("pp_models.", "custom_ops."))


class ZooStepsNotLoaded:
    """In PyMC's list of step classes while no provider of the zoo's steps is installed:
    never competent; warns (once per process) that a variable a zoo step should update
    goes to PyMC's own samplers."""

    name = "zoo_steps_not_loaded"

    @classmethod
    def competence(cls, var, has_grad=None) -> Competence:
        if zoo_steps_loaded():
            return Competence.INCOMPATIBLE
        model = zoo_model_of(var)  # the context, or the zoo model of pm.sample(model=)
        info = get_info(model) if model is not None else None
        if info is not None and _wants_zoo_step(var, info) and not _warned:
            _warned.append(True)
            warnings.warn(
                f"pm.sample is giving {var.name!r} of this zoo {info.family} model to "
                "PyMC's own samplers, because the zoo's Gibbs steps are not loaded: "
                "`import inference.gibbs` before pm.sample (it registers them), or use "
                "`inference.fit(model)`. PyMC's generic steps can mix very slowly here.",
                UserWarning,
                stacklevel=2,
            )
        return Competence.INCOMPATIBLE

    @classmethod
    def _competence(cls, vars, have_grad):
        # PyMC's BlockedStep._competence protocol: one or many variables, a list back
        import numpy as np

        return [cls.competence(var, grad)
                for var, grad in zip(np.atleast_1d(vars), np.atleast_1d(have_grad), strict=True)]


def register_provider(provider) -> None:
    """Name the class that provides the zoo's steps to PyMC (``zoo_steps_provider``; the
    inference layer's ``ZooAssignment``). Recorded here only: :func:`register_zoo_steps`
    puts it in PyMC's list."""
    if not getattr(provider, "zoo_steps_provider", False):
        raise TypeError(f"provider must declare zoo_steps_provider = True, got {provider!r}")
    if provider not in _provider:
        _provider.insert(0, provider)


def register_zoo_steps() -> None:
    """Register the zoo with PyMC's step assignment (idempotent; module docstring): the
    provider of the zoo's steps first in ``STEP_METHODS`` (loaded through the entry point
    when none has named itself), or, with none installed, :class:`ZooStepsNotLoaded`.
    Called by :func:`pp_models.model_info.attach_info`, i.e. by every zoo factory."""
    provider = _load_provider()
    if provider is None:
        if ZooStepsNotLoaded not in STEP_METHODS:
            STEP_METHODS.insert(0, ZooStepsNotLoaded)
        return
    if ZooStepsNotLoaded in STEP_METHODS:
        STEP_METHODS.remove(ZooStepsNotLoaded)
    if provider not in STEP_METHODS:
        STEP_METHODS.insert(0, provider)
