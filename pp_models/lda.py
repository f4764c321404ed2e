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
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import scipy.sparse as sp
import xarray as xr

from custom_ops.lda_kernels import sample_theta_fixed_phi
from pp_models.model_info import (
    DerivedStatistic,
    StepHint,
    ZooModelInfo,
    attach_info,
    posterior_with_labels,
)
from pp_models.registry import ModelEntry

__all__ = [
    "STEP_NAME",
    "CollapsedStepOptions",
    "TokenCorpus",
    "model",
    "perplexity",
    "plot_top_words",
    "posterior_topics",
    "prepare_corpus",
    "top_words",
]

#: Registry name of the collapsed Gibbs step the collapsed model asks for.
STEP_NAME = "lda_collapsed_gibbs"


# ---------------------------------------------------------------------------------------
# Corpus
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenCorpus:
    """A corpus as one token stream, document by document (empty documents dropped).

    Attributes
    ----------
    words : int32 (N,)
        Word id of every token; ``words[doc_ptr[d]:doc_ptr[d + 1]]`` is document ``d``.
    doc_ptr : int64 (D + 1,)
        Token offsets of the documents.
    n_words : int
        Vocabulary size V.
    doc_index : int64 (D,)
        Position of each kept document in the input.
    n_empty : int
        Number of empty input documents that were dropped.
    """

    words: np.ndarray
    doc_ptr: np.ndarray
    n_words: int
    doc_index: np.ndarray
    n_empty: int = 0

    @property
    def n_docs(self) -> int:
        return self.doc_ptr.size - 1

    @property
    def n_tokens(self) -> int:
        return self.words.size

    @property
    def doc_lengths(self) -> np.ndarray:
        return np.diff(self.doc_ptr)

    @property
    def doc_ids(self) -> np.ndarray:
        """Document of every token, int32 (N,)."""
        return np.repeat(np.arange(self.n_docs, dtype=np.int32), self.doc_lengths)

    def counts(self) -> sp.csr_matrix:
        """Document-term counts (D x V, int64 CSR)."""
        ones = np.ones(self.n_tokens, dtype=np.int64)
        out = sp.csr_matrix((ones, (self.doc_ids, self.words)), shape=(self.n_docs, self.n_words))
        out.sum_duplicates()
        return out


def _integral_values(values: np.ndarray, name: str) -> np.ndarray:
    """``values`` as int64, or ValueError naming ``name`` if any is not a whole number >= 0."""
    if values.dtype == bool or not (
        np.issubdtype(values.dtype, np.integer) or np.issubdtype(values.dtype, np.floating)
    ):
        raise TypeError(f"{name}: expected integer counts, got dtype {values.dtype}")
    if np.issubdtype(values.dtype, np.floating):
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{name}: counts must be finite (found NaN or inf)")
        if np.any(values != np.round(values)):
            raise ValueError(f"{name}: counts must be whole numbers (found non-integer values)")
    if np.any(values < 0):
        raise ValueError(f"{name}: counts must be >= 0 (found negative values)")
    return values.astype(np.int64)


