"""The DPM posterior predictive under Pitman-Yor seating, against enumeration.

The expected values are computed here from first principles, independently of the
package: the seating probabilities of a new row by enumerating its K + 1 possible tables
and taking ratios of the Pitman-Yor exchangeable partition probability function (Pitman
2006, Eq. 3.6), and each table's predictive density as a ratio of Normal-Gamma marginal
likelihoods (Murphy 2007, "Conjugate Bayesian analysis of the Gaussian distribution",
Eq. 95).
"""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import xarray as xr
from scipy import stats
from scipy.special import gammaln

from pp_models import dpm
from pp_models.distributions import CollapsedMultinomial
from pp_models.dpm.hyperpriors import learned_hyperparameters, learned_variable_names
from pp_models.dpm.spec import get_spec


def log_eppf(sizes, alpha, discount):
    """log P(partition with these block sizes) under PY(alpha, discount)."""
    sizes = np.asarray(sizes)
    n, K = sizes.sum(), sizes.size
    out = sum(np.log(alpha + i * discount) for i in range(1, K))
    out -= sum(np.log(alpha + i) for i in range(1, n))
    for nk in sizes:
        out += sum(np.log(j - discount) for j in range(1, nk))
    return out


def log_normal_gamma_evidence(x, m0, kappa0, a0, b0):
    """log ∫ prod_i N(x_i | mu, 1/tau) NG(mu, tau | m0, kappa0, a0, b0) (1-D)."""
    k0 = kappa0
    x = np.asarray(x, dtype=float)
    n = x.size
    if n == 0:
        return 0.0
    xbar = x.mean()
    kn, an = k0 + n, a0 + n / 2
    bn = b0 + 0.5 * np.sum((x - xbar) ** 2) + k0 * n * (xbar - m0) ** 2 / (2 * kn)
    return (gammaln(an) - gammaln(a0) + a0 * np.log(b0) - an * np.log(bn)
            + 0.5 * np.log(k0 / kn) - n / 2 * np.log(2 * np.pi))


def test_pitman_yor_predictive_density_matches_enumeration():
    n, alpha, discount = 10, 0.5, 0.6
    X = np.array([-2.1, -1.8, -2.4, -1.9, 0.1, 0.3, -0.2, 2.2, 2.6, 1.9])[:, None]
    z = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
    hyper = dict(m0=0.0, kappa0=0.3, a0=2.0, b0=0.5)
    m = dpm.model(X, likelihood="diag_gaussian", alpha=alpha, discount=discount,
                  prior={k: np.array([v]) for k, v in hyper.items()})
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"z": (("chain", "draw", "obs"), z[None, None, :])})})
    grid = np.array([-2.0, -1.0, 0.5, 3.5])
    got = dpm.predictive_density(dt, m, dims=0, grid=grid)["density"].values

    sizes = np.bincount(z)
    base = log_eppf(sizes, alpha, discount)
    expected = np.zeros(grid.size)
    total_seating = 0.0
    for table in range(sizes.size + 1):  # every way to seat row n + 1
        new_sizes = np.append(sizes, 0)
        new_sizes[table] += 1
        seat = np.exp(log_eppf(new_sizes[new_sizes > 0], alpha, discount) - base)
        total_seating += seat
        rows = X[z == table, 0]
        for g, x in enumerate(grid):
            expected[g] += seat * np.exp(
                log_normal_gamma_evidence(np.append(rows, x), **hyper)
                - log_normal_gamma_evidence(rows, **hyper))
    assert total_seating == pytest.approx(1.0, rel=1e-12)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # the Dirichlet-process weights (the former bug) would be far off here
    assert abs(alpha / (n + alpha) - (alpha + sizes.size * discount) / (n + alpha)) > 0.1


def test_collapsed_multinomial_rejects_fractional_counts():
    z = np.array([0, 1, 0])
    dist = CollapsedMultinomial.dist(z, concentration=np.ones(2), n_trials=2)
    fractional = np.array([[0.5, 1.5], [1.0, 1.0], [2.0, 0.0]])
    with pytest.raises(ValueError, match="whole numbers"):
        pm.logp(dist, fractional)
    value = pt.matrix("value")
    fn = pm.logp(dist, value).eval
    assert fn({value: fractional}) == -np.inf
    assert np.isfinite(fn({value: np.array([[1.0, 1.0], [1.0, 1.0], [2.0, 0.0]])}))


# ------------------------------------------------------------------------------------
# predictive_density over several draws, every representation and likelihood it
# supports, 1-D and 2-D grids, against references written here from textbook formulas:
# seating probabilities by EPPF ratios (above), conjugate predictives as Student-t
# densities with the centred-form posteriors (Murphy 2007 Eqs. 250-258 for the NIW; the
# Normal-Gamma one per dimension), normal mixtures summed directly with scipy.
def _labels_dt(Z, alphas=None, **extra):
    data = {"z": (("chain", "draw", "obs"), np.asarray(Z)[None])}
    if alphas is not None:
        data["alpha"] = (("chain", "draw"), np.asarray(alphas, dtype=float)[None])
    for name, (dims, values) in extra.items():
        data[name] = (("chain", "draw", *dims), np.asarray(values, dtype=float)[None])
    return xr.DataTree.from_dict({"posterior": xr.Dataset(data)})


