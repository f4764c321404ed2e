"""MAP learning of BHC hyperparameters with priors: the priors' log
densities and gradients, learn's objective = bhc.model's transformed log density, the
MAP against a brute-force grid, and the small-n failures of type-II maximum likelihood
(α → 0 on n = 8, a Beta hyperparameter → 0 on n = 9) that the priors fix."""

import math
import warnings

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from custom_ops import conjugate as cj
from pp_models import bhc
from pp_models.bhc.learning import THETA_BOUND, _evidence_function, _EvidenceFunction
from pp_models.bhc.priors import resolve_priors
from tests.helpers.backends import PYTHON_MODE
from tests.oracles.mixtures import block_partitions
from tests.pp_models.bhc.cases import binary_mixture, log_ml, tree_objective


def _bernoulli_objective(X, merges, alpha, a, b, point_stats=None):
    """Corollary 3.1's bound by the NumPy reference recursion."""
    H = cj.pack_hyper("bernoulli", (np.asarray(a, float), np.asarray(b, float)))
    ps = cj.point_stats(0, X) if point_stats is None else point_stats
    return tree_objective(ps, merges, alpha, H, "lower_bound")


def _norm_logpdf(u, sigma):
    return -0.5 * (u / sigma) ** 2 - math.log(sigma * math.sqrt(2 * math.pi))


def _exact_dpm_curve(X, hyper, alphas):
    """Exact DPM log evidence (Lemma 3.1, all Bell(n) partitions) on a grid of α."""
    n, cache, ms, cs = len(X), {}, [], []
    for part in block_partitions(list(range(n))):
        c = 0.0
        for block in part:
            key = tuple(block)
            if key not in cache:
                cache[key] = math.lgamma(len(block)) + log_ml("bernoulli", X[block], hyper)
            c += cache[key]
        ms.append(len(part))
        cs.append(c)
    ms, cs = np.array(ms), np.array(cs)
    la = np.log(alphas)
    return (
        special.logsumexp(ms[None] * la[:, None] + cs[None], axis=1)
        - special.gammaln(n + alphas)
        + special.gammaln(alphas)
    )


# ---------------------------------------------------------------------- prior densities
@pytest.mark.parametrize(
    ("prior", "reference"),
    [
        (bhc.LogNormal(0.3, 1.5), lambda u: stats.norm(0.3, 1.5).logpdf(u)),
        # density of u = log x: Gamma density of x times the Jacobian e^u
        (bhc.Gamma(2.0, 0.5), lambda u: stats.gamma(2.0, scale=2.0).logpdf(np.exp(u)) + u),
    ],
)
def test_prior_log_density_of_log_and_gradient(prior, reference):
    u = np.array([-3.0, -0.2, 0.0, 1.7])
    np.testing.assert_allclose(prior.log_density_of_log(u), reference(u), rtol=1e-12)
    uvar = pt.dvector("u")
    f = pytensor.function([uvar], prior.log_density_of_log(uvar))
    np.testing.assert_allclose(f(u), reference(u), rtol=1e-12)
    # PyTensor's gradient of the formula, on the Python backend (no Numba graph to compile)
    pytensor.gradient.verify_grad(
        lambda v: prior.log_density_of_log(v).sum(), [u], rng=np.random.default_rng(0),
        mode=PYTHON_MODE,
    )
    # PyMC's transformed (log) density of the same prior is the same function (PyMC's
    # LogNormal rounds its normalising constant at ~1e-8)
    rv = prior.dist()
    logp = pm.logp(rv, pt.exp(uvar)) + uvar
    np.testing.assert_allclose(pytensor.function([uvar], logp)(u), reference(u), atol=1e-7)


def test_learn_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    X, _ = binary_mixture(20, 8, 2, 0.1, rng)
    tree = bhc.greedy(X)
    names = ("alpha", "a", "b")
    priors = resolve_priors({"alpha": bhc.Gamma(2.0, 1.0)}, names)
    fn = _EvidenceFunction(X, "bernoulli", 1.3, tree.hyper, names, tree.merges,
                           "lower_bound", priors)
    theta = np.array([0.4, -0.3, 0.2])
    _value, grad = fn.fn(theta)
    h = 1e-5
    for k in range(3):
        e = np.zeros(3)
        e[k] = h
        fd = (fn.fn(theta + e)[0] - fn.fn(theta - e)[0]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-5, abs=1e-7)