def prepare_corpus(docs, *, n_words: int | None = None, name: str = "docs") -> TokenCorpus:
    """Validate a corpus and lay it out as a token stream.

    Parameters
    ----------
    docs : array (D, V), scipy.sparse matrix (D, V), or sequence of sequences of int
        A document-term count matrix (numpy array or scipy.sparse; the tokens of a
        document are then listed word by word), or one sequence of word ids per
        document (order kept).
    n_words : int, optional
        Vocabulary size. Defaults to the number of columns of a count matrix or to
        ``max word id + 1`` for token sequences.
    name : str
        Argument name used in error messages.

    Returns
    -------
    TokenCorpus

    Raises
    ------
    TypeError
        ``docs`` is not one of the accepted kinds, or holds non-numeric values.
    ValueError
        Negative or non-integer counts, word ids outside ``[0, n_words)``, a corpus
        without tokens. Empty documents are dropped with a warning that counts them.
    """
    if n_words is not None:
        if isinstance(n_words, bool) or not isinstance(n_words, Integral) or n_words < 1:
            raise ValueError(f"n_words must be a positive integer, got {n_words!r}")
        n_words = int(n_words)
    if sp.issparse(docs) or isinstance(docs, np.ndarray):
        lengths, words = _tokens_from_counts(docs, n_words, name)
        vocab = docs.shape[1]
    elif isinstance(docs, Sequence) and not isinstance(docs, (str, bytes)):
        lengths, words, vocab = _tokens_from_sequences(docs, n_words, name)
    else:
        raise TypeError(
            f"{name}: expected a count matrix (numpy array or scipy.sparse) or a sequence "
            f"of word-id sequences, got {type(docs).__name__}"
        )
    if lengths.size == 0:
        raise ValueError(f"{name}: the corpus is empty (no documents)")
    if words.size == 0:
        raise ValueError(f"{name}: the corpus is empty (no tokens in any document)")
    keep = lengths > 0
    n_empty = int(np.count_nonzero(~keep))
    if n_empty:
        warnings.warn(f"{name}: {n_empty} empty document(s) ignored", UserWarning, stacklevel=3)
    doc_ptr = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
    np.cumsum(lengths[keep], out=doc_ptr[1:])
    return TokenCorpus(
        words=np.ascontiguousarray(words, dtype=np.int32),
        doc_ptr=doc_ptr,
        n_words=int(vocab),
        doc_index=np.flatnonzero(keep).astype(np.int64),
        n_empty=n_empty,
    )


def _tokens_from_counts(docs, n_words, name):
    if docs.ndim != 2:
        raise ValueError(f"{name}: a count matrix must be 2-D (docs x words), got {docs.ndim}-D")
    if n_words is not None and n_words != docs.shape[1]:
        raise ValueError(f"n_words={n_words} does not match the {docs.shape[1]} columns of {name}")
    if docs.shape[1] == 0:
        raise ValueError(f"{name}: the vocabulary is empty (0 columns)")
    if sp.issparse(docs):
        csr = sp.csr_matrix(docs, copy=True)
        csr.sum_duplicates()
        csr.sort_indices()
        data = _integral_values(np.asarray(csr.data), name)
        indices, indptr = csr.indices, csr.indptr
    else:
        dense = np.asarray(docs)
        counts = _integral_values(dense, name)
        csr = sp.csr_matrix(counts)
        data, indices, indptr = csr.data.astype(np.int64), csr.indices, csr.indptr
    words = np.repeat(indices.astype(np.int32), data)
    row_of_entry = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
    lengths = np.bincount(row_of_entry, weights=data, minlength=indptr.size - 1).astype(np.int64)
    return lengths, words


def _tokens_from_sequences(docs, n_words, name):
    arrays = []
    for i, doc in enumerate(docs):
        arr = np.asarray(doc)
        if arr.ndim != 1:
            raise ValueError(f"{name}[{i}]: a document must be a 1-D sequence of word ids")
        if arr.size and (
            arr.dtype == bool
            or not (np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating))
        ):
            raise TypeError(f"{name}[{i}]: word ids must be integers, got dtype {arr.dtype}")
        if arr.size and np.issubdtype(arr.dtype, np.floating):
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ValueError(f"{name}[{i}]: word ids must be whole numbers")
        arr = arr.astype(np.int64)
        if arr.size and arr.min() < 0:
            raise ValueError(f"{name}[{i}]: word ids must be >= 0 (found {arr.min()})")
        if n_words is not None and arr.size and arr.max() >= n_words:
            raise ValueError(
                f"{name}[{i}]: word id {arr.max()} is >= the vocabulary size n_words={n_words}"
            )
        arrays.append(arr)
    lengths = np.array([a.size for a in arrays], dtype=np.int64)
    words = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int64)
    vocab = n_words if n_words is not None else (int(words.max()) + 1 if words.size else 0)
    return lengths, words, vocab


