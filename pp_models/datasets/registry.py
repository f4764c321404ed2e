"""Registry of the data sets shipped with pp-models."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Dataset", "DatasetInfo", "list_datasets", "load", "register_dataset"]


@dataclass(frozen=True)
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    name : str
    data : array-like
        The observations: an ``(n, d)`` float array for tables, a sparse
        document-term matrix for corpora.
    target : ndarray or None
        Known labels (for scoring clusterings), when the data set has them.
    feature_names, target_names : tuple of str
    provenance : str
        Where the data come from, with the citation.
    extras : dict
        Anything else a data set carries (vocabulary, titles, ...).
    """

    name: str
    data: Any
    target: np.ndarray | None = None
    feature_names: tuple[str, ...] = ()
    target_names: tuple[str, ...] = ()
    provenance: str = ""
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class DatasetInfo:
    """One line about a registered data set (what ``list_datasets`` returns)."""

    name: str
    description: str
    kind: str
    provenance: str
    loader: Callable[[], Dataset]


_DATASETS: dict[str, DatasetInfo] = {}


def register_dataset(name: str, *, description: str, kind: str, provenance: str):
    """Decorator registering a zero-argument loader under ``name``."""

    def decorate(loader: Callable[[], Dataset]) -> Callable[[], Dataset]:
        if name in _DATASETS:
            raise ValueError(f"data set {name!r} is already registered")
        _DATASETS[name] = DatasetInfo(name, description, kind, provenance, loader)
        return loader

    return decorate


def list_datasets() -> list[DatasetInfo]:
    """The registered data sets, sorted by name."""
    return [_DATASETS[k] for k in sorted(_DATASETS)]


def load(name: str) -> Dataset:
    """Load the shipped data set ``name`` (see :func:`list_datasets`)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a string, got {type(name).__name__}")
    if name not in _DATASETS:
        raise ValueError(
            f"unknown data set {name!r}; available: {', '.join(sorted(_DATASETS)) or 'none'}"
        )
    return _DATASETS[name].loader()
