"""BHC tree building, result methods, hyperparameter model and learning (Heller 2007 ch. 3;
oracles from specs/heller-bhc.md §7.2)."""

import dataclasses
import itertools
import math

import arviz as az
import numpy as np
import pymc as pm
import pytest
from scipy import integrate, special, stats
from scipy.cluster.hierarchy import dendrogram, is_valid_linkage, linkage

from custom_ops import conjugate as cj
from custom_ops.bhc import evidence as ops
from inference import fit as zoo_fit
from pp_models import bhc
from pp_models.metrics import adjusted_rand_index, dendrogram_purity, purity
from tests.helpers.backends import PYTHON_MODE
from tests.oracles.mixtures import block_partitions
from tests.pp_models.bhc.cases import binary_mixture, log_ml, tree_objective

# -------------------------------------------------------------------------- helpers


def exact_dpm_log_evidence(family, X, hyper, alpha):
    n = X.shape[0]
    terms = []
    for part in block_partitions(list(range(n))):
        terms.append(
            len(part) * math.log(alpha)
            + sum(math.lgamma(len(b)) + log_ml(family, X[b], hyper) for b in part)
        )
    return special.logsumexp(terms) - (math.lgamma(n + alpha) - math.lgamma(alpha))


def replay_is_greedy(result):
    """Replay the merges: each chosen pair must have the largest r_k among current pairs."""
    X, n = result.X, result.n
    fam = cj.FAMILY_CODES[result.likelihood]
    names = cj.FAMILIES[result.likelihood].hyper_names
    H = cj.pack_hyper(result.likelihood, [result.hyper[k] for k in names])
    la = math.log(result.alpha)
    node = {
        i: (
            cj.point_stats(fam, X[i : i + 1])[0],
            la,
            log_ml(result.likelihood, X[i], tuple(result.hyper[k] for k in names)),
        )
        for i in range(n)
    }

    def score(i, j):
        si, ldi, lpi = node[i]
        sj, ldj, lpj = node[j]
        s = si + sj
        one = la + math.lgamma(s[0])
        ldk = np.logaddexp(one, ldi + ldj)
        A = one - ldk + cj.log_marginal(fam, s, H)
        B = ldi + ldj - ldk + lpi + lpj
        lpk = np.logaddexp(A, B)
        return A - lpk, (s, ldk, lpk)

    for t, (i, j) in enumerate(result.merges):
        best = max(score(a, b)[0] for a, b in itertools.combinations(sorted(node), 2))
        chosen, new = score(int(i), int(j))
        if chosen < best - 1e-9:
            return False
        del node[int(i)], node[int(j)]
        node[n + t] = new
    return True


# -------------------------------------------------------------------------- greedy
def test_greedy_is_greedy_and_matches_op_evidence():
    rng = np.random.default_rng(0)
    X, _ = binary_mixture(14, 6, 3, 0.1, rng)
    res = bhc.greedy(X, alpha=0.7)
    assert replay_is_greedy(res)
    lp, lr = ops.bhc_log_evidence(X, res.merges, 0.7, likelihood="bernoulli", **res.hyper)
    assert float(lp.eval()) == pytest.approx(res.log_evidence, rel=1e-12)
    np.testing.assert_allclose(lr.eval(), res.log_rk, rtol=1e-12)
    # oracle 19: C(n, 2) + Σ_{c = n-1}^{2} (c - 1) candidate pairs scored
    n = 14
    assert res.n_scored == math.comb(n, 2) + sum(c - 1 for c in range(2, n))


@pytest.mark.parametrize("likelihood", ["multinomial", "gaussian", "diag_gaussian"])
def test_greedy_other_likelihoods(likelihood):
    rng = np.random.default_rng(1)
    if likelihood == "multinomial":
        X = np.concatenate(
            [rng.multinomial(20, [0.7, 0.2, 0.1], 6), rng.multinomial(20, [0.1, 0.2, 0.7], 6)]
        ).astype(float)
    else:
        X = np.concatenate([rng.normal(0, 1, (6, 2)), rng.normal(8, 1, (6, 2))])
    res = bhc.greedy(X, likelihood=likelihood)
    assert replay_is_greedy(res)
    assert adjusted_rand_index(np.repeat([0, 1], 6), res.cut()) == 1.0


