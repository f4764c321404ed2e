"""The replica swap leaves the product of the power posteriors invariant (exact target
on a small discrete space), a twin with a wrong acceptance ratio is caught; the ladder
schedule equalises rejection rates; round trips are counted as Syed et al. define them."""

import itertools
import math

import numpy as np
import pytest

import inference.tempering.swaps as swaps
from inference.tempering.ladder import (
    adaptation_rounds,
    cumulative_barrier,
    initial_ladder,
    update_schedule,
)
from inference.tempering.swaps import RoundTrips, deo_swap
from tests.helpers.stationary import tv_against_mcse

M = 6
LOG_PRIOR = np.log(np.array([1.0, 2.0, 1.0, 3.0, 1.0, 2.0]))
LOGLIK = np.array([-4.0, 0.0, -3.0, -6.0, 1.0, -2.0])


def power(beta):
    lw = LOG_PRIOR + beta * LOGLIK
    p = np.exp(lw - lw.max())
    return p / p.sum()


def run(ladder, n_iter, seed):
    """Random-walk Metropolis on the ring {0..M-1} at each temperature (exact for its
    power posterior, slow to cross), then the even/odd swaps."""
    rng = np.random.default_rng(seed)
    n = len(ladder)
    x = rng.integers(0, M, n)
    out = np.empty((n_iter, n), dtype=np.int64)
    for t in range(n_iter):
        for r, beta in enumerate(ladder):
            y = (x[r] + rng.choice((-1, 1))) % M
            log_a = (LOG_PRIOR[y] + beta * LOGLIK[y]) - (LOG_PRIOR[x[r]] + beta * LOGLIK[x[r]])
            if math.log(rng.random()) < log_a:
                x[r] = y
        perm, _probs = deo_swap(np.asarray(ladder), LOGLIK[x], t % 2, rng)
        x = x[perm]
        out[t] = x
    return out


def joint_tv(ladder, n_iter=40_000, seed=1):
    states = run(ladder, n_iter, seed)
    codes = np.ravel_multi_index(tuple(states.T), (M,) * len(ladder))
    exact = power(ladder[0])
    for beta in ladder[1:]:
        exact = np.multiply.outer(exact, power(beta))
    return tv_against_mcse(codes, exact.ravel())


@pytest.mark.parametrize("ladder", [(0.2, 1.0), (0.0, 0.4, 1.0)])
def test_swaps_leave_the_product_of_power_posteriors_invariant(ladder):
    tv, expected = joint_tv(ladder)
    print(f"ladder {ladder}: TV {tv:.4f}, null expectation {expected:.4f}")
    assert tv < 1.6 * expected, (tv, expected)


def test_swap_with_the_wrong_acceptance_ratio_is_caught(monkeypatch):
    # the ratio of the reverse exchange: exp((beta_hi - beta_lo) (l_hi - l_lo))
    def wrong(beta_lo, beta_hi, loglik_lo, loglik_hi):
        return (beta_hi - beta_lo) * (loglik_hi - loglik_lo)

    monkeypatch.setattr(swaps, "swap_log_acceptance", wrong)
    tv, expected = joint_tv((0.2, 1.0))
    assert tv > 5 * expected, (tv, expected)


def test_deo_alternates_the_pairs_it_tries():
    rng = np.random.default_rng(0)
    ladder = np.array([0.0, 0.3, 0.6, 1.0])
    ll = np.zeros(4)  # every swap accepted
    perm, probs = deo_swap(ladder, ll, 0, rng)
    assert perm.tolist() == [1, 0, 3, 2] and np.isnan(probs[1]) and probs[0] == 1.0
    perm, probs = deo_swap(ladder, ll, 1, rng)
    assert perm.tolist() == [0, 2, 1, 3] and np.isnan(probs[[0, 2]]).all()
    # a state at -inf log-likelihood never moves to a colder temperature
    perm, probs = deo_swap(ladder, np.array([-np.inf, 0.0, 0.0, 0.0]), 0, rng)
    assert perm[0] == 0 and probs[0] == 0.0


def test_round_trips_are_counted_reference_target_reference():
    trips = RoundTrips(3)  # state 0 starts at the reference (temperature 0)
    swap01, swap12 = np.array([1, 0, 2]), np.array([0, 2, 1])
    for perm in (swap01, swap12):  # state 0 climbs to the target
        trips.apply(perm)
    assert trips.index.tolist() == [1, 2, 0] and trips.count == 0
    for perm in (swap12, swap01):  # and comes back
        trips.apply(perm)
    assert trips.index.tolist() == [0, 1, 2] and trips.count == 1
    state = trips.state()
    other = RoundTrips(3)
    other.restore(state)
    assert other.state() == state


def test_schedule_update_equalises_rejection_on_a_known_barrier():
    """Rejection rates from a known cumulative barrier Lambda(beta) = beta^2 / 2: the
    updated ladder is the one splitting Lambda equally, beta_k = sqrt(k / (N - 1))."""
    ladder = np.linspace(0, 1, 6)
    barrier = ladder ** 2
    rejection = 0.5 * np.diff(barrier)  # Lambda = 0.5 beta^2
    new = update_schedule(ladder, rejection)
    # PCHIP through 6 knots of a quadratic: close to the exact inverse
    np.testing.assert_allclose(new, np.sqrt(np.arange(6) / 5), atol=0.02)
    assert new[0] == 0.0 and new[-1] == 1.0 and np.all(np.diff(new) > 0)
    np.testing.assert_allclose(cumulative_barrier(rejection)[-1], 0.5)
    # iterating from the new ladder: rejection along it is (nearly) equal
    again = 0.5 * np.diff(new ** 2)
    assert again.max() / again.min() < 1.15


