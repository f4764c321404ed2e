"""CategoricalGibbs: draws match the exact conditional; a broken twin is caught."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import softmax

from inference.gibbs import CategoricalGibbs, get_step, step_for


def _fixed_parameter_model(x, w, mu):
    """z_i ~ Cat(w), x_i ~ N(mu[z_i], 1) with w, mu constants: only z is free."""
    with pm.Model() as model:
        z = pm.Categorical("z", p=w, shape=x.size)
        pm.Normal("x", mu=pt.as_tensor(mu)[z], sigma=1.0, observed=x)
    exact = softmax(np.log(w)[None, :] + stats.norm.logpdf(x[:, None], mu[None, :], 1.0), axis=1)
    return model, exact


def _chi2_pvalues(draws, exact):
    """Per-observation chi-square goodness of fit of label frequencies to ``exact``."""
    n_draws = draws.shape[0]
    pvalues = []
    for i in range(exact.shape[0]):
        observed = np.bincount(draws[:, i], minlength=exact.shape[1])
        pvalues.append(stats.chisquare(observed, exact[i] * n_draws).pvalue)
    return np.array(pvalues)


X = np.array([-1.5, -0.2, 0.3, 1.1, 2.5])
W = np.array([0.2, 0.5, 0.3])
MU = np.array([-1.0, 0.5, 2.0])


def _sample(logits_of, seed=0, draws=4000):
    model, exact = _fixed_parameter_model(X, W, MU)
    with model:
        logits = logits_of(model)
        step = CategoricalGibbs([model["z"]], logits=logits)
        step.setup_chain(np.random.default_rng(seed), 0, draws)
    point = model.initial_point()
    out = np.empty((draws, X.size), dtype=np.int64)
    for t in range(draws):
        point, stats_ = step.step(point)
        out[t] = point["z"]
    assert set(stats_[0]) == {"n_changed"}
    return out, exact


def _correct_logits(model):
    return pt.log(W)[None, :] + pm.logp(pm.Normal.dist(MU[None, :], 1.0), X[:, None])


def _broken_logits(model):
    # Planted bug: the prior weights are dropped from the conditional.
    return pm.logp(pm.Normal.dist(MU[None, :], 1.0), X[:, None])


def test_draws_match_exact_conditional():
    draws, exact = _sample(_correct_logits)
    pvalues = _chi2_pvalues(draws, exact)
    # Holm-corrected at 1 %: the smallest p-value times the number of tests.
    assert pvalues.min() * pvalues.size > 0.01, pvalues


def test_broken_twin_is_caught():
    draws, exact = _sample(_broken_logits)
    pvalues = _chi2_pvalues(draws, exact)
    assert pvalues.min() * pvalues.size < 0.01, pvalues


def test_step_does_not_mutate_input_point():
    model, _ = _fixed_parameter_model(X, W, MU)
    with model:
        step = CategoricalGibbs([model["z"]], logits=_correct_logits(model))
    point = model.initial_point()
    before = point["z"].copy()
    step.step(point)
    np.testing.assert_array_equal(point["z"], before)


def test_step_pickles():
    import cloudpickle

    model, _ = _fixed_parameter_model(X, W, MU)
    with model:
        step = CategoricalGibbs([model["z"]], logits=_correct_logits(model))
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    new_point, _ = clone.step(model.initial_point())
    assert new_point["z"].shape == X.shape


def test_registry_and_competence():
    assert get_step("categorical_gibbs") is CategoricalGibbs
    model, _ = _fixed_parameter_model(X, W, MU)
    # Not auto-claimed: only a factory's hint (which supplies the logits) assigns it.
    assert step_for(model["z"]) is None
    with pytest.raises(ValueError, match="unknown step 'nope'"):
        get_step("nope")


def test_bad_logits_rejected():
    model, _ = _fixed_parameter_model(X, W, MU)
    with model, pytest.raises(TypeError, match=r"logits must be a symbolic \(n, K\) tensor"):
        CategoricalGibbs([model["z"]], logits=pt.vector())
