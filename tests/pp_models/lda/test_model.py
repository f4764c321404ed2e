"""pp_models.lda: corpus handling, bad input, the two model forms, perplexity, top words."""

import warnings

import numpy as np
import pymc as pm
import pytest
import scipy.sparse as sp
from scipy.stats import dirichlet, multinomial

from custom_ops.lda.gibbs import build_counts, log_joint
from pp_models import lda
from pp_models.model_info import get_info

COUNTS = np.array([[2, 0, 1, 0], [0, 0, 0, 0], [1, 3, 0, 2], [0, 1, 1, 0]])


# --------------------------------------------------------------------------- corpus
def test_three_input_kinds_give_the_same_corpus():
    tokens = [[0, 0, 2], [], [0, 1, 1, 1, 3, 3], [1, 2]]
    with pytest.warns(UserWarning, match="1 empty document"):
        dense = lda.prepare_corpus(COUNTS)
    with pytest.warns(UserWarning, match="1 empty document"):
        sparse = lda.prepare_corpus(sp.csr_matrix(COUNTS))
    with pytest.warns(UserWarning, match="1 empty document"):
        seqs = lda.prepare_corpus(tokens, n_words=4)
    for c in (dense, sparse, seqs):
        assert c.n_docs == 3 and c.n_tokens == 11 and c.n_words == 4 and c.n_empty == 1
        np.testing.assert_array_equal(c.doc_index, [0, 2, 3])
        np.testing.assert_array_equal(c.counts().toarray(), COUNTS[[0, 2, 3]])
    # token sequences keep their order
    np.testing.assert_array_equal(lda.prepare_corpus([[3, 0, 3]], n_words=4).words, [3, 0, 3])
    # float counts holding whole numbers are accepted
    with pytest.warns(UserWarning):
        np.testing.assert_array_equal(lda.prepare_corpus(COUNTS.astype(float)).words, dense.words)


@pytest.mark.parametrize(
    ("docs", "kwargs", "error", "match"),
    [
        (np.array([[1, -1]]), {}, ValueError, "docs: counts must be >= 0"),
        (sp.csr_matrix(np.array([[1, -2]])), {}, ValueError, "docs: counts must be >= 0"),
        (np.array([[1.5, 1.0]]), {}, ValueError, "whole numbers"),
        (np.array([[np.nan, 1.0]]), {}, ValueError, "finite"),
        (np.array([["a", "b"]]), {}, TypeError, "integer counts"),
        (np.zeros((0, 3)), {}, ValueError, "corpus is empty"),
        (np.zeros((3, 3)), {}, ValueError, "corpus is empty"),
        ([], {}, ValueError, "corpus is empty"),
        ([[], []], {}, ValueError, "corpus is empty"),
        ([[0, 4]], {"n_words": 4}, ValueError, "word id 4 is >= the vocabulary size"),
        ([[0, -1]], {}, ValueError, "word ids must be >= 0"),
        ([[0.5]], {}, ValueError, "whole numbers"),
        (np.ones(3), {}, ValueError, "must be 2-D"),
        (np.ones((2, 3)), {"n_words": 4}, ValueError, "does not match the 3 columns"),
        ("the cat", {}, TypeError, "expected a count matrix"),
        ({0: [1]}, {}, TypeError, "expected a count matrix"),
    ],
)
def test_bad_corpus(docs, kwargs, error, match):
    with pytest.raises(error, match=match):
        lda.prepare_corpus(docs, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_topics": 0}, "n_topics must be >= 1"),
        ({"n_topics": -3}, "n_topics must be >= 1"),
        ({"n_topics": 2, "alpha": 0.0}, "alpha must be finite and > 0"),
        ({"n_topics": 2, "alpha": -1.0}, "alpha must be finite and > 0"),
        ({"n_topics": 2, "alpha": [0.1, -0.1]}, "alpha must be finite and > 0"),
        (
            {"n_topics": 2, "alpha": [0.1, 0.1, 0.1]},
            r"alpha must be a number or have shape \(2,\)",
        ),
        ({"n_topics": 2, "eta": 0}, "eta must be finite and > 0"),
        ({"n_topics": 2, "eta": np.inf}, "eta must be finite and > 0"),
        ({"n_topics": 2, "eta": [0.1, 0.1]}, r"eta must be a number or have shape \(4,\)"),
        ({"n_topics": 2, "vocabulary": ["a", "b"]}, "vocabulary has 2 words"),
        ({"n_topics": 2, "batch_size": 2}, "batch_size is for the explicit model"),
        ({"n_topics": 2, "collapsed": False, "batch_size": 0}, r"batch_size must be in \[1, 3\]"),
        ({"n_topics": 2, "collapsed": False, "batch_size": 9}, r"batch_size must be in \[1, 3\]"),
        ({"n_topics": 2, "thin": 0}, "thin must be >= 1"),
        ({"n_topics": 2, "collapsed": False, "thin": 2}, "thin is for the collapsed model"),
    ],
)
def test_bad_model_arguments(kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the empty document
        with pytest.raises(ValueError, match=match):
            lda.model(COUNTS, **kwargs)


def test_collapsed_flag_must_be_boolean():
    with pytest.raises(TypeError, match="collapsed must be True or False"):
        lda.model(COUNTS[[0, 2]], n_topics=2, collapsed="yes")


@pytest.mark.parametrize("n_topics", [2.5, True])
def test_n_topics_must_be_an_integer(n_topics):
    with pytest.raises(TypeError, match="n_topics must be an integer"):
        lda.model(COUNTS[[0, 2]], n_topics=n_topics)


# ------------------------------------------------------------------ collapsed model
def _small_corpus(seed=0, n_docs=6, n_words=5):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, n_words, size=rng.integers(3, 9)) for _ in range(n_docs)]


