"""Covariance selection and the graphical lasso against published values and oracles."""

import warnings

import numpy as np
import pytest

from pp_models.datasets import load
from pp_models.ggm import (
    covariance_selection,
    graphical_lasso,
    graphical_lasso_path,
    lambda_max,
)

HTF_S = np.array([[10, 1, 5, 4], [1, 10, 2, 6], [5, 2, 10, 3], [4, 6, 3, 10.0]])
HTF_G = np.array([[0, 1, 0, 1], [1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 1, 0]])
# Hastie, Tibshirani & Friedman (2009) p. 652, to 6 decimals (spec §d.1)
HTF_OMEGA = np.array(
    [
        [0.119657, -0.007859, 0.0, -0.047179],
        [-0.007859, 0.104770, -0.019921, 0.0],
        [0.0, -0.019921, 0.113697, -0.032375],
        [-0.047179, 0.0, -0.032375, 0.128584],
    ]
)


def _random_problem(seed, p=12, n=40):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(p, p)) * (rng.random((p, p)) < 0.2)
    omega = A @ A.T + np.eye(p)
    X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(omega), size=n)
    return X, np.cov(X, rowvar=False, bias=True)


# --------------------------------------------------------------- covariance selection


def test_covariance_selection_reproduces_htf_example():
    res = covariance_selection(HTF_S, HTF_G)
    assert res.converged
    np.testing.assert_allclose(res.precision, HTF_OMEGA, atol=1e-6)
    expected_sigma = HTF_S.copy()
    expected_sigma[0, 2] = expected_sigma[2, 0] = 1.314206
    expected_sigma[1, 3] = expected_sigma[3, 1] = 0.870472
    np.testing.assert_allclose(res.covariance, expected_sigma, atol=1e-6)
    assert res.log_likelihood == pytest.approx(-12.894907, abs=1e-6)
    # the defining properties: Sigma = Omega^-1, zeros off the graph
    np.testing.assert_allclose(np.linalg.inv(res.precision), res.covariance, atol=1e-9)
    assert res.precision[0, 2] == 0 and res.precision[1, 3] == 0


def test_covariance_selection_complete_graph_is_inverse_and_accepts_data():
    X, S = _random_problem(0)
    full = ~np.eye(S.shape[0], dtype=bool)
    res = covariance_selection(X, full)
    np.testing.assert_allclose(res.precision, np.linalg.inv(S), rtol=1e-8, atol=1e-10)


def test_covariance_selection_matches_constrained_gradient_conditions():
    _X, S = _random_problem(1)
    rng = np.random.default_rng(5)
    G = np.triu(rng.random(S.shape) < 0.3, 1)
    G = G | G.T
    res = covariance_selection(S, G)
    sigma = np.linalg.inv(res.precision)
    keep = G | np.eye(S.shape[0], dtype=bool)
    np.testing.assert_allclose(sigma[keep], S[keep], atol=1e-8)
    assert np.all(res.precision[~keep] == 0)


@pytest.mark.parametrize(
    ("graph", "message"),
    [
        (np.ones((4, 4)), "zero diagonal"),
        (np.triu(HTF_G, 1), "symmetric"),
        (np.full((4, 4), 0.5), "0/1"),
        (np.zeros((3, 3)), "adjacency matrix"),
    ],
)
def test_covariance_selection_rejects_bad_graphs(graph, message):
    with pytest.raises(ValueError, match=message):
        covariance_selection(HTF_S, graph)


# ------------------------------------------------------------------------ glasso


def test_glasso_reproduces_murphy_fig_26_18_on_sachs():
    sachs = load("sachs")
    S = np.cov(sachs.data, rowvar=False) / 1000  # unbiased covariance / 1000 (spec §d.2)
    path = graphical_lasso_path(S, [36.0, 27.0, 7.0, 0.0])
    assert list(path.n_edges) == [8, 11, 18, 55]
    names = sachs.feature_names
    edges36 = {
        frozenset((names[i], names[j])) for i, j in zip(*np.nonzero(np.triu(path[0].adjacency)))
    }
    expected = {
        frozenset(e)
        for e in [
            ("praf", "pmek"), ("pmek", "PKA"), ("pmek", "P38"), ("plcg", "PIP2"),
            ("PIP2", "P38"), ("PKA", "P38"), ("PKC", "P38"), ("P38", "pjnk"),
        ]
    }
    assert edges36 == expected
    # scikit-learn's convention (diagonal unpenalised) gives 10 edges at 27 (spec §d.2)
    assert graphical_lasso(S, 27.0, penalize_diagonal=False).n_edges == 10


