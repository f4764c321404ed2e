"""pp_models.dpm: structure, bad input, the three representations under fit(), outputs."""

import json
import warnings

import numpy as np
import pandas as pd
import pymc as pm
import pytensor
import pytest
from scipy import stats

from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import crp_logp
from inference import fit
from pp_models import datasets, dpm, partitions
from pp_models.model_info import get_info, posterior_with_labels
from pp_models.registry import get_model
from tests.helpers.backends import PYTHON_MODE

warnings.filterwarnings("ignore", category=RuntimeWarning)


def three_blobs(n_per=(30, 20, 10), sd=0.6, seed=3):
    rng = np.random.default_rng(seed)
    truth = np.repeat(np.arange(3), n_per)
    centers = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, -1.0]])
    return centers[truth] + rng.normal(0, sd, (truth.size, 2)), truth


# ---------------------------------------------------------------------- structure
def is_refinement(z, truth):
    """Every block of ``z`` lies inside one block of ``truth`` (no true clusters merged)."""
    return all(np.unique(truth[z == k]).size == 1 for k in np.unique(z))


def test_collapsed_structure_logp_and_hints():
    X, _ = three_blobs()
    m = dpm.model(X, alpha=(2.0, 1.0), hyperprior=False)
    assert sorted(rv.name for rv in m.free_RVs) == ["alpha", "z"]
    info = get_info(m)
    assert info.preferred_method == "gibbs"
    assert [h.step for h in info.step_hints] == ["crp_collapsed_gibbs", "escobar_west"]
    assert {d.name for d in info.derived} == {"n_clusters", "largest_cluster"}
    # joint logp at a point = Gamma prior + EPPF + collapsed NIW likelihood
    spec = dpm.get_spec(m)
    h = spec.prior
    z = np.repeat([0, 1, 2], [30, 20, 10])
    point = m.initial_point() | {"z": z}
    a = float(np.exp(point["alpha_log__"]))
    expected = (stats.gamma(2.0, scale=1.0).logpdf(a) + crp_logp(z, a, 0.0)
                + collapsed_loglik_value("gaussian", z, X,
                                         [h["m0"], h["kappa0"], h["nu0"], h["S0"]]))
    got = m.compile_fn(m.logp(jacobian=False), point_fn=True)(point)
    assert got == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize(
    ("kwargs", "free"),
    [
        (dict(likelihood="diag_gaussian", hyperprior=False), ["z"]),
        (dict(likelihood="diag_gaussian"), ["z"]),
        (dict(likelihood="diag_gaussian", hyperprior=True), ["a0", "b0_scale", "kappa0", "z"]),
        (dict(likelihood="normal"), ["mu", "sigma", "z"]),
        (dict(likelihood="diag_gaussian", truncation=5), ["mu_raw", "tau", "w"]),
        (dict(likelihood="normal", truncation=5, alpha=(1.0, 1.0)),
         ["alpha", "mu", "sigma", "w"]),
    ],
)
def test_representations(kwargs, free):
    X, _ = three_blobs()
    m = dpm.model(X, **kwargs)
    assert sorted(rv.name for rv in m.free_RVs) == free
    assert np.isfinite(m.compile_logp()(m.initial_point()))


def test_discrete_likelihoods_and_dataframe_names():
    rng = np.random.default_rng(0)
    B = (rng.random((12, 5)) < 0.3).astype(float)
    m = dpm.model(pd.DataFrame(B, columns=list("abcde")), likelihood="bernoulli")
    assert list(m.coords["feature"]) == list("abcde")
    C = rng.multinomial(1, [0.2, 0.3, 0.5], size=12)
    m2 = dpm.model(C, likelihood="multinomial", prior={"concentration": 0.5})
    dt = fit(m2, draws=50, tune=10, chains=1, random_seed=0, progressbar=False)
    assert dt["posterior"]["z"].shape == (1, 50, 12)
    assert json.loads(dt.attrs["pp_models_steps"]) == {"crp_collapsed_gibbs": ["z"]}


# ---------------------------------------------------------------------- bad input
X_OK, _ = three_blobs()


