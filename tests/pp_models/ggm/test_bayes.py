"""The Bayesian GGMs: priors, factory, NUTS vs block Gibbs, structure recovery, outputs."""

import arviz as az
import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy.stats import norm

from inference.fitting import fit
from pp_models import ggm
from pp_models.distributions import BayesianGLassoPrecision, SpikeSlabPrecision
from pp_models.ggm.outputs import inclusion_probability_array, partial_correlation_array


def _chain_graph_data(p=5, n=50, seed=0):
    rng = np.random.default_rng(seed)
    omega = 1.5 * np.eye(p)
    for i in range(p - 1):
        omega[i, i + 1] = omega[i + 1, i] = 0.5
    return rng.multivariate_normal(np.zeros(p), np.linalg.inv(omega), size=n)


# ------------------------------------------------------------------------ priors


def test_bglasso_logp_matches_formula_and_rejects_non_pd():
    omega = np.array([[2.0, -0.4, 0.1], [-0.4, 1.5, 0.3], [0.1, 0.3, 1.0]])
    lam = 1.7
    rv = BayesianGLassoPrecision.dist(lam=lam, p=3)
    expected = (6 * np.log(lam / 2) - lam * (0.4 + 0.1 + 0.3) - lam / 2 * 4.5)
    assert pm.logp(rv, omega).eval() == pytest.approx(expected, rel=1e-12)
    bad = omega.copy()
    bad[0, 1] = bad[1, 0] = 3.0
    assert pm.logp(rv, bad).eval() == -np.inf


def test_spike_slab_logp_matches_formula():
    omega = np.array([[2.0, -0.4, 0.01], [-0.4, 1.5, 0.3], [0.01, 0.3, 1.0]])
    v0, v1, pi, lam = 0.05, 1.0, 0.3, 1.0
    rv = SpikeSlabPrecision.dist(v0=v0, v1=v1, pi=pi, lam=lam, p=3)
    off = np.array([-0.4, 0.01, 0.3])
    expected = np.sum(np.log(pi * norm.pdf(off, 0, v1) + (1 - pi) * norm.pdf(off, 0, v0)))
    expected += 3 * np.log(lam / 2) - lam / 2 * 4.5
    assert pm.logp(rv, omega).eval() == pytest.approx(expected, rel=1e-12)


def test_prior_draws_are_pd_and_match_the_truncated_prior():
    # p = 2: the truncated prior is the independent one conditioned on w11 w22 > w12^2;
    # compare the draws' moments with importance-weighted independent draws
    draws = pm.draw(BayesianGLassoPrecision.dist(lam=1.0, p=2), draws=4000, random_seed=1)
    assert np.all(np.linalg.eigvalsh(draws)[:, 0] > 0)
    rng = np.random.default_rng(2)
    d = rng.exponential(2.0, size=(200_000, 2))
    o = rng.laplace(0, 1.0, size=200_000)
    keep = d[:, 0] * d[:, 1] > o**2
    ref_abs_off, ref_diag = np.abs(o[keep]).mean(), d[keep, 0].mean()
    se = draws[:, 0, 1].std() / np.sqrt(4000)
    assert np.abs(draws[:, 0, 1]).mean() == pytest.approx(ref_abs_off, abs=5 * se)
    assert draws[:, 0, 0].mean() == pytest.approx(ref_diag, abs=5 * draws[:, 0, 0].std() / 63)


def test_transform_jacobian_matches_finite_differences():
    # the Cholesky transform's log-Jacobian against a numerical Jacobian determinant
    model = ggm.model(_chain_graph_data(p=3, n=10))
    transform = model.rvs_to_transforms[model["Omega"]]
    import pytensor
    import pytensor.tensor as pt

    y = pt.dvector("y")
    back = pytensor.function([y], transform.backward(y))
    ljd = pytensor.function([y], transform.log_jac_det(y))
    y0 = np.array([0.3, -0.2, 0.1, 0.5, 0.4, -0.3])
    rows, cols = np.tril_indices(3)
    eps = 1e-6
    J = np.empty((6, 6))
    for k in range(6):
        e = np.zeros(6)
        e[k] = eps
        J[:, k] = (back(y0 + e)[rows, cols] - back(y0 - e)[rows, cols]) / (2 * eps)
    assert np.log(abs(np.linalg.det(J))) == pytest.approx(float(ljd(y0)), abs=1e-6)


