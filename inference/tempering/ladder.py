"""Temperature ladders: the initial spacing and the schedule update of non-reversible
parallel tempering.

A ladder is an increasing vector of inverse temperatures ``0 = beta_0 < ... <
beta_{N-1} = 1``. The rejection rate ``r_i`` of swaps between ``beta_i`` and
``beta_{i+1}`` estimates the integral of the local communication barrier ``lambda(beta)``
over that interval (Syed, Bouchard-Cote, Deligiannidis & Doucet 2022, Theorem 2 and
Eq. 12), so the cumulative sums ``Lambda(beta_i) = sum_{j < i} r_j`` estimate the
cumulative barrier at the knots and ``Lambda = Lambda(1)`` the global communication
barrier. The round-trip rate of the non-reversible (even/odd) scheme is about
``1 / (2 + 2 Lambda)`` when the rejection rates are equal (their Eq. 16), which is what
:func:`update_schedule` aims for: the new knots split ``[0, Lambda]`` into equal parts
of the interpolated ``Lambda(beta)`` (their Algorithm 4, ``UpdateSchedule``), using a
monotone (PCHIP, Fritsch-Carlson) interpolation as they do.
"""

from __future__ import annotations

import numpy as np
from scipy.interpolate import PchipInterpolator

from pp_models.validation import check_int, check_ladder

__all__ = [
    "INITIAL_EXPONENT",
    "adaptation_rounds",
    "cumulative_barrier",
    "initial_ladder",
    "update_schedule",
]

#: ``beta_i = (i / (N - 1))^INITIAL_EXPONENT``: the spacing of Xie, Lewis, Fan, Kuo &
#: Chen (2011, §2 "Choosing beta values"; quantiles of a Beta(0.3, 1)), which puts most
#: temperatures near the prior, where the power posteriors change fastest.
INITIAL_EXPONENT = 1.0 / 0.3

#: Rejection rates are floored at this value before they are summed, so the cumulative
#: barrier is strictly increasing and can be inverted (a pair that always swaps would
#: otherwise make two knots coincide).
_MIN_REJECTION = 1e-6


def initial_ladder(n_temperatures: int) -> np.ndarray:
    """``n_temperatures`` inverse temperatures from 0 to 1, ``(i / (N-1))^(1/0.3)``."""
    n = check_int(n_temperatures, "n_temperatures", minimum=2)
    return check_ladder((np.arange(n) / (n - 1)) ** INITIAL_EXPONENT)


def cumulative_barrier(rejection: np.ndarray) -> np.ndarray:
    """``Lambda(beta_i)``, i = 0..N-1, from the N-1 swap rejection rates (0 at beta_0)."""
    r = np.maximum(np.asarray(rejection, dtype=np.float64), _MIN_REJECTION)
    return np.concatenate([[0.0], np.cumsum(r)])


def update_schedule(ladder: np.ndarray, rejection: np.ndarray) -> np.ndarray:
    """The ladder whose neighbours would reject swaps equally often (Syed et al. 2022,
    Algorithm 4): invert the monotone interpolation of ``Lambda(beta)`` through the
    current knots at ``Lambda * k / (N - 1)``, k = 0..N-1.

    Parameters
    ----------
    ladder : (N,) float64, a valid ladder (:func:`pp_models.validation.check_ladder`)
    rejection : (N-1,) float64 in [0, 1], the estimated rejection rate of each pair

    Returns
    -------
    (N,) float64, the new ladder, same ends as ``ladder``.
    """
    ladder = np.asarray(ladder, dtype=np.float64)
    rejection = np.asarray(rejection, dtype=np.float64)
    if rejection.shape != (ladder.size - 1,) or not np.all(np.isfinite(rejection)):
        raise ValueError(f"rejection must hold {ladder.size - 1} finite rates, got "
                         f"{rejection!r}")
    barrier = cumulative_barrier(np.clip(rejection, 0.0, 1.0))
    inverse = PchipInterpolator(barrier, ladder)
    targets = barrier[-1] * np.arange(ladder.size) / (ladder.size - 1)
    new = inverse(targets)
    new[0], new[-1] = ladder[0], ladder[-1]
    # PCHIP preserves monotonicity; repair only the rounding of nearly equal knots
    for i in range(1, new.size):
        if new[i] <= new[i - 1]:
            new[i] = np.nextafter(new[i - 1], np.inf)
    if new[-1] != ladder[-1] or new[-2] >= new[-1]:
        return ladder.copy()
    return new


def adaptation_rounds(tune: int, *, first: int = 16) -> list[int]:
    """Iterations (counted from 0) after which the ladder is updated while tuning.

    Rounds double in length (``first, 2 first, 4 first, ...``, Syed et al. 2022,
    Algorithm 4), and only rounds ending in the first half of the tuning are used: the
    second half lets the steps' own adaptation (NUTS step sizes) settle at the final
    ladder. Returns the cumulative ends, e.g. ``tune=1000`` gives ``[16, 48, 112, 240,
    496]``.
    """
    tune = check_int(tune, "tune", minimum=0)
    ends, length, end = [], first, first
    while end <= tune // 2:
        ends.append(end)
        length *= 2
        end += length
    return ends
