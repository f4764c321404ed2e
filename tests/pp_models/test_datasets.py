"""Shipped data sets and the model registry."""

import numpy as np
import pytest

from pp_models import datasets
from pp_models.registry import get_model, list_models


def test_iris_matches_reference_statistics():
    iris = datasets.load("iris")
    assert iris.data.shape == (150, 4) and iris.data.dtype == np.float64
    assert iris.target_names == ("setosa", "versicolor", "virginica")
    np.testing.assert_array_equal(np.bincount(iris.target), [50, 50, 50])
    # Column means as published with the UCI data set (cm).
    np.testing.assert_allclose(iris.data.mean(0), [5.843, 3.057, 3.758, 1.199], atol=1e-3)
    assert "Fisher" in iris.provenance


def test_list_and_errors():
    assert "iris" in [d.name for d in datasets.list_datasets()]
    with pytest.raises(ValueError, match="unknown data set 'nope'"):
        datasets.load("nope")
    with pytest.raises(TypeError):
        datasets.load(3)


def test_model_registry():
    names = [m.name for m in list_models()]
    assert "finite_mixture" in names
    assert get_model("finite_mixture").default_dataset == "iris"
    with pytest.raises(ValueError, match="unknown model"):
        get_model("nope")
