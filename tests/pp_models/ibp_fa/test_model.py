"""ibp_fa.model: bad input, structure, recovery of a planted sparse factor model against
scikit-learn's FactorAnalysis and PCA, missing data, the finite approximation with ADVI,
and the outputs."""

import warnings

import numpy as np
import pymc as pm
import pytest

from inference import fit
from inference.testing import getting_it_right
from pp_models import ibp_fa
from pp_models.distributions import IndianBuffetRV
from pp_models.model_info import posterior_with_labels


def _small_problem(seed=0):
    return ibp_fa.synthetic(40, 60, 5, density=0.2, snr=10.0, seed=seed)


@pytest.mark.parametrize(
    "Y,kwargs,err,msg",
    [
        (np.zeros(5), {}, ValueError, "Y must be 2-D"),
        (np.array([[1.0, np.inf], [0.0, 1.0]]), {}, ValueError, "infinite"),
        (np.array([[np.nan, np.nan], [0.0, 1.0]]), {}, ValueError, r"row\(s\) \[0\]"),
        (np.array([[np.nan, 1.0], [np.nan, 1.0]]), {}, ValueError, r"column\(s\) \[0\]"),
        (np.ones((3, 3)), {"alpha": 0.0}, ValueError, "alpha must be a finite number > 0"),
        (np.ones((3, 3)), {"alpha": (1.0, -1.0)}, ValueError, r"alpha \(Gamma rate\)"),
        (np.ones((3, 3)), {"alpha": "big"}, TypeError, "alpha must be a number > 0 or a pair"),
        (np.ones((3, 3)), {"k_max": 0}, ValueError, "k_max must be >= 1"),
        (np.ones((3, 3)), {"capacity": 0}, ValueError, "capacity must be >= 1"),
        (np.ones((3, 3)), {"loading_prior": (0.0, 1.0)}, ValueError, "loading_prior"),
        (np.ones((3, 3)), {"noise_prior": -2.0}, ValueError, "noise_prior"),
        (np.ones((3, 3)), {"noise": "full"}, ValueError, "noise must be one of"),
        (np.ones((3, 3)), {"loading_precision": "x"}, ValueError, "loading_precision"),
        (np.ones((3, 3)), {"birth_proposal": "fast"}, ValueError, "birth_proposal"),
        (np.ones((3, 3)), {"birth_proposal": (1.0, 1.5)}, ValueError, "birth_proposal"),
        (np.ones((3, 3)), {"k_max": 3, "spike_scale": 0.0}, ValueError, "spike_scale"),
        (np.ones((3, 3)), {"spike_scale": 0.0}, ValueError, "spike_scale must be a finite"),
        (np.ones((3, 3)), {"thin": 0}, ValueError, "thin must be >= 1"),
    ],
)
def test_bad_input_is_rejected_before_compiling(Y, kwargs, err, msg):
    with pytest.raises(err, match=msg):
        ibp_fa.model(Y, **kwargs)


@pytest.mark.parametrize("seed,err", [(-1, ValueError), (1.5, TypeError)])
def test_synthetic_names_a_bad_seed(seed, err):
    with pytest.raises(err, match="^seed must be"):
        ibp_fa.synthetic(10, 10, 2, seed=seed)


def test_structure_and_step_hint():
    Y = _small_problem().Y
    m = ibp_fa.model(Y, alpha=(1.0, 1.0), capacity=25)
    names = {rv.name for rv in m.free_RVs}
    assert names == {"alpha", "lambda", "noise_precision", "Z", "V", "X"}
    assert isinstance(m["Z"].owner.op, IndianBuffetRV)
    assert m["Z"].type.shape == (40, 25) or tuple(m["Z"].shape.eval()) == (40, 25)
    info = m._pp_models_info
    assert info.preferred_method == "gibbs"
    assert info.step_hints[0].step == "nsfa_gibbs"
    assert set(info.step_hints[0].var_names) == names
    assert set(info.label_variables) >= {"Z", "V", "X"}
    assert info.step_hints[0].options["sweeps"] == 1
    assert ibp_fa.model(Y, thin=7)._pp_models_info.step_hints[0].options["sweeps"] == 7
    shared = ibp_fa.model(Y, noise="isotropic", loading_precision="shared")
    assert shared["lambda"].ndim == 0 and shared["noise_precision"].ndim == 0
    finite = ibp_fa.model(Y, k_max=6)
    assert {rv.name for rv in finite.free_RVs} == {"pi", "G", "X", "lambda",
                                                   "noise_precision"}