@pytest.mark.parametrize(
    ("X", "kwargs", "error", "match"),
    [
        (np.array([[1.0, np.nan], [2.0, 3.0]]), {}, ValueError, "X has 1 non-finite"),
        (np.array([[1.0, np.inf], [2.0, 3.0]]), {}, ValueError, "non-finite"),
        (np.ones(5), {}, ValueError, "X must be 2-D"),
        (np.ones((1, 2)), {}, ValueError, "at least 2 rows"),
        (X_OK, dict(alpha=0.0), ValueError, "alpha must be a finite number > 0"),
        (X_OK, dict(alpha=-1.0), ValueError, "alpha must be a finite number > 0"),
        (X_OK, dict(alpha=(1.0, -2.0)), ValueError, r"alpha \(Gamma rate\)"),
        (X_OK, dict(alpha="big"), TypeError, "alpha must be a number"),
        (X_OK, dict(truncation=1), ValueError, "truncation must be >= 2"),
        (X_OK, dict(truncation=2.5), TypeError, "truncation must be an integer"),
        (X_OK, dict(likelihood="bernoulli"), ValueError, "X: the bernoulli likelihood needs"),
        (-np.ones((3, 2)), dict(likelihood="multinomial"), ValueError, "non-negative counts"),
        (np.full((3, 2), 0.5), dict(likelihood="poisson"), ValueError, "integer counts"),
        (X_OK, dict(likelihood="student"), ValueError, "likelihood must be one of"),
        (X_OK, dict(prior={"kappa": 1.0}), ValueError, "prior: unknown key"),
        (X_OK, dict(prior={"kappa0": -1.0}), ValueError, "kappa0"),
        (X_OK, dict(prior={"nu0": 0.5}), ValueError, "nu0"),
        (X_OK, dict(discount=1.0), ValueError, r"discount must be a finite number in \[0, 1\)"),
        (X_OK, dict(alpha=pm.Normal.dist(1.0, 1.0)), TypeError, "pm.Gamma.dist"),
    ],
)
def test_bad_input_raises_before_any_work(X, kwargs, error, match):
    with pytest.raises(error, match=match):
        dpm.model(X, **kwargs)


def test_fit_rejects_nuts_for_the_crp_representation():
    m = dpm.model(X_OK)
    with pytest.raises(ValueError, match="needs an all-continuous model"):
        fit(m, method="nuts", draws=10, tune=10, chains=1)


# ---------------------------------------------------------------------- fitting
def test_collapsed_gibbs_auto_with_alpha_prior_and_summaries():
    X, truth = three_blobs()
    m = dpm.model(X, alpha=pm.Gamma.dist(2.0, 2.0), hyperprior=False)
    dt = fit(m, method="auto", draws=300, tune=100, chains=2, cores=1, random_seed=1,
             progressbar=False)
    assert json.loads(dt.attrs["pp_models_steps"]) == {"crp_collapsed_gibbs": ["z"],
                                                      "escobar_west": ["alpha"]}
    post = posterior_with_labels(dt)
    assert post["z"].shape == (2, 300, 60) and post["n_clusters"].shape == (2, 300)
    k = post["n_clusters"].values
    print("\nK posterior (collapsed):", np.bincount(k.ravel()) / k.size)
    # the blobs are far apart: no draw merges two of them
    assert k.min() >= 3
    # fit already added the default outputs (ZooModelInfo.postprocess)...
    assert {"clustering", "predictive"} <= set(dt.children)
    np.testing.assert_array_equal(dt["clustering"]["point_estimate"].values,
                                  dpm.summarize(dt, m)["clustering"]["point_estimate"].values)
    # ...and postprocess=False skips them.
    bare = fit(m, draws=5, tune=5, chains=1, cores=1, random_seed=1, progressbar=False,
               postprocess=False)
    assert "clustering" not in bare.children
    out = dpm.summarize(dt, m, cluster_params=True)
    P = out["clustering"]["coclustering"].values
    assert P.shape == (60, 60) and np.allclose(np.diag(P), 1.0) and np.allclose(P, P.T)
    z_hat = out["clustering"]["point_estimate"].values
    # the DP posterior may split off a few tail points (it puts real mass on extra small
    # clusters), but never merges the separated blobs
    assert is_refinement(z_hat, truth)
    assert partitions.adjusted_rand_index(z_hat, truth) > 0.9
    pmf = out["clustering"]["n_clusters_pmf"]
    assert float(pmf.sum()) == pytest.approx(1.0)
    params = out["cluster_parameters"]
    sizes = params["size"].values
    assert sizes.sum() == 60 and sizes.max() >= 25
    big = int(np.argmax(sizes))
    np.testing.assert_allclose(params["mean"].values[big], X[z_hat == big].mean(0), atol=0.05)
    # the predictive density integrates to 1 over a wide grid
    dens = out["predictive"]["density"]
    grid_x, grid_y = (dens.coords[c].values for c in dens.dims)
    mass = np.trapezoid(np.trapezoid(dens.values, grid_y, axis=1), grid_x)
    assert 0.95 < mass <= 1.0 + 1e-6
    # (the new-cluster term is the prior predictive, a Student-t with 3 degrees of freedom
    # and a scale of tens of data sds under the default vague prior: a wide grid)
    wide = dpm.predictive_density(dt, m, dims=0, grid=np.linspace(-400, 400, 40001))
    assert np.trapezoid(wide["density"].values, wide.coords["x0"].values) == pytest.approx(
        1.0, abs=2e-3)


