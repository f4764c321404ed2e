"""The DP mixture's pointwise log-likelihood (LOO) against brute force, and its posterior
replicates' distribution (pp_models.dpm.predictive)."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from scipy.special import logsumexp

from pp_models import dpm
from pp_models.dpm import predictive

RNG = np.random.default_rng(0)
X_GAUSS = np.vstack([RNG.normal(-2, 1, (4, 2)), RNG.normal(2, 1, (3, 2))])
PRIOR = {"m0": [0.0, 0.0], "kappa0": 0.3, "nu0": 4.0, "S0": [[1.0, 0.2], [0.2, 1.5]]}


def _posterior(**arrays):
    """A (1 chain, S draws) posterior from arrays of shape (S, ...)."""
    data = {k: (("chain", "draw", *[f"{k}_{i}" for i in range(np.ndim(v) - 1)]),
                np.asarray(v)[None]) for k, v in arrays.items()}
    return xr.Dataset(data)


def _log_joint(spec, z, X, alpha):
    """log p(z | alpha) + log p(X | z): the CRP's EPPF and the collapsed likelihood, from
    their own kernels (the pointwise terms use the conjugate predictive instead)."""
    from custom_ops import conjugate as cj
    from custom_ops.dpm.collapsed import collapsed_loglik_value
    from custom_ops.dpm.crp import canonicalize, crp_logp

    labels, _ = canonicalize(np.asarray(z, dtype=np.int64))
    hyper = tuple(spec.prior[k] for k in cj.FAMILIES[spec.likelihood].hyper_names)
    return (crp_logp(labels, alpha, spec.discount)
            + collapsed_loglik_value(spec.likelihood, labels, X, hyper))


@pytest.mark.parametrize("likelihood,X,prior,discount", [
    ("gaussian", X_GAUSS, PRIOR, 0.0),
    ("gaussian", X_GAUSS, PRIOR, 0.4),
    ("bernoulli", (RNG.random((7, 3)) < 0.4).astype(float), {"a": 0.7, "b": 1.3}, 0.0),
])
def test_conditional_predictive_equals_the_ratio_of_joint_densities(likelihood, X, prior,
                                                                    discount):
    # log p(x_i | z_{-i}, X_{-i}) = log sum_k p(X, z with z_i = k) - log p(X_{-i}, z_{-i}),
    # z_i over the other rows' tables and a new one
    alpha = 0.8
    m = dpm.model(X, likelihood=likelihood, prior=prior, alpha=alpha, discount=discount)
    spec = dpm.get_spec(m)
    draws = [np.array([0, 0, 1, 1, 0, 2, 2]), np.array([3, 3, 3, 3, 0, 0, 5]),
             np.zeros(7, dtype=int)]
    got = predictive.pointwise_log_likelihood(_posterior(z=np.stack(draws)), m)["X"].values[0]
    for s, z in enumerate(draws):
        for i in range(len(z)):
            others = np.delete(z, i)
            terms = []
            for k in [*np.unique(others), z.max() + 1]:
                zk = z.copy()
                zk[i] = k
                terms.append(_log_joint(spec, zk, X, alpha))
            expected = logsumexp(terms) - _log_joint(spec, others, np.delete(X, i, 0), alpha)
            np.testing.assert_allclose(got[s, i], expected, rtol=1e-9, atol=1e-9)


def test_random_alpha_and_learned_base_measure_are_read_per_draw():
    X = X_GAUSS
    m = dpm.model(X, alpha=(2.0, 1.0), hyperprior=True)
    z = np.array([[0, 0, 0, 0, 1, 1, 1], [0, 1, 0, 1, 0, 1, 0]])
    names = dpm.learned_variable_names(dpm.get_spec(m))
    values = {v: np.array([0.5, 2.0]) for v in names}
    post = _posterior(z=z, alpha=np.array([0.3, 3.0]), **values)
    got = predictive.pointwise_log_likelihood(post, m)["X"].values[0]
    for s in range(2):
        hyper = dpm.learned_hyperparameters(dpm.get_spec(m), {v: a[s] for v, a in
                                                             values.items()})
        fixed = dpm.model(X, alpha=float(post["alpha"].values[0, s]),
                          prior={k: hyper[k] for k in ("m0", "kappa0", "nu0", "S0")})
        one = predictive.pointwise_log_likelihood(_posterior(z=z[s:s + 1]), fixed)
        np.testing.assert_allclose(got[s], one["X"].values[0, 0], rtol=1e-10)


def test_stick_breaking_terms_sum_to_the_models_potential():
    X = X_GAUSS
    import pytensor

    from tests.helpers.backends import PYTHON_MODE

    m = dpm.model(X, likelihood="diag_gaussian", truncation=3, alpha=1.0)
    with pytensor.config.change_flags(mode=PYTHON_MODE):  # a few evaluations
        point = m.initial_point()
        rng = np.random.default_rng(1)
        point["mu_raw"] = rng.normal(size=point["mu_raw"].shape)
        outs = m.replace_rvs_by_values([m["w"], m["mu"], m["sigma"], m["X_loglik"]])
        w, mu, sigma, total = m.compile_fn(outs, on_unused_input="ignore")(point)
    post = _posterior(w=w[None], mu=mu[None], sigma=sigma[None])
    got = predictive.pointwise_log_likelihood(post, m)["X"].values[0, 0]
    np.testing.assert_allclose(got.sum(), total, rtol=1e-10)


def test_nonconjugate_rows_are_scored_given_their_tables_parameters():
    from scipy.stats import norm

    X = X_GAUSS
    m = dpm.model(X, likelihood="normal", alpha=1.0)
    rng = np.random.default_rng(2)
    z = np.array([0, 0, 1, 1, 0, 5, 5])
    mu, sigma = rng.normal(size=(7, 2)), rng.uniform(0.5, 2, (7, 2))
    post = _posterior(z=z[None], mu=mu[None], sigma=sigma[None])
    got = predictive.pointwise_log_likelihood(post, m)["X"].values[0, 0]
    np.testing.assert_allclose(got, norm.logpdf(X, mu[z], sigma[z]).sum(1))


def test_replicates_come_from_the_clusters_posterior_predictive():
    # one cluster of 30 rows: E[x_rep] = m_n and Cov[x_rep] = S_n (kappa_n + 1) /
    # (kappa_n (nu_n - d - 1)) (the NIW posterior predictive); drawing the parameters
    # from the prior instead (the collapsed X's own forward draw) spreads them by
    # sqrt(S0 / (kappa0 (nu0 - d - 1))) ~ 2.5 around m0 = 0
    rng = np.random.default_rng(3)
    data = rng.normal([3.0, -1.0], 0.5, (30, 2))
    hyper = {"m0": np.zeros(2), "kappa0": 0.3, "nu0": 4.0, "S0": np.array(PRIOR["S0"])}
    draws = np.concatenate([predictive.draw_from_posterior("gaussian", rng, data, hyper, 1)
                            for _ in range(4000)])
    n = 30
    kn, nun = 0.3 + n, 4.0 + n
    mn = data.sum(0) / kn
    Sn = (hyper["S0"] + data.T @ data + 0.0 - kn * np.outer(mn, mn))
    cov = Sn * (kn + 1) / (kn * (nun - 2 - 1))
    se = np.sqrt(np.diag(cov) / 4000)
    assert np.all(np.abs(draws.mean(0) - mn) < 4 * se)
    np.testing.assert_allclose(np.cov(draws.T), cov, rtol=0.15, atol=0.01)