def _eq318_nsfa(dt, n_last=10):
    post = posterior_with_labels(dt)
    Z = post["Z"].values[0, -n_last:] != 0
    V = post["V"].values[0, -n_last:]
    return Z, V


def test_recovers_a_planted_sparse_factor_model_better_than_fa_and_pca():
    from sklearn.decomposition import PCA, FactorAnalysis

    prob = _small_problem(seed=1)
    dt = fit(ibp_fa.model(prob.Y), draws=300, tune=500, chains=1, random_seed=3,
             progressbar=False)
    k = dt.posterior["n_features"].values.reshape(-1)
    # the posterior of K concentrates on the truth (5)
    assert np.mean(k == 5) > 0.6, np.bincount(k)
    Z, V = _eq318_nsfa(dt)
    nsfa = np.mean([ibp_fa.loading_error(prob.G, (z * v)[:, z.any(0)])
                    for z, v in zip(Z, V)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fa = FactorAnalysis(n_components=5, random_state=0).fit(prob.Y.T)
    pca = PCA(n_components=5).fit(prob.Y.T)
    fa_err = ibp_fa.loading_error(prob.G, fa.components_.T)
    pca_err = ibp_fa.loading_error(prob.G, pca.components_.T
                                   * np.sqrt(pca.explained_variance_))
    assert nsfa < 0.5 * min(fa_err, pca_err), (nsfa, fa_err, pca_err)
    # and the reconstruction G X is close to the truth (noise level 1/snr = 0.1)
    rec = ibp_fa.reconstruction(dt)
    assert ibp_fa.reconstruction_error(prob.GX, rec["mean"].values) < 0.05
    out = ibp_fa.summarize(dt)
    counts = out["factors"]["row_feature_counts"].values
    np.testing.assert_allclose(counts.sum(axis=1), 1.0)
    # each row's feature count: the posterior mode is the truth for the rows whose loadings
    # are all large enough to see (|g| > 0.5; small ones are masked by noise, Knowles §3.3.1)
    visible = np.all((prob.Z == 0) | (np.abs(prob.G) > 0.5), axis=1)
    match = counts.argmax(axis=1) == prob.Z.sum(axis=1)
    assert visible.sum() > 20 and np.mean(match[visible]) > 0.9, np.mean(match[visible])


def test_missing_entries_are_skipped_and_predicted():
    prob = _small_problem(seed=2)
    rng = np.random.default_rng(0)
    Y = prob.Y.copy()
    hole = rng.random(Y.shape) < 0.1
    Y[hole] = np.nan
    m = ibp_fa.model(Y)
    assert m["Y"].ndim == 1 and m["Y"].shape.eval()[0] == (~hole).sum()
    dt = fit(m, draws=200, tune=400, chains=1, random_seed=1, progressbar=False)
    rec = ibp_fa.reconstruction(dt)["mean"].values
    err_missing = np.sum((rec[hole] - prob.GX[hole]) ** 2) / np.sum(prob.GX[hole] ** 2)
    assert err_missing < 0.2, err_missing  # row-mean imputation scores about 1


def test_missing_data_sampler_gets_it_right():
    Y = np.zeros((3, 3))
    Y[0, 1] = Y[2, 0] = np.nan
    m = ibp_fa.model(Y, alpha=1.5, loading_prior=1.0, noise_prior=1.0, capacity=15,
                     birth_proposal=(2.0, 0.1))

    def gx00(s):
        return float(((np.asarray(s["Z"]) != 0) * s["V"] @ s["X"])[0, 0])

    stats = {
        "n_features": lambda s: float((np.asarray(s["Z"]) != 0).any(axis=0).sum()),
        "n_ones": lambda s: float(np.asarray(s["Z"]).sum()),
        "GX[0,0]": gx00,
        "mean(Y^2)": lambda s: float(np.mean(np.asarray(s["Y"]) ** 2)),
    }
    result = getting_it_right(m, data_vars=["Y"], n_samples=3000, statistics=stats,
                              random_seed=4)
    result.assert_passed(0.01)


@pytest.mark.slow  # statistical recovery / agreement run (docs/architecture.md, "What runs where")
def test_finite_approximation_with_advi():
    prob = _small_problem(seed=3)
    m = ibp_fa.model(prob.Y, k_max=8)
    # one optimiser phase: fit's default second phase compiles the ADVI graph again
    dt = fit(m, method="advi", draws=100, chains=1, random_seed=0, progressbar=False,
             n=1500, obj_optimizer=pm.adam(learning_rate=0.02))
    assert dt.attrs["pp_models_method"] == "advi"
    rec = ibp_fa.reconstruction(dt)["mean"].values
    err = ibp_fa.reconstruction_error(prob.GX, rec)
    assert err < 0.25, err
    k = dt.posterior["n_features"].values
    assert k.shape == (1, 100) and 1 <= np.median(k) <= 8


def test_synthetic_generator_and_loading_error():
    prob = ibp_fa.synthetic(30, 20, 4, density=0.1, snr=5.0, seed=1)
    assert prob.Y.shape == (30, 20) and prob.G.shape == (30, 4)
    assert (prob.Z.sum(axis=0) >= 2).all()
    assert ibp_fa.loading_error(prob.G, prob.G) == 0.0
    assert ibp_fa.loading_error(prob.G, -prob.G[:, ::-1]) == 0.0  # order and sign free
    assert ibp_fa.loading_error(prob.G, np.zeros((30, 0))) == pytest.approx(
        np.sum(prob.G**2) / 120)
    with pytest.raises(ValueError, match="same number of rows"):
        ibp_fa.loading_error(prob.G, np.zeros((29, 2)))


@pytest.mark.slow
def test_thesis_synthetic_recovery():
    """Knowles §3.3.1: D = N = 100, 16 factors at density 0.1, SNR 10. The posterior of K
    concentrates near 16 and Eq. 3.18 beats FactorAnalysis (true K) and PCA."""
    from sklearn.decomposition import PCA, FactorAnalysis

    results = []
    for seed in range(5):
        prob = ibp_fa.synthetic(100, 100, 16, seed=seed)
        dt = fit(ibp_fa.model(prob.Y), draws=500, tune=1500, chains=1, random_seed=seed,
                 progressbar=False)
        k = dt.posterior["n_features"].values.reshape(-1)
        Z, V = _eq318_nsfa(dt)
        nsfa = np.mean([ibp_fa.loading_error(prob.G, (z * v)[:, z.any(0)])
                        for z, v in zip(Z, V)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fa = FactorAnalysis(n_components=16, random_state=0).fit(prob.Y.T)
        pca = PCA(n_components=16).fit(prob.Y.T)
        fa_err = ibp_fa.loading_error(prob.G, fa.components_.T)
        pca_err = ibp_fa.loading_error(prob.G, pca.components_.T
                                       * np.sqrt(pca.explained_variance_))
        rec = ibp_fa.reconstruction(dt)["mean"].values
        results.append((k.mean(), k.std(), nsfa, fa_err, pca_err,
                        ibp_fa.reconstruction_error(prob.GX, rec)))
        print(f"seed {seed}: E[K] {k.mean():.2f} sd {k.std():.2f}; Eq 3.18 NSFA {nsfa:.4f} "
              f"FA {fa_err:.4f} PCA {pca_err:.4f}; recon {results[-1][-1]:.4f}")
    for mean_k, _sd, nsfa, fa_err, pca_err, rec in results:
        assert abs(mean_k - 16) < 1.5
        assert nsfa < 0.5 * min(fa_err, pca_err)
        assert rec < 0.05


@pytest.mark.slow  # ~12 s: summary, trace plot and netCDF writing
def test_cli_fit_on_iris(tmp_path, capsys):
    from inference.cli import main

    code = main(["fit", "ibp_fa", "--draws", "20", "--tune", "20", "--chains", "2",
                 "--seed", "1", "--no-progress", "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "nsfa_gibbs" in printed and "n_features" in printed
    assert (tmp_path / "posterior.nc").exists()
