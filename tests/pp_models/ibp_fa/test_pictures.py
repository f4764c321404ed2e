"""features.png and the model's coordinates name the observed dimensions as the user did."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import xarray as xr

from pp_models import datasets, ibp_fa
from pp_models.ibp_fa.outputs import plot_results

NAMES = ["sepal_length", "sepal_width", "petal_length", "petal_width"]


def test_the_observed_dimensions_keep_their_names():
    # on main: 0, 1, 2, 3 whatever the user passed
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(4, 30))
    assert list(ibp_fa.model(pd.DataFrame(Y, index=NAMES)).coords["dim"]) == NAMES
    assert list(ibp_fa.model(Y, dim_names=NAMES).coords["dim"]) == NAMES
    assert list(ibp_fa.model(Y).coords["dim"]) == [0, 1, 2, 3]
    cli = ibp_fa.FAMILY.cli.build(datasets.load("iris"))
    assert list(cli.coords["dim"]) == NAMES
    with pytest.raises(ValueError, match="dim_names has 2 names but Y has 4 rows"):
        ibp_fa.model(Y, dim_names=["a", "b"])
    with pytest.raises(ValueError, match="dim_names: the names of the observed dimensions"):
        ibp_fa.model(Y, dim_names=["a", "a", "b", "c"])


def test_features_picture_labels_rows_by_name():
    rng = np.random.default_rng(1)
    Z = (rng.random((1, 6, 4, 5)) < 0.5).astype(np.int8)
    V = rng.normal(size=(1, 6, 4, 5))
    posterior = xr.Dataset({"Z": (("chain", "draw", "dim", "feature"), Z),
                            "V": (("chain", "draw", "dim", "feature"), V)},
                           coords={"dim": NAMES, "feature": np.arange(5)})
    fig = plot_results(xr.DataTree.from_dict({"posterior": posterior}))
    for ax in fig.axes[:2]:  # the two heat maps (then their colour bars)
        assert [t.get_text() for t in ax.get_yticklabels()] == NAMES
    plt.close(fig)
