"""Which PyMC models are zoo models: the :class:`~pp_models.model_info.ZooModelInfo` a
factory attached to a model, and the live zoo models.

The storage under :mod:`pp_models.model_info` (which re-exports :func:`get_info` and
:func:`zoo_model_of`) and :mod:`pp_models.step_assignment`, so that both read it without
importing each other.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import pymc as pm

if TYPE_CHECKING:
    from pp_models.model_info import ZooModelInfo

__all__ = ["get_info", "remember_info", "zoo_model_of"]

_ATTRIBUTE = "_pp_models_info"

#: every live model a factory attached a ZooModelInfo to (weakly: a model nobody holds
#: goes), so a step assignment that is handed a random variable without the model
#: context -- ``pm.sample(model=m)`` -- can still find the model it belongs to
_LIVE: weakref.WeakSet = weakref.WeakSet()


def remember_info(model: pm.Model, info: ZooModelInfo) -> None:
    """Store ``info`` on ``model`` and count the model among the live zoo models (what
    :func:`pp_models.model_info.attach_info` does once it has checked both)."""
    object.__setattr__(model, _ATTRIBUTE, info)
    _LIVE.add(model)


def get_info(model: pm.Model) -> ZooModelInfo | None:
    """The :class:`ZooModelInfo` a zoo factory attached, or ``None`` for a user model."""
    return getattr(model, _ATTRIBUTE, None)


def zoo_model_of(var) -> pm.Model | None:
    """The zoo model (one with a :class:`ZooModelInfo`) that ``var`` is a free random
    variable of, or ``None``.

    PyMC's step assignment asks each step class's ``competence`` about a random variable
    alone. Inside ``with model:`` the model is the context; ``pm.sample(model=m)`` sets
    no context, so the model is looked up among the live zoo models instead (the
    context's first), and both spellings choose the same steps.
    """
    context = pm.Model.get_context(error_if_none=False)
    candidates = [context] if context is not None else []
    candidates += [m for m in list(_LIVE) if m is not context]
    for model in candidates:
        if get_info(model) is not None and any(rv is var for rv in model.free_RVs):
            return model
    return None
