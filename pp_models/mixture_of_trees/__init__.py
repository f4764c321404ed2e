"""Mixtures of trees (Murphy 2012 §26.3; Meilă & Jordan 2000; Meilă & Jaakkola 2006).

- :func:`chow_liu`: the maximum-likelihood tree, discrete or Gaussian, weighted data;
- :func:`map_forest`: the MAP forest under BDeu or BIC scores;
- :func:`em`: Meilă-Jordan EM for a finite mixture of trees;
- :func:`model`: the Bayesian mixture of trees (Dirichlet weights, spanning-tree priors,
  BDeu CPTs or, with ``kind="gaussian"``, hyper-Markov NIW parameters integrated out)
  for ``inference.fit``'s Gibbs steps.
"""

from pp_models.mixture_of_trees.chow_liu import TreeModel, chow_liu
from pp_models.mixture_of_trees.em import MixtureOfTrees, em
from pp_models.mixture_of_trees.map_forest import forest_log_marginal, map_forest
from pp_models.mixture_of_trees.model import model
from pp_models.registry import ModelEntry

__all__ = [
    "CLI_ENTRY",
    "MixtureOfTrees",
    "TreeModel",
    "chow_liu",
    "em",
    "forest_log_marginal",
    "map_forest",
    "model",
]


def _build(dataset, **options):
    from pp_models.mixture_of_trees.cli import build_from_dataset

    return build_from_dataset(dataset, **options)


CLI_ENTRY = ModelEntry(
    name="mixture_of_trees",
    description="Bayesian mixture of trees (BDeu CPTs collapsed, exact tree draws), Gibbs",
    methods=("gibbs", "auto"),
    build=_build,
    default_dataset="reuters",
    defaults={"n_components": 2},
    fit_defaults={"draws": 200, "tune": 100, "chains": 2},
)
