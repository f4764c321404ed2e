"""Conjugate kernels against independent references (scipy, brute-force integration)."""

import itertools
import math

import numba
import numpy as np
import pytest
from scipy import integrate, special, stats

from custom_ops import conjugate as cj

RNG = np.random.default_rng(20260101)


def _data(family, n, d, rng):
    if family == "bernoulli":
        return (rng.random((n, d)) < 0.3).astype(float)
    if family == "multinomial":
        return rng.poisson(2.0, size=(n, d)).astype(float)
    return rng.normal(size=(n, d)) * 1.5 + 0.3


def _hyper(family, d, rng):
    if family == "bernoulli":
        return cj.bernoulli_hyper(d, rng.uniform(0.3, 2.0, d), rng.uniform(0.3, 2.0, d))
    if family == "multinomial":
        return cj.multinomial_hyper(d, rng.uniform(0.3, 2.0, d))
    if family == "gaussian":
        A = rng.normal(size=(d, d))
        return cj.gaussian_hyper(d, rng.normal(size=d), 0.7, d + 1.5, A @ A.T + d * np.eye(d))
    return cj.diag_gaussian_hyper(
        d,
        rng.normal(size=d),
        rng.uniform(0.3, 2, d),
        rng.uniform(0.5, 3, d),
        rng.uniform(0.5, 3, d),
    )


FAMS = ["bernoulli", "multinomial", "gaussian", "diag_gaussian"]


# ---------------------------------------------------------------- closed forms / scipy
def test_digamma_matches_scipy():
    x = np.concatenate([np.geomspace(1e-4, 1e4, 200), [0.5, 1.0, 2.5, 9.999, 10.0]])
    ours = np.array([cj.digamma(v) for v in x])
    np.testing.assert_allclose(ours, special.digamma(x), rtol=1e-12, atol=1e-12)


def test_bernoulli_betaln_closed_form():
    X = _data("bernoulli", 17, 6, RNG)
    a, b = RNG.uniform(0.2, 3, 6), RNG.uniform(0.2, 3, 6)
    m, n = X.sum(0), X.shape[0]
    ref = np.sum(special.betaln(a + m, b + n - m) - special.betaln(a, b))
    got = cj.bernoulli_log_marginal(cj.bernoulli_stats(X), cj.bernoulli_hyper(6, a, b))
    assert got == pytest.approx(ref, rel=1e-12)


def test_bernoulli_single_point_oracle():
    # Heller digest oracle 7.1.4: p(x) = Π a^x b^(1-x) / (a+b)
    x = np.array([[1.0, 0, 1, 1, 0]])
    a, b = np.array([0.5, 1, 2, 3, 4.0]), np.array([2.0, 1, 0.5, 1, 3])
    ref = np.sum(x[0] * np.log(a) + (1 - x[0]) * np.log(b) - np.log(a + b))
    got = cj.bernoulli_log_marginal(cj.bernoulli_stats(x), (a, b))
    assert got == pytest.approx(ref, rel=1e-13)


def test_multinomial_vs_scipy_dirichlet_multinomial():
    alpha = RNG.uniform(0.3, 3.0, 5)
    X = RNG.poisson(3.0, size=(6, 5)).astype(float)
    h = cj.multinomial_hyper(5, alpha)
    # one count vector: the marginal IS the Dirichlet-multinomial pmf
    ref1 = stats.dirichlet_multinomial.logpmf(X[0], alpha, X[0].sum())
    assert cj.multinomial_log_marginal(cj.multinomial_stats(X[:1]), h) == pytest.approx(ref1)
    # several vectors: chain rule with scipy's pmf under the updated Dirichlet
    ref, post = 0.0, alpha.copy()
    for x in X:
        ref += stats.dirichlet_multinomial.logpmf(x, post, x.sum())
        post = post + x
    assert cj.multinomial_log_marginal(cj.multinomial_stats(X), h) == pytest.approx(ref, rel=1e-12)
    # predictive vs scipy
    s = cj.multinomial_stats(X[:5])
    ref_pred = stats.dirichlet_multinomial.logpmf(X[5], alpha + X[:5].sum(0), X[5].sum())
    assert cj.multinomial_log_predictive(X[5], s, h) == pytest.approx(ref_pred, rel=1e-12)


