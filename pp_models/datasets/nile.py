"""The annual flow of the Nile at Aswan, 1871-1970, shipped as package data."""

from __future__ import annotations

from importlib import resources

import numpy as np

from pp_models.datasets.registry import Dataset, register_dataset

PROVENANCE = (
    "Annual flow of the Nile at Aswan, 1871-1970, in 10^8 m^3 (100 values); first "
    "analysed by Cobb, G. W. (1978) 'The problem of the Nile: conditional solution to a "
    "changepoint problem', Biometrika 65(2):243-251 (the change near 1898), and the "
    "local-level example of Durbin & Koopman (2012), Time Series Analysis by State Space "
    "Methods. Copied from statsmodels 0.15.0's bundled copy "
    "(statsmodels/datasets/nile/nile.csv, marked public domain)."
)


@register_dataset(
    "nile",
    description="annual Nile flow at Aswan 1871-1970 (100 values, 10^8 m^3)",
    kind="series",
    provenance=PROVENANCE,
)
def load_nile() -> Dataset:
    """Load the Nile series: ``data`` is (100, 1) float (the flow), ``extras['year']``
    the years."""
    with resources.files("pp_models.datasets").joinpath("data/nile.csv").open() as f:
        table = np.loadtxt(f, delimiter=",", skiprows=1)
    return Dataset(
        name="nile",
        data=table[:, 1:2].astype(np.float64),
        feature_names=("volume",),
        provenance=PROVENANCE,
        extras={"year": table[:, 0].astype(np.int64)},
    )
