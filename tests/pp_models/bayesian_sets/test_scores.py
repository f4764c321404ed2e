"""Bayesian Sets (Heller 2007 ch. 4): scores against the closed form (Eq. 4.10) and against
the difference of two collapsed log evidences (Eq. 4.2, Fig. 4.1), on dense and sparse
input; the PyMC model is that Beta-Bernoulli model; ranking; bad input."""

import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from custom_ops import conjugate as cj
from pp_models import bayesian_sets as bs
from pp_models.bayesian_sets import prior as prior_module
from pp_models.bayesian_sets import score as score_module
from pp_models.registry import NoCLIEntry, get_model, list_models, no_cli_entries


@pytest.fixture(scope="module")
def data():
    """Binary items from two prototypes, with a column no item has and one every item has
    (the empirical prior leaves both out)."""
    rng = np.random.default_rng(3)
    protos = rng.random((2, 12)) < 0.4
    z = rng.integers(2, size=40)
    X = (protos[z] ^ (rng.random((40, 12)) < 0.15)).astype(float)
    X[:, 4] = 0.0
    X[:, 9] = 1.0
    return X


def closed_form(X, query, a, b):
    """Eq. 4.10 term by term with lgamma: prod_j of the posterior predictive of x_j given
    the query over its prior predictive, for every row (the ratio of Gamma functions as
    printed, no simplification)."""
    Q = X[query]
    N = len(query)
    s = Q.sum(0)
    at, bt = a + s, b + N - s
    out = np.empty(X.shape[0])
    for i, x in enumerate(X):
        total = 0.0
        for j in range(X.shape[1]):
            post = (math.lgamma(a[j] + b[j] + N) - math.lgamma(a[j] + b[j] + N + 1)
                    + math.lgamma(at[j] + x[j]) + math.lgamma(bt[j] + 1 - x[j])
                    - math.lgamma(at[j]) - math.lgamma(bt[j]))
            pri = (math.lgamma(a[j] + b[j]) - math.lgamma(a[j] + b[j] + 1)
                   + math.lgamma(a[j] + x[j]) + math.lgamma(b[j] + 1 - x[j])
                   - math.lgamma(a[j]) - math.lgamma(b[j]))
            total += post - pri
        out[i] = total
    return out


def empirical(X, kappa, cols):
    m = X.mean(0)[cols]
    return kappa * m, kappa * (1 - m)


FORMATS = {
    "dense": lambda X: X,
    "dense_bool": lambda X: X.astype(bool),
    "csr": sp.csr_matrix,
    "csc_int8": lambda X: sp.csc_matrix(X.astype(np.int8)),
    "coo": sp.coo_array,
}


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kappa", [2.0, 0.3])
def test_scores_equal_the_closed_form(data, fmt, kappa):
    query = [3, 17, 25]
    cols = [j for j in range(data.shape[1]) if j not in (4, 9)]
    a, b = empirical(data, kappa, cols)
    expected = closed_form(data[:, cols], query, a, b)
    got = bs.scores(FORMATS[fmt](data), query, kappa=kappa)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-11)


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_scores_with_given_hyperparameters_use_every_column(data, fmt):
    rng = np.random.default_rng(0)
    a = rng.uniform(0.2, 3.0, data.shape[1])
    b = rng.uniform(0.2, 3.0, data.shape[1])
    query = [0, 5]
    expected = closed_form(data, query, a, b)
    got = bs.scores(FORMATS[fmt](data), query, alpha=a, beta=b, kappa=99.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-11)
    # scalars broadcast
    np.testing.assert_allclose(bs.scores(data, query, alpha=0.5, beta=1.5),
                               closed_form(data, query, np.full(12, 0.5), np.full(12, 1.5)),
                               rtol=1e-12, atol=1e-11)


def test_constant_columns_change_no_score(data):
    # a feature nobody has and one everybody has: adding more of them changes nothing
    wider = np.hstack([data, np.zeros((40, 3)), np.ones((40, 2))])
    np.testing.assert_allclose(bs.scores(wider, [1, 2]), bs.scores(data, [1, 2]), rtol=1e-13)


def _log_evidence(rows, a, b):
    """log p(rows) under one theta ~ Beta(a, b) per column, by the zoo's conjugate code."""
    return cj.bernoulli_log_marginal(cj.bernoulli_stats(np.ascontiguousarray(rows)), (a, b))