def test_initial_ladder_and_rounds():
    ladder = initial_ladder(5)
    assert ladder[0] == 0.0 and ladder[-1] == 1.0 and np.all(np.diff(ladder) > 0)
    np.testing.assert_allclose(ladder[1], 0.25 ** (1 / 0.3))
    assert adaptation_rounds(1000) == [16, 48, 112, 240, 496]
    assert adaptation_rounds(20) == []
    with pytest.raises(ValueError, match="n_temperatures must be >= 2"):
        initial_ladder(1)
    # from beta_min > 0: equal ratios 0.01, 0.1, 1 (a ladder stopping short of the prior)
    np.testing.assert_allclose(initial_ladder(3, 0.01), [0.01, 0.1, 1.0], rtol=1e-12)
    assert initial_ladder(4, 0.0)[0] == 0.0
    for bad, match in ((1.0, "beta_min must be below 1"), (-0.5, "beta_min must be in")):
        with pytest.raises(ValueError, match=match):
            initial_ladder(4, bad)


# ---------------------------------------------------------------------- round-trip rate
def count_trips(ladder, n_iter, seed, *, trips_class=RoundTrips):
    """Each iteration every replica draws exactly and independently from its power
    posterior of the 6-state target (efficient local exploration), then the even/odd swaps;
    returns the round trips counted."""
    rng = np.random.default_rng(seed)
    ladder = np.asarray(ladder, dtype=np.float64)
    cdf = np.cumsum([power(b) for b in ladder], axis=1)
    draws = (rng.random((n_iter, ladder.size, 1)) > cdf[None]).sum(axis=2)
    trips = trips_class(ladder.size)
    for t in range(n_iter):
        x = np.minimum(draws[t], M - 1)
        perm, _ = deo_swap(ladder, LOGLIK[x], t % 2, rng)
        trips.apply(perm)
    return trips.count


def exact_rejection(ladder):
    """r_i = 1 - E[min(1, exp((b_{i+1} - b_i)(l(x) - l(y))))], x ~ pi_i, y ~ pi_{i+1}."""
    out = []
    for lo, hi in itertools.pairwise(ladder):
        a = np.minimum(1.0, np.exp((hi - lo) * np.subtract.outer(LOGLIK, LOGLIK)))
        out.append(1.0 - power(lo) @ a @ power(hi))
    return np.array(out)


@pytest.mark.parametrize("n", [2, 3, 5, 8])
def test_round_trips_when_every_swap_is_accepted(n):
    """All swaps accepted: a state arrives at the reference every second iteration, and
    every arrival but the first of each of the N - 1 states that did not start there
    completes a round trip (Syed et al. 2022: rate 1/2 when Lambda = 0)."""
    rng = np.random.default_rng(0)
    trips, ladder = RoundTrips(n), np.linspace(0.0, 1.0, n)
    n_iter = 2 * n * 25
    for t in range(n_iter):
        perm, probs = deo_swap(ladder, np.zeros(n), t % 2, rng)
        assert np.all(probs[~np.isnan(probs)] == 1.0)
        trips.apply(perm)
    assert trips.count == n_iter // 2 - (n - 1)


class TripsNeverReset(RoundTrips):
    """Twin: a state that completed a round trip is not sent back to 'left the
    reference', so each later iteration it spends at the reference counts again."""

    def _mark(self):
        n = self.index.size
        at_ref, at_target = self.index[0], self.index[n - 1]
        if self._phase[at_ref] == 2:
            self.count += 1
        else:
            self._phase[at_ref] = 1
        if self._phase[at_target] == 1:
            self._phase[at_target] = 2


def test_round_trip_rate_matches_the_index_process_theory():
    """With exact independent draws at each temperature the swap outcomes are independent
    with the rejection rates r_i of the ladder, and the non-reversible scheme's round-trip
    rate is 1 / (2 + 2 sum_i r_i / (1 - r_i)) (Syed et al. 2022, Theorem 1; 1 / (2 + 2
    Lambda) for small r_i). The count over 6,000 iterations is a renewal count: its sd is
    below sqrt(count)."""
    ladder = np.array([0.0, 0.05, 0.2, 0.5, 1.0])
    r = exact_rejection(ladder)
    rate = 1.0 / (2.0 + 2.0 * np.sum(r / (1.0 - r)))
    n_iter = 6000
    count = count_trips(ladder, n_iter, seed=3)
    expected = rate * n_iter
    print(f"rejection {np.round(r, 3)}, rate {rate:.4f}: expected {expected:.0f} round "
          f"trips, counted {count}")
    assert 0.2 < r.max() < 0.8  # a ladder where the rate differs from both 0 and 1/2
    assert abs(count - expected) < 4 * math.sqrt(expected), (count, expected)
    broken = count_trips(ladder, n_iter, seed=3, trips_class=TripsNeverReset)
    assert abs(broken - expected) > 8 * math.sqrt(expected), (broken, expected)
