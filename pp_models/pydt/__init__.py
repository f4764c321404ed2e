"""Pitman-Yor diffusion tree (Knowles 2012 ch. 4): prior draws, the model factory, the
greedy sequential build and post-fit outputs."""

from pp_models.pydt import outputs as _outputs
from pp_models.pydt import predictive as _predictive
from pp_models.pydt.greedy import GreedyResult, greedy
from pp_models.pydt.model import DEFAULT_PRIORS, model, trees_from_posterior
from pp_models.pydt.outputs import log_predictive, log_predictive_tree
from pp_models.pydt.prior import PriorDraw, sample_prior
from pp_models.registry import CLIEntry, Family

__all__ = [
           "DEFAULT_PRIORS",
           "FAMILY",
           "GreedyResult",
           "PriorDraw",
           "greedy",
           "log_predictive",
           "log_predictive_tree",
           "model",
           "sample_prior",
           "trees_from_posterior",
]


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="pydt",
    description="Pitman-Yor diffusion tree: a hierarchical clustering / density model "
    "(tree moves + NUTS for c, theta, alpha, sigma2)",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto"),
        build=lambda dataset, **options: model(dataset.data, **options),
        default_dataset="iris",
        # the chains sit in different trees; a longer run does not fix it
        # (docs/benchmarks.md, "Defaults, measured")
        fit_defaults={"draws": 200, "tune": 100, "chains": 2},
        check_note="the tree posterior mixes slowly: the chains sit in different trees, "
        "so the number of branch points, c and alpha disagree (R-hat 2.0-2.4; "
        "still 2.2 at --draws 1000). Treat one chain as one local answer "
        "(--chains 1 --draws 1000) and compare several --seed runs' tree.png.",
    ),
    plot=_outputs.plot_results,
    plot_name="tree",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
