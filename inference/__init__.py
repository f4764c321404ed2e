"""One door in: ``fit`` sends any PyMC model to NUTS, Gibbs steps or ADVI.

>>> from pp_models import finite_mixture, datasets
>>> from inference import fit, summary
>>> model = finite_mixture.model(datasets.load("iris").data, n_components=3)
>>> dt = fit(model, method="gibbs", draws=500, chains=4)   # doctest: +SKIP
>>> summary(dt)                                             # doctest: +SKIP

Importing the package is light (the ``ppzoo`` command line starts in well under a
second): ``fit``, ``summary`` and the other names below are imported on first use, and
with them PyMC, PyTensor and Numba. The zoo's Gibbs steps register with PyMC when
:mod:`inference.gibbs` is imported (``inference.fit`` does) or, for ``pm.sample`` on a
zoo model, through the ``pp_models.step_providers`` entry point
(:mod:`pp_models.step_assignment`).
"""

from __future__ import annotations

import importlib

#: public name -> the module that defines it, imported on first use. No module of the
#: package is named like one of these names: the import system sets a package attribute
#: to each submodule it imports, which would replace the function of the same name.
_LAZY = {
    "METHODS": "inference.fitting",
    "fit": "inference.fitting",
    "summary": "inference.summary_table",
    "compute_log_likelihood": "inference.log_likelihood",
    "complete": "inference.posterior_layout",
    "relabel": "inference.relabelling",
    "sample_posterior_predictive": "inference.predictive",
    "stack_chains": "inference.stacking",
    "check_convergence": "inference.convergence",
    "evidence": "inference.tempering.evidence",
    "EvidenceResult": "inference.tempering.evidence",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'inference' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
