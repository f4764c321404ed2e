"""LDA's inputs: a corpus as one token stream, and the factory's argument checks.

:func:`prepare_corpus` validates a count matrix (dense or sparse) or a list of word-id
sequences and lays it out as a :class:`TokenCorpus` (Griffiths & Steyvers 2004 sample
one token at a time, so the Gibbs kernels read the corpus as ``words`` + ``doc_ptr``).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from pp_models.validation import as_whole_numbers, check_int

__all__ = ["TokenCorpus", "prepare_corpus"]


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
        n_words = check_int(n_words, "n_words", minimum=1)
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
        data = as_whole_numbers(csr.data, name, "counts")
        indices, indptr = csr.indices, csr.indptr
    else:
        dense = np.asarray(docs)
        counts = as_whole_numbers(dense, name, "counts")
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


