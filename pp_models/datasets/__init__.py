"""Data sets shipped as package data, each with its provenance.

>>> from pp_models import datasets
>>> [d.name for d in datasets.list_datasets()]  # doctest: +SKIP
>>> iris = datasets.load("iris")
"""

from pp_models.datasets import iris, nile, reuters, sachs  # noqa: F401  (registers)
from pp_models.datasets.registry import Dataset, DatasetInfo, list_datasets, load, register_dataset

__all__ = ["Dataset", "DatasetInfo", "list_datasets", "load", "register_dataset"]
