"""The zoo's steps inside PyMC's own step assignment, so ``pm.sample`` uses them.

``pm.sample`` picks, for every free variable it is not given a step for, the class in
``pymc.step_methods.STEP_METHODS`` with the highest ``competence`` (the first one on a
tie). Importing this module names :class:`ZooAssignment` to ``pp_models`` as the
provider of the zoo's steps, and the next zoo model built puts it at the front of that
list (:func:`pp_models.step_assignment.register_zoo_steps`; nothing of PyMC changes on
import): it
is ``IDEAL`` for a variable of a zoo model (one a factory attached a
``ZooModelInfo`` to) that a zoo Gibbs step updates -- named in one of the factory's step
hints or drawn from a distribution a registered step claims -- and otherwise
``INCOMPATIBLE``, leaving PyMC's choice untouched. PyMC then "instantiates" it with the
variables it won; that builds the steps :func:`inference.gibbs.assignment.assign_steps`
(``fit``'s assignment) would, hint options included. So ``with dpm.model(X): pm.sample()`` and
``pm.sample(model=dpm.model(X))`` sample the partition with the collapsed CRP step
instead of Metropolis (PyMC asks about a variable without its model; the model is the
context or, without one, the live zoo model the variable belongs to:
:func:`pp_models.model_info.zoo_model_of`).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.step_methods.compound import Competence, CompoundStep

from inference.gibbs.assignment import assign_steps
from inference.gibbs.registry import PYMC_STEPS, step_for
from pp_models.model_info import get_info, zoo_model_of
from pp_models.step_assignment import register_provider

__all__ = ["ZooAssignment"]


class ZooAssignment:
    """Stands in PyMC's list of step classes for "the step the zoo model names"."""

    name = "zoo"
    #: what ``pp_models.step_assignment`` looks for before warning that the zoo's steps
    #: are not loaded
    zoo_steps_provider = True

    @classmethod
    def competence(cls, var, has_grad=None) -> Competence:
        # the model context (``with model: pm.sample()``) or, for ``pm.sample(model=m)``,
        # the live zoo model ``var`` belongs to
        model = zoo_model_of(var)
        info = get_info(model) if model is not None else None
        if info is None:
            return Competence.INCOMPATIBLE
        hinted = {name for hint in info.step_hints if hint.step not in PYMC_STEPS
                  for name in hint.var_names}
        if var.name in hinted or step_for(var) is not None:
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    @classmethod
    def _competence(cls, vars, have_grad):
        # PyMC's BlockedStep._competence protocol: one or many variables, a list back
        return [cls.competence(var, grad)
                for var, grad in zip(np.atleast_1d(vars), np.atleast_1d(have_grad), strict=True)]

    def __new__(cls, vars, model=None, **_pymc_kwargs):
        model = pm.modelcontext(model)
        names = {model.values_to_rvs[v].name for v in vars}
        steps = assign_steps(model, get_info(model), [], None, only=names)
        return steps[0] if len(steps) == 1 else CompoundStep(steps)


# pp_models learns of the provider (its own record; nothing of PyMC changes on import):
# the next zoo model built puts it first in PyMC's step classes
# (pp_models.step_assignment.register_zoo_steps)
register_provider(ZooAssignment)
