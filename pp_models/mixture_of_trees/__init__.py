"""Mixtures of trees (Murphy 2012 §26.3; Meilă & Jordan 2000; Meilă & Jaakkola 2006).

- :func:`chow_liu`: the maximum-likelihood tree, discrete or Gaussian, weighted data;
- :func:`map_forest`: the MAP forest under BDeu or BIC scores;
- :func:`em`: Meilă-Jordan EM for a finite mixture of trees;
- :func:`model`: the Bayesian mixture of trees (Dirichlet weights, spanning-tree priors,
  BDeu CPTs or, with ``kind="gaussian"``, hyper-Markov NIW parameters integrated out)
  for ``inference.fit``'s Gibbs steps.
"""

from pp_models.mixture_of_trees import outputs as _outputs
from pp_models.mixture_of_trees import predictive as _predictive
from pp_models.mixture_of_trees.chow_liu import TreeModel, chow_liu
from pp_models.mixture_of_trees.em import MixtureOfTrees, em
from pp_models.mixture_of_trees.map_forest import forest_log_marginal, map_forest
from pp_models.mixture_of_trees.model import model
from pp_models.registry import CLIEntry, Family

__all__ = [
    "FAMILY",
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


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="mixture_of_trees",
    description="Bayesian mixture of trees (BDeu CPTs collapsed, exact tree draws), Gibbs",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto"),
        build=_build,
        default_dataset="reuters",
        # block moves: near-duplicate stories move between the components together; with
        # one-row updates alone the chains stayed in separate assignment modes, tens of
        # nats below the one the block moves find (docs/benchmarks.md, "Mixing per
        # second"); 1000 tuning sweeps outlast the start-up transients measured (a chain
        # shedding a larger small component by sweep ~800), and 2000 draws give ~380
        # effective draws of weights_sorted per chain at the slowest rate measured after
        # them (docs/families/mixture_of_trees.md, "Convergence advice")
        defaults={"n_components": 2, "block_moves": 20},
        fit_defaults={"draws": 2000, "tune": 1000, "chains": 2},
        check_note="the block moves (20 per sweep) take both chains to one level of "
        "log_marginal (one-row updates left them in modes 16 nats apart); a chain can "
        "start in a larger small component and shed it over several hundred sweeps, "
        "hence 1000 tuning sweeps. The default passed at 7 of seeds 1-8 (R-hat <= 1.003, "
        "bulk ESS >= 778) and failed at seed 6 (R-hat 1.03, bulk ESS 80): the small "
        "component swaps whole groups of near-duplicate stories only a few times per "
        "chain. If one chain has too few effective draws of weights_sorted, add --draws "
        "and compare several --seed runs' structure.png.",
    ),
    plot=_outputs.plot_structure,
    plot_name="structure",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
