"""The zoo's Gibbs steps, written the PyMC way, and the registry that finds them.

Importing this package imports every module in it and in its subpackages (a family with
several steps has a folder of its own: :mod:`inference.gibbs.dpm`), which registers every
built-in step (``@register_step``); a test fails when a ``ZooGibbsStep`` subclass defined
here is not registered.
"""

import importlib as _importlib
import pkgutil as _pkgutil

from inference.gibbs.base import ZooGibbsStep, value_vars_of
from inference.gibbs.categorical import CategoricalGibbs
from inference.gibbs.dpm.crp_auxiliary import CRPAuxiliaryGibbs
from inference.gibbs.dpm.crp_collapsed import CRPCollapsedGibbs
from inference.gibbs.dpm.escobar_west import EscobarWestAlpha
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

for _info in _pkgutil.walk_packages(__path__, f"{__name__}."):
    if not _info.name.rpartition(".")[2].startswith("_"):
        _importlib.import_module(_info.name)

