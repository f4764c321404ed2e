"""The Bernoulli sweeps on cached sigmoids make the same draws as the per-entry
evaluation they replaced (tests/custom_ops/iomm/previous_kernels.py), given the same
generator: a chain of membership and parameter sweeps on a Reuters-sized random problem,
from a state with many clusters, compared draw for draw.

The two compute each acceptance ratio with different rounding (relative ~1e-15), so a
decision could differ only where a uniform lands within that of its threshold: about
1e-13 per decision, ~1e-8 over the test's decisions."""

import numpy as np
import pytest

from custom_ops.iomm.memberships import MembershipPrior, ibp_log_odds, membership_sweep
from custom_ops.iomm.parameters import bernoulli_parameter_sweep
from tests.custom_ops.iomm.previous_kernels import (
    previous_bernoulli_parameter_sweep,
    previous_membership_sweep,
)

N, D, C = 120, 30, 16
SWEEPS = 15


def _chain(memberships, parameters, X, Z, theta, seed):
    rng = np.random.default_rng(seed)
    a = np.full(D, 0.8)
    b = np.full(D, 1.2)
    prior = MembershipPrior(ibp_log_odds(N), 1.5 / N)
    background = np.zeros((D, 2))
    states, counts = [], []
    for _ in range(SWEEPS):
        E = np.ascontiguousarray(np.log(theta / (1 - theta))[:, :, None])
        counts.append(memberships(rng, 0, X, Z, E, background, prior, 0.7))
        counts.append(parameters(rng, X, Z, theta, a, b, 20.0, 0.7))
        states.append((Z.copy(), theta.copy()))
    return states, counts


@pytest.mark.slow  # compiles the previous kernels: ~10 s cold
def test_sweeps_match_the_per_entry_evaluation_draw_for_draw():
    rng = np.random.default_rng(12)
    X = (rng.random((N, D)) < 0.3).astype(np.float64)
    Z = (rng.random((N, C)) < 0.25).astype(np.int8)
    Z[:, -3:] = 0  # free slots for new clusters
    theta = rng.beta(0.5, 0.5, size=(C, D)).clip(1e-12, 1 - 1e-12)
    new, new_counts = _chain(membership_sweep, bernoulli_parameter_sweep, X, Z.copy(),
                             theta.copy(), seed=3)
    old, old_counts = _chain(previous_membership_sweep, previous_bernoulli_parameter_sweep,
                             X, Z.copy(), theta.copy(), seed=3)
    assert new_counts == old_counts
    flips = sum(c[3] for c in new_counts[::2])
    assert flips > 100  # the sweeps moved
    for (Z_new, theta_new), (Z_old, theta_old) in zip(new, old, strict=True):
        np.testing.assert_array_equal(Z_new, Z_old)
        np.testing.assert_array_equal(theta_new, theta_old)
