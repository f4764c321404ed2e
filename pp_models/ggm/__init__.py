"""Gaussian graphical models (Murphy 2012 §26.7).

- :func:`covariance_selection`: MLE of the precision matrix with a known graph
  (Dempster 1972; Hastie et al. 2009 Alg. 17.1).
- :func:`graphical_lasso`, :func:`graphical_lasso_path`: the graphical lasso by block
  coordinate descent (Friedman, Hastie & Tibshirani 2008), both penalty conventions.
- :func:`model`: the Bayesian graphical lasso (Wang 2012) and continuous spike-and-slab
  structure learning (Wang 2015) as PyMC models, sampled by NUTS or by the column-wise
  block Gibbs steps of ``inference.gibbs.ggm``.
- :mod:`~pp_models.ggm.outputs`: posterior mean precision, partial correlations,
  edge-inclusion probabilities, a circle graph plot.
"""

from pp_models.ggm import outputs as _outputs
from pp_models.ggm.covariance_selection import CovarianceSelectionResult, covariance_selection
from pp_models.ggm.graphical_lasso import (
    GraphicalLassoPath,
    GraphicalLassoResult,
    graphical_lasso,
    graphical_lasso_path,
    lambda_max,
)
from pp_models.ggm.model import model
from pp_models.ggm.nonparanormal import nonparanormal_transform
from pp_models.ggm.outputs import (
    edge_inclusion,
    plot_graph,
    plot_results,
    posterior_mean_precision,
    posterior_partial_correlation,
)
from pp_models.registry import CLIEntry, Family

__all__ = [
    "FAMILY",
    "CovarianceSelectionResult",
    "GraphicalLassoPath",
    "GraphicalLassoResult",
    "covariance_selection",
    "edge_inclusion",
    "graphical_lasso",
    "graphical_lasso_path",
    "lambda_max",
    "model",
    "nonparanormal_transform",
    "plot_graph",
    "plot_results",
    "posterior_mean_precision",
    "posterior_partial_correlation",
]


def _build(dataset, *, standardize: bool = True, **options):
    import numpy as np

    X = dataset.data.to_numpy() if hasattr(dataset.data, "to_numpy") else dataset.data
    X = np.asarray(X, dtype=np.float64)
    if standardize:
        # the priors' scales (lam, spike/slab sds) assume unit-variance columns
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    names = dataset.feature_names or None
    return model(X, feature_names=names, **options)


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="ggm",
    description="Gaussian graphical model: spike-and-slab structure learning (Wang 2015) "
    "or the Bayesian graphical lasso (prior=bglasso), column-wise block Gibbs; "
    "writes graph.png",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "nuts", "auto"),
        build=_build,
        default_dataset="sachs",
        # On Sachs the edges plcg-PKC / plcg-P38 switch in and out slowly: the chains run
        # 15 sweeps per stored draw (docs/benchmarks.md, "Defaults, measured")
        defaults={"prior": "spike_slab", "sweeps_per_draw": 15},
        fit_defaults={"draws": 2000, "tune": 100, "chains": 4},
    ),
    plot=_outputs.plot_results,
    plot_name="graph",
)
