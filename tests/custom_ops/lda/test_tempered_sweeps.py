"""The LDA sweeps at an inverse temperature beta leave the power posterior
p(z | alpha) p(w | z, eta)^beta invariant: every assignment of a 7-token corpus
enumerated (``tests/oracles/lda.py``, by sequential Pólya urns), both
sweeps, a symmetric and an asymmetric eta, beta in {0, 0.3, 1}; and a planted bug (the
topic's denominator left untempered) caught by the same check."""

import numpy as np
import pytest

from custom_ops.lda import dense
from custom_ops.lda import gibbs as lk
from tests.oracles.lda import LDAEnumeration

WORDS = np.array([0, 1, 1, 2, 0, 1, 2], dtype=np.int32)
DOC_PTR = np.array([0, 3, 5, 7], dtype=np.int64)
V, K = 3, 2
ALPHA = np.array([0.5, 0.9])
ETAS = {"asymmetric": np.array([0.3, 0.7, 0.4]), "symmetric": np.full(V, 0.25)}
N_SWEEPS = 20_000
DOCS = [WORDS[DOC_PTR[d]:DOC_PTR[d + 1]].tolist() for d in range(DOC_PTR.size - 1)]
ENUMS = {name: LDAEnumeration(DOCS, K, ALPHA, eta) for name, eta in ETAS.items()}
STATES = ENUMS["symmetric"].states


def power_posterior(beta, eta_name):
    return ENUMS[eta_name].power_posterior(beta)


def state_frequencies(run_sweep, get_z, n_sweeps=N_SWEEPS, n_batches=40):
    index = {tuple(s): i for i, s in enumerate(STATES)}
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
    tables = lk.tempering_tables(WORDS, V, eta, beta)
    tokens = lk.Tokens(WORDS, DOC_PTR, z)
    counts = lk.TopicCounts(n_wk, n_dk, n_k)
    prior = lk.SweepPrior(ALPHA, eta, beta, *tables)
    return state_frequencies(
        lambda: dense.gibbs_sweep_dense(tokens, counts, prior, rng), lambda: z)


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
    assert max_z(mean, mcse, power_posterior(beta, eta_name)) < 5


def test_power_posteriors_differ_enough_to_test():
    """The check can tell the temperatures apart: total variation between them."""
    for eta_name in ETAS:
        p = {b: power_posterior(b, eta_name) for b in (0.0, 0.3, 1.0)}
        assert 0.5 * np.abs(p[0.0] - p[1.0]).sum() > 0.2
        assert 0.5 * np.abs(p[0.3] - p[1.0]).sum() > 0.1


def test_untempered_denominator_is_caught():
    eta = ETAS["asymmetric"]
    mean, mcse = untempered_denominator_chain(0.3, eta, seed=22)
    assert max_z(mean, mcse, power_posterior(0.3, "asymmetric")) >= 5

