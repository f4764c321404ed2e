"""Collapsed conjugate log-likelihood Op: values against independent references, shapes,
gradients with respect to every hyperparameter, prior-predictive draws."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from custom_ops.dpm.collapsed import (
    CollapsedLogLik,
    CollapsedLogLikGrad,
    collapsed_loglik,
    collapsed_loglik_value,
    draw_bernoulli,
    draw_diag_gaussian,
    draw_gaussian,
    draw_multinomial,
)
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python

RNG = np.random.default_rng(7)
Z = np.array([3, 3, 0, 7, 0, 3, 7, 7, 1])  # arbitrary non-negative labels, 4 blocks
N, D = Z.size, 3


def _case(family, rng):
    if family == "bernoulli":
        X = (rng.random((N, D)) < 0.4).astype(float)
        hyper = [rng.uniform(0.5, 2, D), rng.uniform(0.5, 2, D)]
    elif family == "multinomial":
        X = rng.poisson(2, (N, D)).astype(float)
        hyper = [rng.uniform(0.5, 2, D)]
    elif family == "gaussian":
        X = rng.normal(size=(N, D))
        A = rng.normal(size=(D, D))
        hyper = [rng.normal(size=D), np.array(0.7), np.array(D + 1.3), A @ A.T + D * np.eye(D)]
    else:
        X = rng.normal(size=(N, D))
        hyper = [rng.normal(size=D), rng.uniform(0.5, 2, D), rng.uniform(0.5, 2, D),
                 rng.uniform(0.5, 2, D)]
    return X, hyper


def _reference(family, z, X, hyper):
    """Sum over blocks of an independent formula of the block's marginal likelihood."""
    total = 0.0
    for k in np.unique(z):
        Xk = X[z == k]
        n = Xk.shape[0]
        if family == "bernoulli":
            a, b = hyper
            m = Xk.sum(0)
            total += np.sum(special.betaln(a + m, b + n - m) - special.betaln(a, b))
        elif family == "multinomial":
            # chain rule with scipy's Dirichlet-multinomial under the updated Dirichlet
            (post,) = [h.copy() for h in hyper]
            for x in Xk:
                total += stats.dirichlet_multinomial.logpmf(x, post, x.sum())
                post = post + x
        elif family == "gaussian":
            # candidate's formula at theta = (prior mean of mu, S0 / nu0)
            m0, k0, nu0, S0 = (np.asarray(h, dtype=float) for h in hyper)
            k0, nu0 = float(k0), float(nu0)
            Sigma = S0 / (nu0 + D + 1)
            mu = m0 + 0.1
            lik = stats.multivariate_normal(mu, Sigma).logpdf(Xk).sum()
            prior = (stats.invwishart(df=nu0, scale=S0).logpdf(Sigma)
                     + stats.multivariate_normal(m0, Sigma / k0).logpdf(mu))
            kn, nn = k0 + n, nu0 + n
            xbar = Xk.mean(0)
            mn = (k0 * m0 + n * xbar) / kn
            C = (Xk - xbar).T @ (Xk - xbar)
            Sn = S0 + C + k0 * n / kn * np.outer(xbar - m0, xbar - m0)
            post = (stats.invwishart(df=nn, scale=Sn).logpdf(Sigma)
                    + stats.multivariate_normal(mn, Sigma / kn).logpdf(mu))
            total += lik + prior - post
        else:
            m0, k0, a0, b0 = hyper
            for j in range(D):
                x = Xk[:, j]
                tau, mu = 1.3, m0[j] + 0.2
                lik = stats.norm(mu, 1 / np.sqrt(tau)).logpdf(x).sum()
                prior = (stats.gamma(a0[j], scale=1 / b0[j]).logpdf(tau)
                         + stats.norm(m0[j], 1 / np.sqrt(k0[j] * tau)).logpdf(mu))
                kn = k0[j] + n
                mn = (k0[j] * m0[j] + x.sum()) / kn
                an = a0[j] + n / 2
                bn = b0[j] + 0.5 * (np.sum((x - x.mean()) ** 2)
                                    + k0[j] * n * (x.mean() - m0[j]) ** 2 / kn)
                post = (stats.gamma(an, scale=1 / bn).logpdf(tau)
                        + stats.norm(mn, 1 / np.sqrt(kn * tau)).logpdf(mu))
                total += lik + prior - post
    return total


FAMILIES = ["bernoulli", "multinomial", "gaussian", "diag_gaussian"]


