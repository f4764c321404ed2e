"""inference.chains: the zoo's chain loop behind fit for all-zoo-Gibbs models."""

import numpy as np
import pymc.initial_point
import pymc.model.core
import pytest

from inference import fit
from pp_models import lda


def _corpus(seed=0, n_docs=12, n_words=9):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_words, rng.integers(3, 12)) for _ in range(n_docs)]


def _model():
    return lda.model(_corpus(), n_topics=3, alpha=0.3, eta=0.2, n_words=9)


def test_second_fit_on_the_same_model_compiles_nothing(monkeypatch):
    m = _model()
    first = fit(m, draws=15, tune=5, chains=2, cores=1, random_seed=3, progressbar=False,
                var_names=["phi"])

    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")

    monkeypatch.setattr(pymc.model.core, "compile", refuse)
    monkeypatch.setattr(pymc.initial_point, "compile", refuse)
    again = fit(m, draws=15, tune=5, chains=2, cores=1, random_seed=3, progressbar=False,
                var_names=["phi"])
    # cached steps are re-seeded per chain: the same seed gives the same draws
    np.testing.assert_array_equal(first.posterior_labels["phi"].values,
                                  again.posterior_labels["phi"].values)
    assert first.attrs["pp_models_sampler"] == "zoo"


def test_parallel_and_sequential_chains_are_the_same_chains():
    m = _model()
    kwargs = dict(draws=12, tune=3, chains=2, random_seed=11, progressbar=False,
                  var_names=["phi", "theta"])
    sequential = fit(m, cores=1, **kwargs)
    parallel = fit(m, cores=2, **kwargs)
    for group in ("posterior", "sample_stats"):
        for name, arr in sequential[group].data_vars.items():
            np.testing.assert_array_equal(arr.values, parallel[group][name].values)
    phi = sequential.posterior_labels["phi"].values
    assert not np.array_equal(phi[0], phi[1])  # chains seeded apart


def test_layout_is_pymcs():
    """The same variables, dims, coords and groups as pm.sample's DataTree."""
    m = _model()
    kwargs = dict(draws=6, tune=2, chains=2, cores=1, random_seed=1, progressbar=False,
                  var_names=["phi", "z"])
    ours = fit(m, **kwargs)
    # a pm.sample-only option sends the same call through pm.sample
    theirs = fit(m, discard_tuned_samples=True, **kwargs)
    assert ours.attrs["pp_models_sampler"] == "zoo" and theirs.attrs["pp_models_sampler"] == "pymc"
    for group in ("posterior", "sample_stats", "observed_data"):
        a, b = ours[group].to_dataset(), theirs[group].to_dataset()
        assert set(a.data_vars) == set(b.data_vars), group
        for name in a.data_vars:
            assert a[name].dims == b[name].dims and a[name].shape == b[name].shape, name
            assert a[name].dtype == b[name].dtype, name
        for dim in a.dims:
            np.testing.assert_array_equal(a[dim].values, b[dim].values)


def test_nothing_per_draw_by_default_but_the_label_invariant_statistics():
    dt = fit(_model(), draws=8, tune=2, chains=1, random_seed=2, progressbar=False)
    assert set(dt.posterior.data_vars) == {"phi_concentration", "theta_concentration"}


def test_empty_var_names_needs_the_zoo_loop():
    with pytest.raises(ValueError, match="var_names"):
        fit(_model(), draws=4, tune=0, chains=1, progressbar=False, var_names=[],
            discard_tuned_samples=True)
