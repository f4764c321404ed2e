"""Latent Dirichlet allocation (Blei, Ng & Jordan 2003; Murphy 2012 §27.3).

Generative story (Murphy Eqs. 27.18-27.21, in the LDA paper's letters): each topic
``k`` is a distribution over the vocabulary, ``phi_k ~ Dir(eta)``; each document ``d``
has topic proportions ``theta_d ~ Dir(alpha)``; each token ``i`` of document ``d``
picks a topic ``z_i ~ Cat(theta_d)`` and then a word ``w_i ~ Cat(phi_{z_i})``.

:func:`model` builds it two ways:

- ``collapsed=False``: ``theta`` and ``phi`` are free and the token topics are summed
  out, ``p(w_i = v | theta_d, phi) = sum_k theta_dk phi_kv`` (Murphy Eq. 27.22), so a
  document's counts are Multinomial(L_d, theta_d phi): a continuous model for NUTS or
  ADVI, with minibatch ADVI over documents (``batch_size``).
- ``collapsed=True``: ``theta`` and ``phi`` are integrated out (Dirichlet-multinomial,
  Murphy Eqs. 27.34 and 27.36) and the token topics ``z`` are the free variable, sampled
  by the collapsed Gibbs step ``"lda_collapsed_gibbs"`` (Griffiths & Steyvers 2004).

:func:`perplexity` scores held-out documents by document completion (Wallach et al.
2009), :func:`top_words` lists the most probable words of each topic.

The factory :func:`model` and the CLI entry are in ``model.py``, the corpus layout
(:func:`prepare_corpus`, :class:`TokenCorpus`) in ``inputs.py``, the outputs
(:func:`perplexity`, :func:`top_words`, :func:`posterior_topics`) in ``outputs.py``. The
collapsed Gibbs step is in ``inference/gibbs/lda.py``, its hot loops in
:mod:`custom_ops.lda_kernels`.
"""

from pp_models.lda.inputs import TokenCorpus, prepare_corpus
from pp_models.lda.model import (
    CLI_ENTRY,
    STEP_NAME,
    CollapsedStepOptions,
    model,
)
from pp_models.lda.outputs import perplexity, posterior_topics, top_words

__all__ = [
    "CLI_ENTRY",
    "STEP_NAME",
    "CollapsedStepOptions",
    "TokenCorpus",
    "model",
    "perplexity",
    "posterior_topics",
    "prepare_corpus",
    "top_words",
]