# ---------------------------------------------------------------------- factory


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"prior": "wishart"}, ValueError, "prior"),
        ({"lam": -1.0}, ValueError, "lam"),
        ({"lam": (1.0,)}, ValueError, "shape, rate"),
        ({"lam": (1.0, 0.0)}, ValueError, "rate"),
        ({"prior": "spike_slab", "lam": (1.0, 1.0)}, ValueError, "fixed lam"),
        ({"prior": "spike_slab", "spike_sd": 1.0, "slab_sd": 0.5}, ValueError, "larger"),
        ({"prior": "spike_slab", "edge_prob": 1.5}, ValueError, "edge_prob"),
        ({"prior": "spike_slab", "spike_sd": "small"}, TypeError, "spike_sd must be a positive"),
        # bad values of the spike-and-slab options are not ignored under the default prior
        ({"spike_sd": 0.0}, ValueError, "spike_sd must be a finite number > 0"),
        ({"slab_sd": -1.0}, ValueError, "slab_sd must be a finite number > 0"),
        ({"edge_prob": 0.3}, ValueError, "edge_prob is an option of prior='spike_slab' only"),
        ({"nonparanormal": 1}, TypeError, "nonparanormal"),
        ({"feature_names": ["a"]}, ValueError, "feature_names"),
    ],
)
def test_model_bad_options(kwargs, error, message):
    with pytest.raises(error, match=message):
        ggm.model(_chain_graph_data(), **kwargs)


@pytest.mark.parametrize(
    ("X", "message"),
    [
        (np.ones((1, 3)), "at least 2"),
        (np.array([[1.0, np.nan], [2.0, 1.0]]), "non-finite"),
        (np.ones((5, 1)), "at least 2 columns"),
        (np.column_stack([np.ones(5), np.arange(5.0)]), "constant column"),
    ],
)
def test_model_bad_data(X, message):
    with pytest.raises(ValueError, match=message):
        ggm.model(X)


def test_nonparanormal_makes_monotone_margins_gaussian():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(500, 2))
    Z[:, 1] = 0.8 * Z[:, 0] + 0.6 * Z[:, 1]
    X = np.column_stack([np.exp(Z[:, 0]), Z[:, 1] ** 3])
    T = ggm.nonparanormal_transform(X)
    # monotone (Winsorising ties the tails); the normal scores recover the latent 0.8
    assert np.all(np.diff(T[np.argsort(X[:, 0]), 0]) >= 0)
    rho = np.corrcoef(T, rowvar=False)[0, 1]
    assert rho == pytest.approx(0.8, abs=0.05)
    assert abs(np.corrcoef(X, rowvar=False)[0, 1] - 0.8) > 0.1


# ------------------------------------------------------ NUTS vs block Gibbs


def _mean_and_mcse(dt, var):
    post = dt.posterior.to_dataset()[[var]]
    return post[var].mean(("chain", "draw")).values, az.mcse(post)[var].values


@pytest.mark.slow  # statistical recovery / agreement run (docs/architecture.md, "What runs where")
def test_nuts_and_block_gibbs_agree_on_the_bayesian_graphical_lasso():
    """p = 5, n = 50, lam ~ Gamma(2, 1): posterior means within 4 combined MCSEs."""
    model = ggm.model(_chain_graph_data(), lam=(2.0, 1.0))
    gibbs = fit(model, draws=1500, tune=100, chains=2, cores=1, random_seed=1,
                progressbar=False)
    assert gibbs.attrs["pp_models_steps"] == '{"bglasso_block_gibbs": ["Omega", "lam"]}'
    nuts = fit(model, method="nuts", step=pm.NUTS(model=model), draws=600, tune=300,
               chains=2, cores=1, random_seed=2, progressbar=False)
    for var in ("Omega", "lam"):
        mean_g, mcse_g = _mean_and_mcse(gibbs, var)
        mean_n, mcse_n = _mean_and_mcse(nuts, var)
        z = (mean_g - mean_n) / np.sqrt(mcse_g**2 + mcse_n**2)
        assert np.all(np.abs(z) < 4.0), (var, z)
    # and the chain graph shows: its edges' partial correlations are the largest
    rho = np.abs(ggm.posterior_partial_correlation(gibbs).values)
    on_chain = np.diag(np.ones(4, dtype=bool), 1)
    off_chain = np.triu(np.ones((5, 5), dtype=bool), 1) & ~on_chain
    assert rho[on_chain].mean() > 1.5 * rho[off_chain].mean()


