"""The 395-story Reuters corpus shipped with the package (topic models).

Provenance and checksums: ``pp_models/datasets/data/reuters/README.md`` (the corpus is
the test corpus of the ``lda`` package 3.0.2, MPL-2.0).
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

import numpy as np

from pp_models.datasets.registry import Dataset, register_dataset

if TYPE_CHECKING:
    import scipy.sparse as sp

__all__ = ["PROVENANCE", "load_reuters"]

_DATA = "data/reuters"

PROVENANCE = (
    "395 Reuters news stories (August 1996) as distributed with the `lda` Python package "
    "3.0.2 (A. Riddell et al., MPL-2.0), files lda/tests/reuters.ldac/.tokens/.titles; "
    "bag of words over a 4258-word vocabulary, 84010 tokens. Checksums and details: "
    "pp_models/datasets/data/reuters/README.md."
)


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
    import scipy.sparse as sp  # here: `ppzoo list` lists the data sets without SciPy

    counts = sp.csr_matrix(
        (np.asarray(data, dtype=np.int64), np.asarray(indices), np.asarray(indptr)),
        shape=(len(indptr) - 1, n_words),
    )
    counts.sort_indices()
    return counts


@register_dataset(
    "reuters",
    description="395 Reuters news stories, 4258-word vocabulary, 84010 tokens (topic models)",
    kind="corpus",
    provenance=PROVENANCE,
)
def load_reuters() -> Dataset:
    """Load the Reuters corpus: 395 news stories, 4,258-word vocabulary, 84,010 tokens.

    Returns
    -------
    Dataset
        ``data``: document-term counts, a 395 x 4258 ``scipy.sparse.csr_matrix`` of
        int64; ``feature_names``: the vocabulary (word id ``v`` is
        ``feature_names[v]``); ``extras["titles"]``: one title per document.

    Examples
    --------
    >>> reuters = load_reuters()
    >>> reuters.data.shape, int(reuters.data.sum())
    ((395, 4258), 84010)
    """
    vocabulary = tuple(_read_text("reuters.tokens").split())
    titles = tuple(line.strip() for line in _read_text("reuters.titles").splitlines())
    counts = _parse_ldac(_read_text("reuters.ldac"), len(vocabulary))
    if len(titles) != counts.shape[0]:
        raise RuntimeError(f"reuters: {len(titles)} titles for {counts.shape[0]} documents")
    return Dataset(
        name="reuters",
        data=counts,
        feature_names=vocabulary,
        provenance=PROVENANCE,
        extras={"titles": titles},
    )