def test_model_log_density_equals_learn_objective():
    # bhc.model's default priors are learn's: its transformed log density at the log
    # values is the reference bound plus the priors' log densities of the logs
    rng = np.random.default_rng(2)
    X, _ = binary_mixture(20, 8, 2, 0.1, rng)
    tree = bhc.greedy(X)
    m = bhc.model(X, tree)
    assert {v.name for v in m.free_RVs} == {"alpha", "a_scale", "b_scale"}
    u, v, w = 0.7, -0.4, 0.25
    logp = m.compile_logp(jacobian=True)(
        {"alpha_log__": u, "a_scale_log__": v, "b_scale_log__": w}
    )
    ref = (
        _bernoulli_objective(X, tree.merges, math.exp(u), tree.hyper["a"] * math.exp(v),
                             tree.hyper["b"] * math.exp(w))
        + stats.norm(0, 1.5).logpdf(u)
        + stats.norm(0, 1).logpdf(v)
        + stats.norm(0, 1).logpdf(w)
    )
    # PyMC's LogNormal normalising constant is rounded at ~1e-8 per variable
    assert float(logp) == pytest.approx(ref, abs=1e-7)
    fn = _EvidenceFunction(X, "bernoulli", 1.0, tree.hyper, ("alpha", "a", "b"), tree.merges,
                           "lower_bound", resolve_priors(None, ("alpha", "a", "b")))
    assert float(fn.fn(np.array([u, v, w]))[0]) == pytest.approx(ref, rel=1e-10)


def test_gaussian_scale_priors_agree_between_model_and_learn():
    # nu0 is scaled on its excess over d - 1 in both code paths
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(c, 0.5, (8, 2)) for c in (0.0, 4.0)])
    tree = bhc.greedy(X, likelihood="gaussian")
    names = ("alpha", "kappa0", "nu0", "S0")
    m = bhc.model(X, tree, likelihood="gaussian")
    assert {v.name for v in m.free_RVs} == {f"{k}_scale" for k in names[1:]} | {"alpha"}
    theta = np.array([0.3, -0.5, 0.8, -0.2])
    logp = m.compile_logp(jacobian=True)(
        {"alpha_log__": theta[0], **{f"{k}_scale_log__": t for k, t in zip(names[1:], theta[1:])}}
    )
    fn = _EvidenceFunction(X, "gaussian", 1.0, tree.hyper, names, tree.merges, "lower_bound",
                           resolve_priors(None, names))
    assert float(fn.fn(theta)[0]) == pytest.approx(float(logp), abs=1e-7)
    nu0 = fn.values(theta)["nu0"]
    assert float(nu0) == pytest.approx(1.0 + (tree.hyper["nu0"] - 1.0) * math.exp(0.8))


# ---------------------------------------------------------------------- MAP = grid argmax
def test_map_alpha_equals_grid_maximiser_1d():
    rng = np.random.default_rng(4)
    X, _ = binary_mixture(24, 10, 3, 0.1, rng)
    prior = bhc.Gamma(2.0, 1.0)
    res = bhc.learn(X, params=("alpha",), priors={"alpha": prior}, max_iter=1)
    tree = bhc.greedy(X)  # max_iter=1: the tree is the one built at the initial values
    np.testing.assert_array_equal(res.merges, tree.merges)
    u = np.linspace(-6.0, 6.0, 4801)
    post = [
        _bernoulli_objective(X, tree.merges, math.exp(t), tree.hyper["a"], tree.hyper["b"])
        for t in u
    ] + stats.gamma(2.0).logpdf(np.exp(u)) + u
    assert math.log(res.alpha) == pytest.approx(u[int(np.argmax(post))], abs=0.005)


