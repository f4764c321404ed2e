"""The 395-story Reuters corpus shipped with the package (topic models).

Provenance and checksums: ``pp_models/datasets/data/reuters/README.md`` (the corpus is
the test corpus of the ``lda`` package 3.0.2, MPL-2.0).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import numpy as np
import scipy.sparse as sp

__all__ = ["TextCorpus", "load_reuters"]

_DATA = "data/reuters"


@dataclass(frozen=True)
class TextCorpus:
    """A bag-of-words corpus.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix of int64, shape (n_docs, n_words)
        Document-term counts.
    vocabulary : tuple of str
        ``vocabulary[v]`` is word id ``v``.
    titles : tuple of str
        One title per document.
    description : str
        Where the data come from.
    """

    counts: sp.csr_matrix
    vocabulary: tuple[str, ...]
    titles: tuple[str, ...]
    description: str = ""

    @property
    def n_docs(self) -> int:
        return self.counts.shape[0]

    @property
    def n_words(self) -> int:
        return self.counts.shape[1]

    @property
    def n_tokens(self) -> int:
        return int(self.counts.sum())


def _read_text(name: str) -> str:
    return resources.files("pp_models.datasets").joinpath(f"{_DATA}/{name}").read_text("utf-8")


def _parse_ldac(text: str, n_words: int) -> sp.csr_matrix:
    """Parse LDA-C lines ``N id:count ...`` into a CSR count matrix."""
    indptr = [0]
    indices: list[int] = []
    data: list[int] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        n_unique = int(fields[0])
        pairs = fields[1:]
        if len(pairs) != n_unique:
            raise ValueError(f"reuters.ldac line {lineno}: header says {n_unique} words")
        for pair in pairs:
            word, count = pair.split(":")
            indices.append(int(word))
            data.append(int(count))
        indptr.append(len(indices))
    counts = sp.csr_matrix(
        (np.asarray(data, dtype=np.int64), np.asarray(indices), np.asarray(indptr)),
        shape=(len(indptr) - 1, n_words),
    )
    counts.sort_indices()
    return counts


def load_reuters() -> TextCorpus:
    """Load the Reuters corpus: 395 news stories, 4,258-word vocabulary, 84,010 tokens.

    Returns
    -------
    TextCorpus
        ``counts`` (395 x 4258 CSR), ``vocabulary`` and ``titles``.

    Examples
    --------
    >>> corpus = load_reuters()
    >>> corpus.counts.shape, corpus.n_tokens
    ((395, 4258), 84010)
    """
    vocabulary = tuple(_read_text("reuters.tokens").split())
    titles = tuple(line.strip() for line in _read_text("reuters.titles").splitlines())
    counts = _parse_ldac(_read_text("reuters.ldac"), len(vocabulary))
    if len(titles) != counts.shape[0]:
        raise RuntimeError(f"reuters: {len(titles)} titles for {counts.shape[0]} documents")
    return TextCorpus(
        counts=counts,
        vocabulary=vocabulary,
        titles=titles,
        description=(
            "395 Reuters news stories (Aug 1996), the test corpus of the `lda` package "
            "3.0.2 (MPL-2.0); bag of words, 4258-word vocabulary, 84010 tokens"
        ),
    )
