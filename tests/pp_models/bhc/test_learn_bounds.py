"""bhc.learn without priors (type-II ML) flags learned values on the optimiser's box
bound; with its default priors there is no box (test_priors.py)."""

import warnings

import numpy as np
import pytest

from pp_models import bhc
from pp_models.bhc.learning import THETA_BOUND


def test_value_driven_to_the_bound_is_reported_and_warned():
    # eight all-zero rows and one all-one row: the Beta-Bernoulli evidence keeps rising
    # as b -> 0 (measured: the optimiser stops on its box, e^-12 x the initial b)
    X = np.r_[np.zeros((8, 3)), np.ones((1, 3))]
    with pytest.warns(RuntimeWarning, match=r"b = .* on the optimiser's bound"):
        res = bhc.learn(X, likelihood="bernoulli", max_iter=2, priors=False)
    assert "b" in res.history[-1]["at_bound"]
    assert np.ravel(res.history[-1]["b"])[0] < 1e-4


def test_interior_optimum_is_not_flagged():
    rng = np.random.default_rng(0)
    p = np.where(np.arange(20)[:, None] < 10, 0.85, 0.15) * np.ones((1, 6))
    X = (rng.random((20, 6)) < p).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = bhc.learn(
            X, likelihood="bernoulli", params=("alpha",), max_iter=3, priors=False
        )
    assert all(h["at_bound"] == () for h in res.history)
    assert np.exp(-THETA_BOUND) < res.alpha < np.exp(THETA_BOUND)