def _check_n_topics(n_topics) -> int:
    if isinstance(n_topics, bool) or not isinstance(n_topics, Integral):
        raise ValueError(f"n_topics must be an integer >= 1, got {n_topics!r}")
    if n_topics < 1:
        raise ValueError(f"n_topics must be >= 1, got {n_topics}")
    return int(n_topics)


def _check_concentration(value, length: int, name: str, what: str) -> np.ndarray:
    """A symmetric (scalar) or full (vector of ``length``) Dirichlet parameter, all > 0."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a positive number or a vector of {length}, got bool")
    if isinstance(value, Real):
        arr = np.full(length, float(value))
    else:
        try:
            arr = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(
                f"{name} must be a positive number or a vector, got {value!r}"
            ) from None
        if arr.ndim == 0:
            arr = np.full(length, float(arr))
        elif arr.shape != (length,):
            raise ValueError(
                f"{name} must be a scalar or a vector of length {length} ({what}), "
                f"got shape {arr.shape}"
            )
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0 and finite, got {value!r}")
    return arr


# ---------------------------------------------------------------------------------------
# Model factory
# ---------------------------------------------------------------------------------------


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
    n_topics = _check_n_topics(n_topics)
    if not isinstance(collapsed, bool):
        raise TypeError(f"collapsed must be True or False, got {collapsed!r}")
    if isinstance(thin, bool) or not isinstance(thin, Integral) or thin < 1:
        raise ValueError(f"thin must be a positive integer, got {thin!r}")
    if thin != 1 and not collapsed:
        raise ValueError("thin is for the collapsed model's Gibbs step (collapsed=True) only")
    corpus = prepare_corpus(docs, n_words=n_words)
    alpha_v = _check_concentration(alpha, n_topics, "alpha", "one per topic")
    eta_v = _check_concentration(eta, corpus.n_words, "eta", "one per vocabulary word")
    if vocabulary is not None:
        vocabulary = [str(v) for v in vocabulary]
        if len(vocabulary) != corpus.n_words:
            raise ValueError(
                f"vocabulary has {len(vocabulary)} words, the corpus has {corpus.n_words}"
            )
    if batch_size is not None:
        if collapsed:
            raise ValueError("batch_size is for the explicit model (collapsed=False) only")
        if isinstance(batch_size, bool) or not isinstance(batch_size, Integral):
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not 1 <= batch_size <= corpus.n_docs:
            raise ValueError(
                f"batch_size must be between 1 and the {corpus.n_docs} documents, got {batch_size}"
            )
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


def _collapsed_model(corpus, n_topics, alpha_v, eta_v, coords, deterministics, thin):
    n_docs, n_tokens, n_vocab = corpus.n_docs, corpus.n_tokens, corpus.n_words
    words = corpus.words.astype(np.int64)
    # a tensor, not a NumPy array: PyTensor inspects a NumPy index element by element in
    # Python when building the graph (half a second for 84,000 tokens)
    doc_ids = pt.as_tensor(corpus.doc_ids.astype(np.int64))

    def z_dist(alpha, size):
        # theta_d ~ Dir(alpha), z_i ~ Cat(theta_{d_i}) by inverse CDF: the rows of the
        # cumulative theta, shifted by the row index, form one increasing sequence, so a
        # single searchsorted draws all tokens.
        theta = pm.Dirichlet.dist(a=alpha, shape=(n_docs, n_topics))
        cum = pt.cumsum(theta, axis=1) + pt.arange(n_docs)[:, None]
        u = pm.Uniform.dist(0.0, 1.0, shape=(n_tokens,))
        flat = pt.searchsorted(cum.ravel(), doc_ids + u, side="right")
        return pt.clip(flat - doc_ids * n_topics, 0, n_topics - 1)

    def _balanced_topics(rv, size, alpha):
        return pt.arange(n_tokens, dtype="int64") % n_topics

    def z_logp(value, alpha):
        # log p(z | alpha), Murphy Eq. 27.34 (theta integrated out per document)
        n_dk = pt.inc_subtensor(pt.zeros((n_docs, n_topics))[doc_ids, value], 1.0)
        a0 = pt.sum(alpha)
        lengths = pt.sum(n_dk, axis=1)
        return pt.sum(pt.gammaln(n_dk + alpha) - pt.gammaln(alpha)) + pt.sum(
            pt.gammaln(a0) - pt.gammaln(lengths + a0)
        )

    def w_dist(z, eta, size):
        # phi_k ~ Dir(eta), w_i ~ Cat(phi_{z_i}); drawing phi afresh makes this the
        # collapsed conditional p(w | z, eta).
        phi = pm.Dirichlet.dist(a=eta, shape=(n_topics, n_vocab))
        cum = pt.cumsum(phi, axis=1) + pt.arange(n_topics)[:, None]
        u = pm.Uniform.dist(0.0, 1.0, shape=(n_tokens,))
        flat = pt.searchsorted(cum.ravel(), z + u, side="right")
        return pt.clip(flat - z * n_vocab, 0, n_vocab - 1)

    def w_logp(value, z, eta):
        # log p(w | z, eta), Murphy Eq. 27.36 (gamma there is eta here)
        n_kw = pt.inc_subtensor(pt.zeros((n_topics, n_vocab))[z, value], 1.0)
        e0 = pt.sum(eta)
        return pt.sum(pt.gammaln(n_kw + eta) - pt.gammaln(eta)) + pt.sum(
            pt.gammaln(e0) - pt.gammaln(pt.sum(n_kw, axis=1) + e0)
        )

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
        family="lda",
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
        family="lda",
        preferred_method="advi" if batch_size is not None else "nuts",
        derived=DERIVED,
        label_variables=("theta", "phi"),
        notes="explicit LDA: token topics summed out; theta and phi are labelled up to a "
        "permutation of topics",
    )
    return attach_info(m, info)


# ---------------------------------------------------------------------------------------
# Evaluation
# ---------------------------------------------------------------------------------------


def _check_topics(topics, name="topics") -> np.ndarray:
    phi = np.asarray(topics, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"{name} must be a (n_topics, n_words) matrix, got shape {phi.shape}")
    if not np.all(np.isfinite(phi)) or np.any(phi < 0):
        raise ValueError(f"{name} must be finite and >= 0")
    sums = phi.sum(axis=1)
    if np.any(np.abs(sums - 1.0) > 1e-6):
        raise ValueError(f"{name}: each row must be a probability vector (rows sum to 1)")
    return phi


def perplexity(
    topics,
    docs,
    *,
    alpha=0.1,
    observed_fraction: float = 0.5,
    n_burn: int = 50,
    n_samples: int = 50,
    shuffle: bool | None = None,
    random_seed=None,
) -> float:
    """Held-out perplexity by document completion (Wallach et al. 2009 §4).

    Each held-out document's tokens are split: the first ``observed_fraction`` is used
    to estimate its topic proportions ``theta_d`` (Gibbs sampling of its token topics
    with the topics held fixed, :func:`custom_ops.lda_kernels.sample_theta_fixed_phi`),
    and the rest is scored with ``p(w | theta_d, topics) = sum_k theta_dk phi_kw``.

    .. math:: \\text{perplexity} = \\exp\\Big(-\\frac{\\sum_d \\sum_{i \\in \\text{2nd}(d)}
              \\log \\sum_k \\hat\\theta_{dk}\\phi_{k w_i}}{\\#\\text{scored tokens}}\\Big)

    the corpus-level form of Murphy (2012) Eq. 27.27 (a uniform model over V words
    scores exactly V).

    Parameters
    ----------
    topics : array (K, V)
        Topic-word probabilities (e.g. the posterior mean of ``phi``).
    docs : count matrix or sequence of word-id sequences
        Held-out documents over the same vocabulary.
    alpha : float or array (K,)
        Dirichlet parameter of the topic proportions.
    observed_fraction : float in (0, 1)
        Fraction of each document's tokens used to estimate theta.
    n_burn, n_samples : int
        Gibbs sweeps discarded / averaged per document.
    shuffle : bool, optional
        Shuffle each document's tokens before the split. Default: ``True`` for count
        matrices (their token order is by word id, which would bias the split), ``False``
        for token sequences (the first half in reading order, as in Wallach et al.).
    random_seed : int or Generator, optional

    Returns
    -------
    float
    """
    phi = _check_topics(topics)
    n_topics, n_vocab = phi.shape
    alpha_v = _check_concentration(alpha, n_topics, "alpha", "one per topic")
    if not isinstance(observed_fraction, Real) or not 0.0 < observed_fraction < 1.0:
        raise ValueError(f"observed_fraction must be in (0, 1), got {observed_fraction!r}")
    for nm, val, low in (("n_burn", n_burn, 0), ("n_samples", n_samples, 1)):
        if isinstance(val, bool) or not isinstance(val, Integral) or val < low:
            raise ValueError(f"{nm} must be an integer >= {low}, got {val!r}")
    is_matrix = sp.issparse(docs) or isinstance(docs, np.ndarray)
    if is_matrix and docs.ndim == 2 and docs.shape[1] != n_vocab:
        raise ValueError(
            f"docs have {docs.shape[1]} words, topics have {n_vocab}: vocabularies differ"
        )
    corpus = prepare_corpus(docs, n_words=None if is_matrix else n_vocab)
    if shuffle is None:
        shuffle = is_matrix
    rng = np.random.default_rng(random_seed)
    obs_words, obs_ptr, test_words, test_doc = [], [0], [], []
    for d in range(corpus.n_docs):
        tokens = corpus.words[corpus.doc_ptr[d] : corpus.doc_ptr[d + 1]].copy()
        if shuffle:
            rng.shuffle(tokens)
        n_obs = int(np.floor(observed_fraction * tokens.size))
        obs_words.append(tokens[:n_obs])
        obs_ptr.append(obs_ptr[-1] + n_obs)
        test_words.append(tokens[n_obs:])
        test_doc.append(np.full(tokens.size - n_obs, d))
    theta = sample_theta_fixed_phi(
        np.concatenate(obs_words).astype(np.int32),
        np.asarray(obs_ptr, dtype=np.int64),
        np.ascontiguousarray(phi.T),
        alpha_v,
        int(n_burn),
        int(n_samples),
        rng,
    )
    tw = np.concatenate(test_words)
    td = np.concatenate(test_doc)
    if tw.size == 0:
        raise ValueError("docs: no tokens left to score (documents too short to split)")
    prob = np.einsum("ik,ki->i", theta[td], phi[:, tw])
    return float(np.exp(-np.mean(np.log(prob))))


def top_words(topics, vocabulary: Sequence[str] | None = None, n: int = 10) -> list[list]:
    """The ``n`` most probable words of each topic, most probable first.

    Parameters
    ----------
    topics : array (K, V)
        Topic-word probabilities or counts.
    vocabulary : sequence of str, optional
        Word labels; word ids are returned without it.
    n : int
    """
    phi = np.asarray(topics, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"topics must be a (n_topics, n_words) matrix, got shape {phi.shape}")
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    if vocabulary is not None and len(vocabulary) != phi.shape[1]:
        raise ValueError(f"vocabulary has {len(vocabulary)} words, topics have {phi.shape[1]}")
    order = np.argsort(-phi, axis=1, kind="stable")[:, :n]
    if vocabulary is None:
        return [list(map(int, row)) for row in order]
    return [[vocabulary[j] for j in row] for row in order]


def posterior_topics(posterior, *, chain: int = 0, var_name: str = "phi") -> xr.DataArray:
    """Posterior mean of the topics from one chain.

    Topics are labelled only up to a permutation, and different chains usually settle
    on different permutations: averaging across chains mixes topics, so this averages
    the draws of a single chain.

    Parameters
    ----------
    posterior : xarray.DataTree or Dataset
        What ``fit`` returned (or its ``dt.posterior`` node; ``fit`` keeps the topics
        in ``dt.posterior_labels``), or a Dataset holding ``var_name`` with dims
        ``(chain, draw, topic, word)``.
    chain : int
    var_name : str
    """
    if isinstance(posterior, xr.DataTree) and "posterior" in posterior.children:
        ds = posterior_with_labels(posterior)
    elif isinstance(posterior, xr.DataTree) and posterior.parent is not None:
        # dt.posterior: fit keeps the topics beside it, in dt.posterior_labels
        ds = posterior_with_labels(posterior.parent)
    else:
        ds = posterior.to_dataset() if hasattr(posterior, "to_dataset") else posterior
    if var_name not in ds:
        raise ValueError(f"posterior has no variable {var_name!r}")
    return ds[var_name].isel(chain=chain).mean("draw")


def plot_top_words(dt: xr.DataTree, path=None, *, chain: int = 0, n: int = 8):
    """The answer of a topic model fit: each topic's ``n`` most probable words (posterior
    mean of ``phi`` over one chain, :func:`posterior_topics`), as bars of their
    probability, topics ordered by their share of the corpus (mean ``theta``). Words
    are shown as words when the model was given a ``vocabulary`` (``ppzoo fit lda``
    passes the data set's; a CSV's header row is one), else as ids. Saves a PNG to
    ``path`` when given; returns the figure. ``ppzoo fit lda`` writes it as
    ``topics.png``.
    """
    import matplotlib.pyplot as plt

    phi = posterior_topics(dt, chain=chain)
    words = [str(w) for w in phi["word"].values]
    share = None
    together = posterior_with_labels(dt) if isinstance(dt, xr.DataTree) else dt
    if "theta" in together:
        share = together["theta"].isel(chain=chain).mean(("draw", "doc")).values
    K = phi.sizes["topic"]
    order = np.argsort(-share) if share is not None else np.arange(K)
    cols = min(5, K)
    rows = -(-K // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 0.22 * n * rows + 0.9 * rows),
                             squeeze=False)
    values = np.asarray(phi.values)
    for ax, k in zip(axes.flat, order, strict=False):
        top = np.argsort(-values[k], kind="stable")[:n]
        ax.barh(np.arange(n), values[k, top], color="tab:blue")
        ax.set_yticks(np.arange(n), [words[j] for j in top], fontsize=8)
        ax.invert_yaxis()
        ax.tick_params(axis="x", labelsize=7)
        label = f"topic {int(phi['topic'].values[k])}"
        if share is not None:
            label += f" (mean share {share[k]:.0%})"
        ax.set_title(label, fontsize=8)
    for ax in axes.flat[K:]:
        ax.set_axis_off()
    fig.suptitle(f"LDA: top {n} words per topic (P(word | topic), chain {chain})",
                 fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=100)
        plt.close(fig)
    return fig


def _build_from_dataset(dataset, **options):
    """The CLI's build: a CSV arrives as a DataFrame of counts; the data set's
    vocabulary (or the CSV's header) labels the words unless ``vocabulary`` is given."""
    data = dataset.data
    counts = data.to_numpy() if hasattr(data, "to_numpy") else data
    names = tuple(dataset.feature_names or ())
    n_columns = np.shape(counts)[1] if np.ndim(counts) == 2 else None
    if "vocabulary" not in options and names and len(names) == n_columns:
        options["vocabulary"] = names
    return model(counts, **options)


CLI_ENTRY = ModelEntry(
    name="lda",
    description="latent Dirichlet allocation, collapsed Gibbs (SparseLDA) on token "
    "topics; theta and phi recorded per draw",
    # the command line writes the topics: theta and phi per draw
    methods=("gibbs", "auto"),
    build=_build_from_dataset,
    default_dataset="reuters",
    defaults={"n_topics": 20},
    fit_defaults={"draws": 200, "tune": 200, "chains": 2, "var_names": ("theta", "phi")},
)