def test_multinomial_one_hot_is_dirichlet_categorical():
    alpha = np.array([0.5, 1.0, 2.0])
    z = np.array([0, 2, 2, 1, 2, 0])
    X = np.eye(3)[z]
    m = np.bincount(z, minlength=3)
    ref = (
        special.gammaln(alpha.sum())
        - special.gammaln(alpha.sum() + len(z))
        + np.sum(special.gammaln(alpha + m) - special.gammaln(alpha))
    )
    got = cj.multinomial_log_marginal(cj.multinomial_stats(X), (alpha,))
    assert got == pytest.approx(ref, rel=1e-13)


def _niw_post_reference(X, m0, k0, v0, S0):
    """Centred-form NIW posterior (digest §1.2), written independently of the module."""
    n = X.shape[0]
    xbar = X.mean(0)
    C = (X - xbar).T @ (X - xbar)
    kn, vn = k0 + n, v0 + n
    mn = (k0 * m0 + n * xbar) / kn
    Sn = S0 + C + k0 * n / kn * np.outer(xbar - m0, xbar - m0)
    return mn, kn, vn, Sn


@pytest.mark.parametrize("d", [1, 3])
def test_gaussian_candidates_formula(d):
    rng = np.random.default_rng(d)
    X = rng.normal(size=(7, d)) + 1.0
    m0, k0, v0, S0 = _hyper("gaussian", d, rng)
    mn, kn, vn, Sn = _niw_post_reference(X, m0, k0, v0, S0)
    # any θ: log p(D) = log p(D|θ) + log p(θ) - log p(θ|D)
    for seed in range(3):
        r = np.random.default_rng(100 + seed)
        Sigma = stats.invwishart(df=v0, scale=S0).rvs(random_state=r).reshape(d, d)
        mu = r.normal(size=d)
        ref = (
            stats.multivariate_normal(mu, Sigma).logpdf(X).sum()
            + stats.invwishart(df=v0, scale=S0).logpdf(Sigma)
            + stats.multivariate_normal(m0, Sigma / k0).logpdf(mu)
            - stats.invwishart(df=vn, scale=Sn).logpdf(Sigma)
            - stats.multivariate_normal(mn, Sigma / kn).logpdf(mu)
        )
        got = cj.gaussian_log_marginal(cj.gaussian_stats(X), (m0, k0, v0, S0))
        assert got == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_gaussian_predictive_vs_multivariate_t():
    d = 3
    rng = np.random.default_rng(5)
    X = rng.normal(size=(9, d))
    h = _hyper("gaussian", d, rng)
    m0, k0, v0, S0 = h
    mn, kn, vn, Sn = _niw_post_reference(X, m0, k0, v0, S0)
    dof = vn - d + 1
    t = stats.multivariate_t(loc=mn, shape=Sn * (kn + 1) / (kn * dof), df=dof)
    xs = rng.normal(size=(5, d)) * 2
    s = cj.gaussian_stats(X)
    st = cj.gaussian_state(s, h)
    for x in xs:
        assert cj.gaussian_log_predictive(x, s, h) == pytest.approx(t.logpdf(x), rel=1e-11)
        assert cj.gaussian_state_log_predictive(x, st) == pytest.approx(t.logpdf(x), rel=1e-11)
    # the empty set: the prior predictive
    t0 = stats.multivariate_t(loc=m0, shape=S0 * (k0 + 1) / (k0 * (v0 - d + 1)), df=v0 - d + 1)
    z = np.zeros(cj.gaussian_stats_size(d))
    assert cj.gaussian_log_predictive(xs[0], z, h) == pytest.approx(t0.logpdf(xs[0]), rel=1e-11)


