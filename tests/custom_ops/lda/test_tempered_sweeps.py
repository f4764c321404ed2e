"""The LDA sweeps at an inverse temperature beta leave the power posterior
p(z | alpha) p(w | z, eta)^beta invariant: every assignment of a 7-token corpus
enumerated (independently of the kernels, by sequential Pólya urns), both sweeps, a
symmetric eta (the sparse sweep's table) and an asymmetric one, beta in {0, 0.3, 1}; and
a planted bug (the topic's denominator left untempered) caught by the same check."""

import itertools
import math

import numpy as np
import pytest

from custom_ops.lda import gibbs as lk

WORDS = np.array([0, 1, 1, 2, 0, 1, 2], dtype=np.int32)
DOC_PTR = np.array([0, 3, 5, 7], dtype=np.int64)
V, K = 3, 2
ALPHA = np.array([0.5, 0.9])
ETAS = {"asymmetric": np.array([0.3, 0.7, 0.4]), "symmetric": np.full(V, 0.25)}
N_SWEEPS = 30_000
STATES = list(itertools.product(range(K), repeat=WORDS.size))


def log_prior_and_likelihood(z, eta):
    """(log p(z | alpha), log p(w | z, eta)), each by its Pólya urns: documents draw
    topics, topics draw words."""
    lp = ll = 0.0
    n_kw = np.zeros((K, V))
    for d in range(DOC_PTR.size - 1):
        n_dk = np.zeros(K)
        for j, i in enumerate(range(DOC_PTR[d], DOC_PTR[d + 1])):
            k, w = z[i], WORDS[i]
            lp += math.log((n_dk[k] + ALPHA[k]) / (j + ALPHA.sum()))
            ll += math.log((n_kw[k, w] + eta[w]) / (n_kw[k].sum() + eta.sum()))
            n_dk[k] += 1
            n_kw[k, w] += 1
    return lp, ll


def power_posterior(beta, eta):
    parts = np.array([log_prior_and_likelihood(np.array(s), eta) for s in STATES])
    logp = parts[:, 0] + beta * parts[:, 1]
    p = np.exp(logp - logp.max())
    return p / p.sum()


def state_frequencies(run_sweep, get_z, n_sweeps=N_SWEEPS, n_batches=40):
    index = {s: i for i, s in enumerate(STATES)}
    batch = n_sweeps // n_batches
    freq = np.zeros((n_batches, len(STATES)))
    for b in range(n_batches):
        for _ in range(batch):
            run_sweep()
            freq[b, index[tuple(get_z())]] += 1
    freq /= batch
    return freq.mean(0), freq.std(0, ddof=1) / np.sqrt(n_batches)


def max_z(mean, mcse, p):
    # batch-means standard errors over 40 batches; 128 states: 5 MCSE keeps a false
    # alarm below ~1e-4 per test; the floor covers states seen equally in every batch
    return float((np.abs(mean - p) / np.maximum(mcse, 2e-3 / 5)).max())


def dense_chain(beta, eta, seed):
    rng = np.random.default_rng(seed)
    z = np.zeros(WORDS.size, dtype=np.int32)
    n_wk, n_dk, n_k = lk.build_counts(WORDS, DOC_PTR, z, V, K)
    return state_frequencies(
        lambda: lk.gibbs_sweep_dense(WORDS, DOC_PTR, z, n_wk, n_dk, n_k, ALPHA, eta, beta, rng),
        lambda: z)


def sparse_chain(beta, eta, seed):
    rng = np.random.default_rng(seed)
    state = lk.SparseLDAState(WORDS, DOC_PTR, np.zeros(WORDS.size), V, K)
    return state_frequencies(lambda: state.sweep(ALPHA, eta, beta, rng), lambda: state.z)


def untempered_denominator_chain(beta, eta, seed):
    """Planted bug: ``(n_wk + eta_w)^beta (n_dk + alpha_k) / (n_k + sum eta)``, the
    topic's denominator left out of the power."""
    rng = np.random.default_rng(seed)
    z = np.zeros(WORDS.size, dtype=np.int64)
    doc = np.repeat(np.arange(DOC_PTR.size - 1), np.diff(DOC_PTR))
    n_wk, n_dk, n_k = (c.astype(float) for c in lk.build_counts(WORDS, DOC_PTR, z, V, K))

    def sweep():
        for i in range(WORDS.size):
            w, d, t = WORDS[i], doc[i], z[i]
            n_wk[w, t] -= 1
            n_dk[d, t] -= 1
            n_k[t] -= 1
            prob = (n_wk[w] + eta[w]) ** beta / (n_k + eta.sum()) * (n_dk[d] + ALPHA)
            t = rng.choice(K, p=prob / prob.sum())
            n_wk[w, t] += 1
            n_dk[d, t] += 1
            n_k[t] += 1
            z[i] = t

    return state_frequencies(sweep, lambda: z, n_sweeps=8_000)


@pytest.mark.parametrize("eta_name", list(ETAS))
@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("chain", [dense_chain, sparse_chain], ids=["dense", "sparse"])
def test_sweep_leaves_the_power_posterior_invariant(chain, beta, eta_name):
    eta = ETAS[eta_name]
    mean, mcse = chain(beta, eta, seed=21)
    assert max_z(mean, mcse, power_posterior(beta, eta)) < 5


def test_power_posteriors_differ_enough_to_test():
    """The check can tell the temperatures apart: total variation between them."""
    for eta in ETAS.values():
        p = {b: power_posterior(b, eta) for b in (0.0, 0.3, 1.0)}
        assert 0.5 * np.abs(p[0.0] - p[1.0]).sum() > 0.2
        assert 0.5 * np.abs(p[0.3] - p[1.0]).sum() > 0.1


def test_untempered_denominator_is_caught():
    eta = ETAS["asymmetric"]
    mean, mcse = untempered_denominator_chain(0.3, eta, seed=22)
    assert max_z(mean, mcse, power_posterior(0.3, eta)) >= 5

