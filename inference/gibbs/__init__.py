"""The zoo's Gibbs steps, written the PyMC way, and the registry that finds them.

Importing this package imports every module in it, which registers every built-in step
(``@register_step``); a test fails when a ``ZooGibbsStep`` subclass defined here is not
registered.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from inference.gibbs.base import ZooGibbsStep, value_vars_of
from inference.gibbs.categorical import CategoricalGibbs
from inference.gibbs.crp_auxiliary import CRPAuxiliaryGibbs
from inference.gibbs.crp_collapsed import CRPCollapsedGibbs
from inference.gibbs.escobar_west import EscobarWestAlpha
from inference.gibbs.lda import CollapsedLDAGibbs
from inference.gibbs.registry import get_step, register_step, registered_steps, step_for

__all__ = [
    "CRPAuxiliaryGibbs",
    "CRPCollapsedGibbs",
    "CategoricalGibbs",
    "CollapsedLDAGibbs",
    "EscobarWestAlpha",
    "ZooGibbsStep",
    "get_step",
    "register_step",
    "registered_steps",
    "step_for",
    "value_vars_of",
]

for _info in _pkgutil.iter_modules(__path__):
    if not _info.name.startswith("_"):
        _importlib.import_module(f"{__name__}.{_info.name}")

# pm.sample on a zoo model uses the zoo's steps (see inference.gibbs.pymc_assignment)
from inference.gibbs.pymc_assignment import register_with_pymc as _register_with_pymc  # noqa: E402

_register_with_pymc()