def test_first_merge_is_max_bayesian_sets_score():
    # oracle 13: first merge maximises s = p(xi, xj) / (p(xi) p(xj)) and r = s / (s + α)
    rng = np.random.default_rng(13)
    X, _ = binary_mixture(12, 8, 3, 0.2, rng)
    h = cj.bernoulli_hyper(8, 0.6, 1.4)
    res = bhc.greedy(X, alpha=2.0, hyper={"a": h[0], "b": h[1]})
    logs = {
        (i, j): log_ml("bernoulli", X[[i, j]], h)
        - log_ml("bernoulli", X[i], h)
        - log_ml("bernoulli", X[j], h)
        for i, j in itertools.combinations(range(12), 2)
    }
    best = max(logs, key=logs.get)
    assert tuple(sorted(res.merges[0])) == best
    s = math.exp(logs[best])
    assert math.exp(res.log_rk[0]) == pytest.approx(s / (s + 2.0), rel=1e-12)


def test_identical_points_merge_first_with_symmetric_prior():
    # oracle 14, the safe version: symmetric Beta prior, an exact duplicate present
    rng = np.random.default_rng(14)
    for _ in range(30):
        X = (rng.random((7, 10)) < 0.5).astype(float)
        i, j = rng.choice(7, 2, replace=False)
        X[j] = X[i]
        if len({tuple(r) for r in X}) != 6:
            continue  # a second duplicate pair would tie
        res = bhc.greedy(X, hyper={"a": 1.3, "b": 1.3})
        assert tuple(sorted(res.merges[0])) == tuple(sorted((i, j)))


def test_identical_points_false_oracle_counterexamples():
    # oracle 14: with a sparse Beta prior, two non-identical points sharing rare 1s merge
    # before the two identical all-zero rows
    X = np.array([[0] * 10, [0] * 10, [1] * 5 + [0] * 5, [1] * 4 + [0] * 6], dtype=float)
    res = bhc.greedy(X, hyper={"a": 0.1, "b": 10.0})
    assert tuple(sorted(res.merges[0])) == (2, 3)
    # ... and for NIW: 1-D, m0 = 0, S0 = 1, kappa0 = 0.01, nu0 = 3, points {0, 0, 30, 30.5}
    X = np.array([[0.0], [0.0], [30.0], [30.5]])
    res = bhc.greedy(
        X, likelihood="gaussian", hyper={"m0": 0.0, "S0": 1.0, "kappa0": 0.01, "nu0": 3.0}
    )
    assert tuple(sorted(res.merges[0])) == (2, 3)


def test_all_identical_points_tie_deterministically():
    X = np.ones((6, 3))
    res = bhc.greedy(X)
    assert tuple(res.merges[0]) == (0, 1)
    r0 = bhc.greedy(X)
    np.testing.assert_array_equal(r0.merges, res.merges)


# -------------------------------------------------------------------------- result
def test_linkage_is_valid_scipy_and_plots():
    rng = np.random.default_rng(3)
    X, _ = binary_mixture(30, 8, 3, 0.1, rng)
    res = bhc.greedy(X)
    assert is_valid_linkage(res.linkage)
    assert res.linkage.shape == (29, 4) and res.linkage[-1, 3] == 30
    # heights never decrease from child to parent (rows need not be sorted by height)
    h = np.concatenate([np.zeros(30), res.linkage[:, 2]])
    for t, (i, j) in enumerate(res.merges):
        assert h[30 + t] >= max(h[i], h[j])
    dendrogram(res.linkage, no_plot=True)
    ax = res.plot()
    assert ax.get_title().startswith("BHC")
    import matplotlib.pyplot as plt

    plt.close("all")


def test_cut_oracle_16_and_separated_blobs():
    rng = np.random.default_rng(16)
    X = np.concatenate([rng.normal(c, 0.3, (10, 2)) for c in (0.0, 10.0, 20.0)])
    res = bhc.greedy(X, likelihood="gaussian")
    labels = res.cut()
    assert adjusted_rand_index(np.repeat([0, 1, 2], 10), labels) == 1.0
    assert math.exp(res.log_rk[-1]) < 1e-3
    n = res.n
    r = np.ones(2 * n - 1)
    r[n:] = np.exp(res.log_rk)
    parent = {}
    for t, (i, j) in enumerate(res.merges):
        parent[int(i)] = parent[int(j)] = n + t
    # every cluster root has r >= 0.5 and every ancestor of it r < 0.5
    leaves_of = {i: {i} for i in range(n)}
    for t, (i, j) in enumerate(res.merges):
        leaves_of[n + t] = leaves_of[int(i)] | leaves_of[int(j)]
    for c in np.unique(labels):
        members = set(np.flatnonzero(labels == c))
        root = next(k for k, v in leaves_of.items() if v == members)
        assert r[root] >= 0.5
        k = root
        while k in parent:
            k = parent[k]
            assert r[k] < 0.5
    assert len(np.unique(res.cut(threshold=0.0))) == 1
    assert len(np.unique(res.cut(threshold=1.0))) == n


