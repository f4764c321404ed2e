"""Getting it right (Geweke 2004) for the collapsed LDA step, and a planted-bug twin."""

import numpy as np
import pytest

from custom_ops.lda.gibbs import build_counts, log_joint
from inference.gibbs import CollapsedLDAGibbs
from inference.testing import getting_it_right
from pp_models import lda
from pp_models.model_info import get_info
from tests.inference.gibbs.lda.twins import NoMetropolisHastingsLDA

# a tiny corpus: 3 documents (3, 2 and 4 tokens), V = 4, K = 2; only the lengths matter,
# the words are redrawn by the test
DOCS = [[0, 1, 2], [3, 0], [1, 1, 2, 3]]
V, K, ALPHA, ETA = 4, 2, 0.3, 0.3
DOC_PTR = np.array([0, 3, 5, 9])


def _counts(state):
    return build_counts(state["w"], DOC_PTR, state["z"], V, K)


# label-invariant statistics of the joint state (z, w) that the topic updates move
STATISTICS = {
    "doc-topic concentration": lambda s: float((_counts(s)[1].astype(float) ** 2).sum()),
    "topic-word concentration": lambda s: float((_counts(s)[0].astype(float) ** 2).sum()),
    "topic-size concentration": lambda s: float((_counts(s)[2].astype(float) ** 2).sum()),
    "log p(w, z)": lambda s: log_joint(*_counts(s), ALPHA, ETA),
    "same topic, tokens 0 and 3": lambda s: float(s["z"][0] == s["z"][3]),
}


class KeepsOwnCount(CollapsedLDAGibbs):
    """Planted bug: draws z_i without first removing token i from the counts."""

    def _sweep(self):
        s = self._state
        alpha, eta = self.alpha, self.eta
        for d in range(s.doc_ptr.size - 1):
            for i in range(s.doc_ptr[d], s.doc_ptr[d + 1]):
                w, t = s.words[i], s.z[i]
                p = (s.n_wk[w] + eta[w]) / (s.n_k + eta.sum()) * (s.n_dk[d] + alpha)
                new = int(np.searchsorted(np.cumsum(p), self.rng.random() * p.sum(), "right"))
                for counts, row in ((s.n_wk, w), (s.n_dk, d)):
                    counts[row, t] -= 1
                    counts[row, new] += 1
                s.n_k[t] -= 1
                s.n_k[new] += 1
                s.z[i] = new


def _model():
    return lda.model(DOCS, n_topics=K, alpha=ALPHA, eta=ETA, n_words=V, deterministics=False)


def test_fit_assignment_gets_it_right():
    # no step given: the model's StepHint is resolved on the copy with the words free,
    # which gets the default (SparseLDA) sampler
    result = getting_it_right(
        _model(), data_vars=["w"], statistics=STATISTICS, n_samples=4000, random_seed=8
    )
    assert result.step_description == {"lda_collapsed_gibbs": ["z"]}
    result.assert_passed()


def test_dense_sampler_gets_it_right():
    def step(model):
        options = get_info(model).step_hints[0].options(model)
        return CollapsedLDAGibbs.from_model(model, ["z"], **options, sampler="dense")

    result = getting_it_right(
        _model(), data_vars=["w"], statistics=STATISTICS, step=step, n_samples=4000, random_seed=7
    )
    result.assert_passed()


def _alias_step(step_type):
    def step(model):
        options = get_info(model).step_hints[0].options(model)
        return step_type.from_model(model, ["z"], **options, sampler="alias")

    return step


@pytest.mark.slow  # every move has its exact test in the default run (custom_ops/lda/test_alias.py)
def test_alias_sampler_gets_it_right():
    result = getting_it_right(
        _model(),
        data_vars=["w"],
        statistics=STATISTICS,
        step=_alias_step(CollapsedLDAGibbs),
        n_samples=4000,
        random_seed=9,
    )
    result.assert_passed()


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
def test_alias_sampler_without_metropolis_hastings_is_caught():
    # measured: rejected at seeds 1, 2 and 9 at 20,000 draws, on four statistics each
    result = getting_it_right(
        _model(),
        data_vars=["w"],
        statistics=STATISTICS,
        step=_alias_step(NoMetropolisHastingsLDA),
        n_samples=20_000,
        random_seed=9,
    )
    assert not result.passed()


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
def test_planted_bug_is_caught():
    def step(model):
        return KeepsOwnCount.from_model(
            model, ["z"], **get_info(model).step_hints[0].options(model)
        )

    # The bias is small on a corpus this size (|z| of 3-5.5 on the topic-size and
    # topic-word concentrations at 10,000 draws over three seeds): 20,000 draws make the
    # rejection reliable whatever the seed; the correct step passes at 4,000.
    result = getting_it_right(
        _model(),
        data_vars=["w"],
        statistics=STATISTICS,
        step=step,
        n_samples=20_000,
        random_seed=7,
    )
    assert not result.passed()
    assert "topic-size concentration" in result.failures().index
