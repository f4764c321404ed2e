"""Sachs et al. (2005) flow-cytometry data: 11 signalling proteins in 7466 cells.

Provenance and checksums: ``pp_models/datasets/data/sachs/README.md`` (files as
distributed in the ``cdt`` package 0.6.0, Apache-2.0). Murphy (2012) Fig. 26.18 runs the
graphical lasso on it (unbiased covariance / 1000, diagonal penalised).
"""

from __future__ import annotations

from importlib import resources

import numpy as np

from pp_models.datasets.registry import Dataset, register_dataset

__all__ = ["PROVENANCE", "load_sachs"]

PROVENANCE = (
    "Sachs, Perez, Pe'er, Lauffenburger & Nolan (2005), 'Causal protein-signaling networks "
    "derived from multiparameter single-cell data', Science 308:523-529; continuous "
    "measurements of 11 proteins in 7466 cells and the consensus network, as distributed "
    "in the cdt package 0.6.0 (Apache-2.0), cdt/data/resources/cyto_full_data.csv and "
    "cyto_full_target.csv. Checksums: pp_models/datasets/data/sachs/README.md."
)


def _open(name: str):
    return resources.files("pp_models.datasets").joinpath(f"data/sachs/{name}").open()


@register_dataset(
    "sachs",
    description="flow cytometry: 7466 cells x 11 signalling proteins, consensus network",
    kind="table",
    provenance=PROVENANCE,
)
def load_sachs() -> Dataset:
    """Load the Sachs flow-cytometry data.

    Returns
    -------
    Dataset
        ``data``: (7466, 11) float64 protein measurements; ``feature_names``: the
        protein names; ``extras["consensus_edges"]``: the consensus network as a tuple
        of directed ``(cause, effect)`` name pairs (18 rows, 18 distinct undirected
        edges); ``extras["consensus_adjacency"]``: its skeleton as an (11, 11) bool
        matrix in ``feature_names`` order.
    """
    import pandas as pd  # here: `ppzoo list` lists the data sets without pandas

    with _open("sachs_continuous.csv") as f:
        frame = pd.read_csv(f)
    with _open("consensus_edges.csv") as f:
        edges = pd.read_csv(f)
    names = tuple(frame.columns)
    index = {name: i for i, name in enumerate(names)}
    pairs = tuple((str(c), str(e)) for c, e in zip(edges["Cause"], edges["Effect"], strict=True))
    adjacency = np.zeros((len(names), len(names)), dtype=bool)
    for cause, effect in pairs:
        adjacency[index[cause], index[effect]] = adjacency[index[effect], index[cause]] = True
    return Dataset(
        name="sachs",
        data=frame.to_numpy(dtype=np.float64),
        feature_names=names,
        provenance=PROVENANCE,
        extras={"consensus_edges": pairs, "consensus_adjacency": adjacency},
    )