def test_diag_gaussian_brute_force_integration_1d():
    x = np.array([[0.3], [-1.2], [0.8], [2.0]])
    m0, k0, a0, b0 = 0.5, 0.8, 2.0, 1.5

    # The joint over (tau, mu) on [1e-10, 30] x [-15, 15]: adaptive quad in tau, a
    # 800-node Gauss-Legendre rule in mu evaluated at once (dblquad's 59,000 scalar
    # calls of scipy's pdfs took 11-26 s; this agrees with it to 1e-12, and 200, 400
    # and 800 nodes agree to 1e-11, far inside the 1e-6 checked).
    nodes, weights = np.polynomial.legendre.leggauss(800)
    mu, mu_weights = 15.0 * nodes, 15.0 * weights

    def integral_over_mu(tau):
        like = np.prod(stats.norm.pdf(x[:, 0], mu[:, None], 1 / np.sqrt(tau)), axis=1)
        prior = stats.gamma.pdf(tau, a0, scale=1 / b0) * stats.norm.pdf(
            mu, m0, 1 / np.sqrt(k0 * tau)
        )
        return (like * prior) @ mu_weights

    val, _err = integrate.quad(integral_over_mu, 1e-10, 30.0, epsabs=1e-14, epsrel=1e-10,
                               limit=200)
    got = cj.diag_gaussian_log_marginal(
        cj.diag_gaussian_stats(x), cj.diag_gaussian_hyper(1, m0, k0, a0, b0)
    )
    assert got == pytest.approx(np.log(val), abs=1e-6)


def test_diag_gaussian_equals_product_of_1d_and_t_predictive():
    d = 3
    X = RNG.normal(size=(6, d))
    h = _hyper("diag_gaussian", d, RNG)
    total = cj.diag_gaussian_log_marginal(cj.diag_gaussian_stats(X), h)
    parts = sum(
        cj.diag_gaussian_log_marginal(
            cj.diag_gaussian_stats(X[:, j : j + 1]), tuple(np.array([p[j]]) for p in h)
        )
        for j in range(d)
    )
    assert total == pytest.approx(parts, rel=1e-12)
    # predictive against scipy's Student-t, posterior from the textbook formulas
    m0, k0, a0, b0 = h
    n, xb = X.shape[0], X.mean(0)
    kn, an = k0 + n, a0 + n / 2
    mn = (k0 * m0 + n * xb) / kn
    bn = b0 + 0.5 * ((X - xb) ** 2).sum(0) + k0 * n * (xb - m0) ** 2 / (2 * kn)
    xnew = RNG.normal(size=d)
    ref = stats.t.logpdf(xnew, df=2 * an, loc=mn, scale=np.sqrt(bn * (kn + 1) / (an * kn))).sum()
    got = cj.diag_gaussian_log_predictive(xnew, cj.diag_gaussian_stats(X), h)
    assert got == pytest.approx(ref, rel=1e-12)