@pytest.mark.slow  # statistical recovery / agreement run (docs/architecture.md, "What runs where")
def test_algorithm8_nonconjugate_fit_runs_and_finds_three_clusters():
    X, truth = three_blobs(n_per=(15, 10, 8))
    m = dpm.model(X, likelihood="normal")
    dt = fit(m, draws=150, tune=100, chains=1, random_seed=2, progressbar=False)
    steps = json.loads(dt.attrs["pp_models_steps"])
    assert steps["crp_auxiliary_gibbs"] == ["z"] and sorted(steps["NUTS"]) == ["mu", "sigma"]
    k = dt["posterior"]["n_clusters"].values
    print("\nK posterior (Algorithm 8):", np.bincount(k.ravel()) / k.size)
    assert k.min() >= 3
    z_hat, _ = partitions.point_estimate(dt["posterior"]["z"].values.reshape(-1, X.shape[0]))
    assert is_refinement(z_hat, truth)


@pytest.mark.slow  # statistical recovery / agreement run (docs/architecture.md, "What runs where")
def test_stick_breaking_nuts_recovers_the_truth():
    """Well-separated blobs, proportions (1/2, 1/3, 1/6): the three largest sorted weights
    and their component means match the truth within posterior sd + Monte Carlo error."""
    X, truth = three_blobs(n_per=(45, 30, 15), sd=0.5, seed=5)
    m = dpm.model(X, likelihood="diag_gaussian", truncation=6, alpha=1.0)
    dt = fit(m, method="auto", draws=300, tune=400, chains=2, random_seed=4,
             progressbar=False)
    assert dt.attrs["pp_models_method"] == "nuts"
    assert int(dt["sample_stats"]["diverging"].sum()) <= 3
    post = posterior_with_labels(dt)
    ws = post["weights_sorted"].values.reshape(-1, 6)
    true_w = np.array([0.5, 1 / 3, 1 / 6])
    for k in range(3):
        draws = ws[:, k]
        mcse = draws.std() / np.sqrt(draws.size / 10)  # generous: ESS >= draws / 10
        assert abs(draws.mean() - true_w[k]) < 3 * draws.std() + 3 * mcse, (k, draws.mean())
    # component means: each true centre is matched by the mean of a heavy component
    w = post["w"].values.reshape(-1, 6)
    mu = post["mu"].values.reshape(-1, 6, 2)
    heavy = mu[np.arange(w.shape[0])[:, None], np.argsort(-w, axis=1)[:, :3]]  # (S, 3, 2)
    centers = np.array([[-4.0, 0.0], [0.0, 4.0], [4.0, -1.0]])
    for k in range(3):
        dist = np.linalg.norm(heavy - centers[k], axis=-1).min(axis=1)
        assert np.median(dist) < 0.5, (k, np.median(dist))
    z_hat, _ = partitions.point_estimate(post["z"].values.reshape(-1, X.shape[0]))
    assert partitions.adjusted_rand_index(z_hat, truth) > 0.95