@pytest.mark.parametrize("family", FAMILIES)
def test_value_matches_independent_reference(family):
    rng = np.random.default_rng(11)
    X, hyper = _case(family, rng)
    zv, Xv = pt.lvector(), pt.dmatrix()
    hv = [pt.as_tensor_variable(h).type() for h in hyper]
    out = collapsed_loglik(family, zv, Xv, *hv)
    assert out.ndim == 0 and out.dtype == "float64"
    # the Numba path agrees with the Python path (perform)
    f = assert_numba_matches_python([zv, Xv, *hv], out, [Z, X, *hyper], op=CollapsedLogLik)
    value = float(f(Z, X, *hyper))
    ref = _reference(family, Z, X, hyper)
    assert value == pytest.approx(ref, rel=1e-9)
    assert collapsed_loglik_value(family, Z, X, hyper) == pytest.approx(ref, rel=1e-9)
    # invariant to relabelling the blocks and to permuting the items
    perm = rng.permutation(N)
    relabel = np.array([5, 2, 9, 0, 4, 1, 8, 3])[Z]
    assert float(f(relabel[perm], X[perm], *hyper)) == pytest.approx(ref, rel=1e-9)


@pytest.mark.parametrize("family", FAMILIES)
def test_gradients_with_respect_to_every_hyperparameter(family):
    rng = np.random.default_rng(12)
    X, hyper = _case(family, rng)
    for i in range(len(hyper)):
        def fn(h, i=i):
            hh = list(hyper)
            hh[i] = h
            return collapsed_loglik(family, Z, X, *hh)

        # Python backend: each check compiles in milliseconds; Numba is compared below
        pytensor.gradient.verify_grad(fn, [hyper[i]], rng=rng, mode=PYTHON_MODE)
    # the Numba gradient kernels agree with the Python ones just verified
    hv = [pt.as_tensor_variable(h).type() for h in hyper]
    out = collapsed_loglik(family, Z, X, *hv)
    assert_numba_matches_python(hv, pytensor.grad(out, hv), hyper, op=CollapsedLogLikGrad)


def test_posterior_scale_not_pd_gives_nan_not_an_error():
    """At kappa0 = e^100 (legal, where a long NUTS trajectory can go) the NIW posterior
    scale cancels to a matrix that is not positive definite: value and gradient are NaN on
    both backends (a divergence for NUTS), where the Op raised before. The graphs are
    those of the two tests above (no new compile)."""
    zv, Xv = pt.lvector(), pt.dmatrix()
    X_value, hyper = _case("gaussian", np.random.default_rng(11))
    hyper[1] = np.array(np.exp(100.0))  # kappa0
    hv = [pt.as_tensor_variable(h).type() for h in hyper]
    value_fn = assert_numba_matches_python(
        [zv, Xv, *hv], collapsed_loglik("gaussian", zv, Xv, *hv), [Z, X_value, *hyper],
        op=CollapsedLogLik,
    )
    assert np.isnan(value_fn(Z, X_value, *hyper))
    X_grad, _ = _case("gaussian", np.random.default_rng(12))
    out = collapsed_loglik("gaussian", Z, X_grad, *hv)
    grad_fn = assert_numba_matches_python(hv, pytensor.grad(out, hv), hyper,
                                          op=CollapsedLogLikGrad)
    assert all(np.all(np.isnan(g)) for g in grad_fn(*hyper))


def test_no_gradient_for_labels_or_data():
    zv, Xv = pt.lvector(), pt.dmatrix()
    out = collapsed_loglik("bernoulli", zv, Xv, np.ones(2), np.ones(2))
    with pytest.raises(Exception, match="discrete"):
        pytensor.grad(out, zv)
    with pytest.raises(Exception, match="gradient with respect to the data"):
        pytensor.grad(out, Xv)