@pytest.mark.parametrize("cols", [(0,), (2,), (0, 2), (2, 1), (0, 1, 2)])
@pytest.mark.parametrize("n", [0, 6])
def test_log_predictive_columns_is_the_marginal_student_t(cols, n):
    # the predictive's marginal on some columns at many points, against scipy with the
    # posterior from the centred textbook formulas (n = 0: the prior predictive)
    d = 3
    rng = np.random.default_rng(11 + n)
    X = rng.normal(size=(n, d)) + 0.5
    pts = rng.normal(size=(7, len(cols))) * 2
    c = np.asarray(cols, dtype=np.int64)
    out = np.empty(pts.shape[0])
    # NIW: multivariate t, sub-vector and sub-matrix of the full predictive
    h = _hyper("gaussian", d, rng)
    m0, k0, v0, S0 = h
    if n:
        mn, kn, vn, Sn = _niw_post_reference(X, m0, k0, v0, S0)
    else:
        mn, kn, vn, Sn = m0, k0, v0, S0
    dof = vn - d + 1
    shape = (Sn * (kn + 1) / (kn * dof))[np.ix_(c, c)]
    ref = stats.multivariate_t(loc=mn[c], shape=shape, df=dof).logpdf(pts).reshape(-1)
    stats_g = cj.gaussian_stats(X) if n else np.zeros(cj.gaussian_stats_size(d))
    cj.log_predictive_columns(cj.GAUSSIAN, pts, c, stats_g, cj.pack_hyper("gaussian", h), out)
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    # on all columns in order it is log_predictive
    if cols == (0, 1, 2):
        np.testing.assert_allclose(
            out, [cj.gaussian_log_predictive(x, stats_g, h) for x in pts], rtol=1e-13)
    # Normal-Gamma: the product of the chosen dimensions' Student-t densities
    h = _hyper("diag_gaussian", d, rng)
    m0, k0, a0, b0 = h
    kn, an = k0 + n, a0 + n / 2
    xb = X.mean(0) if n else np.zeros(d)
    mn = (k0 * m0 + n * xb) / kn
    bn = b0 + (0.5 * ((X - xb) ** 2).sum(0) + k0 * n * (xb - m0) ** 2 / (2 * kn) if n else 0)
    scale = np.sqrt(bn * (kn + 1) / (an * kn))
    ref = stats.t.logpdf(pts, df=2 * an[c], loc=mn[c], scale=scale[c]).sum(-1)
    stats_d = cj.diag_gaussian_stats(X) if n else np.zeros(cj.diag_gaussian_stats_size(d))
    cj.log_predictive_columns(cj.DIAG_GAUSSIAN, pts, c, stats_d,
                              cj.pack_hyper("diag_gaussian", h), out)
    np.testing.assert_allclose(out, ref, rtol=1e-12)


def test_log_predictive_columns_rejects_discrete_families():
    with pytest.raises(ValueError, match="Gaussian families only"):
        cj.log_predictive_columns(cj.BERNOULLI, np.zeros((2, 1)), np.zeros(1, np.int64),
                                  np.zeros(3), np.ones(4), np.empty(2))


# ---------------------------------------------------------------- structural identities
@pytest.mark.parametrize("family", FAMS)
def test_chain_rule_and_exchangeability(family):
    rng = np.random.default_rng(hash(family) % 2**32)
    d = 3
    fam = cj.FAMILIES[family]
    X = _data(family, 8, d, rng)
    h = _hyper(family, d, rng)
    full = fam.log_marginal(fam.stats(X), h)
    seq, s = 0.0, np.zeros(fam.stats_size(d))
    for x in X:
        seq += fam.log_predictive(x, s, h)
        fam.add(s, x)
    assert full == pytest.approx(seq, rel=1e-11)
    for _ in range(3):
        perm = rng.permutation(len(X))
        assert fam.log_marginal(fam.stats(X[perm]), h) == pytest.approx(full, rel=1e-12)


@pytest.mark.parametrize("family", FAMS)
def test_stats_additive_and_add_remove_inverse(family):
    fam = cj.FAMILIES[family]
    X = _data(family, 10, 4, RNG)
    s = fam.stats(X)
    np.testing.assert_allclose(s, fam.stats(X[:4]) + fam.stats(X[4:]), atol=1e-12)
    np.testing.assert_allclose(fam.point_stats(X).sum(0), s, atol=1e-12)
    assert s.shape == (fam.stats_size(4),) and s[0] == 10
    t = fam.stats(X[:9])
    fam.add(t, X[9])
    np.testing.assert_allclose(t, s, atol=1e-12)
    fam.remove(t, X[9])
    np.testing.assert_allclose(t, fam.stats(X[:9]), atol=1e-12)
    # empty set has log marginal 0
    assert fam.log_marginal(np.zeros(fam.stats_size(4)), _hyper(family, 4, RNG)) == pytest.approx(
        0.0, abs=1e-12
    )


def test_gaussian_state_incremental_matches_fresh():
    d = 4
    rng = np.random.default_rng(11)
    X = rng.normal(size=(30, d))
    h = _hyper("gaussian", d, rng)
    st = cj.gaussian_state(np.zeros(cj.gaussian_stats_size(d)), h)
    for i, x in enumerate(X):
        cj.gaussian_state_add(st, x)
        if i % 7 == 0:
            np.testing.assert_allclose(
                st, cj.gaussian_state(cj.gaussian_stats(X[: i + 1]), h), atol=1e-10
            )
    for x in X[::-1][:25]:
        cj.gaussian_state_remove(st, x)
    np.testing.assert_allclose(st, cj.gaussian_state(cj.gaussian_stats(X[:5]), h), atol=1e-9)
    assert cj.gaussian_state_log_marginal(st, h) == pytest.approx(
        cj.gaussian_log_marginal(cj.gaussian_stats(X[:5]), h), rel=1e-11
    )


