"""Brute-force reference for the HMM kernels: every one of the K^T state paths of each
sequence enumerated, its joint log probability with the data summed exactly."""

import itertools

import numpy as np
from scipy.special import logsumexp


def random_hmm(rng, K, T, *, zeros=False):
    """Normalised random parameters and log-likelihoods (some transitions impossible
    when ``zeros``)."""
    pi0 = rng.dirichlet(np.ones(K))
    P = rng.dirichlet(np.ones(K), size=K)
    if zeros and K > 1:
        P[0, 1] = 0.0
        P[0] /= P[0].sum()
    with np.errstate(divide="ignore"):
        return np.log(pi0), np.log(P), rng.normal(scale=2.0, size=(T, K))


def path_scores(log_pi0, log_P, log_lik, start, stop):
    """``(paths, scores)``: every path of rows start..stop-1 and ``log p(path, y)``."""
    K = log_pi0.shape[0]
    paths = np.array(list(itertools.product(range(K), repeat=stop - start)))
    scores = log_pi0[paths[:, 0]] + log_lik[start, paths[:, 0]]
    for t in range(1, stop - start):
        scores = scores + log_P[paths[:, t - 1], paths[:, t]] + log_lik[start + t, paths[:, t]]
    return paths, scores


def exact_posterior(log_pi0, log_P, log_lik, offsets):
    """Per-sequence log evidence, marginals (T, K), expected transitions (K, K) and
    expected initial states (K,) by enumeration."""
    T, K = log_lik.shape
    evidence, gamma = [], np.zeros((T, K))
    xi, initial = np.zeros((K, K)), np.zeros(K)
    for s in range(len(offsets) - 1):
        start, stop = offsets[s], offsets[s + 1]
        paths, scores = path_scores(log_pi0, log_P, log_lik, start, stop)
        z = logsumexp(scores)
        evidence.append(z)
        w = np.exp(scores - z)
        for t in range(stop - start):
            np.add.at(gamma[start + t], paths[:, t], w)
            if t > 0:
                np.add.at(xi, (paths[:, t - 1], paths[:, t]), w)
        np.add.at(initial, paths[:, 0], w)
    return np.array(evidence), gamma, xi, initial
