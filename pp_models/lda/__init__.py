"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003; Murphy 2012 §27.3).

The factory :func:`model` (collapsed for the Gibbs step, or explicit for NUTS / ADVI; see
``model.py``'s docstring for the equations) is in ``model.py``, the family's record
(:data:`FAMILY`) here, the
corpus layout (:func:`prepare_corpus`, :class:`TokenCorpus`) in ``inputs.py``, the
outputs (:func:`perplexity`, :func:`top_words`, :func:`posterior_topics`) in
``outputs.py``. The collapsed Gibbs step is in ``inference/gibbs/lda.py``, its hot loops
in :mod:`custom_ops.lda` (``gibbs``, ``dense``, ``alias``). :func:`adlda` (``adlda.py``)
is approximate distributed collapsed Gibbs (AD-LDA) over partitions of the documents,
in this process or on a Dask cluster, for corpora on disk too (``shards.py``).
"""

import numpy as np

from pp_models.lda import outputs as _outputs
from pp_models.lda import predictive as _predictive
from pp_models.lda.adlda import ADLDAResult, adlda
from pp_models.lda.inputs import TokenCorpus, prepare_corpus
from pp_models.lda.model import (
    STEP_NAME,
    CollapsedStepOptions,
    model,
)
from pp_models.lda.outputs import perplexity, plot_top_words, posterior_topics, top_words
from pp_models.model_info import LABELS_GROUP, per_chain_moments
from pp_models.registry import CLIEntry, Family

__all__ = [
    "FAMILY",
    "STEP_NAME",
    "ADLDAResult",
    "CollapsedStepOptions",
    "TokenCorpus",
    "adlda",
    "model",
    "perplexity",
    "plot_top_words",
    "posterior_topics",
    "prepare_corpus",
    "top_words",
]


def _build_from_dataset(dataset, **options):
    """The CLI's build: a CSV arrives as a DataFrame of counts; the data set's
    vocabulary (or the CSV's header) labels the words unless ``vocabulary`` is given."""
    if options.get("collapsed", True) and not options.get("deterministics", True):
        # the command line records theta and phi per draw (fit_defaults) and writes
        # their per-chain means; without them the fit would fail on its own var_names
        raise ValueError(
            "deterministics=False: the command line records theta and phi per "
            "draw to write the topics; call pp_models.lda.model(...) and "
            "inference.fit from Python to fit without them"
        )
    data = dataset.data
    counts = data.to_numpy() if hasattr(data, "to_numpy") else data
    names = tuple(dataset.feature_names or ())
    n_columns = np.shape(counts)[1] if np.ndim(counts) == 2 else None
    if "vocabulary" not in options and names and len(names) == n_columns:
        options["vocabulary"] = names
    return model(counts, **options)


def _written(dt):
    """What ``ppzoo fit lda`` writes: theta and phi as each chain's mean and sd
    (topics switch labels between chains, not within one; per draw they are
    draws x topics x words, 300 MB on Reuters at the default sizes)."""
    group = LABELS_GROUP if LABELS_GROUP in dt.children else "posterior"
    labels = dt[group].data_vars
    names = tuple(name for name in ("theta", "phi") if name in labels)
    return per_chain_moments(dt, names) if names else dt


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="lda",
    description="latent Dirichlet allocation, collapsed Gibbs (SparseLDA) on token "
    "topics; theta and phi written as their per-chain mean and sd",
    factory=model,
    cli=CLIEntry(
        # the command line writes the topics: theta and phi, recorded per draw, written as
        # each chain's mean and sd (written=), so the file does not grow with the draws
        methods=("gibbs", "auto"),
        build=_build_from_dataset,
        default_dataset="reuters",
        # thin: ten sweeps per recorded draw, so theta and phi (recorded per draw) cost
        # no more than 200 draws while each chain makes 3,000 sweeps; no length within
        # the one-minute budget passes the check (docs/families/lda.md), so the default
        # is the cheapest that shows the topics
        defaults={"n_topics": 20, "thin": 10},
        fit_defaults={"draws": 200, "tune": 100, "chains": 2, "var_names": ("theta", "phi")},
        check_note="slow by nature, not by a fixable update: the default (3,000 sweeps "
        "per chain) fails the check (R-hat 1.8-2.7, ESS 2-3 on theta_concentration). From "
        "the balanced start chains settle after 3,000 to over 25,000 sweeps, and a settled "
        "chain gives one effective draw of theta_concentration per 475-940 sweeps, so the "
        "check's 200 per chain need ~10^5 sweeps per chain (several CPU minutes), not a "
        "one-minute default. Judge a run by its log_joint trace and topics.png, and run "
        "longer (--tune, --draws) while it still rises.",
        written=_written,
    ),
    plot=_outputs.plot_top_words,
    plot_name="topics",
    posterior_predictive=_predictive.posterior_predictive,
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
    log_likelihood_needs=("z",),
)
