"""The DP mixture's truncated stick-breaking form: the NIW (``"gaussian"``) components,
the start from a data partition, K on iris against the collapsed Gibbs sampler, the
outputs (no raw labels in the summary, the co-clustering picture)."""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import logsumexp

from inference import fit, summary
from pp_models import datasets, dpm
from pp_models.dpm.outputs import plot_results
from pp_models.partitions import adjusted_rand_index
from tests.helpers.backends import PYTHON_MODE


@pytest.fixture(scope="module")
def iris():
    return datasets.load("iris")


def test_gaussian_stick_breaking_likelihood_is_the_mvn_mixture(iris):
    X = iris.data[::5]
    m = dpm.model(X, truncation=4)
    assert sorted(rv.name for rv in m.free_RVs) == ["bartlett_diag", "bartlett_offdiag",
                                                    "mu_raw", "w"]
    rng = np.random.default_rng(0)
    point = {v.name: rng.normal(size=np.shape(m.initial_point()[v.name])) * 0.5
             for v in m.value_vars}
    outputs = m.replace_rvs_by_values([m["mu"], m["precision_chol"], m["w"], m["X_loglik"]])
    f = m.compile_fn(outputs, inputs=m.value_vars, on_unused_input="ignore", point_fn=False,
                     mode=PYTHON_MODE)
    mu, U, w, loglik = f(**point)
    np.testing.assert_array_equal(np.triu(U, 1), 0.0)
    cov = np.linalg.inv(U @ np.swapaxes(U, 1, 2))
    dens = np.stack([stats.multivariate_normal(mu[k], cov[k]).logpdf(X) for k in range(4)], 1)
    assert loglik == pytest.approx(logsumexp(np.log(w) + dens, axis=1).sum(), rel=1e-10)


def test_gaussian_stick_breaking_prior_is_the_niw(iris):
    # Bartlett: U U' ~ Wishart(nu0, S0^-1); the whitened mean sqrt(kappa0) U'(mu - m0) is
    # standard normal whatever the precision
    m = dpm.model(iris.data, truncation=2)
    h = dpm.get_spec(m).prior
    U, mu = pm.draw([m["precision_chol"], m["mu"]], draws=3000, random_seed=1,
                    mode=PYTHON_MODE)
    U, mu = U[:, 0], mu[:, 0]
    precision = U @ np.swapaxes(U, 1, 2)
    wishart = stats.wishart(df=h["nu0"], scale=np.linalg.inv(h["S0"])).rvs(
        3000, random_state=2)
    for i, j in ((0, 0), (2, 1), (3, 3)):
        assert stats.ks_2samp(precision[:, i, j], wishart[:, i, j]).pvalue > 1e-3
    assert stats.ks_2samp(np.linalg.slogdet(precision)[1],
                          np.linalg.slogdet(wishart)[1]).pvalue > 1e-3
    white = np.sqrt(h["kappa0"]) * np.einsum("sji,sj->si", U, mu - h["m0"])
    assert stats.kstest(white.ravel(), "norm").pvalue > 1e-3


def test_start_partition_is_the_collapsed_samplers_answer_on_iris(iris):
    # the collapsed Gibbs sampler puts K = 2 (setosa, the rest) at probability 1 on iris
    from pp_models.dpm.start import start_partition

    z = start_partition(dpm.get_spec(dpm.model(iris.data, truncation=10)))
    assert adjusted_rand_index(z, np.minimum(iris.target, 1)) == 1.0


@pytest.fixture(scope="module")
def nuts_on_iris(iris):
    # before the start from a data partition one of two chains stayed at K = 1 (the other
    # at 2): NUTS does not create clusters
    m = dpm.model(iris.data, alpha=(1.0, 1.0), truncation=10,
                  feature_names=iris.feature_names)
    return m, fit(m, method="nuts", draws=60, tune=150, chains=1, random_seed=2,
                  progressbar=False, nuts_sampler="pymc")


