"""How ``ppzoo fit mixture_of_trees`` turns a shipped data set into the model's input."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pp_models.mixture_of_trees.model import model

__all__ = ["binary_word_presence", "build_from_dataset"]


def binary_word_presence(counts, feature_names, n_words: int):
    """Presence (0/1) of the ``n_words`` words found in most documents, and their names."""
    counts = sp.csr_matrix(counts)
    doc_freq = np.asarray((counts > 0).sum(axis=0)).ravel()
    top = np.sort(np.argsort(-doc_freq, kind="stable")[:n_words])
    X = (counts[:, top] > 0).toarray().astype(np.int64)
    names = [feature_names[j] for j in top] if feature_names is not None else None
    return X, names


def build_from_dataset(dataset, *, n_components: int = 2, n_words: int = 30, **options):
    """A document-term corpus becomes word presence over its ``n_words`` most common
    words (as Murphy's Fig 26.4 did for newsgroups); real-valued data are binarised at
    each column's median; integer data are used as category codes."""
    data = dataset.data
    names = dataset.feature_names
    if sp.issparse(data) or getattr(dataset, "kind", None) == "corpus":
        X, names = binary_word_presence(data, names, int(n_words))
    else:
        X = np.asarray(data.to_numpy() if hasattr(data, "to_numpy") else data)
        if not np.all(X == np.round(X)) or X.min() < 0:
            X = (X > np.median(X, axis=0)).astype(np.int64)
    return model(X, n_components, feature_names=names, **options)
