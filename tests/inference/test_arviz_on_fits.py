"""ArviZ's own functions, with their defaults, on every registered family's ``fit`` output.

Each family is fitted once (module-scoped) on the first 40 rows of its default data set
with a few draws; the matrix then calls ``az.summary``, ``az.plot_trace_dist``,
``az.plot_rank``, ``az.plot_forest``, ``az.plot_ess`` and ``az.plot_dist`` on the
DataTree exactly as a user would, ``az.loo`` on its pointwise log-likelihood, and draws
its posterior predictive.
"""

from __future__ import annotations

import dataclasses
import warnings

import arviz as az
import matplotlib
import numpy as np
import pymc as pm
import pytensor
import pytest
import xarray as xr

from inference.fitting import fit
from pp_models.datasets import load
from pp_models.model_info import LABELS_GROUP, get_info
from pp_models.registry import list_models
from tests.helpers.backends import PYTHON_MODE

matplotlib.use("Agg")
import matplotlib.pyplot as plt

# tests/conftest.py sends each family's tests to one xdist worker (--dist loadgroup), so
# each family is fitted once, on the worker that has compiled its kernels

FAMILIES = [entry.name for entry in list_models()]
ARVIZ_FUNCTIONS = {
    "summary": az.summary,
    "plot_trace_dist": az.plot_trace_dist,
    "plot_rank": az.plot_rank,
    "plot_forest": az.plot_forest,
    "plot_ess": az.plot_ess,
    "plot_dist": az.plot_dist,
}
#: dimension names ArviZ uses itself (a posterior dim of the same name breaks its plots)
ARVIZ_DIMS = {"rank", "column", "row", "plot_axis", "quantile", "kde_dim", "hist_dim",
              "ci_bound", "label", "model", "group"}


def _tiny(dataset):
    data = dataset.data
    data = data.iloc[:40] if hasattr(data, "iloc") else data[:40]
    return dataclasses.replace(dataset, data=data)


@pytest.fixture(scope="module")
def fits():
    """One small fit per family, made on first use."""
    cache = {}

    def get(name):
        if name not in cache:
            entry = next(e for e in list_models() if e.name == name)
            model = entry.build(_tiny(load(entry.default_dataset)), **entry.defaults)
            extra = {k: v for k, v in entry.fit_defaults.items()
                     if k not in ("draws", "tune", "chains")}
            with warnings.catch_warnings(), pytensor.config.change_flags(mode=PYTHON_MODE):
                # ArviZ/PyMC remark that 20 draws are few; that is the point here
                warnings.simplefilter("ignore")
                # PyTensor's Python backend: ArviZ reads the result's layout, which the
                # backend does not change, and each family's fit through the Numba
                # backend is run by its own tests (cold, the Numba graphs compiled here
                # were ~25 CPU-s, 12 of them for finite_mixture alone)
                # cores=1: the chains run one after the other in this process, so a cold
                # cache compiles each family's kernels once, not once per chain worker
                # log_likelihood=True: az.loo works on it as on a pm.sample result with a
                # log_likelihood group (LDA records its token topics for it)
                cache[name] = (model, fit(model, draws=20, tune=20, chains=2, cores=1,
                                          random_seed=3, progressbar=False,
                                          log_likelihood=True, **extra))
        return cache[name]

    return get


def _fewer_panels(dt, limit=12):
    """``var_names`` (and, for one big variable, ``coords``) that a user would pass
    after ArviZ's guard: the smallest variables of the posterior group, up to ``limit``
    panels, or the first ``limit`` entries of the smallest one."""
    posterior = dt["posterior"]

    def panels(v):
        return posterior[v].size // (posterior.sizes["chain"] * posterior.sizes["draw"])

    names, total = [], 0
    for v in sorted(posterior.data_vars, key=panels):
        if names and total + panels(v) > limit:
            break
        names.append(v)
        total += panels(v)
    if total <= limit:
        return {"var_names": names}
    name = names[0]
    dims = [d for d in posterior[name].dims if d not in ("chain", "draw")]
    first = posterior[name][dims[0]].values[:3]
    return {"var_names": [name], "coords": {dims[0]: first}}


#: more panels than this and the matrix calls ArviZ with var_names (``_fewer_panels``):
#: the calls on every variable of the larger fits (IBP-FA's loadings and features on 40
#: rows) test nothing more than a few hundred panels do, and drew for up to a minute
LARGE = 400


