"""Fisher's iris data, shipped as package data."""

from __future__ import annotations

from importlib import resources

import numpy as np

from pp_models.datasets.registry import Dataset, register_dataset

PROVENANCE = (
    "Fisher, R. A. (1936) 'The use of multiple measurements in taxonomic problems', "
    "Annals of Eugenics 7(2):179-188; measurements collected by E. Anderson. Copied from "
    "scikit-learn 1.9.1's bundled copy (sklearn/datasets/data/iris.csv, BSD-3-Clause), "
    "which follows the UCI Machine Learning Repository version."
)


@register_dataset(
    "iris",
    description="150 irises x 4 measurements (cm), 3 species",
    kind="table",
    provenance=PROVENANCE,
)
def load_iris() -> Dataset:
    """Load iris: ``data`` is (150, 4) float, ``target`` the species codes 0..2."""
    import pandas as pd  # here: `ppzoo list` lists the data sets without pandas

    with resources.files("pp_models.datasets").joinpath("data/iris.csv").open() as f:
        frame = pd.read_csv(f)
    species = frame.pop("species")
    names = tuple(sorted(species.unique()))
    return Dataset(
        name="iris",
        data=frame.to_numpy(dtype=np.float64),
        target=species.map({s: i for i, s in enumerate(names)}).to_numpy(dtype=np.int64),
        feature_names=tuple(frame.columns),
        target_names=names,
        provenance=PROVENANCE,
    )
