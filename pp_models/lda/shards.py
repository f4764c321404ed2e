"""A corpus too big for one process, as a folder of sparse count shards.

Each shard is one ``scipy.sparse`` document-term matrix saved with
``scipy.sparse.save_npz`` (``shard-00000.npz``, ``shard-00001.npz``, ...; any
``*.npz`` names, read in sorted order): documents are the rows, the vocabulary the
columns, the same vocabulary in every shard. :func:`write_shards` writes one shard at a
time (a generator of blocks never holds the corpus); :func:`shard_shapes` reads only each
file's small ``shape`` entry, so the caller learns the corpus's size and checks the
vocabularies without loading any counts; :func:`read_shards` loads shards as a token
stream (on the worker that holds them).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from pp_models.lda.inputs import TokenCorpus, prepare_corpus

__all__ = ["read_shards", "shard_paths", "shard_shapes", "write_shards"]


def write_shards(directory, blocks: Iterable) -> list[Path]:
    """Write each count matrix of ``blocks`` as one shard in ``directory`` (created if
    needed, must hold no shard yet); returns the paths.

    Parameters
    ----------
    directory : str or os.PathLike
    blocks : iterable of (n_docs_i, n_words) count matrices (scipy.sparse or numpy)
        Consumed one at a time.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    if any(directory.glob("*.npz")):
        raise ValueError(f"directory: {directory} already holds .npz shards")
    paths = []
    n_words = None
    for i, block in enumerate(blocks):
        csr = sp.csr_matrix(block)
        if n_words is not None and csr.shape[1] != n_words:
            raise ValueError(f"blocks[{i}] has {csr.shape[1]} words, blocks[0] has {n_words}")
        n_words = csr.shape[1]
        path = directory / f"shard-{i:05d}.npz"
        sp.save_npz(path, csr, compressed=False)
        paths.append(path)
    if not paths:
        raise ValueError("blocks: no count matrix to write")
    return paths


def shard_paths(directory, name: str = "counts") -> list[Path]:
    """The ``*.npz`` files of ``directory`` in sorted order (``ValueError`` naming
    ``name`` when it is not a folder or holds none)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{name}: {directory} is not a folder of .npz shards")
    paths = sorted(directory.glob("*.npz"))
    if not paths:
        raise ValueError(f"{name}: {directory} holds no .npz shard")
    return paths


def shard_shapes(paths, name: str = "counts") -> list[tuple[int, int]]:
    """``(n_docs, n_words)`` of every shard, read from its ``shape`` entry alone.

    Raises ``ValueError`` naming ``name`` and the file for a file that is not a
    ``save_npz`` sparse matrix and for shards whose vocabularies differ in size.
    """
    shapes = []
    for path in paths:
        try:
            with np.load(path, allow_pickle=False) as f:
                shape = tuple(int(v) for v in f["shape"])
                fmt = f["format"].item()
        except (OSError, KeyError, ValueError) as err:
            raise ValueError(f"{name}: {path} is not a sparse matrix saved with "
                             f"scipy.sparse.save_npz ({err})") from None
        fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
        if len(shape) != 2 or fmt not in ("csr", "csc", "coo"):
            raise ValueError(f"{name}: {path} holds a {fmt} array of shape {shape}, not a "
                             "documents x words count matrix")
        shapes.append(shape)
    first = shapes[0][1]
    for path, shape in zip(paths, shapes, strict=True):
        if shape[1] != first:
            raise ValueError(f"{name}: the shards' vocabularies differ: {os.fspath(path)} "
                             f"has {shape[1]} words, {os.fspath(paths[0])} has {first}")
    return shapes


def read_shards(paths, n_words: int) -> tuple[TokenCorpus, np.ndarray]:
    """The shards' documents as one :class:`TokenCorpus` (empty documents dropped) and
    the global row of each kept document within these shards (0-based from the first
    shard's first row)."""
    words, lengths, rows = [], [], []
    offset = 0
    for path in paths:
        block = sp.load_npz(path)
        if block.nnz == 0 or not block.sum():
            offset += block.shape[0]  # no token: every document of it is empty
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # empty documents, counted below
            corpus = prepare_corpus(block, n_words=n_words, name=os.fspath(path))
        words.append(corpus.words)
        lengths.append(corpus.doc_lengths)
        rows.append(corpus.doc_index + offset)
        offset += block.shape[0]
    if not words:
        raise ValueError(f"counts: the shards {', '.join(map(os.fspath, paths))} hold no "
                         "token")
    lengths = np.concatenate(lengths)
    doc_ptr = np.zeros(lengths.size + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    index = np.concatenate(rows)
    corpus = TokenCorpus(words=np.concatenate(words), doc_ptr=doc_ptr, n_words=int(n_words),
                         doc_index=index, n_empty=offset - index.size)
    return corpus, index