def test_predictive_sums_to_one_and_weights():
    rng = np.random.default_rng(18)
    D = 4
    X, _ = binary_mixture(9, D, 2, 0.1, rng)
    res = bhc.greedy(X, alpha=1.5)
    assert res.node_weights().sum() == pytest.approx(1.0, rel=1e-12)
    grid = np.array(list(itertools.product([0.0, 1.0], repeat=D)))
    assert np.exp(res.predictive_logpdf(grid)).sum() == pytest.approx(1.0, rel=1e-10)
    assert res.predictive_logpdf(grid[3]) == pytest.approx(res.predictive_logpdf(grid)[3])


def test_predictive_n2_equals_exact_dpm_and_gaussian_integrates():
    rng = np.random.default_rng(181)
    X, _ = binary_mixture(2, 3, 1, 0.3, rng)
    res = bhc.greedy(X, alpha=0.8)
    h = (res.hyper["a"], res.hyper["b"])
    for x in itertools.product([0.0, 1.0], repeat=3):
        x = np.array(x)
        ref = exact_dpm_log_evidence("bernoulli", np.vstack([X, x]), h, 0.8) - (
            exact_dpm_log_evidence("bernoulli", X, h, 0.8)
        )
        assert res.predictive_logpdf(x) == pytest.approx(ref, rel=1e-10)
    Xg = rng.normal(size=(7, 1))
    rg = bhc.greedy(Xg, likelihood="gaussian")
    total, _err = integrate.quad(lambda v: math.exp(rg.predictive_logpdf([v])), -60, 60, limit=200)
    assert total == pytest.approx(1.0, abs=1e-6)


def test_dpm_lower_bound_against_exact_enumeration():
    rng = np.random.default_rng(7)
    X, _ = binary_mixture(7, 5, 2, 0.15, rng)
    for alpha in (0.3, 1.0, 4.0):
        res = bhc.greedy(X, alpha=alpha)
        h = (res.hyper["a"], res.hyper["b"])
        exact = exact_dpm_log_evidence("bernoulli", X, h, alpha)
        lb = res.dpm_lower_bound()
        assert lb <= exact + 1e-10
        assert lb <= res.log_evidence + 1e-12
        ref = res.log_d[-1] + math.lgamma(alpha) - math.lgamma(7 + alpha) + res.log_evidence
        assert lb == pytest.approx(ref)



def test_dpm_lower_bound_keeps_its_digits_at_large_alpha():
    """lgamma(α) - lgamma(n + α) cancels two numbers ~α log α (~1e16 at α = e^33.5, where
    a double's spacing is 2: the bound was off by 2 there, by 2.4e-4 at e^25); the
    identity Γ(n + α)/Γ(α) = Π_{i<n} (α + i) does not cancel."""
    X, _ = binary_mixture(7, 5, 2, 0.15, np.random.default_rng(7))
    for log_alpha in (25.0, 31.5, 33.5):
        alpha = math.exp(log_alpha)
        res = bhc.greedy(X, alpha=alpha)
        log_ratio = -math.fsum(math.log(alpha + i) for i in range(7))
        ref = res.log_d[-1] + log_ratio + res.log_evidence
        assert res.dpm_lower_bound() == pytest.approx(ref, rel=1e-12), log_alpha

# -------------------------------------------------------------------------- randomized
@pytest.mark.parametrize("method", ["randomized", "embhc"])
def test_randomized_methods_build_valid_trees(method):
    rng = np.random.default_rng(21)
    X, z = binary_mixture(600, 16, 4, 0.05, rng)
    res = getattr(bhc, method)(X, random_seed=1, subsample=30)
    assert is_valid_linkage(res.linkage) and res.merges.shape == (599, 2)
    assert sorted(np.unique(res.merges)) == list(range(2 * 600 - 2))
    lp, _ = ops.bhc_log_evidence(X, res.merges, 1.0, likelihood="bernoulli", **res.hyper)
    assert float(lp.eval()) == pytest.approx(res.log_evidence, rel=1e-12)
    # far fewer candidate pairs than greedy's ~n^2, and still a good tree
    assert res.n_scored < 0.5 * 600**2
    assert dendrogram_purity(res.linkage, z) > 0.85
    again = getattr(bhc, method)(X, random_seed=1, subsample=30)
    np.testing.assert_array_equal(again.merges, res.merges)