@pytest.mark.parametrize("fmt", ["dense", "csr"])
def test_scores_are_a_difference_of_two_collapsed_log_evidences(data, fmt):
    query = [3, 17, 25, 30]
    cols = np.array([j for j in range(data.shape[1]) if j not in (4, 9)])
    a, b = empirical(data, 2.0, cols)
    D = data[:, cols]
    got = bs.scores(FORMATS[fmt](data), query)
    for item in range(data.shape[0]):  # query rows included: x is then a copy
        shared = _log_evidence(np.vstack([D[query], D[item]]), a, b)
        separate = _log_evidence(D[query], a, b) + _log_evidence(D[[item]], a, b)
        assert got[item] == pytest.approx(shared - separate, rel=1e-12, abs=1e-11)


@pytest.mark.parametrize("shared", [True, False])
def test_pymc_model_is_that_beta_bernoulli_model(data, shared):
    """The PyMC model's joint density minus the conjugate posterior density is the same
    constant at every theta, and that constant is the collapsed log evidence (Bayes' rule:
    log p(D) = log p(D, theta) - log p(theta | D)); so the score is the difference of the
    two PyMC models' log evidences."""
    query, item = [3, 17, 25], 11
    cols = np.array([j for j in range(data.shape[1]) if j not in (4, 9)])
    a, b = empirical(data, 2.0, cols)
    D = data[:, cols]
    m = bs.model(sp.csr_matrix(data), query, item=item, shared=shared)
    np.testing.assert_array_equal(m.coords["feature"], cols)
    logp = m.compile_logp(jacobian=False)
    groups = ({"theta": np.vstack([D[query], D[item]])} if shared
              else {"theta": D[query], "theta_item": D[[item]]})
    rng = np.random.default_rng(1)
    values = []
    for _ in range(3):
        point, log_post = {}, 0.0
        for name, rows in groups.items():
            theta = rng.uniform(0.05, 0.95, cols.size)
            point[f"{name}_logodds__"] = np.log(theta / (1 - theta))
            s = rows.sum(0)
            log_post += stats.beta.logpdf(theta, a + s, b + rows.shape[0] - s).sum()
        values.append(logp(point) - log_post)
    expected = sum(_log_evidence(rows, a, b) for rows in groups.values())
    np.testing.assert_allclose(values, expected, rtol=1e-10)


def test_scores_do_not_densify_a_huge_sparse_matrix():
    # dense, this would be 200,000 x 100,000 float64 = 160 GB
    rng = np.random.default_rng(0)
    n, J, nnz = 200_000, 100_000, 400_000
    X = sp.csr_matrix((np.ones(nnz), (rng.integers(n, size=nnz), rng.integers(J, size=nnz))),
                      shape=(n, J))
    X.data[:] = 1.0  # duplicates were summed
    s = bs.scores(X, [0, 1, 2])
    assert s.shape == (n,) and np.all(np.isfinite(s))
    top = bs.rank(X, [0, 1, 2], top=3)
    assert set(top.items) <= set(np.flatnonzero(s >= np.sort(s)[-3]))


def test_rank_orders_by_score_and_can_leave_the_query_out(data):
    query = [3, 17, 25]
    s = bs.scores(data, query)
    r = bs.rank(data, query, top=7)
    expected = np.lexsort((np.arange(40), -s))[:7]
    np.testing.assert_array_equal(r.items, expected)
    np.testing.assert_allclose(r.scores, s[expected])
    r = bs.rank(data, query, top=100, exclude_query=True)
    assert r.items.size == 37 and not set(query) & set(r.items)
    assert np.all(np.diff(r.scores) <= 0)
    w = r.query_weights
    np.testing.assert_allclose(w.constant + data @ w.weights, s, rtol=1e-13)
    assert w.weights[4] == 0 and w.weights[9] == 0
    assert w.top_features(3).tolist() == np.argsort(-w.weights, kind="stable")[:3].tolist()


