"""The zoo's place in PyMC's step assignment, so ``pm.sample`` on a zoo model uses the
zoo's Gibbs steps.

Nothing is registered with PyMC on import. The first zoo model a factory builds
(:func:`pp_models.model_info.attach_info`) calls :func:`install`, which puts
:class:`ZooStepsNotLoaded` first in PyMC's list of step classes (``STEP_METHODS``) and,
once the provider of the zoo's steps is known (``inference.gibbs.pymc_assignment``
names itself with :func:`register_provider` when imported, as ``inference.fit`` does),
the provider before it. Each goes in once, whatever the number of models built. A user
who imports only a factory (``from pp_models import dpm``) and calls ``pm.sample`` would
otherwise get PyMC's Metropolis on the partition -- which can sit in one wrong clustering
for the whole run -- without a word.

``pp_models`` cannot import ``inference`` (the layering runs one way). When PyMC asks
:class:`ZooStepsNotLoaded` about a variable of a zoo model that a zoo step should update
while no class providing the zoo's steps is in the list, it:

1. loads a provider through the ``pp_models.step_providers`` entry-point group (the
   installed package declares ``inference.gibbs.pymc_assignment:ZooAssignment`` there
   in ``pyproject.toml``; ``pp_models`` only knows the group's name; importing it
   registers it here), and stands in for it in this very assignment (PyMC has already
   copied its list), so ``pm.sample`` uses the zoo's steps with nothing but the factory
   imported;
2. when no provider is installed (e.g. running from a source tree whose package
   metadata predates the entry point), warns once and names the fix.
"""

from __future__ import annotations

import warnings

from pymc.step_methods import STEP_METHODS
from pymc.step_methods.compound import Competence

__all__ = ["ZooStepsNotLoaded", "install", "register_provider"]

#: Step names a StepHint may use for PyMC's own samplers (kept in step with
#: ``inference.gibbs.registry.PYMC_STEPS``; a test checks that).
PYMC_STEP_NAMES = frozenset({"nuts", "hmc", "slice", "metropolis",
                             "binary_gibbs_metropolis", "categorical_gibbs_metropolis"})

_warned: list[bool] = []

#: The entry-point group a package providing the zoo's steps to PyMC declares.
PROVIDER_GROUP = "pp_models.step_providers"

_provider: list = []  # the loaded provider class, once found


def _load_provider():
    """The first installed step provider (loaded and registered with PyMC), or None."""
    if _provider:
        return _provider[0]
    from importlib.metadata import entry_points

    for entry in entry_points(group=PROVIDER_GROUP):
        provider = entry.load()  # importing the provider's package registers it
        if getattr(provider, "zoo_steps_provider", False):
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
    """Stands in for the zoo's step provider in a ``pm.sample`` assignment when the zoo's
    steps are not loaded: loads the provider through the entry point and answers (and
    builds the steps) for it; with no provider installed it is never competent and warns
    (once per process) that a zoo variable goes to PyMC's own samplers."""

    name = "zoo_steps_not_loaded"

    @classmethod
    def competence(cls, var, has_grad=None) -> Competence:
        if _provider:
            # loaded during this assignment: PyMC's copy of the list lacks it, so this
            # class answers for it (and builds its steps in __new__)
            return _provider[0].competence(var, has_grad)
        if zoo_steps_loaded():
            return Competence.INCOMPATIBLE
        from pp_models.model_info import get_info, zoo_model_of

        model = zoo_model_of(var)  # the context, or the zoo model of pm.sample(model=)
        info = get_info(model) if model is not None else None
        if info is None or not _wants_zoo_step(var, info):
            return Competence.INCOMPATIBLE
        provider = _load_provider()
        if provider is not None:
            return provider.competence(var, has_grad)
        if not _warned:
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

    def __new__(cls, vars, model=None, **pymc_kwargs):
        provider = _provider[0] if _provider else None
        if provider is None:  # never competent without one; PyMC does not get here
            raise RuntimeError("no provider of the zoo's steps is loaded")
        return provider(vars, model=model, **pymc_kwargs)

    @classmethod
    def _competence(cls, vars, have_grad):
        import numpy as np

        return [cls.competence(var, grad)
                for var, grad in zip(np.atleast_1d(vars), np.atleast_1d(have_grad), strict=True)]


def register_provider(provider) -> None:
    """Name the class that provides the zoo's steps to PyMC (``zoo_steps_provider``; the
    inference layer's ``ZooAssignment``). Recorded here only: :func:`install` puts it in
    PyMC's list."""
    if not getattr(provider, "zoo_steps_provider", False):
        raise TypeError(f"provider must declare zoo_steps_provider = True, got {provider!r}")
    if provider not in _provider:
        _provider.insert(0, provider)


def install() -> None:
    """Register the zoo with PyMC's step assignment (idempotent): :class:`ZooStepsNotLoaded`
    first in ``STEP_METHODS``, and the registered provider, when there is one, before it.

    First place matters: PyMC takes the first of the classes that claim a variable equally
    (``Competence.IDEAL``), and its own Gibbs steps claim categorical and binary
    variables so.
    """
    if ZooStepsNotLoaded not in STEP_METHODS:
        STEP_METHODS.insert(0, ZooStepsNotLoaded)
    if _provider and _provider[0] not in STEP_METHODS:
        STEP_METHODS.insert(0, _provider[0])
