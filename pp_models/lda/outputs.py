"""LDA's outputs: held-out perplexity, top words and posterior topics.

:func:`perplexity` scores held-out documents by document completion (Wallach et al.
2009, "Evaluation methods for topic models", §4): theta of each document is sampled from
the observed part of the document with the topics held fixed, and the rest is scored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import xarray as xr

from custom_ops.lda.evaluation import sample_theta_fixed_phi
from pp_models.lda.inputs import prepare_corpus
from pp_models.model_info import MEAN_GROUP, posterior_with_labels
from pp_models.validation import check_int, check_positive_vector, check_real, rng_from_seed

__all__ = ["perplexity", "plot_top_words", "posterior_topics", "top_words"]


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
    with the topics held fixed, :func:`custom_ops.lda.evaluation.sample_theta_fixed_phi`),
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
    alpha_v = check_positive_vector(alpha, "alpha", n_topics, what="one per topic")
    observed_fraction = check_real(observed_fraction, "observed_fraction", above=0.0,
                                   below=1.0)
    n_burn = check_int(n_burn, "n_burn", minimum=0)
    n_samples = check_int(n_samples, "n_samples", minimum=1)
    is_matrix = sp.issparse(docs) or isinstance(docs, np.ndarray)
    if is_matrix and docs.ndim == 2 and docs.shape[1] != n_vocab:
        raise ValueError(
            f"docs have {docs.shape[1]} words, topics have {n_vocab}: vocabularies differ"
        )
    corpus = prepare_corpus(docs, n_words=None if is_matrix else n_vocab)
    if shuffle is None:
        shuffle = is_matrix
    rng = rng_from_seed(random_seed)
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
    n = check_int(n, "n", minimum=1)
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
        ``(chain, draw, topic, word)``. A result that keeps the topics only as each
        chain's mean (group ``posterior_mean``, what ``ppzoo fit lda`` writes) is read
        from there.
    chain : int
    var_name : str
    """
    means = _chain_means(posterior, var_name)
    if means is not None:
        return means.isel(chain=chain)
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


def _chain_means(posterior, var_name: str) -> xr.DataArray | None:
    """``var_name``'s per-chain mean from a result that keeps no draws of it
    (:func:`pp_models.model_info.per_chain_moments`), else None."""
    if not isinstance(posterior, xr.DataTree):
        return None
    root = posterior if "posterior" in posterior.children else posterior.parent
    if root is None or MEAN_GROUP not in root.children:
        return None
    if var_name in posterior_with_labels(root):
        return None
    means = root[MEAN_GROUP].to_dataset()
    return means[var_name] if var_name in means else None


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
    theta_means = _chain_means(dt, "theta")
    together = posterior_with_labels(dt) if isinstance(dt, xr.DataTree) else dt
    if theta_means is not None:
        share = theta_means.isel(chain=chain).mean("doc").values
    elif "theta" in together:
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
