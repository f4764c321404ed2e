"""Dirichlet-process mixture models (Murphy 2012 §25.2; Neal 2000).

The factory :func:`model` (and :func:`initial_partition`) is in ``model.py``, the outputs
(:func:`summarize`, :func:`cluster_parameters`, :func:`predictive_density`) in
``outputs.py``; see ``model.py``'s
docstring for the three representations and the likelihoods. The Gibbs steps are in
``inference/gibbs/dpm/crp_collapsed.py``, ``crp_auxiliary.py``, ``escobar_west.py`` and
``niw_hyper.py``, the hot loops in :mod:`custom_ops.dpm.gibbs`, the conjugate families in
:mod:`custom_ops.conjugate`.
"""

from pp_models.dpm import outputs as _outputs
from pp_models.dpm import predictive as _predictive
from pp_models.dpm.model import (
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
from pp_models.registry import CLIEntry, Family

__all__ = [
    "CONJUGATE",
    "FAMILY",
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


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="dpm",
    description="Dirichlet-process mixture (collapsed CRP: Algorithm 3 + split-merge; "
    "truncation=T: stick-breaking for NUTS/ADVI)",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "nuts", "advi", "auto"),
        build=lambda dataset, **options: model(dataset.data, **options),
        default_dataset="iris",
        defaults={"alpha": (1.0, 1.0)},
        # Under the data-scaled default prior iris has one mode, K = 2 (setosa and the
        # rest); n_clusters is the slowest quantity (docs/benchmarks.md, "Defaults,
        # measured").
        fit_defaults={"draws": 1000, "tune": 500, "chains": 4},
    ),
    plot=_outputs.plot_results,
    plot_name="clustering",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
    # write_your_own_model builds its model from the DPM's CRP and collapsed Ops
)
