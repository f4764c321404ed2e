"""inference.chains: the zoo's chain loop behind fit for all-zoo-Gibbs models."""

import numba
import numpy as np
import pymc as pm
import pymc.initial_point
import pymc.model.core
import pytest

from inference import chains, fit
from inference.gibbs.base import ZooGibbsStep
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
    np.testing.assert_array_equal(first.posterior["phi"].values,
                                  again.posterior["phi"].values)
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
    phi = sequential.posterior["phi"].values
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


class _KernelStep(ZooGibbsStep):
    """Draws ``mu`` with a Numba kernel; counts its draws and keeps the last one."""

    name = "test_kernel_step"
    stats_dtypes_shapes = {"draws_made": (np.int64, [])}

    def __init__(self, vars, *, model=None, rng=None, fail=False):
        super().__init__(vars, model=model, rng=rng)
        self.draws_made = 0
        self.last = np.zeros(1)
        self.fail = fail

    def step(self, point):
        if self.fail:
            raise FloatingPointError("the step's own failure")
        self.draws_made += 1
        self.last[0] = _shifted_normal(self.rng.normal(), 0.5)
        return self.updated(point, mu=np.asarray(self.last[0])), [
            {"draws_made": self.draws_made}]


@numba.njit
def _shifted_normal(z, shift):
    return z + shift


def _kernel_model():
    with pm.Model() as m:
        pm.Normal("mu")
    return m


def test_parallel_chains_fork_with_the_first_draw_compiled():
    """The parent makes one throwaway draw before forking, so the workers inherit the
    compiled kernels (not each compiling them again, nor this process at its next fit);
    the step is put back as it was, and the chains are the sequential ones."""
    m = _kernel_model()
    step = _KernelStep(["mu"], model=m)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(step).items()}
    spec = chains._trace_spec(m, None)
    chains._compile_before_fork(step, spec, m.initial_point(), tune=2, draws=3,
                                announce=False)
    assert _shifted_normal.signatures  # compiled here, before any fork
    assert step.draws_made == 0 and step.last[0] == 0.0 and step.rng is before["rng"]
    assert set(vars(step)) == set(before)
    kwargs = dict(draws=5, tune=2, chains=2, random_seed=4, progressbar=False)
    parallel = fit(m, step=step, cores=2, **kwargs)
    sequential = fit(m, step=_KernelStep(["mu"], model=m), cores=1, **kwargs)
    np.testing.assert_array_equal(parallel.posterior["mu"].values,
                                  sequential.posterior["mu"].values)
    np.testing.assert_array_equal(parallel.sample_stats["draws_made"].values[0],
                                  np.arange(3, 8))  # each chain counted from zero


def test_a_step_failing_at_its_first_draw_fails_the_chains_as_before():
    m = _kernel_model()
    with pytest.raises(RuntimeError, match="a chain failed(.|\n)*the step's own failure"):
        fit(m, step=_KernelStep(["mu"], model=m, fail=True), draws=3, tune=0, chains=2,
            cores=2, random_seed=1, progressbar=False)