def test_collapsed_model_logp_is_the_collapsed_joint():
    docs = _small_corpus()
    alpha = np.array([0.3, 0.7, 1.1])
    eta = 0.2
    m = lda.model(docs, n_topics=3, alpha=alpha, eta=eta, n_words=5)
    corpus = lda.prepare_corpus(docs, n_words=5)
    logp = m.compile_logp()
    rng = np.random.default_rng(1)
    for _ in range(3):
        z = rng.integers(0, 3, corpus.n_tokens)
        expected = log_joint(*build_counts(corpus.words, corpus.doc_ptr, z, 5, 3), alpha, eta)
        assert logp({"z": z}) == pytest.approx(expected, rel=1e-10)
    info = get_info(m)
    assert info.preferred_method == "gibbs"
    (hint,) = info.step_hints
    assert hint.step == lda.STEP_NAME and hint.var_names == ("z",)
    options = hint.options(m)
    assert options["sweeps"] == 1 and options["words"] is m["w"]
    assert (
        get_info(lda.model(docs, n_topics=3, n_words=5, thin=4)).step_hints[0].options.sweeps == 4
    )
    assert {"z", "theta", "phi"} <= set(info.label_variables)


def test_collapsed_deterministics_are_conditional_posterior_means():
    docs = _small_corpus(2)
    m = lda.model(docs, n_topics=2, alpha=0.5, eta=0.1, n_words=5)
    corpus = lda.prepare_corpus(docs, n_words=5)
    z = np.random.default_rng(3).integers(0, 2, corpus.n_tokens)
    outputs = m.replace_rvs_by_values([m["theta"], m["phi"]])
    theta, phi = m.compile_fn(outputs, inputs=m.value_vars)({"z": z})
    n_wk, n_dk, _ = build_counts(corpus.words, corpus.doc_ptr, z, 5, 2)
    np.testing.assert_allclose(theta, (n_dk + 0.5) / (n_dk.sum(1, keepdims=True) + 1.0))
    np.testing.assert_allclose(phi, (n_wk.T + 0.1) / (n_wk.sum(0)[:, None] + 0.5))


