"""``inference.draws_memory``: the numbers a run records per draw and its refusal of a run
whose draws exceed the memory available."""

import numpy as np
import pytest

from inference import draws_memory
from pp_models import finite_mixture


def test_values_per_draw_counts_the_recorded_variables(monkeypatch):
    X = np.random.default_rng(0).normal(size=(20, 3))
    m = finite_mixture.model(X, 4)
    # w (4), mu and sigma (4 x 3 each), z (20): their lengths come from the model's dims
    assert draws_memory.values_per_draw(m) == 4 + 12 + 12 + 20
    assert draws_memory.values_per_draw(m, ["mu", "w"]) == 16
    monkeypatch.setattr(draws_memory, "available_memory", lambda: 8 * 48 * 100 * 3)
    draws_memory.check_draws_fit_in_memory(m, chains=3, draws=100)  # exactly fits
    with pytest.raises(ValueError, match=r"^chains=3 and draws=101: 48 recorded values"):
        draws_memory.check_draws_fit_in_memory(m, chains=3, draws=101)
    monkeypatch.setattr(draws_memory, "available_memory", lambda: None)
    draws_memory.check_draws_fit_in_memory(m, chains=10**9, draws=10**9)  # cannot tell


def test_available_memory_is_a_positive_number_here():
    available = draws_memory.available_memory()
    assert available is None or available > 0