def _panels(dt):
    posterior = dt["posterior"]
    per_draw = posterior.sizes["chain"] * posterior.sizes["draw"]
    return sum(v.size // per_draw for v in posterior.data_vars.values())


def _constant_integer_variables(dt):
    posterior = dt["posterior"]
    out = []
    for name, var in posterior.data_vars.items():
        if np.issubdtype(var.dtype, np.integer):
            flat = var.values.reshape(var.shape[0] * var.shape[1], -1)
            if flat.size and np.any(np.ptp(flat, axis=0) == 0):
                out.append(name)
    return out


@pytest.mark.parametrize("function", list(ARVIZ_FUNCTIONS))
@pytest.mark.parametrize("family", FAMILIES)
def test_arviz_defaults_work_on_fit_output(fits, family, function):
    _, dt = fits(family)
    with warnings.catch_warnings():
        # ArviZ remarks on 20 draws and divides by zero on a constant quantity
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            if _panels(dt) > LARGE:
                # the relabelled labels are in the posterior: LDA's phi and token topics
                # are ~10^5 panels, which ArviZ computes before its guard refuses them;
                # the call its guard tells a user to make, with var_names
                result = ARVIZ_FUNCTIONS[function](dt, **_fewer_panels(dt))
            else:
                result = ARVIZ_FUNCTIONS[function](dt)
        except ValueError as err:
            if "strictly increasing" in str(err):
                # ArviZ's rank ECDF of an integer quantity constant over every draw
                # (a CRP's canonical first label, an inactive feature's zero column)
                # fails, as on pm.sample's output: without those variables it works
                constant = _constant_integer_variables(dt)
                assert constant, err
                kept = dt.copy()
                kept["posterior"] = xr.DataTree(dt["posterior"].to_dataset()
                                                .drop_vars(constant))
                try:
                    result = ARVIZ_FUNCTIONS[function](kept)
                except ValueError as again:
                    if "plot.max_subplots" not in str(again):
                        raise
                    result = ARVIZ_FUNCTIONS[function](kept, **_fewer_panels(kept))
            elif "plot.max_subplots" in str(err):
                # ArviZ's own guard against too many panels (the issue exempts it): the
                # call a user is then told to make, with var_names, must work.
                result = ARVIZ_FUNCTIONS[function](dt, **_fewer_panels(dt))
            else:
                raise
    plt.close("all")
    if function == "summary":
        assert len(result) > 0


@pytest.mark.parametrize("family", FAMILIES)
def test_labels_kept_in_the_posterior_group_relabelled(fits, family):
    # before, fit moved them to a posterior_labels group, where PyMC's functions did not
    # look (pm.sample_posterior_predictive then drew them from their prior)
    model, dt = fits(family)
    info = get_info(model)
    assert LABELS_GROUP not in dt.children
    recorded = [v for v in info.label_variables if v in dt["posterior"].data_vars]
    for v in recorded:
        assert dt["posterior"][v].dims[:2] == ("chain", "draw")
        assert np.all(np.isfinite(np.asarray(dt["posterior"][v].values, dtype=float)))
    if info.relabelling is not None:
        assert dt.attrs["pp_models_relabelled"] == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_no_dimension_name_collides_with_arviz(fits, family):
    _, dt = fits(family)
    for group in dt.children.values():
        assert not set(group.dims) & ARVIZ_DIMS, (group.name, set(group.dims) & ARVIZ_DIMS)


@pytest.mark.parametrize("family", FAMILIES)
def test_loo_reads_the_pointwise_log_likelihood_of_every_family(fits, family):
    # before, az.loo(dt) raised "log likelihood not found" on every family
    _model, dt = fits(family)
    (name,) = dt["log_likelihood"].data_vars
    ll = dt["log_likelihood"][name]
    # one term per observation: rows (tokens for LDA, samples for IBP factor analysis)
    assert ll.dims[:2] == ("chain", "draw") and ll.ndim == 3
    assert np.all(np.isfinite(ll.values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k remarks on 40 draws
        try:
            loo = az.loo(dt)
        except ValueError as err:
            # ArviZ 1.x refuses an observation whose largest importance ratios are all
            # equal (R's loo warns): draws repeating a state (a rejected move) can fill
            # the tail of 40 draws; that must be why
            assert "All tail values are the same" in str(err)
            ratios = -ll.values.reshape(-1, ll.shape[2])
            tail = int(min(0.2 * ratios.shape[0], 3 * np.sqrt(ratios.shape[0])))
            top = np.sort(ratios, axis=0)[-tail:]
            assert np.any(np.ptp(top, axis=0) == 0)
            return
    assert np.isfinite(loo.elpd) and loo.n_data_points == ll.shape[2]


def test_compare_a_dp_mixture_with_a_finite_mixture_on_the_same_rows(fits):
    # before, the CRP term took a few values per row and az.loo raised "All tail values
    # are the same" on the DP mixture, so az.compare failed
    dpm_dt, mixture_dt = fits("dpm")[1], fits("finite_mixture")[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k remarks on 40 draws
        table = az.compare({"dpm": dpm_dt, "finite_mixture": mixture_dt})
    assert set(table.index) == {"dpm", "finite_mixture"}
    assert np.all(np.isfinite(table["elpd"].values))


@pytest.mark.parametrize("family", FAMILIES)
def test_posterior_predictive_of_every_family_has_the_datas_shape(fits, family):
    # before, pm.sample_posterior_predictive(dt, model=m) sampled the labels from their
    # prior (Sampling: [X, mu, sigma, w, z]); the zoo's function uses the fit's draws
    from inference import sample_posterior_predictive

    model, dt = fits(family)
    with pytensor.config.change_flags(mode=PYTHON_MODE):
        pp = sample_posterior_predictive(dt, model, random_seed=1)
    (name,) = pp["posterior_predictive"].data_vars
    draws = pp["posterior_predictive"][name]
    observed = pp["observed_data"][name]
    assert draws.shape == (2, 20, *observed.shape)
    assert draws.dims[2:] == observed.dims
    values = np.asarray(draws.values, dtype=float)
    assert np.all(np.isfinite(values))
    assert np.ptp(values, axis=(0, 1)).max() > 0  # replicates differ between draws


def _sign_test_p(a, b):
    """Two-sided exact sign test of ``P(a > b) = 1/2`` over independent pairs (ties
    dropped)."""
    from scipy.stats import binomtest

    d = np.asarray(a, dtype=float).ravel() - np.asarray(b, dtype=float).ravel()
    d = d[d != 0]
    return binomtest(int((d > 0).sum()), int(d.size), 0.5).pvalue if d.size else 1.0


@pytest.mark.parametrize("family", FAMILIES)
def test_pymc_posterior_predictive_is_the_zoos_or_names_the_zoo_function(fits, family):
    # before, pm.sample_posterior_predictive(dt, model=m) on a finite mixture printed
    # "Sampling: [X, mu, sigma, w, z]": the labels came from their prior
    from custom_ops.pymc_guard import CollapsedLikelihoodError
    from inference import sample_posterior_predictive

    model, dt = fits(family)
    with warnings.catch_warnings(), pytensor.config.change_flags(mode=PYTHON_MODE):
        warnings.simplefilter("ignore", UserWarning)
        try:
            ours = pm.sample_posterior_predictive(dt, model=model, random_seed=1,
                                                  progressbar=False,
                                                  extend_inferencedata=False)
        except CollapsedLikelihoodError as err:
            assert "inference.sample_posterior_predictive" in str(err)
            return
        zoo = sample_posterior_predictive(dt, model, random_seed=2)
    if not model.observed_RVs:
        # BHC's data enter through a potential: PyMC has nothing to draw, and says so by
        # returning no posterior_predictive group (the zoo's function draws the rows)
        assert "posterior_predictive" not in ours.children
        return
    drawn = set(ours["posterior_predictive"].data_vars)
    free = {rv.name for rv in model.free_RVs}
    assert not drawn & free, f"drawn from the prior: {drawn & free}"
    for rv in model.observed_RVs:
        a = ours["posterior_predictive"][rv.name].values
        b = zoo["posterior_predictive"][rv.name].values
        assert a.shape == b.shape
        # given the same posterior draws, PyMC's replicate and the zoo's of each element
        # are independent draws of one distribution: a > b and |a - m| > |b - m| (m the
        # data's mean per element) each have probability 1/2; both sign tests at
        # 1e-4 / 2 (a prior redraw of the parameters widens the replicates)
        m = np.asarray(zoo["observed_data"][rv.name].values, dtype=float).mean()
        assert _sign_test_p(a, b) > 5e-5
        assert _sign_test_p(np.abs(a - m), np.abs(b - m)) > 5e-5


@pytest.mark.parametrize("family", FAMILIES)
def test_pymc_log_likelihood_is_the_zoos_or_names_the_zoo_function(fits, family):
    # before, pm.compute_log_likelihood(dt, model=m) raised KeyError: 'w' on a fit
    from custom_ops.pymc_guard import CollapsedLikelihoodError
    from inference.log_likelihood import PYMC_POINTWISE

    model, dt = fits(family)
    with warnings.catch_warnings(), pytensor.config.change_flags(mode=PYTHON_MODE):
        warnings.simplefilter("ignore", UserWarning)
        try:
            ours = pm.compute_log_likelihood(dt, model=model, progressbar=False,
                                             extend_inferencedata=False)
        except CollapsedLikelihoodError as err:
            assert "inference.compute_log_likelihood" in str(err)
            return
        except NotImplementedError as err:
            # PyMC's own limit: it cannot undo the transforms of a model with a
            # non-default initial value (the IOMM's memberships start from the prior)
            assert "initial_values" in str(err)
            return
    pymc_own = dt["log_likelihood"].attrs.get("pp_models_pointwise") == PYMC_POINTWISE
    for rv in model.observed_RVs:
        values = ours[rv.name].values
        assert np.all(np.isfinite(values))
        if pymc_own:
            np.testing.assert_allclose(values, dt["log_likelihood"][rv.name].values)
        else:
            # PyMC's term is conditional on each observation's own latent variable (its
            # label, its factor scores), the zoo's sums it out (docs/families/*.md)
            assert values.shape[:2] == dt["log_likelihood"][rv.name].shape[:2]


def test_compare_a_dp_mixture_with_a_finite_mixture(fits):
    # both fitted to the same 40 rows of iris: az.compare ranks them by PSIS-LOO
    _, finite = fits("finite_mixture")
    _, dp = fits("dpm")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # Pareto k remarks on 40 draws
        try:
            table = az.compare({"finite_mixture": finite, "dpm": dp})
        except ValueError as err:
            # ArviZ's refusal of tied largest importance ratios (see the LOO test)
            assert "All tail values are the same" in str(err)
            return
    assert set(table.index) == {"finite_mixture", "dpm"}
    assert np.all(np.isfinite(table["elpd"]))