def test_randomized_variants_and_small_n_equals_greedy():
    rng = np.random.default_rng(22)
    X, z = binary_mixture(300, 12, 3, 0.05, rng)
    for split, fp, fpred in itertools.product(
        ("top", "balanced"), ("size", "pi"), ("tree", "cluster")
    ):
        res = bhc.randomized(
            X,
            random_seed=0,
            subsample=20,
            leaf_size=40,
            split=split,
            filter_prior=fp,
            filter_predictive=fpred,
        )
        assert is_valid_linkage(res.linkage)
        assert dendrogram_purity(res.linkage, z) > 0.8, (split, fp, fpred)
    small = bhc.randomized(X[:50], random_seed=0)  # n <= leaf_size: exact
    np.testing.assert_array_equal(small.merges, bhc.greedy(X[:50]).merges)


# -------------------------------------------------------------------------- digits
def _digits():
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.data > 8).astype(float), d.target


def _purity_table(classes, per_class, seeds):
    X, y = _digits()
    out = {k: [] for k in ("single", "complete", "average", "bhc")}
    for seed in seeds:
        rng = np.random.default_rng(seed)
        idx = np.concatenate(
            [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]
        )
        Xs, ys = X[idx], y[idx]
        for m in ("single", "complete", "average"):
            out[m].append(dendrogram_purity(linkage(Xs, m), ys))
        out["bhc"].append(dendrogram_purity(bhc.greedy(Xs).linkage, ys))
    return {k: np.array(v) for k, v in out.items()}


def test_digits_dendrogram_purity_beats_linkage_small():
    # Heller Table 3.1's pattern on binarised scikit-learn digits (pixel > 8)
    for classes, per in (((0, 2, 4), 20), (tuple(range(10)), 8)):
        tab = _purity_table(classes, per, seeds=range(3))
        for m in ("single", "complete", "average"):
            assert tab["bhc"].mean() > tab[m].mean(), (classes, m, tab)


@pytest.mark.slow
def test_digits_dendrogram_purity_beats_linkage_full():
    for classes, per in (((0, 2, 4), 20), ((0, 2, 4), 40), (tuple(range(10)), 20)):
        tab = _purity_table(classes, per, seeds=range(10))
        for m in ("single", "complete", "average"):
            assert tab["bhc"].mean() > tab[m].mean(), (classes, m, tab)
            # paired: BHC wins on most subsamples
            assert np.mean(tab["bhc"] > tab[m]) >= 0.7, (classes, m, tab)


# -------------------------------------------------------------------------- PyMC model
def _small_binary():
    rng = np.random.default_rng(0)
    X, _ = binary_mixture(40, 12, 3, 0.1, rng)
    return X


def test_model_structure_and_logp_matches_op():
    X = _small_binary()
    res = bhc.greedy(X)
    # PyMC priors on the values themselves (the default scale priors: test_priors.py)
    pm_priors = {
        "alpha": pm.LogNormal.dist(0.0, 1.5),
        "a": pm.LogNormal.dist(0.0, 1.0),
        "b": pm.LogNormal.dist(0.0, 1.0),
    }
    m = bhc.model(X, res, priors=pm_priors)
    assert {v.name for v in m.free_RVs} == {"alpha", "a", "b"}
    point = {"alpha_log__": math.log(1.7), "a_log__": math.log(0.8), "b_log__": math.log(1.2)}
    logp = m.compile_logp(jacobian=False)(point)
    lb = ops.bhc_dpm_lower_bound(X, res.merges, 1.7, likelihood="bernoulli", a=0.8, b=1.2)
    prior = (
        stats.lognorm.logpdf(1.7, 1.5)
        + stats.lognorm.logpdf(0.8, 1.0)
        + stats.lognorm.logpdf(1.2, 1.0)
    )
    assert float(logp) == pytest.approx(float(lb.eval()) + prior, rel=1e-10)
    m_ev = bhc.model(X, res, objective="evidence", priors=pm_priors)
    lp, _ = ops.bhc_log_evidence(X, res.merges, 1.7, likelihood="bernoulli", a=0.8, b=1.2)
    logp_ev = m_ev.compile_logp(jacobian=False)(point)
    assert float(logp_ev) == pytest.approx(float(lp.eval()) + prior, rel=1e-10)
    fixed = bhc.model(X, res.merges, priors={})
    assert fixed.free_RVs == []


