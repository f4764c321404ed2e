"""Latent Dirichlet allocation: the model factory (Blei, Ng & Jordan 2003; Murphy 2012 §27.3).

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

The corpus layout is in ``inputs.py`` (:func:`~pp_models.lda.inputs.prepare_corpus`), the
outputs (perplexity, top words, posterior topics) in ``outputs.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from custom_ops.pymc_guard import forward_draw_guard, refuse_pymc_log_likelihood
from pp_models.lda.inputs import prepare_corpus
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
)
from pp_models.registry import family_of_module
from pp_models.validation import check_bool, check_int, check_positive_vector

__all__ = ["DERIVED", "STEP_NAME", "CollapsedStepOptions", "model"]

#: Registry name of the collapsed Gibbs step the collapsed model asks for.
STEP_NAME = "lda_collapsed_gibbs"


def model(
    docs,
    *,
    n_topics: int,
    alpha=0.1,
    eta=0.01,
    collapsed: bool = True,
    n_words: int | None = None,
    vocabulary: Sequence[str] | None = None,
    batch_size: int | None = None,
    deterministics: bool = True,
    thin: int = 1,
) -> pm.Model:
    """Build an LDA model of a corpus (no sampling).

    Parameters
    ----------
    docs : count matrix (D, V) (numpy or scipy.sparse) or sequence of word-id sequences
        The corpus (see :func:`prepare_corpus`). Empty documents are dropped with a
        warning; the ``doc`` coordinate holds the positions of the kept ones.
    n_topics : int
        Number of topics K >= 1.
    alpha : float or array (K,)
        Dirichlet parameter of the topic proportions theta_d; a scalar is symmetric.
    eta : float or array (V,)
        Dirichlet parameter of the topics phi_k; a scalar is symmetric.
    collapsed : bool
        ``True``: free variable ``z`` (topic of every token) with theta and phi
        integrated out, for the collapsed Gibbs step. ``False``: free ``theta`` (D, K)
        and ``phi`` (K, V), token topics summed out, for NUTS / ADVI.
    n_words : int, optional
        Vocabulary size when ``docs`` are token sequences.
    vocabulary : sequence of str, optional
        Word labels for the ``word`` coordinate.
    batch_size : int, optional
        ``collapsed=False`` only: observe a random minibatch of this many documents per
        evaluation (``pm.Minibatch``, likelihood scaled by ``total_size``) for minibatch
        ADVI. Not for MCMC.
    deterministics : bool
        ``collapsed=True`` only: add ``theta`` and ``phi`` as deterministics, the
        conditional posterior means given ``z`` (Rao-Blackwellised estimates,
        ``(n_dk + alpha_k)/(L_d + sum alpha)`` and ``(n_kv + eta_v)/(n_k + sum eta)``).
        ``fit`` records them per draw only when asked (``var_names=["phi"]``): by
        default it keeps no per-draw variable but the label-invariant statistics.
    thin : int
        ``collapsed=True`` only: Gibbs sweeps per recorded draw (the step's ``sweeps``),
        i.e. record every ``thin``-th state; cuts trace size for big ``theta``/``phi``.

    Returns
    -------
    pymc.Model
        With a :class:`~pp_models.model_info.ZooModelInfo` attached. Collapsed: free
        ``z`` (dims ``token``), observed ``w`` (the word of every token); the model's
        log density is the collapsed joint log p(w, z | alpha, eta) (Murphy Eqs. 27.34 +
        27.36). Explicit: free ``theta``, ``phi``, observed ``counts``.
    """
    n_topics = check_int(n_topics, "n_topics", minimum=1)
    collapsed = check_bool(collapsed, "collapsed")
    thin = check_int(thin, "thin", minimum=1)
    if thin != 1 and not collapsed:
        raise ValueError("thin is for the collapsed model's Gibbs step (collapsed=True) only")
    corpus = prepare_corpus(docs, n_words=n_words)
    alpha_v = check_positive_vector(alpha, "alpha", n_topics, what="one per topic")
    eta_v = check_positive_vector(eta, "eta", corpus.n_words, what="one per vocabulary word")
    if vocabulary is not None:
        vocabulary = [str(v) for v in vocabulary]
        if len(vocabulary) != corpus.n_words:
            raise ValueError(
                f"vocabulary has {len(vocabulary)} words, the corpus has {corpus.n_words}"
            )
    if batch_size is not None:
        if collapsed:
            raise ValueError("batch_size is for the explicit model (collapsed=False) only")
        # at most one batch of all the documents
        batch_size = check_int(batch_size, "batch_size", minimum=1, maximum=corpus.n_docs)
    coords = {
        "doc": corpus.doc_index,
        "topic": np.arange(n_topics),
        "word": vocabulary if vocabulary is not None else np.arange(corpus.n_words),
    }
    if collapsed:
        m = _collapsed_model(corpus, n_topics, alpha_v, eta_v, coords, deterministics, int(thin))
    else:
        m = _explicit_model(corpus, n_topics, alpha_v, eta_v, coords, batch_size)
    return m


def _phi_concentration(posterior: xr.Dataset) -> xr.DataArray:
    # sum_v phi_kv^2 is the inverse effective vocabulary size of topic k; averaging over
    # topics makes it invariant to relabelling them. The collapsed Gibbs step reports it
    # per draw from its integer counts (a sample stat), so phi need not be traced.
    if "phi" not in posterior and STAT_PHI in posterior:
        return posterior[STAT_PHI].rename(None)
    return _mean_square_sum(posterior["phi"])


def _theta_concentration(posterior: xr.Dataset) -> xr.DataArray:
    if "theta" not in posterior and STAT_THETA in posterior:
        return posterior[STAT_THETA].rename(None)
    return _mean_square_sum(posterior["theta"])


def _mean_square_sum(arr: xr.DataArray) -> xr.DataArray:
    """mean over the second-to-last axis of sum over the last of ``arr**2`` (NumPy, one
    pass; xarray's NaN-aware reductions cost several copies of a chain x draw x K x V
    array)."""
    values = np.asarray(arr.values)
    flat = values.reshape(-1, values.shape[-1])
    out = np.einsum("ij,ij->i", flat, flat).reshape(values.shape[:-1]).mean(-1)
    return xr.DataArray(out, dims=arr.dims[:-2])


#: Names of the collapsed step's per-draw stats that equal the derived statistics.
STAT_PHI = "phi_concentration"
STAT_THETA = "theta_concentration"


#: Label-invariant summaries of the topics and proportions, for R-hat / ESS.
DERIVED = (
    DerivedStatistic(
        "phi_concentration",
        _phi_concentration,
        "mean over topics of sum_v phi_kv^2 (inverse effective vocabulary size)",
    ),
    DerivedStatistic(
        "theta_concentration",
        _theta_concentration,
        "mean over documents of sum_k theta_dk^2 (inverse effective number of topics)",
    ),
)


@dataclass(frozen=True, eq=False)
class CollapsedStepOptions:
    """The collapsed Gibbs step's options for a model (a StepHint ``options`` callable).

    Called with the model the step is built on, which may be a copy of the factory's
    (``fit``, getting-it-right with the words free): the words are taken from that
    model's ``w``.
    """

    doc_ptr: np.ndarray
    n_words: int
    n_topics: int
    alpha: np.ndarray
    eta: np.ndarray
    sweeps: int = 1

    def __call__(self, model: pm.Model) -> dict:
        return {
            "words": model["w"],
            "doc_ptr": self.doc_ptr,
            "n_words": self.n_words,
            "n_topics": self.n_topics,
            "alpha": self.alpha,
            "eta": self.eta,
            "sweeps": self.sweeps,
        }


def _fresh_dirichlet_rows_draw(concentration, n_rows, n_cols, row_of, n_items):
    """``x_i ~ Cat(p_{row_of[i]})`` with every row ``p_r ~ Dir(concentration)`` drawn
    afresh (so the draw is from the Dirichlet-categorical marginal), by inverse CDF: the
    rows of the cumulative ``p``, shifted by the row index, form one increasing sequence,
    so a single searchsorted draws all items."""
    p = pm.Dirichlet.dist(a=concentration, shape=(n_rows, n_cols))
    cum = pt.cumsum(p, axis=1) + pt.arange(n_rows)[:, None]
    u = pm.Uniform.dist(0.0, 1.0, shape=(n_items,))
    flat = pt.searchsorted(cum.ravel(), row_of + u, side="right")
    # maximum/minimum, not clip: PyTensor's Python linker (prior draws of a tempered run)
    # loops over clip's elements in Python, one call per token
    return pt.minimum(pt.maximum(flat - row_of * n_cols, 0), n_cols - 1)


def _dirichlet_rows_log_marginal(value, concentration, n_rows, n_cols, row_of):
    """``log p(x | concentration)`` with each row's ``p_r ~ Dir(concentration)``
    integrated out (Dirichlet-categorical, Murphy Eqs. 27.34, 27.36): item ``i`` is
    category ``value[i]`` of row ``row_of[i]``."""
    counts = pt.inc_subtensor(pt.zeros((n_rows, n_cols))[row_of, value], 1.0)
    total = pt.sum(concentration)
    return pt.sum(pt.gammaln(counts + concentration) - pt.gammaln(concentration)) + pt.sum(
        pt.gammaln(total) - pt.gammaln(pt.sum(counts, axis=1) + total)
    )


def _collapsed_model(corpus, n_topics, alpha_v, eta_v, coords, deterministics, thin):
    n_docs, n_tokens, n_vocab = corpus.n_docs, corpus.n_tokens, corpus.n_words
    words = corpus.words.astype(np.int64)
    # a tensor, not a NumPy array: PyTensor inspects a NumPy index element by element in
    # Python when building the graph, slow for a corpus of tens of thousands of tokens
    doc_ids = pt.as_tensor(corpus.doc_ids.astype(np.int64))

    def z_dist(alpha, size):
        # theta_d ~ Dir(alpha), z_i ~ Cat(theta_{d_i})
        return _fresh_dirichlet_rows_draw(alpha, n_docs, n_topics, doc_ids, n_tokens)

    def _balanced_topics(rv, size, alpha):
        return pt.arange(n_tokens, dtype="int64") % n_topics

    def z_logp(value, alpha):
        # log p(z | alpha), Murphy Eq. 27.34 (theta integrated out per document)
        return _dirichlet_rows_log_marginal(value, alpha, n_docs, n_topics, doc_ids)

    def w_dist(z, eta, size):
        # phi_k ~ Dir(eta), w_i ~ Cat(phi_{z_i}); drawing phi afresh makes this the
        # collapsed conditional p(w | z, eta).
        # pm.sample_posterior_predictive would draw phi from its prior: refused there
        return forward_draw_guard(
            _fresh_dirichlet_rows_draw(eta, n_topics, n_vocab, z, n_tokens),
            "collapsed LDA's word likelihood")

    def w_logp(value, z, eta):
        # log p(w | z, eta), Murphy Eq. 27.36 (gamma there is eta here)
        refuse_pymc_log_likelihood("collapsed LDA's word likelihood")
        return _dirichlet_rows_log_marginal(value, eta, n_topics, n_vocab, z)

    coords = {**coords, "token": np.arange(n_tokens)}
    with pm.Model(coords=coords) as m:
        alpha_t = pt.as_tensor(alpha_v)
        eta_t = pt.as_tensor(eta_v)
        z = pm.CustomDist(
            "z",
            alpha_t,
            dist=z_dist,
            logp=z_logp,
            dtype="int64",
            dims="token",
            # the initial point: a balanced deterministic start, as the `lda` package uses
            support_point=_balanced_topics,
        )
        w = pm.CustomDist(
            "w", z, eta_t, dist=w_dist, logp=w_logp, dtype="int64", observed=words, dims="token"
        )
        if deterministics:
            n_dk = pt.inc_subtensor(pt.zeros((n_docs, n_topics))[doc_ids, z], 1.0)
            n_kw = pt.inc_subtensor(pt.zeros((n_topics, n_vocab))[z, w], 1.0)
            pm.Deterministic(
                "theta",
                (n_dk + alpha_t) / (pt.sum(n_dk, axis=1, keepdims=True) + pt.sum(alpha_t)),
                dims=("doc", "topic"),
            )
            pm.Deterministic(
                "phi",
                (n_kw + eta_t) / (pt.sum(n_kw, axis=1, keepdims=True) + pt.sum(eta_t)),
                dims=("topic", "word"),
            )
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        step_hints=(
            StepHint(
                STEP_NAME,
                ("z",),
                CollapsedStepOptions(
                    doc_ptr=corpus.doc_ptr,
                    n_words=n_vocab,
                    n_topics=n_topics,
                    alpha=alpha_v,
                    eta=eta_v,
                    sweeps=thin,
                ),
            ),
        ),
        derived=DERIVED,
        label_variables=("z", "theta", "phi"),
        relabelling=Relabelling("topic", allocations="theta", kind="proportions",
                                label_valued=("z",)),
        # Nothing big per draw unless asked (var_names=["phi"], ...): one topic per token
        # or a K x V phi per draw costs more than the sweep; the derived statistics come
        # from the step's counts.
        trace_var_names=(),
        notes=(
            "collapsed LDA: z sampled by collapsed Gibbs (SparseLDA); theta/phi are "
            "conditional posterior means given z; the joint log p(w, z) is the step's "
            "'log_joint' stat"
        ),
    )
    return attach_info(m, info)


def _explicit_model(corpus, n_topics, alpha_v, eta_v, coords, batch_size):
    counts = corpus.counts().toarray()
    n_docs = corpus.n_docs
    with pm.Model(coords=coords) as m:
        theta = pm.Dirichlet("theta", a=alpha_v, dims=("doc", "topic"))
        phi = pm.Dirichlet("phi", a=eta_v, dims=("topic", "word"))
        if batch_size is None:
            # p(w = v | theta_d, phi) = sum_k theta_dk phi_kv (Murphy Eq. 27.22)
            pm.Multinomial(
                "counts",
                n=counts.sum(axis=1),
                p=pt.dot(theta, phi),
                observed=counts,
                dims=("doc", "word"),
            )
        else:
            # int32: PyMC casts integer observed data to int32, and a cast node on top of
            # the Minibatch would no longer count as observed data
            idx, counts_mb = pm.Minibatch(
                np.arange(n_docs, dtype=np.int64),
                counts.astype(np.int32),
                batch_size=int(batch_size),
            )
            pm.Multinomial(
                "counts",
                n=pt.sum(counts_mb, axis=1),
                p=pt.dot(theta[idx], phi),
                observed=counts_mb,
                total_size=n_docs,
            )
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="advi" if batch_size is not None else "nuts",
        derived=DERIVED,
        label_variables=("theta", "phi"),
        relabelling=Relabelling("topic", allocations="theta", kind="proportions"),
        notes="explicit LDA: token topics summed out; theta and phi are labelled up to a "
        "permutation of topics",
    )
    return attach_info(m, info)
