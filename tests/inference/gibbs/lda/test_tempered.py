"""The tempered collapsed LDA step samples p(z | alpha) p(w | z, eta)^beta: on a 7-token
corpus every assignment is enumerated (``tests/oracles/lda.py``: sequential Pólya urns, independent
of the kernels) and the step's state frequencies at beta in {0, 0.3, 1}, with either
Gibbs sampler, must match within their Monte Carlo error; two replicas interleaved as a tempered run
interleaves them each sample their own temperature; the twin that ignores beta is
caught. The model's likelihood is PyMC's datalogp: the collapsed word term. The default
sampler ("auto": sparse at beta = 1, dense below) is the interleaved replicas'. The
"alias" sampler's kernel has the same check at beta in {0, 0.4, 1}
(``tests/custom_ops/lda/test_alias.py``) and the step runs it at its beta draw for draw
(``test_step.py``)."""

import numpy as np
import pytest

from inference.gibbs.lda import CollapsedLDAGibbs
from inference.tempering import log_likelihood_function
from pp_models import lda
from pp_models.model_info import get_info
from tests.helpers.stationary import compare_with_exact
from tests.inference.gibbs.lda.twins import IgnoresBetaLDA
from tests.oracles.lda import LDAEnumeration

DOCS = [[0, 1, 1], [2, 0], [1, 2]]
V, K = 3, 2
ALPHA = np.array([0.5, 0.9])
ETA = np.array([0.3, 0.7, 0.4])
N_SWEEPS = 8_000
ENUM = LDAEnumeration(DOCS, K, ALPHA, ETA)
STATES = ENUM.states
PARTS = ENUM.parts
#: comparisons of the correct chains in this module (6 runs + 2 interleaved) x states
N_COMPARISONS = 8 * len(STATES)
power_posterior = ENUM.power_posterior


@pytest.fixture(scope="module")
def model():
    return lda.model(DOCS, n_topics=K, alpha=ALPHA, eta=ETA, n_words=V)


def build(model, cls=CollapsedLDAGibbs, **overrides):
    hint = get_info(model).step_hints[0]
    return cls.from_model(model, hint.var_names, **{**hint.options(model), **overrides})


def run(steps, model, n=N_SWEEPS):
    """Each step on its own chain, the steps called in turn (as replicas are)."""
    points = [model.initial_point() for _ in steps]
    visits = np.zeros((len(steps), n), dtype=np.int64)
    for t in range(n):
        for r, step in enumerate(steps):
            points[r], _ = step.step(points[r])
            visits[r, t] = ENUM.index(points[r]["z"])
    return visits


def check(visits, beta):
    p = power_posterior(beta)
    draws = {i: (visits == i).astype(float) for i in range(len(STATES))}
    return compare_with_exact(draws, dict(enumerate(p)),
                              exact_sd=dict(enumerate(np.sqrt(p * (1 - p)))),
                              n_comparisons=N_COMPARISONS)


def test_the_likelihood_tempered_is_the_collapsed_word_term(model):
    loglik = log_likelihood_function(model)
    for s in (0, 37, 127):
        point = model.initial_point() | {"z": STATES[s]}
        assert loglik(point) == pytest.approx(PARTS[s, 1], rel=1e-12)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
@pytest.mark.parametrize("sampler", ["sparse", "dense"])
def test_tempered_step_samples_the_power_posterior(model, sampler, beta):
    step = build(model, sampler=sampler)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(31)
    result = check(run([step], model)[0], beta)
    print(result.table.sort_values("|z|").tail(3))
    assert result.passed


def test_interleaved_replicas_each_sample_their_temperature(model):
    cold = build(model)
    hot = cold.replica()
    hot.set_inverse_temperature(0.3)
    cold.rng, hot.rng = np.random.default_rng(32), np.random.default_rng(33)
    visits = run([hot, cold], model)
    assert hot._state is not cold._state
    for r, beta in ((0, 0.3), (1, 1.0)):
        assert check(visits[r], beta).passed, beta


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_twin_that_ignores_beta_is_caught(model, beta):
    step = build(model, cls=IgnoresBetaLDA)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(31)
    result = check(run([step], model, n=N_SWEEPS // 2)[0], beta)
    print(result.table.sort_values("|z|").tail(3))
    assert not result.passed


def test_auto_sampler_rebuilds_the_sparse_lists_after_dense_sweeps(model):
    """``sampler="auto"`` sweeps densely below beta = 1 (leaving SparseLDA's topic lists
    stale) and sparsely at 1: the lists must be rebuilt before a sparse sweep reads them."""
    step = build(model)
    step.rng = np.random.default_rng(34)
    step.set_inverse_temperature(0.3)
    point = model.initial_point()
    for _ in range(5):
        point, _ = step.step(point)
    step.set_inverse_temperature(1.0)
    for _ in range(3):
        point, _ = step.step(point)
        s = step._state
        np.testing.assert_array_equal(s.z, point["z"])
        for v in range(V):
            listed = s.w_topics[s.w_ptr[v]:s.w_ptr[v] + s.w_nnz[v]]
            assert sorted(listed) == list(np.flatnonzero(s.n_wk[v]))
        for d in range(len(DOCS)):
            listed = s.d_topics[s.d_ptr[d]:s.d_ptr[d] + s.d_nnz[d]]
            assert sorted(listed) == list(np.flatnonzero(s.n_dk[d]))