# ---------------------------------------------------------- structure learning


def _sparse_problem(p=20, n=200, seed=0):
    """A random sparse graph: 30 edges of weight +-U(0.15, 0.35) on a unit diagonal
    (shifted if needed to a smallest eigenvalue of 0.2)."""
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(p, 1)
    pick = rng.choice(iu[0].size, size=30, replace=False)
    omega = np.zeros((p, p))
    omega[iu[0][pick], iu[1][pick]] = rng.uniform(0.15, 0.35, 30) * rng.choice([-1, 1], 30)
    omega = omega + omega.T + np.eye(p)
    omega += max(0.0, 0.2 - np.linalg.eigvalsh(omega)[0]) * np.eye(p)
    X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(omega), size=n)
    X = (X - X.mean(0)) / X.std(0)
    return X, omega != 0


def _auc(scores, truth):
    iu = np.triu_indices(truth.shape[0], 1)
    s, t = scores[iu], truth[iu]
    pos, neg = s[t], s[~t]
    return (np.mean(pos[:, None] > neg[None, :]) + 0.5 * np.mean(pos[:, None] == neg[None, :]))


@pytest.mark.slow
def test_spike_slab_edge_auc_beats_the_glasso_path():
    X, truth = _sparse_problem()
    model = ggm.model(X, prior="spike_slab", spike_sd=0.02, slab_sd=1.0)
    dt = fit(model, draws=1000, tune=300, chains=2, cores=1, random_seed=3, progressbar=False)
    inclusion = ggm.edge_inclusion(dt).values
    auc_sssl = _auc(inclusion, truth)
    # glasso: an edge's score is the largest penalty at which it is in the graph
    S = np.cov(X, rowvar=False, bias=True)
    lams = ggm.lambda_max(S) * np.logspace(0, -2, 50)
    path = ggm.graphical_lasso_path(S, lams)
    entry = np.zeros_like(S)
    for lam, res in zip(lams, path.results):
        entry = np.where(res.adjacency & (entry == 0), lam, entry)
    auc_glasso = _auc(entry, truth)
    print(f"edge AUC: spike-and-slab {auc_sssl:.3f}, glasso path {auc_glasso:.3f}")
    assert auc_sssl > auc_glasso
    assert auc_sssl > 0.8


# ------------------------------------------------------------------------ outputs


def test_partial_correlations_and_inclusion_probabilities_by_hand():
    omega = np.array([[2.0, -0.5, 0.0], [-0.5, 1.0, 0.2], [0.0, 0.2, 1.0]])
    rho = partial_correlation_array(omega)
    assert rho[0, 1] == pytest.approx(0.5 / np.sqrt(2.0))
    assert rho[1, 2] == pytest.approx(-0.2)
    np.testing.assert_allclose(np.diag(rho), 1.0)
    # against the regression definition: corr of residuals of x0, x1 given x2
    sigma = np.linalg.inv(omega)
    cond = sigma[:2, :2] - np.outer(sigma[:2, 2], sigma[2, :2]) / sigma[2, 2]
    assert rho[0, 1] == pytest.approx(cond[0, 1] / np.sqrt(cond[0, 0] * cond[1, 1]))
    q = inclusion_probability_array(omega, 0.05, 1.0, 0.3)
    w = -0.5
    slab, spike = 0.3 * norm.pdf(w, 0, 1.0), 0.7 * norm.pdf(w, 0, 0.05)
    assert q[0, 1] == pytest.approx(slab / (slab + spike))
    assert q[0, 0] == 0.0