# ---------------------------------------------------------------- gradients
def _flat(h):
    return [np.atleast_1d(np.asarray(p, dtype=float)).ravel() for p in h]


def _rebuild(h, idx, flat):
    out = list(h)
    p = h[idx]
    out[idx] = float(flat[0]) if np.ndim(p) == 0 else flat.reshape(np.shape(p))
    return tuple(out)


@pytest.mark.parametrize("family", FAMS)
def test_log_marginal_grad_finite_differences(family):
    rng = np.random.default_rng(7)
    d = 3
    fam = cj.FAMILIES[family]
    X = _data(family, 6, d, rng)
    h = _hyper(family, d, rng)
    s = fam.stats(X)
    value, grads = fam.log_marginal_grad(s, h)
    assert value == pytest.approx(fam.log_marginal(s, h), rel=1e-13)
    assert len(grads) == len(h)
    eps = 1e-6
    for idx, flat in enumerate(_flat(h)):
        g = np.atleast_1d(np.asarray(grads[idx], dtype=float)).ravel()
        assert g.shape == flat.shape
        fd = np.empty_like(flat)
        for k in range(flat.size):
            up, dn = flat.copy(), flat.copy()
            up[k] += eps
            dn[k] -= eps
            fd[k] = (
                fam.log_marginal(s, _rebuild(h, idx, up))
                - fam.log_marginal(s, _rebuild(h, idx, dn))
            ) / (2 * eps)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=fam.hyper_names[idx])


def test_gaussian_S0_gradient_is_symmetric():
    d = 3
    X = RNG.normal(size=(5, d))
    h = _hyper("gaussian", d, RNG)
    _, (_, _, _, gS) = cj.gaussian_log_marginal_grad(cj.gaussian_stats(X), h)
    np.testing.assert_allclose(gS, gS.T, atol=1e-12)