def test_map_alpha_and_a_equal_grid_maximiser_2d():
    rng = np.random.default_rng(5)
    X, _ = binary_mixture(24, 10, 3, 0.1, rng)
    res = bhc.learn(X, params=("alpha", "a"), max_iter=1)
    tree = bhc.greedy(X)
    base_a, b = tree.hyper["a"], tree.hyper["b"]
    ps = cj.point_stats(0, X)

    def post(u, v):
        return (
            _bernoulli_objective(X, tree.merges, math.exp(u), base_a * math.exp(v), b, ps)
            + _norm_logpdf(u, 1.5)
            + _norm_logpdf(v, 1.0)
        )

    best = (0.0, 0.0)
    for half, step in ((3.0, 0.25), (0.15, 0.01)):  # coarse grid, then a fine one around it
        us = best[0] + np.arange(-half, half + step / 2, step)
        vs = best[1] + np.arange(-half, half + step / 2, step)
        vals = np.array([[post(u, v) for v in vs] for u in us])
        i, j = np.unravel_index(int(np.argmax(vals)), vals.shape)
        best = (us[i], vs[j])
    assert math.log(res.alpha) == pytest.approx(best[0], abs=0.015)
    assert math.log(res.hyper["a"][0] / base_a[0]) == pytest.approx(best[1], abs=0.015)


# ---------------------------------------------------------------------- small-n failures
# n = 8, Beta(1, 1) prior, 6 bits, two prototypes with bits flipped: Corollary 3.1's
# bound is maximised at α -> 0 (type-II ML ends <= 1.1e-5, mostly on the e^-12 box) while
# the exact DPM evidence peaks at α in [0.58, 0.95] (grid argmax). Measured
# (ML / MAP / exact-DPM MAP under the same LogNormal(0, 1.5) prior): 1.1e-5 / 0.57 /
# 0.91, 6.1e-6 / 0.32 / 1.0, 6.1e-6 / 0.34 / 0.95, 6.1e-6 / 0.36 / 0.82.
SMALL_SETS = [(0.2, 3), (0.3, 1), (0.3, 2), (0.2, 2)]


def _small_set(flip, seed):
    X, _ = binary_mixture(8, 6, 2, flip, np.random.default_rng(seed))
    return X


