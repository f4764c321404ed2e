"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003; Murphy 2012 §27.3).

The factory :func:`model` (collapsed for the Gibbs step, or explicit for NUTS / ADVI; see
``model.py``'s docstring for the equations) and the CLI entry are in ``model.py``, the
corpus layout (:func:`prepare_corpus`, :class:`TokenCorpus`) in ``inputs.py``, the
outputs (:func:`perplexity`, :func:`top_words`, :func:`posterior_topics`) in
``outputs.py``. The collapsed Gibbs step is in ``inference/gibbs/lda.py``, its hot loops
in :mod:`custom_ops.lda.gibbs`. :func:`adlda` (``adlda.py``) is approximate distributed
collapsed Gibbs (AD-LDA) over partitions of the documents, in this process or on a Dask
cluster, for corpora on disk too (``shards.py``).
"""

from pp_models.lda.adlda import ADLDAResult, adlda
from pp_models.lda.inputs import TokenCorpus, prepare_corpus
from pp_models.lda.model import (
    CLI_ENTRY,
    STEP_NAME,
    CollapsedStepOptions,
    model,
)
from pp_models.lda.outputs import perplexity, plot_top_words, posterior_topics, top_words

__all__ = [
    "CLI_ENTRY",
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