def test_collapsed_prior_draws_have_the_polya_coincidence_probabilities():
    """Two tokens of one document share a topic with probability (1 + a)/(K a + 1)
    (E sum_k theta_k^2 under Dir(a)); tokens of different documents with 1/K; two
    tokens of one topic share a word with probability (1 + e)/(V e + 1)."""
    docs = [[0, 1, 2], [3, 4]]
    n_topics, n_words, a, e = 3, 5, 0.4, 0.25
    m = lda.model(docs, n_topics=n_topics, alpha=a, eta=e, n_words=n_words)
    n_draws = 6000
    z, w = pm.draw([m["z"], m["w"]], draws=n_draws, random_seed=4)
    assert z.shape == w.shape == (n_draws, 5)
    assert z.min() >= 0 and z.max() < n_topics and w.min() >= 0 and w.max() < n_words

    def check(hits, p):
        se = np.sqrt(p * (1 - p) / hits.size)
        assert abs(hits.mean() - p) < 4.5 * se

    check(z[:, 0] == z[:, 1], (1 + a) / (n_topics * a + 1))
    check(z[:, 0] == z[:, 3], 1 / n_topics)
    same_topic = z[:, 0] == z[:, 3]
    check(w[same_topic, 0] == w[same_topic, 3], (1 + e) / (n_words * e + 1))
    check(w[~same_topic, 0] == w[~same_topic, 3], 1 / n_words)


# ------------------------------------------------------------------- explicit model
def test_explicit_model_logp_matches_scipy():
    docs = COUNTS[[0, 2, 3]]
    alpha, eta = np.array([0.6, 1.3]), 0.4
    m = lda.model(docs, n_topics=2, alpha=alpha, eta=eta, collapsed=False)
    rng = np.random.default_rng(5)
    theta = rng.dirichlet(alpha, size=3)
    phi = rng.dirichlet(np.full(4, eta), size=2)
    value_of = {"theta": theta, "phi": phi}
    fn = m.compile_fn(
        [m.logp(vars=[m["counts"]], sum=True), m.logp(vars=[m["theta"], m["phi"]], jacobian=False)],
        inputs=m.value_vars,
    )
    transformed = {
        v.name: m.rvs_to_transforms[m[v.name.replace("_simplex__", "")]]
        .forward(value_of[v.name.replace("_simplex__", "")])
        .eval()
        for v in m.value_vars
    }
    got_obs, got_prior = fn(transformed)
    p = theta @ phi
    want_obs = sum(multinomial.logpmf(docs[d], docs[d].sum(), p[d]) for d in range(3))
    want_prior = sum(dirichlet.logpdf(t, alpha) for t in theta) + sum(
        dirichlet.logpdf(f, np.full(4, eta)) for f in phi
    )
    assert got_obs == pytest.approx(want_obs, rel=1e-10)
    assert got_prior == pytest.approx(want_prior, rel=1e-10)
    assert get_info(m).preferred_method == "nuts"


def test_minibatch_likelihood_is_unbiased_for_the_full_data():
    rng = np.random.default_rng(6)
    docs = rng.poisson(2.0, size=(10, 6))
    docs[:, 0] += 1
    m_full = lda.model(docs, n_topics=2, collapsed=False)
    m_mb = lda.model(docs, n_topics=2, collapsed=False, batch_size=3)
    assert get_info(m_mb).preferred_method == "advi"
    point = m_full.initial_point()
    full = m_full.compile_fn(m_full.logp(vars=[m_full["counts"]]), inputs=m_full.value_vars)(point)
    mb_fn = m_mb.compile_fn(m_mb.logp(vars=[m_mb["counts"]]), inputs=m_mb.value_vars)
    draws = np.array([mb_fn(point) for _ in range(3000)])
    assert abs(draws.mean() - full) < 4.5 * draws.std() / np.sqrt(draws.size)