@pytest.mark.parametrize("penalize_diagonal", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_glasso_satisfies_kkt_conditions(seed, penalize_diagonal):
    _X, S = _random_problem(seed, p=15, n=10)  # n < p: S singular
    lam = 0.3 * lambda_max(S)
    res = graphical_lasso(S, lam, penalize_diagonal=penalize_diagonal, tol=1e-10)
    assert res.converged
    assert res.kkt_gap < 1e-6 * np.abs(S).max()
    np.linalg.cholesky(res.precision)
    assert 0 < res.n_edges < 105
    # the objective is minimal against perturbations that keep the sparsity pattern
    rng = np.random.default_rng(seed)
    for _ in range(5):
        E = rng.normal(size=S.shape) * 1e-3
        E = (E + E.T) * (res.precision != 0)
        other = res.precision + E
        _sign, logdet = np.linalg.slogdet(other)
        pen = np.abs(other).sum() - (0 if penalize_diagonal else np.abs(np.diag(other)).sum())
        assert -logdet + np.sum(S * other) + lam * pen >= res.objective - 1e-12


def test_glasso_agrees_with_scikit_learn_offdiagonal_convention():
    from sklearn.covariance import graphical_lasso as sk_glasso

    for seed in range(3):
        _X, S = _random_problem(seed, p=10, n=60)
        lam = 0.2 * lambda_max(S)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # only compare where scikit-learn converged
            sk_cov, sk_prec = sk_glasso(S, alpha=lam, tol=1e-10, enet_tol=1e-12, max_iter=1000)
        ours = graphical_lasso(S, lam, penalize_diagonal=False, tol=1e-10)
        np.testing.assert_allclose(ours.precision, sk_prec, atol=1e-6 * np.abs(sk_prec).max())
        np.testing.assert_allclose(ours.covariance, sk_cov, atol=1e-6 * np.abs(sk_cov).max())


def test_glasso_positive_definite_where_scikit_learn_fails():
    from sklearn.covariance import graphical_lasso as sk_glasso

    S = np.cov(load("sachs").data, rowvar=False) / 1000
    with pytest.raises(FloatingPointError, match="SPD"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk_glasso(S, alpha=1.0)
    for penalize_diagonal in (True, False):
        res = graphical_lasso(S, 1.0, penalize_diagonal=penalize_diagonal)
        assert res.converged
        assert np.linalg.eigvalsh(res.precision)[0] > 0
        assert np.linalg.eigvalsh(res.covariance)[0] > 0


def test_glasso_path_warm_start_matches_cold_solves_and_is_monotone():
    _X, S = _random_problem(3, p=20, n=30)
    lams = lambda_max(S) * np.logspace(0, -2, 8)
    path = graphical_lasso_path(S, lams, tol=1e-10)
    for lam, res in zip(lams, path.results):
        cold = graphical_lasso(S, lam, tol=1e-10)
        np.testing.assert_allclose(res.precision, cold.precision, atol=1e-6)
        assert res.converged
    assert path.n_edges[0] == 0
    assert path.n_edges[-1] > path.n_edges[0]


def test_glasso_data_input_uses_mle_covariance():
    X, S = _random_problem(4)
    np.testing.assert_allclose(
        graphical_lasso(X, 0.1).precision, graphical_lasso(S, 0.1).precision, atol=1e-10
    )


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        ((np.array([[1.0, 2.0, np.nan], [0.0, 1.0, 2.0]]), 0.1), {}, ValueError, "non-finite"),
        ((np.ones((1, 3)), 0.1), {}, ValueError, "at least 2"),
        ((np.array([[2.0, 1.0], [0.5, 2.0]]), 0.1), {"kind": "covariance"}, ValueError,
         "not symmetric"),
        ((np.array([[2.0, 1.0], [0.5, 2.0]]), 0.1), {}, ValueError, "not symmetric"),
        ((HTF_S, 0.1), {"kind": "rows"}, ValueError, "kind"),
        ((np.array([[1.0, 2.0], [2.0, 1.0]]), 0.1), {}, ValueError, "positive semidefinite"),
        ((HTF_S, -1.0), {}, ValueError, ">= 0"),
        ((HTF_S, "a"), {}, TypeError, "lam"),
        ((np.random.default_rng(0).normal(size=(3, 5)), 0.0), {}, ValueError, "singular"),
        ((HTF_S, 0.1), {"penalize_diagonal": "yes"}, TypeError, "penalize_diagonal"),
    ],
)
def test_glasso_bad_input(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        graphical_lasso(*args, **kwargs)


@pytest.mark.parametrize(("lams", "error", "message"), [
    ("x", TypeError, "lams must be a 1-D sequence of penalties, got 'x'"),
    (None, TypeError, "lams must be a 1-D sequence of penalties, got None"),
    ([[0.1, 0.2]], TypeError, "lams must be a 1-D sequence"),
    ([], ValueError, "at least one penalty"),
    ([0.1, "a"], TypeError, r"lams\[1\] must be a number"),
    ([0.1, -1.0], ValueError, r"lams\[1\] must be a finite number >= 0"),
])
def test_glasso_path_bad_penalties(lams, error, message):
    # before: numpy's "could not convert string to float: 'x'", "lams[0] ... got nan"
    # for None, and a 2-D list flattened without a word
    with pytest.raises(error, match=message):
        graphical_lasso_path(HTF_S, lams, progressbar=False)
