"""The product of experts in closed form (Heller 2007 Eqs 7.4-7.7) against the
normalised product computed by brute force: a sum over all 2^D binary vectors for
Bernoulli experts, numerical integration over the line for 1-D Gaussian experts. The
Bernoulli ratio on cached sigmoids against differences of per-entry log densities."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate, special, stats

from custom_ops.iomm.experts import (
    BERNOULLI,
    GAUSSIAN,
    bernoulli_shift_gain,
    dim_loglik,
    log_product_step,
    point_sums,
    product_is_bounded,
    row_loglik,
    row_loglik_shift,
    sigmoid_pair,
)
from pp_models.iomm import bernoulli_product, gaussian_product

D = 4
C = 3


@pytest.fixture(scope="module")
def theta():
    return np.random.default_rng(0).beta(0.7, 0.7, size=(C, D))


def brute_force_bernoulli(z, theta):
    """p(x | z) for every x in {0,1}^D: the product of the member experts' Bernoulli
    densities, normalised by summing it over all 2^D vectors."""
    xs = np.array(list(itertools.product([0, 1], repeat=theta.shape[1])))
    unnorm = np.ones(len(xs))
    for k in np.flatnonzero(z):
        unnorm *= np.prod(theta[k] ** xs * (1 - theta[k]) ** (1 - xs), axis=1)
    return xs, unnorm / unnorm.sum()


MEMBERSHIPS = [np.array(z) for z in itertools.product([0, 1], repeat=C)]


@pytest.mark.parametrize("z", MEMBERSHIPS, ids=lambda z: "".join(map(str, z)))
def test_bernoulli_product_is_the_normalised_product(z, theta):
    xs, p = brute_force_bernoulli(z, theta)
    E = np.log(theta / (1 - theta))[:, :, None]
    T, counts = point_sums(z[None].astype(np.int8), E)
    background = np.zeros((D, 2))
    closed = np.array([row_loglik(BERNOULLI, x.astype(float), T[0], counts[0], background)
                       for x in xs])
    np.testing.assert_allclose(np.exp(closed), p, rtol=1e-12, atol=1e-15)
    # Eq. 7.7 as printed, and the NumPy helper, give the product's marginals
    num = np.prod(theta ** z[:, None], axis=0)
    printed = num / (np.prod((1 - theta) ** z[:, None], axis=0) + num)
    marginal = (p[:, None] * xs).sum(axis=0)
    np.testing.assert_allclose(printed, marginal, rtol=1e-12)
    np.testing.assert_allclose(bernoulli_product(z[None], theta)[0], marginal, rtol=1e-12)
    if not z.any():
        np.testing.assert_allclose(p, 1.0 / 2**D)  # the empty product: uniform


def normalised_gaussian_product(z, mu, var, background):
    """p(x | z) as a function, the product of the 1-D member densities normalised by
    numerical integration over the line (the background when z is empty)."""
    members = np.flatnonzero(z)
    if members.size == 0:
        return lambda x: stats.norm.pdf(x, background[0, 0], background[0, 1])

    def unnorm(x):
        return math.prod(stats.norm.pdf(x, mu[k], math.sqrt(var[k])) for k in members)

    c, _ = integrate.quad(unnorm, -np.inf, np.inf, epsabs=0, epsrel=1e-12, limit=200)
    return lambda x: unnorm(x) / c


@pytest.mark.parametrize("z", MEMBERSHIPS, ids=lambda z: "".join(map(str, z)))
def test_gaussian_product_is_the_normalised_product(z):
    mu = np.array([-1.0, 1.0, 2.5])
    var = np.array([0.2, 0.6, 1.7])
    background = np.array([[0.3, 4.0]])
    density = normalised_gaussian_product(z, mu, var, background)
    tau = 1 / var
    E = np.stack([tau, tau * mu], axis=-1)[:, None, :]  # (C, D=1, 2)
    T, counts = point_sums(z[None].astype(np.int8), E)
    for x in (-2.0, -0.5, 0.0, 0.7, 3.0):
        closed = row_loglik(GAUSSIAN, np.array([x]), T[0], counts[0], background)
        assert math.exp(closed) == pytest.approx(density(x), rel=1e-9)
    mean, precision = gaussian_product(z[None], mu[:, None], tau[:, None], background)
    first, _ = integrate.quad(lambda x: x * density(x), -np.inf, np.inf, epsrel=1e-12)
    second, _ = integrate.quad(lambda x: (x - first) ** 2 * density(x), -np.inf, np.inf,
                               epsrel=1e-12)
    assert mean[0, 0] == pytest.approx(first, rel=1e-8, abs=1e-10)
    assert 1 / precision[0, 0] == pytest.approx(second, rel=1e-8)


def test_figure_7_1():
    # the product of N(-1, 0.2) and N(1, 0.6) is N(-0.5, 0.15)
    mean, precision = gaussian_product([[1, 1]], [[-1.0], [1.0]], [[1 / 0.2], [1 / 0.6]],
                                       [[0.0, 1.0]])
    assert mean[0, 0] == pytest.approx(-0.5)
    assert 1 / precision[0, 0] == pytest.approx(0.15)


@pytest.mark.parametrize("code", [BERNOULLI, GAUSSIAN])
def test_shift_adds_or_removes_one_expert(code, theta):
    rng = np.random.default_rng(1)
    if code == BERNOULLI:
        E = np.log(theta / (1 - theta))[:, :, None]
        x = (rng.random(D) < 0.5).astype(float)
    else:
        tau = rng.gamma(2.0, 1.0, size=(C, D))
        E = np.stack([tau, tau * rng.normal(size=(C, D))], axis=-1)
        x = rng.normal(size=D)
    background = np.column_stack([np.zeros(D), np.full(D, 3.0)])
    for z in MEMBERSHIPS:
        T, counts = point_sums(z[None].astype(np.int8), E)
        for k in range(C):
            other = z.copy()
            other[k] = 1 - z[k]
            T2, counts2 = point_sums(other[None].astype(np.int8), E)
            expected = row_loglik(code, x, T2[0], counts2[0], background)
            sign = 1 if other[k] else -1
            got = row_loglik_shift(code, x, T[0], E[k], sign, counts[0], background)
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_bernoulli_loglik_is_stable_at_large_natural_parameters():
    for eta in (-800.0, -40.0, -1e-3, 0.0, 2.5, 40.0, 800.0):
        for x in (0.0, 1.0):
            value = dim_loglik(BERNOULLI, x, eta, 0.0, False, 0.0, 1.0)
            assert value == pytest.approx(x * eta - np.logaddexp(0.0, eta), rel=1e-14)


def test_sigmoid_pair_is_accurate_in_both_tails():
    for t in (-800.0, -40.0, -1.5, 0.0, 1e-3, 3.0, 40.0, 800.0):
        p, q = sigmoid_pair(t)
        assert p == pytest.approx(special.expit(t), rel=1e-15, abs=0.0)
        assert q == pytest.approx(special.expit(-t), rel=1e-15, abs=0.0)


def test_log_product_step_never_under_or_overflows():
    rng = np.random.default_rng(3)
    factors = np.exp(rng.uniform(-700.0, 700.0, size=400))
    factors[::7] = np.exp(rng.normal(0.0, 2.0, size=len(factors[::7])))
    prod, acc = 1.0, 0.0
    for f in factors:
        prod, acc = log_product_step(prod, acc, f)
    assert acc + math.log(prod) == pytest.approx(np.log(factors).sum(), rel=1e-12)


@pytest.mark.parametrize("scale", [1.0, 30.0, 700.0])
def test_bernoulli_shift_gain_is_the_difference_of_log_densities(scale):
    """The cached-sigmoid ratio against the per-entry log densities, for natural sums
    from ordinary to near the ends of the float range."""
    rng = np.random.default_rng(4)
    Dn = 60
    seen = set()
    for _ in range(20):
        x = (rng.random(Dn) < 0.5).astype(float)
        t = rng.uniform(-scale, scale, size=Dn)
        e = rng.uniform(-min(scale, 700.0), min(scale, 36.0), size=Dn)
        pq = np.array([sigmoid_pair(v) for v in t])
        bounded = product_is_bounded(e)
        got = bernoulli_shift_gain(x, e, np.exp(e), pq[:, 0].copy(), pq[:, 1].copy(), bounded)
        guarded = bernoulli_shift_gain(x, e, np.exp(e), pq[:, 0].copy(), pq[:, 1].copy(),
                                       False)
        assert guarded == pytest.approx(expected_of(x, t, e), rel=1e-10,
                                        abs=1e-9 * (1 + scale))
        assert got == pytest.approx(expected_of(x, t, e), rel=1e-10, abs=1e-9 * (1 + scale))
        seen.add(bool(bounded))
    # both products checked: the unguarded one at ordinary sums, the guarded at extreme
    assert seen == ({False} if scale >= 700 else {True})


def expected_of(x, t, e):
    return sum(dim_loglik(BERNOULLI, x[d], t[d] + e[d], 0.0, False, 0.0, 1.0)
               - dim_loglik(BERNOULLI, x[d], t[d], 0.0, False, 0.0, 1.0)
               for d in range(len(x)))
