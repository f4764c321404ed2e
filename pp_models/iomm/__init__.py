"""The infinite overlapping mixture model (IOMM; Heller 2007 ch. 7).

Each point may belong to several clusters; its density is the normalised product of its
clusters' exponential-family densities (Eq. 7.2), with an Indian buffet prior on the
memberships. See :mod:`.model` for the model, :mod:`.experts` for the product in closed
form, :mod:`.synthetic` for the thesis's synthetic experiment (§7.6) and :mod:`.outputs`
for what to read off a fit.

>>> from pp_models import iomm
>>> from inference import fit
>>> dt = fit(iomm.model(X))                  # Algorithm 7.1  # doctest: +SKIP
>>> iomm.shared_clusters(dt)                 # E[Z Z^T], label-invariant  # doctest: +SKIP
"""

from pp_models.iomm import outputs as _outputs
from pp_models.iomm import predictive as _predictive
from pp_models.iomm.experts import bernoulli_product, gaussian_product
from pp_models.iomm.model import (
    DEFAULT_OMEGA,
    LIKELIHOODS,
    STEP_MEMBERSHIPS,
    STEP_PARAMETERS,
    STEP_SWEEPS,
    IOMMSpec,
    default_capacity,
    get_spec,
    model,
    parameter_names,
)
from pp_models.iomm.outputs import (
    membership_counts,
    plot_results,
    shared_clusters,
)
from pp_models.iomm.synthetic import (
    THESIS_TABLE_7_1,
    Agreement,
    SyntheticIOMM,
    agreement,
    synthetic,
)
from pp_models.registry import CLIEntry, Family

__all__ = [
    "CLI_WORDS",
    "DEFAULT_OMEGA",
    "FAMILY",
    "LIKELIHOODS",
    "STEP_MEMBERSHIPS",
    "STEP_PARAMETERS",
    "STEP_SWEEPS",
    "THESIS_TABLE_7_1",
    "Agreement",
    "IOMMSpec",
    "SyntheticIOMM",
    "agreement",
    "bernoulli_product",
    "default_capacity",
    "gaussian_product",
    "get_spec",
    "membership_counts",
    "model",
    "parameter_names",
    "plot_results",
    "shared_clusters",
    "synthetic",
]

#: Words of the shipped corpus the command line models (their presence in each story).
CLI_WORDS = 50


def _build(dataset, **options):
    """A corpus becomes word presence over its ``CLI_WORDS`` most common words; a table
    is used as it is, Bernoulli when it is binary, else Gaussian."""
    import numpy as np
    import scipy.sparse as sp

    from pp_models.mixture_of_trees.cli import binary_word_presence

    data = dataset.data
    names = dataset.feature_names or None
    if sp.issparse(data):
        X, names = binary_word_presence(data, names, CLI_WORDS)
    else:
        X = np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data,
                       dtype=np.float64)
    if "likelihood" not in options:
        binary = bool(np.all((X == 0) | (X == 1)))
        options["likelihood"] = "bernoulli" if binary else "gaussian"
    options.setdefault("feature_names", names)
    return model(X, **options)


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="iomm",
    description="infinite overlapping mixture (points in several clusters: IBP "
    "memberships, product-of-experts likelihood; Heller's Algorithm 7.1)",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto"),
        build=_build,
        default_dataset="reuters",
        # a draw is thin sweeps of both steps in one step call (the chains need
        # thousands of sweeps); no budget near the default's reaches stationarity on
        # Reuters (docs/families/iomm.md, "Convergence advice")
        defaults={"thin": 16},
        fit_defaults={"draws": 300, "tune": 300, "chains": 2},
        check_note="the chains are not yet at their stationary distribution. "
        "From the default start n_clusters climbs for ~4000 sweeps (to 25-33 of 36 "
        "slots); after that one effective draw of n_clusters or mean_memberships costs "
        "~600-1000 sweeps, and the chains can sit for ~10^4 sweeps in two regimes "
        "(mean_memberships ~2.4 and ~2.85). The default's 9600 sweeps per chain pass the "
        "climb but give an ESS of a few; a passing run needs ~2*10^5 sweeps per chain "
        "(e.g. --param thin=500 --tune 20 --draws 400, ~15-20 min per chain). Read "
        "memberships.png as one state the sampler reached.",
    ),
    plot=_outputs.plot_results,
    plot_name="memberships",
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