def test_rank_breaks_ties_by_row_number():
    X = np.array([[1, 0], [1, 0], [0, 1], [1, 0], [0, 1]])
    r = bs.rank(X, [0], top=2, exclude_query=True)
    np.testing.assert_array_equal(r.items, [1, 3])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"query": []}, ValueError, "query is empty"),
        ({"query": [0, 40]}, ValueError, "query holds row 40, out of range for 40 rows"),
        ({"query": [-1]}, ValueError, "query holds row -1, out of range"),
        ({"query": [2, 5, 2]}, ValueError, "query repeats row 2"),
        ({"query": [[1, 2]]}, ValueError, "query must be a 1-D"),
        ({"query": [1.0, 2.0]}, TypeError, "query must be a sequence of integer row numbers"),
        ({"query": [True]}, TypeError, "query must be a sequence of integer"),
        ({"kappa": 0.0}, ValueError, "kappa must be a finite number > 0, got 0.0"),
        ({"kappa": -2}, ValueError, "kappa must be a finite number > 0"),
        ({"kappa": "2"}, TypeError, "kappa must be a positive number"),
        ({"X": "nonbinary"}, ValueError, r"X must be binary \(0/1\): 1 of its entries"),
        ({"X": "nonbinary_sparse"}, ValueError, "X must be binary.*sparse matrix's stored"),
        ({"X": "nan"}, ValueError, "X must be binary"),
        ({"X": "1d"}, ValueError, "X must be 2-D"),
        ({"alpha": 1.0}, ValueError, "beta: give alpha and beta together"),
        ({"beta": 1.0}, ValueError, "alpha: give alpha and beta together"),
        ({"alpha": [1.0, 2.0], "beta": 1.0}, ValueError, r"alpha must be .* shape \(12,\)"),
        ({"alpha": 1.0, "beta": 0.0}, ValueError, "beta must be finite and > 0"),
        ({"top": 0}, ValueError, "top must be >= 1"),
        ({"exclude_query": 1}, TypeError, "exclude_query must be True or False"),
    ],
)
def test_bad_input_is_refused_before_any_work(data, monkeypatch, kwargs, error, message):
    def no_work(*args, **kw):
        raise AssertionError("work started before the input was checked")

    monkeypatch.setattr(score_module, "_weights", no_work)
    monkeypatch.setattr(prior_module, "column_means", no_work)
    bad_X = data.copy()
    bad_X[7, 2] = 2.0
    nan_X = data.copy()
    nan_X[0, 0] = np.nan
    X = {"nonbinary": bad_X, "nonbinary_sparse": sp.csr_matrix(bad_X), "nan": nan_X,
         "1d": data[0]}.get(kwargs.pop("X", None), data)
    call = {"query": [1, 2], **kwargs}
    query = call.pop("query")
    functions = [bs.rank] if set(call) & {"top", "exclude_query"} else [
        bs.scores, bs.rank, bs.query_weights, bs.model]
    for function in functions:
        with pytest.raises(error, match=message):
            function(X, query, **call)


def test_model_checks_its_own_options(data):
    with pytest.raises(ValueError, match="item holds row 40, out of range"):
        bs.model(data, [0], item=40)
    with pytest.raises(TypeError, match="shared must be True or False"):
        bs.model(data, [0], item=1, shared="yes")


def test_no_ppzoo_entry_and_why():
    assert "bayesian_sets" not in {e.name for e in list_models()}
    (entry,) = [e for e in no_cli_entries() if e.name == "bayesian_sets"]
    assert entry.reason == bs.FAMILY.cli.reason and "retrieval" in entry.reason
    with pytest.raises(ValueError, match="'bayesian_sets' has no ppzoo entry: a retrieval"):
        get_model("bayesian_sets")
    with pytest.raises(ValueError, match="give the reason"):
        NoCLIEntry(" ")


def test_fit_samples_the_conjugate_posterior(data):
    """One fit through ``inference.fit``: the posterior of theta given the query is
    Beta(alpha + s, beta + N - s); NUTS's means agree within 5 Monte Carlo standard
    errors."""
    import arviz as az

    from inference import fit

    query = [3, 17, 25]
    narrow = data[:, :4]  # four informative columns keep the compile small
    m = bs.model(narrow, query)
    dt = fit(m, draws=400, tune=400, chains=2, random_seed=5, progressbar=False)
    theta = dt["posterior"]["theta"]
    mean = theta.mean(("chain", "draw")).values
    mcse = az.mcse(dt, var_names=["theta"])["theta"].values
    a, b = empirical(narrow, 2.0, np.arange(4))
    s = narrow[query].sum(0)
    truth = (a + s) / (a + b + len(query))
    assert np.all(np.abs(mean - truth) < 5 * mcse), (mean, truth, mcse)