@pytest.mark.filterwarnings("ignore:`find_MAP` will return:FutureWarning")
@pytest.mark.parametrize("objective", ["evidence", "lower_bound"])
def test_model_find_map_matches_grid_optimum(objective):
    # flat prior on alpha: find_MAP = the maximiser of the objective, found on a grid
    X = _small_binary()
    res = bhc.greedy(X)
    m = bhc.model(X, res, priors={"alpha": pm.HalfFlat.dist()}, objective=objective)
    with m:
        mp = pm.find_MAP(
            progressbar=False, initvals={"alpha": 1.0}, jitter=False, return_inferencedata=False
        )
    theta = np.linspace(-6, 6, 2001)
    H = cj.pack_hyper("bernoulli", (res.hyper["a"], res.hyper["b"]))
    ps = cj.point_stats(0, X)
    ev = [tree_objective(ps, res.merges, math.exp(u), H, objective) for u in theta]
    assert math.log(float(mp["alpha"])) == pytest.approx(theta[int(np.argmax(ev))], abs=0.02)


def test_nuts_alpha_posterior_matches_quadrature():
    X = _small_binary()
    res = bhc.greedy(X)
    prior = stats.lognorm(1.5)
    m = bhc.model(X, res, priors={"alpha": pm.LogNormal.dist(0.0, 1.5)})
    dt = zoo_fit(m, method="nuts", draws=500, tune=500, chains=4, random_seed=3, progressbar=False)
    summ = az.summary(dt, var_names=["alpha"], kind="diagnostics")
    assert float(summ["r_hat"].max()) <= 1.01
    # exact 1-D posterior of log alpha by quadrature on a fine grid
    H = cj.pack_hyper("bernoulli", (res.hyper["a"], res.hyper["b"]))
    ps = cj.point_stats(0, X)
    u = np.linspace(-8, 8, 4001)
    lp = np.array([tree_objective(ps, res.merges, math.exp(v), H, "lower_bound") for v in u])
    lp += prior.logpdf(np.exp(u)) + u
    w = np.exp(lp - lp.max())
    w /= w.sum()
    mean_true = float(np.sum(w * u))
    sd_true = math.sqrt(float(np.sum(w * u**2)) - mean_true**2)
    la = np.log(dt.posterior["alpha"].values)
    ess = float(az.ess(dt, var_names=["alpha"])["alpha"])  # ESS is invariant to log
    mcse = sd_true / math.sqrt(ess)
    assert abs(la.mean() - mean_true) < 4 * mcse + 1e-3
    assert la.std() == pytest.approx(sd_true, rel=0.15)


@pytest.mark.slow
def test_nuts_joint_hyperparameters_converge():
    X = _small_binary()
    res = bhc.greedy(X)
    m = bhc.model(X, res)
    dt = zoo_fit(
        m, method="nuts", draws=2000, tune=2000, chains=4, random_seed=5, progressbar=False
    )
    summ = az.summary(dt, var_names=["alpha", "a_scale", "b_scale"], kind="diagnostics")
    assert float(summ["r_hat"].max()) <= 1.01


# -------------------------------------------------------------------------- learn
@pytest.mark.parametrize("objective", ["lower_bound", "evidence"])
def test_learn_improves_objective_and_reaches_stationary_point(objective):
    rng = np.random.default_rng(4)
    X, z = binary_mixture(60, 16, 3, 0.1, rng)
    start = bhc.greedy(X, alpha=1.0, hyper={"a": 1.0, "b": 1.0})
    res = bhc.learn(
        X, alpha=1.0, hyper={"a": 1.0, "b": 1.0}, max_iter=5, objective=objective, priors=False
    )
    ps = cj.point_stats(0, X)

    def obj(r):
        H = cj.pack_hyper("bernoulli", (r.hyper["a"], r.hyper["b"]))
        return tree_objective(ps, r.merges, r.alpha, H, objective)

    assert obj(res) > obj(start)
    assert len(res.history) >= 1
    opt = [h["optimised_objective"] for h in res.history]
    assert obj(res) == pytest.approx(max(opt), rel=1e-9)
    # stationary in (log alpha, log a, log b) for the returned tree

    def ev(la, lA, lB):
        H = cj.pack_hyper("bernoulli", cj.bernoulli_hyper(16, math.exp(lA), math.exp(lB)))
        return tree_objective(ps, res.merges, math.exp(la), H, objective)

    base = np.array([math.log(res.alpha), math.log(res.hyper["a"][0]), math.log(res.hyper["b"][0])])
    for k in range(3):
        e = np.zeros(3)
        e[k] = 1e-4
        g = (ev(*(base + e)) - ev(*(base - e))) / 2e-4
        assert abs(g) < 0.05
    assert purity(z, res.cut()) > 0.9


