"""The shared log-weight kernels: the log-sum against scipy, the draw's frequencies."""

import numpy as np
import pytest
from scipy.special import logsumexp
from scipy.stats import chisquare

from custom_ops.log_weights import log_sum_exp, sample_log_weights


@pytest.mark.parametrize("values", [
    [0.0], [-3.0, -1.0, 2.5], [-800.0, -801.0, -1000.0], [5.0, -np.inf, 4.0],
    [700.0, 700.0, 699.0],
])
def test_log_sum_exp_equals_scipy(values):
    values = np.array(values)
    assert log_sum_exp(values) == pytest.approx(logsumexp(values), rel=1e-14, abs=1e-12)


def test_log_sum_exp_of_zero_weights_is_minus_infinity():
    assert log_sum_exp(np.full(3, -np.inf)) == -np.inf


def test_draws_follow_the_normalised_weights():
    rng = np.random.default_rng(0)
    log_w = np.log(np.array([0.1, 0.2, 0.3, 0.4])) - 900.0
    counts = np.zeros(4)
    for _ in range(20_000):
        counts[sample_log_weights(log_w.copy(), 4, rng)] += 1
    assert chisquare(counts, 20_000 * np.array([0.1, 0.2, 0.3, 0.4])).pvalue > 1e-4