def test_plot_graph_draws_edges_above_threshold():
    import matplotlib.pyplot as plt

    W = np.zeros((4, 4))
    W[0, 1] = W[1, 0] = 0.9
    W[2, 3] = W[3, 2] = -0.3
    W[0, 2] = W[2, 0] = 0.05
    ax = ggm.plot_graph(W, list("abcd"), threshold=0.1)
    assert len(ax.lines) == 2
    plt.close("all")
    with pytest.raises(ValueError, match="square"):
        ggm.plot_graph(np.zeros((2, 3)))


def test_fit_adds_the_graph_group_and_write_results_saves_the_graph(tmp_path):
    import pandas as pd

    from inference.report import write_results

    X = _chain_graph_data(p=4, n=40)
    dt = fit(ggm.model(X, prior="spike_slab", spike_sd=0.05), draws=100, tune=20, chains=1,
             random_seed=0, progressbar=False)
    graph = dt["graph"].to_dataset()
    assert set(graph.data_vars) == {"precision_mean", "partial_correlation_mean",
                                    "edge_inclusion"}
    q = ggm.edge_inclusion(dt).values
    assert np.all((q >= 0) & (q <= 1)) and np.allclose(q, q.T) and np.all(np.diag(q) == 0)
    np.testing.assert_allclose(graph["precision_mean"].values,
                               dt.posterior["Omega"].mean(("chain", "draw")).values)
    paths = write_results(dt, pd.DataFrame({"a": [1.0]}), tmp_path)
    assert paths["graph"].exists() and paths["graph"].stat().st_size > 1000
    assert dt.posterior["partial_correlation"].sizes["edge"] == 6
    without = xr.DataTree.from_dict({"posterior": dt.posterior.to_dataset()})
    with pytest.raises(ValueError, match="spike_slab"):
        ggm.edge_inclusion(without)


def test_block_gibbs_recovers_a_known_precision():
    """n = 2000 from a known 4 x 4 precision: posterior means within 4 posterior sds
    (plus the prior's O(lam / n) shrinkage) of the truth."""
    rng = np.random.default_rng(7)
    omega = np.array([[2.0, -0.6, 0.0, 0.0], [-0.6, 1.5, 0.4, 0.0],
                      [0.0, 0.4, 1.0, -0.3], [0.0, 0.0, -0.3, 1.2]])
    X = rng.multivariate_normal(np.zeros(4), np.linalg.inv(omega), size=2000)
    dt = fit(ggm.model(X, lam=1.0), draws=500, tune=50, chains=1, random_seed=4,
             progressbar=False)
    draws = dt.posterior["Omega"].values.reshape(-1, 4, 4)
    err = np.abs(draws.mean(0) - omega)
    assert np.all(err < 4 * draws.std(0) + 0.01), err


def test_bglasso_posterior_mode_is_the_graphical_lasso():
    """Wang (2012): the mode is glasso with S = X'X / n and penalty lam / n (diagonal
    penalised). The model's log density (no Jacobian) is highest at our glasso solution
    among random perturbations of it."""
    from custom_ops.ggm.gibbs import packed_cholesky_forward

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 4))
    X[:, 1] += 0.7 * X[:, 0]
    lam, n = 3.0, 40
    model = ggm.model(X, lam=lam)
    Xc = X - X.mean(0)
    mode = ggm.graphical_lasso(Xc.T @ Xc / n, lam / n, tol=1e-12).precision
    assert 0 < np.count_nonzero(np.triu(mode, 1)) < 6  # some entries exactly zero
    logp = model.compile_logp(jacobian=False)
    name = model.rvs_to_values[model["Omega"]].name

    def at(omega):
        return float(logp({name: packed_cholesky_forward(omega)}))

    best = at(mode)
    for _ in range(50):
        E = rng.normal(size=(4, 4)) * 1e-3
        assert at(mode + E + E.T) < best
