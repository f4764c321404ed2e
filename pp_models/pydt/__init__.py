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


def _build(dataset, *, standardize: bool = True, **options):
    import numpy as np

    X = np.asarray(dataset.data, dtype=np.float64)
    # two equal rows make the posterior improper: their Gaussian density grows like
    # (1 - t)^(-D/2) as their divergence time t -> 1, faster than the prior's
    # (1 - t)^(c H_1 - 1) falls when c H_1 < D/2 (iris has one repeated flower);
    # the chains then ran off to t = 1 - e^-400, c ~ 1e5, alpha -> 1
    _, first = np.unique(X, axis=0, return_index=True)
    X = X[np.sort(first)]
    if standardize:
        # the diffusion starts at the origin at t = 0 with the thesis's unit-scale
        # priors: columns far from 0 for their spread (iris: means 1.2-5.8 cm, sds
        # 0.4-1.8) put the posterior on a ridge sigma2 -> inf, root time -> 1 with a
        # heavy tail (docs/families/pydt.md)
        X = (X - X.mean(axis=0)) / X.std(axis=0)
    return model(X, **options)


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="pydt",
    description="Pitman-Yor diffusion tree: a hierarchical clustering / density model "
    "(tree moves + slice sampling of c, theta, alpha, sigma2)",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto"),
        build=_build,
        default_dataset="iris",
        # thin: theta's autocorrelation time on iris is 10-35 sweeps, so each recorded
        # draw is 5 sweeps; ridge_rounds: branch moves and theta's update alternate 3
        # times a sweep (docs/families/pydt.md, "Convergence advice")
        defaults={"thin": 5, "ridge_rounds": 3},
        fit_defaults={"draws": 1000, "tune": 100, "chains": 2},
        check_note="the default (2 chains x 1000 draws of 5 sweeps, 3 ridge rounds a "
        "sweep) passed at seeds 1-5 with bulk ESS 498-708 of the 400 needed "
        "(sigma2, theta and the number of branch points are the slowest: "
        "autocorrelation 10-35 sweeps); a run that fails most likely fell short of "
        "effective draws: raise --param thin (sweeps per draw, default 5) or --draws.",
    ),
    plot=_outputs.plot_results,
    plot_name="tree",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