def test_nuts_on_iris_has_the_collapsed_samplers_k(nuts_on_iris):
    _, dt = nuts_on_iris
    k = dt["posterior"]["n_clusters"].values
    assert np.mean(k == 2) >= 0.9 and k.max() < 10
    z_hat = dt["clustering"]["point_estimate"].values
    assert np.bincount(z_hat).tolist() in ([100, 50], [50, 100])


def test_raw_labels_stay_out_of_the_summary(nuts_on_iris):
    _, dt = nuts_on_iris
    table = summary(dt)
    assert not [q for q in table.index if q.startswith("z")]
    assert "n_clusters" in table.index
    assert dt["posterior"]["z"].shape == (1, 60, 150)


def _lines(ax):
    return [line for line in ax.lines if line.get_color() == "tab:red"]


def test_clustering_picture_draws_one_boundary_per_cluster_change():
    # two clusters of the same size, their points interleaved in the data: the picture
    # used to order by size only and drew a boundary between every point of the two
    z = np.where(np.arange(60) < 40, np.arange(60) % 2, 2)  # 20, 20 interleaved, then 20
    P = (z[:, None] == z[None, :]).astype(float)
    clustering = xr.Dataset(
        {"coclustering": (("obs", "obs_"), P), "point_estimate": ("obs", z),
         "n_clusters_pmf": ("n_clusters", [1.0])},
        coords={"n_clusters": [3]}, attrs={"draws": 10})
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(), "clustering": clustering})
    fig = plot_results(dt)
    assert len(_lines(fig.axes[0])) == 2 * (3 - 1)
    assert "3 clusters" in fig.axes[0].get_title()


def test_warns_when_k_reaches_the_truncation():
    from pp_models.dpm.stick_breaking import warn_if_truncated

    with pytest.warns(UserWarning, match=r"reached the truncation T = 10 in 50%"):
        assert warn_if_truncated(np.array([[10, 9], [10, 8]]), 10) == 0.5
    assert warn_if_truncated(np.array([[3, 2]]), 10) == 0.0


@pytest.mark.slow
@pytest.mark.parametrize("likelihood", ["gaussian", "diag_gaussian"])
def test_nuts_k_on_iris_agrees_with_collapsed_gibbs(iris, likelihood):
    """4 chains each way: the posterior of K from truncated stick-breaking (T = 10) and
    NUTS against the collapsed CRP sampler's (Gibbs: gaussian K = 2, diag_gaussian 3)."""
    gibbs = fit(dpm.model(iris.data, likelihood=likelihood, alpha=(1.0, 1.0)),
                draws=1000, tune=300, chains=4, cores=2, random_seed=3, progressbar=False)
    nuts = fit(dpm.model(iris.data, likelihood=likelihood, alpha=(1.0, 1.0), truncation=10),
               method="nuts", draws=500, tune=500, chains=4, cores=2, random_seed=3,
               progressbar=False)
    k_gibbs = gibbs["posterior"]["n_clusters"].values.astype(int)
    k_nuts = nuts["posterior"]["n_clusters"].values.astype(int)
    print(likelihood, "Gibbs K", np.bincount(k_gibbs.ravel()) / k_gibbs.size,
          "NUTS K", np.bincount(k_nuts.ravel()) / k_nuts.size)
    assert np.mean(k_nuts == 10) == 0
    # each NUTS chain's mode of K is Gibbs's
    mode = np.bincount(k_gibbs.ravel()).argmax()
    assert all(np.bincount(chain).argmax() == mode for chain in k_nuts)


def test_nuts_on_the_crp_form_names_the_truncation_before_sampling(iris, capsys, tmp_path):
    # the CLI announced "sampling 4 chains x 20000 draws" and then failed without saying
    # how to reach NUTS (the stick-breaking form, truncation=T)
    from inference.cli import main

    with pytest.raises(ValueError, match=r"build the model with truncation=T \(truncated"):
        fit(dpm.model(iris.data[:20]), method="nuts")
    assert main(["fit", "dpm", "--method", "nuts", "--no-progress",
                 "--out", str(tmp_path / "out")]) == 2
    out, err = capsys.readouterr()
    assert "sampling" not in out
    assert "--param truncation=T" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
