"""Dirichlet-process mixture models (Murphy 2012 §25.2; Neal 2000).

The factory :func:`model` (and :func:`initial_partition`) is in ``model.py``, the outputs
(:func:`summarize`, :func:`cluster_parameters`, :func:`predictive_density`) in
``outputs.py``; see ``model.py``'s
docstring for the three representations and the likelihoods. The Gibbs steps are in
``inference/gibbs/dpm/crp_collapsed.py``, ``crp_auxiliary.py``, ``escobar_west.py`` and
``niw_hyper.py``, the hot loops in :mod:`custom_ops.dpm.gibbs`, the conjugate families in
:mod:`custom_ops.conjugate`.
"""

from pp_models.dpm.model import (
    CLI_ENTRY,
    CONJUGATE,
    LEARNABLE,
    LIKELIHOODS,
    NONCONJUGATE,
    DPMSpec,
    default_hyperprior,
    default_wishart_hyperprior,
    get_spec,
    initial_partition,
    learned_hyperparameters,
    learned_variable_names,
    model,
)
from pp_models.dpm.outputs import (
    cluster_parameters,
    posterior_mean_hyperparameters,
    predictive_density,
    summarize,
)

__all__ = [
    "CLI_ENTRY",
    "CONJUGATE",
    "LEARNABLE",
    "LIKELIHOODS",
    "NONCONJUGATE",
    "DPMSpec",
    "cluster_parameters",
    "default_hyperprior",
    "default_wishart_hyperprior",
    "get_spec",
    "initial_partition",
    "learned_hyperparameters",
    "learned_variable_names",
    "model",
    "posterior_mean_hyperparameters",
    "predictive_density",
    "summarize",
]