def _check_small_set(flip, seed):
    """ML ends at α <= 1e-3; the MAP is in (0.1, 10), off the box, without a warning,
    and within e^1.5 of the exact DPM evidence's MAP under the same prior."""
    X = _small_set(flip, seed)
    hyper = {"a": 1.0, "b": 1.0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the ML run may end on the box
        ml = bhc.learn(X, hyper=hyper, params=("alpha",), priors=False, max_iter=2)
    assert ml.alpha <= 1e-3  # the failure the prior fixes
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        mp = bhc.learn(X, hyper=hyper, params=("alpha",), max_iter=2)
    assert all(h["at_bound"] == () for h in mp.history)
    assert 0.1 < mp.alpha < 10.0
    grid = np.exp(np.linspace(-6.0, 4.0, 201))
    exact = _exact_dpm_curve(X, (np.ones(6), np.ones(6)), grid)
    exact_map = grid[int(np.argmax(exact + stats.norm(0, 1.5).logpdf(np.log(grid))))]
    # the bound's MAP and the exact evidence's MAP agree to a factor e^1.5
    assert abs(math.log(mp.alpha / exact_map)) < 1.5, (mp.alpha, exact_map)


@pytest.mark.parametrize(("flip", "seed"), SMALL_SETS)
def test_small_n_map_alpha_stays_off_zero(flip, seed):
    _check_small_set(flip, seed)


def test_small_n_beta_hyperparameters_stay_finite():
    # eight all-zero rows and one all-one row: type-II ML drives b to the box
    # (test_learn_bounds.py); the MAP keeps a and b within a factor e^4 of the
    # empirical values, with no warning
    X = np.r_[np.zeros((8, 3)), np.ones((1, 3))]
    base = bhc.default_hyper(X, "bernoulli")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = bhc.learn(X, max_iter=3)
    for k in ("a", "b"):
        scale = res.hyper[k][0] / base[k][0]
        assert math.exp(-4) < scale < math.exp(4), (k, scale)
        assert abs(math.log(scale)) < THETA_BOUND
    assert 0.05 < res.alpha < 20
    assert res.history[-1]["log_prior"] < 0


# ---------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("make", "error", "match"),
    [
        (lambda: bhc.LogNormal(0.0, 0.0), ValueError, "sigma"),
        (lambda: bhc.LogNormal(0.0, -1.0), ValueError, "sigma"),
        (lambda: bhc.LogNormal(math.inf, 1.0), ValueError, "mu"),
        (lambda: bhc.Gamma(0.0, 1.0), ValueError, "shape"),
        (lambda: bhc.Gamma(1.0, -2.0), ValueError, "rate"),
        (lambda: bhc.Gamma("1", 1.0), TypeError, "shape"),
    ],
)
def test_prior_parameters_bad_input(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_learn_and_model_priors_bad_input():
    X = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
    with pytest.raises(ValueError, match="'c'"):
        bhc.learn(X, priors={"c": bhc.LogNormal()})
    with pytest.raises(ValueError, match="'a'"):
        bhc.learn(X, params=("alpha",), priors={"a": bhc.LogNormal()})
    with pytest.raises(TypeError, match=r"priors\['a'\]"):
        bhc.learn(X, priors={"a": 1.0})
    with pytest.raises(TypeError, match="priors"):
        bhc.learn(X, priors="default")
    Xg = np.array([[0.0, 1.0], [1.0, 1.5], [0.2, 0.1]])
    with pytest.raises(ValueError, match=r"priors\['m0'\]"):
        bhc.model(Xg, likelihood="gaussian", priors={"m0": bhc.LogNormal()})
    with pytest.raises(TypeError, match=r"priors\['a'\]"):
        bhc.model(X, priors={"a": "LogNormal"})


def test_second_learn_on_new_data_reuses_the_compiled_objective(monkeypatch):
    # the data, merges, initial alpha and hyperparameter bases are shared variables, so a
    # second learn on other data of the same width compiles nothing; its objective is
    # still the NumPy reference bound of the new data (not the first data's)
    rng = np.random.default_rng(7)
    X1, _ = binary_mixture(18, 6, 2, 0.1, rng)
    X2, _ = binary_mixture(23, 6, 3, 0.1, rng)
    names = ("alpha", "a", "b")
    bhc.learn(X1, params=names, max_iter=1)
    compiled = []
    real_function = pytensor.function

    def counting_function(*args, **kwargs):
        compiled.append(args)
        return real_function(*args, **kwargs)

    monkeypatch.setattr(pytensor, "function", counting_function)
    res = bhc.learn(X2, params=names, max_iter=2)
    assert compiled == []
    # the reused objective at the learned values is the reference bound of X2 plus the
    # default priors' log densities of the logs (alpha LogNormal(0, 1.5), the scale
    # factors on the default a and b LogNormal(0, 1))
    tree = bhc.greedy(X2)
    evfn = _evidence_function(X2, "bernoulli", 1.0, tree.hyper, names, res.merges,
                              "lower_bound", resolve_priors(None, names))
    assert compiled == []
    theta = np.array([math.log(res.alpha), math.log(res.hyper["a"][0] / tree.hyper["a"][0]),
                      math.log(res.hyper["b"][0] / tree.hyper["b"][0])])
    ref = (_bernoulli_objective(X2, res.merges, res.alpha, res.hyper["a"], res.hyper["b"])
           + _norm_logpdf(theta[0], 1.5) + _norm_logpdf(theta[1], 1.0)
           + _norm_logpdf(theta[2], 1.0))
    assert float(evfn.fn(theta)[0]) == pytest.approx(ref, rel=1e-10)
    # learn returns its best round, whose optimised value is this objective
    best = max(h["optimised_objective"] for h in res.history)
    assert best == pytest.approx(ref, rel=1e-10)