def _seating(sizes, alpha, discount):
    """Probabilities of a new row joining each table and a new one, by EPPF ratios."""
    base = log_eppf(sizes, alpha, discount)
    out = []
    for table in range(sizes.size + 1):
        new_sizes = np.append(sizes, 0)
        new_sizes[table] += 1
        out.append(np.exp(log_eppf(new_sizes[new_sizes > 0], alpha, discount) - base))
    return np.array(out)


def _niw_marginal_pdf(rows, pts, cols, m0, kappa0, nu0, S0):
    d = m0.size
    n = rows.shape[0]
    xbar = rows.mean(0) if n else np.zeros(d)
    C = (rows - xbar).T @ (rows - xbar)
    kn, vn = kappa0 + n, nu0 + n
    mn = (kappa0 * m0 + n * xbar) / kn
    Sn = S0 + C + kappa0 * n / kn * np.outer(xbar - m0, xbar - m0)
    dof = vn - d + 1
    c = list(cols)
    shape = (Sn * (kn + 1) / (kn * dof))[np.ix_(c, c)]
    return stats.multivariate_t(loc=mn[c], shape=shape, df=dof).pdf(pts).reshape(-1)


def _normal_gamma_marginal_pdf(rows, pts, cols, m0, kappa0, a0, b0):
    n = rows.shape[0]
    xbar = rows.mean(0) if n else np.zeros(m0.size)
    kn, an = kappa0 + n, a0 + n / 2
    mn = (kappa0 * m0 + n * xbar) / kn
    bn = b0 + 0.5 * ((rows - xbar) ** 2).sum(0) + kappa0 * n * (xbar - m0) ** 2 / (2 * kn)
    scale = np.sqrt(bn * (kn + 1) / (an * kn))
    c = list(cols)
    return np.exp(stats.t.logpdf(pts, df=2 * an[c], loc=mn[c], scale=scale[c]).sum(-1))


