"""Collapsed LDA's per-token conditional predictive (LOO) against brute force, and its
replicated words' distribution (pp_models.lda.predictive)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import logsumexp

from custom_ops.lda.gibbs import build_counts, log_joint
from custom_ops.lda.predictive import replicate_words
from pp_models import lda
from pp_models.lda import predictive

DOCS = [[0, 2, 2, 1], [1, 1, 3], [3, 0, 2, 2, 4]]
V, K = 5, 3
ALPHA = np.array([0.3, 0.5, 0.9])
ETA = 0.2


def _flat_corpus():
    words = np.concatenate([np.asarray(d) for d in DOCS])
    doc_ptr = np.concatenate([[0], np.cumsum([len(d) for d in DOCS])])
    return words, doc_ptr


def _log_joint(words, doc_ptr, z):
    counts = build_counts(words, doc_ptr, z, V, K)
    return log_joint(*counts, ALPHA, np.full(V, ETA))


def test_token_conditional_predictive_is_the_ratio_of_collapsed_joints():
    # log p(w_i | z_{-i}, w_{-i}) = log sum_k p(w, z^{i<-k}) - log sum_{k, v} p(w^{i<-v},
    # z^{i<-k}) (token i's word and topic summed out: the other tokens' joint)
    m = lda.model(DOCS, n_topics=K, n_words=V, alpha=ALPHA, eta=ETA)
    words, doc_ptr = _flat_corpus()
    rng = np.random.default_rng(0)
    z = rng.integers(0, K, (4, words.size))
    post = xr.Dataset({"z": (("chain", "draw", "token"), z.reshape(2, 2, -1))})
    got = predictive.pointwise_log_likelihood(post, m)["w"].values.reshape(4, -1)
    for s in range(4):
        for i in range(words.size):
            num, den = [], []
            for k in range(K):
                zk = z[s].copy()
                zk[i] = k
                num.append(_log_joint(words, doc_ptr, zk))
                for v in range(V):
                    wv = words.copy()
                    wv[i] = v
                    den.append(_log_joint(wv, doc_ptr, zk))
            np.testing.assert_allclose(got[s, i], logsumexp(num) - logsumexp(den),
                                       rtol=1e-10, atol=1e-10)


def test_replicated_words_follow_the_topics_posterior_predictive():
    # each topic's words: E[phi_k] = (n_k. + eta) / (n_k + V eta) under phi's posterior
    words, doc_ptr = _flat_corpus()
    z = np.array([0, 1, 1, 2, 2, 2, 0, 0, 1, 1, 0, 2])
    n_wk, _, n_k = build_counts(words, doc_ptr, z, V, K)
    rng = np.random.default_rng(1)
    reps = 4000
    out = np.empty((reps, z.size), dtype=np.int64)
    for r in range(reps):
        replicate_words(rng, words, doc_ptr, z, V, K, np.full(V, ETA), out[r])
    for k in range(K):
        seen = np.bincount(out[:, z == k].ravel(), minlength=V) / (reps * (z == k).sum())
        expected = (n_wk[:, k] + ETA) / (n_k[k] + V * ETA)
        # each token's word is a draw from one phi_k draw: counts within a draw are
        # correlated, so the tolerance is the spread of phi_k over draws
        np.testing.assert_allclose(seen, expected, atol=0.03)


def test_fit_records_the_topics_the_pointwise_terms_need():
    from inference.log_likelihood import needed_for_log_likelihood

    m = lda.model(DOCS, n_topics=K, n_words=V)
    assert needed_for_log_likelihood(m, None) == ["z"]  # the model records nothing else
    assert needed_for_log_likelihood(m, ["phi"]) == ["phi", "z"]
    assert needed_for_log_likelihood(m, ["z", "theta"]) == ["z", "theta"]
    explicit = lda.model(DOCS, n_topics=K, n_words=V, collapsed=False)
    assert needed_for_log_likelihood(explicit, None) is None