def test_invalid_inputs_give_minus_inf_or_raise():
    X = RNG.normal(size=(4, 2))
    z = np.array([0, 1, 0, 1])
    assert collapsed_loglik_value("gaussian", z, X, [np.zeros(2), -1.0, 4.0, np.eye(2)]) == -np.inf
    assert collapsed_loglik_value("gaussian", z, X, [np.zeros(2), 1.0, 0.5, np.eye(2)]) == -np.inf
    bad_S = np.array([[1.0, 2.0], [2.0, 1.0]])
    assert collapsed_loglik_value("gaussian", z, X, [np.zeros(2), 1.0, 4.0, bad_S]) == -np.inf
    assert collapsed_loglik_value("bernoulli", np.array([0, -1, 0, 1]), (X > 0) * 1.0,
                                  [np.ones(2), np.ones(2)]) == -np.inf
    assert collapsed_loglik_value("diag_gaussian", z, X,
                                  [np.zeros(2), np.ones(2), np.zeros(2), np.ones(2)]) == -np.inf
    with pytest.raises(ValueError, match="family"):
        CollapsedLogLik("poisson")
    with pytest.raises(TypeError, match="expected 2 hyperparameters"):
        collapsed_loglik("bernoulli", pt.lvector(), pt.dmatrix(), np.ones(2))
    with pytest.raises(TypeError, match="kappa0 must have ndim 0"):
        collapsed_loglik("gaussian", pt.lvector(), pt.dmatrix(), np.zeros(2), np.ones(2), 4.0,
                         np.eye(2))
    with pytest.raises(TypeError, match="z must be a 1-D integer tensor"):
        collapsed_loglik("bernoulli", pt.dvector(), pt.dmatrix(), np.ones(2), np.ones(2))


def test_draws_have_the_conjugate_moments():
    """Rows in one block share their parameters: check the marginal mean, variance and the
    within-block covariance of two rows against the prior's closed forms."""
    rng = np.random.default_rng(3)
    S = 20_000
    z = np.array([0, 0, 1])
    # NIW: E[x] = m0, Cov(x_i, x_j | same block) = E[Sigma]/kappa0,
    #      Var(x_i) = E[Sigma] (1 + 1/kappa0), E[Sigma] = S0 / (nu0 - d - 1)
    m0, k0, nu0, S0 = np.array([1.0, -2.0]), 2.0, 7.0, np.array([[2.0, 0.5], [0.5, 1.0]])
    out = np.empty((S, 3, 2))
    for s in range(S):
        draw_gaussian(rng, z, m0, k0, nu0, S0, out[s])
    ES = S0 / (nu0 - 3)
    np.testing.assert_allclose(out.mean(0), np.tile(m0, (3, 1)), atol=0.05)
    cov_same = np.cov(out[:, 0, 0], out[:, 1, 0])[0, 1]
    cov_diff = np.cov(out[:, 0, 0], out[:, 2, 0])[0, 1]
    assert cov_same == pytest.approx(ES[0, 0] / k0, abs=0.05)
    assert cov_diff == pytest.approx(0.0, abs=0.05)
    assert out[:, 2, 0].var() == pytest.approx(ES[0, 0] * (1 + 1 / k0), rel=0.06)
    assert np.cov(out[:, 2, 0], out[:, 2, 1])[0, 1] == pytest.approx(ES[0, 1] * (1 + 1 / k0),
                                                                     abs=0.05)
    # Normal-Gamma: Var(x) = E[1/tau] (1 + 1/kappa0) = b0 / (a0 - 1) (1 + 1/kappa0)
    outd = np.empty((S, 3, 1))
    for s in range(S):
        draw_diag_gaussian(rng, z, np.array([0.5]), np.array([1.5]), np.array([4.0]),
                           np.array([3.0]), outd[s])
    assert outd[:, 0, 0].mean() == pytest.approx(0.5, abs=0.03)
    assert outd[:, 0, 0].var() == pytest.approx(1.0 * (1 + 1 / 1.5), rel=0.06)
    assert np.cov(outd[:, 0, 0], outd[:, 1, 0])[0, 1] == pytest.approx(1.0 / 1.5, abs=0.05)
    # Beta-Bernoulli: P(x=1) = a/(a+b); Cov(same block) = ab / ((a+b)^2 (a+b+1))
    outb = np.empty((S, 3, 1))
    for s in range(S):
        draw_bernoulli(rng, z, np.array([2.0]), np.array([3.0]), outb[s])
    assert outb[:, 0, 0].mean() == pytest.approx(0.4, abs=0.015)
    assert np.cov(outb[:, 0, 0], outb[:, 1, 0])[0, 1] == pytest.approx(6 / (25 * 6), abs=0.015)
    assert np.cov(outb[:, 0, 0], outb[:, 2, 0])[0, 1] == pytest.approx(0.0, abs=0.015)
    # Dirichlet-multinomial: E[x] = N alpha / A, row totals exact
    outm = np.empty((S, 3, 3))
    conc = np.array([1.0, 2.0, 3.0])
    for s in range(S):
        draw_multinomial(rng, z, conc, np.array([4.0, 4.0, 2.0]), outm[s])
    np.testing.assert_array_equal(outm.sum(-1), np.tile([4.0, 4.0, 2.0], (S, 1)))
    np.testing.assert_allclose(outm[:, 0].mean(0), 4 * conc / 6, atol=0.05)