def _grid(dims):
    axes = [np.linspace(-3.0, 3.5, 5), np.linspace(-2.5, 2.0, 4)][: len(dims)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return axes, np.stack([g.reshape(-1) for g in mesh], axis=1), mesh[0].shape


_X3 = np.array([[-2.1, 0.4, 1.0], [-1.8, 0.9, 0.2], [-2.4, -0.3, 0.5], [0.1, 1.5, -1.0],
                [0.3, 1.1, -0.4], [-0.2, 2.0, -0.8], [2.2, -1.2, 0.3], [2.6, -0.7, 0.9]])
_Z3 = np.array([[0, 0, 0, 1, 1, 1, 2, 2], [0, 0, 1, 1, 1, 1, 1, 1],
                [0, 1, 0, 2, 2, 3, 0, 1]])


@pytest.mark.parametrize("dims", [(1,), (0, 2), (2, 0)])
@pytest.mark.parametrize(("likelihood", "discount"), [
    ("gaussian", 0.0), ("gaussian", 0.4), ("diag_gaussian", 0.0), ("diag_gaussian", 0.4)])
def test_crp_conjugate_predictive_density_matches_reference(likelihood, discount, dims):
    alphas = np.array([0.7, 1.9, 0.4])
    if likelihood == "gaussian":
        prior = dict(m0=np.array([0.2, -0.1, 0.0]), kappa0=0.5, nu0=4.5,
                     S0=np.array([[1.0, 0.3, 0.0], [0.3, 2.0, 0.4], [0.0, 0.4, 1.5]]))
        pdf = _niw_marginal_pdf
    else:
        prior = dict(m0=np.array([0.2, -0.1, 0.0]), kappa0=np.array([0.5, 0.8, 0.3]),
                     a0=np.array([2.0, 1.5, 3.0]), b0=np.array([0.7, 1.2, 0.9]))
        pdf = _normal_gamma_marginal_pdf
    if discount > 0:  # Pitman-Yor: alpha fixed (the Gamma prior's step needs d = 0)
        alphas = np.full(3, 0.8)
        m = dpm.model(_X3, likelihood=likelihood, alpha=0.8, discount=discount, prior=prior)
        dt = _labels_dt(_Z3)
    else:  # a random alpha, read per draw from the posterior
        m = dpm.model(_X3, likelihood=likelihood, alpha=(2.0, 1.0), prior=prior)
        dt = _labels_dt(_Z3, alphas)
    axes, pts, shape = _grid(dims)
    got = dpm.predictive_density(dt, m, dims=dims if len(dims) > 1 else dims[0],
                                 grid=axes if len(dims) > 1 else axes[0])
    expected = np.zeros(pts.shape[0])
    for z, alpha in zip(_Z3, alphas, strict=True):
        sizes = np.bincount(z)
        seat = _seating(sizes, alpha, discount)
        for table, p in enumerate(seat):
            expected += p * pdf(_X3[z == table], pts, dims, **prior)
    expected /= len(_Z3)
    names = [f"x{j}" for j in dims]
    assert got["density"].dims == tuple(names)
    for name, ax in zip(names, axes, strict=True):
        np.testing.assert_array_equal(got[name].values, ax)
    assert got.attrs["draws_used"] == 3
    np.testing.assert_allclose(got["density"].values, expected.reshape(shape), rtol=1e-12)


def test_crp_predictive_density_with_learned_hyperparameters_per_draw():
    m = dpm.model(_X3, likelihood="diag_gaussian", hyperprior=True)
    spec = get_spec(m)
    names = learned_variable_names(spec)
    assert names  # the base measure differs per draw
    rng = np.random.default_rng(5)
    values = {v: rng.uniform(0.5, 2.5, size=3) for v in names}
    dt = _labels_dt(_Z3, **{v: ((), x) for v, x in values.items()})
    axes, pts, shape = _grid((0, 1))
    got = dpm.predictive_density(dt, m, dims=(0, 1), grid=axes)["density"].values
    expected = np.zeros(pts.shape[0])
    for s, z in enumerate(_Z3):
        h = learned_hyperparameters(spec, {v: x[s] for v, x in values.items()})
        hyper = {k: np.asarray(h[k], dtype=float) * np.ones(3)
                 for k in ("m0", "kappa0", "a0", "b0")}
        for table, p in enumerate(_seating(np.bincount(z), spec.alpha, 0.0)):
            expected += p * _normal_gamma_marginal_pdf(_X3[z == table], pts, (0, 1), **hyper)
    np.testing.assert_allclose(got, expected.reshape(shape) / 3, rtol=1e-12)


@pytest.mark.parametrize("dims", [(1,), (2, 0)])
@pytest.mark.parametrize("likelihood", ["diag_gaussian", "normal"])
def test_stick_breaking_predictive_density_matches_direct_sum(likelihood, dims):
    rng = np.random.default_rng(3)
    T, S = 4, 3
    w = rng.dirichlet(np.ones(T), size=S)
    w[1, 2] = 0.0  # an empty component contributes nothing
    mu = rng.normal(size=(S, T, 3))
    sigma = rng.uniform(0.4, 1.5, size=(S, T, 3))
    m = dpm.model(_X3, likelihood=likelihood, truncation=T)
    Z = rng.integers(0, T, size=(S, _X3.shape[0]))
    dt = _labels_dt(Z, w=(("component",), w), mu=(("component", "dim"), mu),
                    sigma=(("component", "dim"), sigma))
    axes, pts, shape = _grid(dims)
    got = dpm.predictive_density(dt, m, dims=dims if len(dims) > 1 else dims[0],
                                 grid=axes if len(dims) > 1 else axes[0])["density"].values
    c = list(dims)
    expected = sum(w[s, k] * np.prod(stats.norm.pdf(pts, mu[s, k, c], sigma[s, k, c]), axis=1)
                   for s in range(S) for k in range(T)) / S
    np.testing.assert_allclose(got, expected.reshape(shape), rtol=1e-12)


@pytest.mark.parametrize("dims", [(0,), (0, 1)])
def test_nonconjugate_crp_predictive_density_matches_direct_sum(dims):
    discount = 0.3
    m = dpm.model(_X3, likelihood="normal", discount=discount)
    rng = np.random.default_rng(4)
    n, S = _X3.shape[0], len(_Z3)
    mu = rng.normal(size=(S, n, 3))
    sigma = rng.uniform(0.4, 1.5, size=(S, n, 3))
    dt = _labels_dt(_Z3, mu=(("slot", "dim"), mu), sigma=(("slot", "dim"), sigma))
    axes, pts, shape = _grid(dims)
    got = dpm.predictive_density(dt, m, dims=dims if len(dims) > 1 else dims[0],
                                 grid=axes if len(dims) > 1 else axes[0])["density"].values
    h = get_spec(m).prior
    c = list(dims)
    # the new table's prior predictive: the documented Monte Carlo average over 500 draws
    # of the base measure from default_rng(0)
    r0 = np.random.default_rng(0)
    mu0 = r0.normal(h["mu_loc"], h["mu_scale"], size=(500, 3))
    sg0 = np.exp(r0.normal(h["sigma_loc"], h["sigma_scale"], size=(500, 3)))
    prior_pred = np.mean([np.prod(stats.norm.pdf(pts, mu0[i, c], sg0[i, c]), axis=1)
                          for i in range(500)], axis=0)
    expected = np.zeros(pts.shape[0])
    for s, z in enumerate(_Z3):
        seat = _seating(np.bincount(z), get_spec(m).alpha, discount)
        for k in range(seat.size - 1):
            expected += seat[k] * np.prod(stats.norm.pdf(pts, mu[s, k, c], sigma[s, k, c]), 1)
        expected += seat[-1] * prior_pred
    np.testing.assert_allclose(got, expected.reshape(shape) / S, rtol=1e-12)