def test_learn_gaussian_subset():
    rng = np.random.default_rng(41)
    X = np.concatenate([rng.normal(c, 0.5, (15, 2)) for c in (0.0, 5.0)])
    res = bhc.learn(
        X, likelihood="gaussian", params=("alpha", "kappa0"), max_iter=3, priors=False
    )
    assert np.isfinite(res.log_evidence) and res.history
    assert res.dpm_lower_bound() >= bhc.greedy(X, likelihood="gaussian").dpm_lower_bound() - 1e-9


# -------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"X": [[0, np.nan], [1, 0]]}, "NaN"),
        ({"X": [[0, 2], [1, 0]]}, "binary"),
        ({"X": [[1, -1], [1, 0]], "likelihood": "multinomial"}, "non-negative"),
        ({"X": [[1, 0.5], [1, 0]], "likelihood": "multinomial"}, "integer"),
        ({"X": [[0, 1]]}, "at least 2"),
        ({"X": [0, 1, 1]}, "2-D"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": -2.0}, "alpha"),
        ({"likelihood": "poisson"}, "likelihood"),
        ({"hyper": {"c": 1.0}}, "hyper"),
        ({"hyper": {"a": 0.0}}, "a:"),
        ({"subsample": 1, "method": "randomized"}, "subsample"),
        ({"split": "middle", "method": "randomized"}, "split"),
        ({"filter_prior": "x", "method": "randomized"}, "filter_prior"),
        ({"filter_predictive": "x", "method": "randomized"}, "filter_predictive"),
        ({"em_iterations": -1, "method": "embhc"}, "em_iterations"),
        ({"leaf_size": 1, "method": "randomized", "subsample": 2}, "leaf_size"),
    ],
)
def test_estimators_bad_input(kwargs, match):
    args = {"X": [[0, 1], [1, 1], [0, 0]]}
    args.update(kwargs)
    X = args.pop("X")
    estimator = getattr(bhc, args.pop("method", "greedy"))
    with pytest.raises(ValueError, match=match):
        estimator(X, **args)


@pytest.mark.parametrize("method", ["greedy", "randomized", "embhc"])
def test_estimators_name_hyperparameters_at_which_the_evidence_is_nan(method):
    """kappa0 = 1e40 is legal but the NIW posterior scale is then not numerically positive
    definite: the marginals are NaN (embhc's filter states raise LinAlgError), and the
    estimators refuse with a message naming the hyperparameters (before the NaN kernels:
    LinAlgError "Matrix is not positive definite."; with them and no check, greedy and
    randomized returned a tree with evidence NaN)."""
    X = np.random.default_rng(0).normal(size=(8, 2))
    with pytest.raises(ValueError, match="hyper: the evidence cannot be computed.*kappa0 or S0"):
        getattr(bhc, method)(X, likelihood="gaussian", hyper={"kappa0": 1e40})


@pytest.mark.parametrize("method", ["randomized", "embhc", "learn"])
def test_bad_random_seed_is_named(method):
    # before: numpy's "SeedSequence expects int or sequence of ints for entropy not x"
    with pytest.raises(TypeError, match="random_seed must be None, an integer"):
        getattr(bhc, method)([[0, 1], [1, 1], [0, 0]], random_seed="x")


def test_fit_is_a_deprecated_alias_of_the_estimators():
    X = np.array([[0, 1], [1, 1], [0, 0], [1, 0]], dtype=float)
    for method in ("greedy", "randomized", "embhc"):
        with pytest.warns(DeprecationWarning, match=f"bhc.{method}"):
            old = bhc.fit(X, method=method, random_seed=3, subsample=2)
        kwargs = {} if method == "greedy" else {"random_seed": 3, "subsample": 2}
        new = getattr(bhc, method)(X, **kwargs)
        np.testing.assert_array_equal(old.merges, new.merges)
        assert old.log_evidence == new.log_evidence and old.method == method
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="method"):
        bhc.fit(X, method="exact")
    with pytest.raises(dataclasses.FrozenInstanceError):
        new.alpha = 2.0