# ------------------------------------------------------------------------ evaluation
def test_uniform_topics_have_perplexity_equal_to_the_vocabulary_size():
    # Murphy (2012) §27.3.3: a uniform model over V symbols has perplexity exactly V
    docs = np.random.default_rng(7).poisson(3.0, size=(8, 11)) + 1
    topics = np.full((3, 11), 1 / 11)
    assert lda.perplexity(topics, docs, random_seed=0) == pytest.approx(11.0, rel=1e-12)


def test_true_topics_beat_wrong_topics_and_the_unigram_model():
    rng = np.random.default_rng(8)
    n_words, n_topics = 12, 3
    phi = np.zeros((n_topics, n_words))
    for k in range(n_topics):
        phi[k, 4 * k : 4 * k + 4] = 0.25  # disjoint topics
    theta = rng.dirichlet(np.full(n_topics, 0.2), size=60)
    docs = [rng.choice(n_words, size=40, p=t @ phi) for t in theta]
    smoothed = 0.98 * phi + 0.02 / n_words
    good = lda.perplexity(smoothed, docs, alpha=0.2, random_seed=1)
    shuffled = lda.perplexity(smoothed[:, rng.permutation(n_words)], docs, alpha=0.2, random_seed=1)
    unigram = np.bincount(np.concatenate(docs), minlength=n_words) / sum(map(len, docs))
    uni = lda.perplexity(np.tile(unigram, (n_topics, 1)), docs, alpha=0.2, random_seed=1)
    # documents use one or two 4-word topics: the true topics must do much better than
    # the unigram model and than topics whose words are scrambled
    assert good < 0.7 * uni
    assert good < 0.7 * shuffled
    # ... and come close to the perplexity with the true proportions (no estimation);
    # estimating theta from half a document costs a few percent
    per_doc = [np.log((t @ smoothed)[d]).mean() for t, d in zip(theta, docs, strict=True)]
    oracle = np.exp(-np.mean(per_doc))
    assert oracle < good < 1.1 * oracle


@pytest.mark.parametrize(
    ("topics", "kwargs", "match"),
    [
        (np.full((2, 4), 0.3), {}, "rows sum to 1"),
        (np.full(4, 0.25), {}, r"\(n_topics, n_words\)"),
        (np.full((2, 5), 0.2), {}, "vocabularies differ"),
        (np.full((2, 4), 0.25), {"observed_fraction": 1.0}, "observed_fraction"),
        (np.full((2, 4), 0.25), {"n_samples": 0}, "n_samples"),
        (np.full((2, 4), 0.25), {"alpha": -1}, "alpha must be finite and > 0"),
    ],
)
def test_perplexity_bad_input(topics, kwargs, match):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=match):
            lda.perplexity(topics, COUNTS, **kwargs)


def test_top_words():
    topics = np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1]])
    assert lda.top_words(topics, n=2) == [[1, 2], [0, 1]]
    assert lda.top_words(topics, ["a", "b", "c"], n=1) == [["b"], ["a"]]
    with pytest.raises(ValueError, match="vocabulary has 2 words"):
        lda.top_words(topics, ["a", "b"])
    with pytest.raises(ValueError, match="n must be >= 1"):
        lda.top_words(topics, n=0)


def test_reuters_is_registered_with_provenance():
    from pp_models import datasets

    reuters = datasets.load("reuters")
    assert reuters.data.shape == (395, 4258) and sp.issparse(reuters.data)
    assert int(reuters.data.sum()) == 84010
    assert len(reuters.feature_names) == 4258 and reuters.feature_names[0] == "church"
    assert len(reuters.extras["titles"]) == 395
    assert "lda" in reuters.provenance and "MPL-2.0" in reuters.provenance
    # document 0 (Prince Charles story) as in the LDA-C file's first line: 159 distinct words
    assert reuters.data[0].nnz == 159