def test_stick_breaking_advi_runs_with_the_same_layout():
    X, _ = three_blobs(n_per=(20, 15, 10))
    m = dpm.model(X, likelihood="diag_gaussian", truncation=5)
    # The layout is checked, so the graphs run on PyTensor's Python backend: cold, their
    # Numba compile was 21-26 of this test's 31 CPU-s. fit's ADVI on a stick-breaking
    # DPM through the Numba backend runs in tutorials/dirichlet_process_mixture.py
    # (tests/test_tutorials.py), ADVI's answer in test_fit.py's conjugate check.
    with pytensor.config.change_flags(mode=PYTHON_MODE), warnings.catch_warnings():
        # the layout, not convergence, is checked: 20 Adam steps at the rate, then 4 at
        # a tenth of it (fit's two phases), are enough to fill every output (and may
        # occupy every component, which fit warns about)
        warnings.filterwarnings("ignore", "the number of clusters reached the truncation")
        dt = fit(m, method="advi", draws=100, chains=2, random_seed=0, progressbar=False,
                 n=20)
    post = posterior_with_labels(dt)
    assert dict(post.sizes)["chain"] == 2 and dict(post.sizes)["draw"] == 100
    assert post["w"].shape == (2, 100, 5) and post["z"].shape == (2, 100, 45)
    assert post["n_clusters"].shape == (2, 100)
    assert dt["fit_history"]["loss"].shape == (20 + 20 // 5,)
    np.testing.assert_allclose(post["w"].values.sum(-1), 1.0)


def test_iris_point_estimate_and_posterior_of_k():
    iris = datasets.load("iris")
    m = dpm.model(iris.data, alpha=(1.0, 1.0))
    dt = fit(m, draws=1000, tune=200, chains=2, cores=1, random_seed=7, progressbar=False)
    out = dpm.summarize(dt, m, predictive=False)
    z_hat = out["clustering"]["point_estimate"].values
    ari = partitions.adjusted_rand_index(z_hat, iris.target)
    pmf = out["clustering"]["n_clusters_pmf"].to_series()
    print(f"\niris: ARI {ari:.3f}, point estimate sizes {np.bincount(z_hat)}, "
          f"posterior of K {pmf.round(3).to_dict()}")
    # setosa is separated from the other two species in every sensible clustering
    setosa = iris.target == 0
    assert np.unique(z_hat[setosa]).size == 1 and not np.any(z_hat[~setosa] == z_hat[setosa][0])
    assert ari > 0.5
    assert pmf.idxmax() in (2, 3, 4, 5)


@pytest.mark.slow  # ~50 s: three fits on 569 x 30
def test_breast_cancer_chains_start_in_the_diagnosis_mode_on_every_seed():
    """With the old start (greedy seating kept if its raw joint beat one
    cluster) both chains of seed 2 sat in a K = 4 mode unrelated to the diagnosis, ARI
    0.15, ~170 nats of log joint below the mode the other seeds found (ARI 0.75;
    benchmarks/bench_clustering_modes.py). The start search must find the better mode on
    every seed, and the two chains must sit in modes of similar joint."""
    from sklearn.datasets import load_breast_cancer

    X, y = load_breast_cancer(return_X_y=True)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    m = dpm.model(X, alpha=1.0)
    spec = dpm.get_spec(m)
    hyper = [spec.prior[k] for k in ("m0", "kappa0", "nu0", "S0")]
    for seed in (1, 2, 3):
        dt = fit(m, method="gibbs", draws=300, tune=200, chains=2, random_seed=seed,
                 progressbar=False)
        ari = partitions.adjusted_rand_index(dt["clustering"]["point_estimate"].values, y)
        Z = posterior_with_labels(dt)["z"].values
        means = [np.mean([crp_logp(z, 1.0, 0.0) + collapsed_loglik_value("gaussian", z, X, hyper)
                          for z in Z[c, ::10]]) for c in range(2)]
        print(f"seed {seed}: ARI {ari:.3f}, chains' mean log joint {means}")
        assert ari > 0.7
        assert abs(means[0] - means[1]) < 50.0


def test_registered_for_the_cli():
    entry = get_model("dpm")
    m = entry.build(datasets.load("iris"), **entry.defaults)
    assert get_info(m).family == "dpm"


def test_initial_partition_is_a_canonical_start_for_fit():
    X, truth = three_blobs()
    # a prior that expects tight clusters (the default's vague one makes the greedy
    # one-pass seating keep early points together: a poorer start)
    m = dpm.model(X, prior={"kappa0": 0.05, "S0": 0.1 * np.diag(X.var(axis=0))})
    z0 = dpm.initial_partition(m)
    assert z0[0] == 0 and np.all(np.diff(np.maximum.accumulate(z0)) <= 1)
    assert partitions.adjusted_rand_index(z0, truth) > 0.8
    dt = fit(m, draws=20, tune=0, chains=1, random_seed=0, progressbar=False,
             initvals={"z": z0})
    assert dt["posterior"]["z"].shape == (1, 20, 60)
    with pytest.raises(ValueError, match="collapsed CRP model"):
        dpm.initial_partition(dpm.model(X, likelihood="normal"))


@pytest.mark.parametrize("seed,err", [(-1, ValueError), (1.5, TypeError)])
def test_initial_partition_names_a_bad_seed(seed, err):
    m = dpm.model(np.arange(12.0).reshape(6, 2))
    with pytest.raises(err, match="^seed must be"):
        dpm.initial_partition(m, seed=seed)