def test_learn_keyword_learn_is_deprecated():
    X = np.array([[0, 1], [1, 1], [0, 0], [1, 0]], dtype=float)
    with pytest.warns(DeprecationWarning, match="params"):
        old = bhc.learn(X, learn=("alpha",), max_iter=2)
    new = bhc.learn(X, params=("alpha",), max_iter=2)
    assert old.alpha == new.alpha
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="params"):
        bhc.learn(X, learn=("alpha",), params=("alpha",))


def test_model_and_learn_bad_input():
    X = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match="merges"):
        bhc.model(X, np.array([[0, 1], [0, 2]]))
    with pytest.raises(ValueError, match="tree"):
        bhc.model(X, bhc.greedy(X[:2]))
    with pytest.raises(ValueError, match="priors"):
        bhc.model(X, bhc.greedy(X), priors={"gamma": pm.HalfNormal.dist()})
    with pytest.raises(TypeError, match="priors"):
        bhc.model(X, bhc.greedy(X), priors={"alpha": 1.0})
    with pytest.raises(ValueError, match="params"):
        bhc.learn(X, params=("m0",))
    with pytest.raises(ValueError, match="objective"):
        bhc.learn(X, objective="posterior")
    with pytest.raises(ValueError, match="objective"):
        bhc.model(X, bhc.greedy(X), objective="posterior")
    with pytest.raises(ValueError, match="max_iter"):
        bhc.learn(X, max_iter=0)
    with pytest.raises(ValueError, match="threshold"):
        bhc.greedy(X).cut(threshold=2.0)
    with pytest.raises(ValueError, match="x_new"):
        bhc.greedy(X).predictive_logpdf([0.0, 1.0, 1.0])


@pytest.fixture(scope="module")
def cli_model():
    """The model `ppzoo fit bhc` samples: the registry's factory on its default data set."""
    from pp_models import datasets
    from pp_models.registry import get_model

    entry = get_model("bhc")
    return entry.build(datasets.load(entry.default_dataset), **entry.defaults)


def test_registered_for_the_cli(cli_model):
    m = cli_model
    assert {v.name for v in m.free_RVs} == {"alpha", "kappa0_scale", "nu0_scale", "S0_scale"}
    assert np.isfinite(m.compile_logp()(m.initial_point()))


@pytest.mark.parametrize("mode", ["NUMBA", "py"])
def test_cli_model_logp_and_gradient_at_extreme_points_are_nan_not_an_error(cli_model, mode):
    """`ppzoo fit bhc --method nuts --seed 1 --draws 200 --tune 200 --chains 2 --trace P`
    (PyMC's NUTS) stopped with "BHCEvidenceGrad: the Numba kernel raised an exception":
    its trajectories reached legal points where the NIW posterior scale is numerically not
    positive definite. There the log density and its gradient are NaN, which NUTS takes
    as a divergence, on both backends (the pure-Python one raised LinAlgError)."""
    m = cli_model
    kwargs = {"mode": PYTHON_MODE} if mode == "py" else {}
    logp, dlogp = m.compile_logp(**kwargs), m.compile_dlogp(**kwargs)
    for name, value in (("kappa0_scale_log__", 100.0), ("S0_scale_log__", -30.0)):
        point = {**m.initial_point(), name: np.array(value)}
        assert np.isnan(logp(point)), name
        assert np.all(np.isnan(dlogp(point))), name


@pytest.mark.slow
def test_cli_nuts_run_goes_on_through_nan_points():
    """The reported run itself, through `fit` (PyMC's NUTS, as with --trace): it raised
    before; now it finishes (about 30 s)."""
    from pp_models import datasets
    from pp_models.registry import get_model

    entry = get_model("bhc")
    m = entry.build(datasets.load(entry.default_dataset), **entry.defaults)
    dt = zoo_fit(m, method="nuts", nuts_sampler="pymc", draws=200, tune=200, chains=2,
                 cores=1, random_seed=1, progressbar=False)
    assert dt.posterior.sizes["draw"] == 200
    assert np.all(np.isfinite(dt.posterior["kappa0_scale"].values))
