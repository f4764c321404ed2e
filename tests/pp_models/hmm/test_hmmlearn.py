"""Our forward algorithm's log-likelihood equals hmmlearn's ``score`` for the same
parameters (Gaussian and categorical emissions, two sequences)."""

import numpy as np
from hmmlearn import hmm as hmmlearn

from pp_models import hmm
from pp_models.hmm.emissions import get_emission


def _ours(emission, pi0, P, params, y, lengths):
    log_lik = get_emission(emission).log_lik(params, y)
    return hmm.forward_backward(np.log(pi0), np.log(P), log_lik, lengths=lengths).log_evidence


def test_gaussian_score_equals_hmmlearn():
    rng = np.random.default_rng(0)
    pi0, P = rng.dirichlet(np.ones(3)), rng.dirichlet(np.ones(3), size=3)
    mu, var = np.array([-1.0, 0.5, 3.0]), np.array([0.5, 1.0, 2.0])
    y = rng.normal(size=40) * 2.0
    theirs = hmmlearn.GaussianHMM(n_components=3, covariance_type="diag", init_params="", params="")
    theirs.startprob_, theirs.transmat_ = pi0, P
    theirs.means_, theirs.covars_ = mu[:, None], var[:, None]
    score = theirs.score(y[:, None], lengths=[25, 15])
    ours = _ours("gaussian", pi0, P, {"mu": mu, "tau": 1.0 / var}, y, [25, 15])
    np.testing.assert_allclose(ours, score, rtol=1e-10)


def test_categorical_score_equals_hmmlearn():
    rng = np.random.default_rng(1)
    pi0, P = rng.dirichlet(np.ones(2)), rng.dirichlet(np.ones(2), size=2)
    phi = rng.dirichlet(np.ones(4), size=2)
    y = rng.integers(0, 4, size=30)
    theirs = hmmlearn.CategoricalHMM(n_components=2, n_features=4, init_params="", params="")
    theirs.startprob_, theirs.transmat_, theirs.emissionprob_ = pi0, P, phi
    score = theirs.score(y[:, None], lengths=[10, 20])
    np.testing.assert_allclose(
        _ours("categorical", pi0, P, {"phi": phi}, y, [10, 20]), score, rtol=1e-10
    )