def _extreme_kappa0_case():
    """Stats and NIW hyperparameters at kappa0 = e^100, a legal value a NUTS trajectory of
    the BHC model reached: kappa0 m0 m0ᵀ - kappa_n m_n m_nᵀ cancels to rounding noise
    ~1e27 that swamps S0 + Σxxᵀ, so the computed posterior scale S_n is not positive
    definite."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(3, 2))
    h = cj.gaussian_hyper(2, rng.normal(size=2), math.exp(100.0), 3.0, np.eye(2))
    s = cj.gaussian_stats(X)
    _kn, _nn, _mn, Sn = cj.gaussian_posterior(s, *h)
    assert np.linalg.eigvalsh(Sn).min() <= 0.0  # the premise: S_n not positive definite
    return s, h


def test_gaussian_marginal_is_nan_not_an_error_where_the_posterior_scale_is_not_pd():
    """A C entry point cannot raise, and a sampler needs a non-finite value (a divergence)
    there, not a stopped run: before, np.linalg.cholesky raised LinAlgError (marginal,
    gradient and predictives)."""
    s, h = _extreme_kappa0_case()
    assert np.isnan(cj.gaussian_log_marginal(s, h))
    value, grads = cj.gaussian_log_marginal_grad(s, h)
    assert np.isnan(value)
    assert all(np.all(np.isnan(g)) for g in grads)
    # through the dispatchers the BHC and collapsed kernels call, flat layout
    fam = cj.FAMILY_CODES["gaussian"]
    hp = cj.pack_hyper("gaussian", h)
    out = np.zeros(hp.shape[0])
    assert np.isnan(cj.log_marginal(fam, s, hp))
    assert np.isnan(cj.log_marginal_grad(fam, s, hp, out, 1.0))
    assert np.all(np.isnan(out))
    # the predictives, same S_n
    assert np.isnan(cj.log_predictive(fam, np.zeros(2), s, hp))
    columns = np.empty(3)
    cj.log_predictive_columns(fam, np.zeros((3, 2)), np.array([0, 1]), s, hp, columns)
    assert np.all(np.isnan(columns))


# ---------------------------------------------------------------- use from jitted code
@numba.njit
def _sequential(X, hyper, empty, add, log_pred):
    s = empty.copy()
    out = 0.0
    for i in range(X.shape[0]):
        out += log_pred(X[i], s, hyper)
        add(s, X[i])
    return out


@pytest.mark.parametrize("family", ["bernoulli", "gaussian"])
def test_kernels_pass_as_first_class_functions(family):
    fam = cj.FAMILIES[family]
    X = _data(family, 5, 2, RNG)
    h = _hyper(family, 2, RNG)
    got = _sequential(X, h, np.zeros(fam.stats_size(2)), fam.add, fam.log_predictive)
    assert got == pytest.approx(fam.log_marginal(fam.stats(X), h), rel=1e-11)


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: cj.bernoulli_hyper(3, a=-1.0), "a:"),
        (lambda: cj.bernoulli_hyper(3, b=[1.0, 2.0]), "b:"),
        (lambda: cj.bernoulli_hyper(0), "d:"),
        (lambda: cj.multinomial_hyper(3, concentration=[1, 0, 1]), "concentration:"),
        (lambda: cj.gaussian_hyper(2, kappa0=0.0), "kappa0:"),
        (lambda: cj.gaussian_hyper(2, nu0=0.5), "nu0:"),
        (lambda: cj.gaussian_hyper(2, S0=[[1, 2], [2, 1]]), "S0:"),
        (lambda: cj.gaussian_hyper(2, S0=[[1, 0.1], [0, 1]]), "S0:"),
        (lambda: cj.gaussian_hyper(2, m0=[np.nan, 0]), "m0:"),
        (lambda: cj.diag_gaussian_hyper(2, b0=0.0), "b0:"),
        (lambda: cj.diag_gaussian_hyper(2, a0=np.inf), "a0:"),
        (lambda: cj.check_data("bernoulli", [[0, 2]]), "binary"),
        (lambda: cj.check_data("multinomial", [[1, -1]]), "non-negative"),
        (lambda: cj.check_data("multinomial", [[1, 0.5]]), "integer"),
        (lambda: cj.check_data("gaussian", [[1.0, np.nan]]), "NaN"),
        (lambda: cj.check_data("gaussian", [1.0, 2.0]), "2-D"),
        (lambda: cj.check_data("poisson", [[1.0]]), "family"),
    ],
)
def test_bad_input_raises(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_hyper_broadcasting():
    a, b = cj.bernoulli_hyper(4, 0.5, 2.0)
    assert a.shape == (4,) and np.all(b == 2.0)
    m0, _k0, v0, S0 = cj.gaussian_hyper(3, S0=[1.0, 2.0, 3.0])
    assert v0 == 5.0 and np.allclose(np.diag(S0), [1, 2, 3]) and m0.shape == (3,)


def test_bernoulli_log_marginal_stable_for_large_n():
    # lgamma differences stay finite far past Γ overflow (n ≈ 171)
    X = np.ones((5000, 2))
    v = cj.bernoulli_log_marginal(cj.bernoulli_stats(X), (np.ones(2), np.ones(2)))
    assert np.isfinite(v) and v == pytest.approx(2 * -np.log(5001), rel=1e-12)


def test_exhaustive_small_bernoulli_normalises():
    # the marginal over all 2^(n d) data sets sums to one
    h = (np.array([0.7, 1.3]), np.array([2.0, 0.4]))
    tot = 0.0
    for bits in itertools.product([0.0, 1.0], repeat=6):
        tot += np.exp(
            cj.bernoulli_log_marginal(cj.bernoulli_stats(np.array(bits).reshape(3, 2)), h)
        )
    assert tot == pytest.approx(1.0, rel=1e-12)
