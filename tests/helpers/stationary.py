"""Compare a Markov chain's averages with exact expectations, at a tolerance set by the
chain's Monte Carlo error.

For each statistic ``h`` with exact expectation ``E[h]`` under the target, the chain's
mean over ``n`` draws has standard error ``sd(h) / sqrt(ESS)`` (ArviZ's ESS of the mean,
Vehtari et al. 2021); ``sd(h)`` is the larger of the chain's and, when given, the exact
one (a chain stuck in one state shows a small spread and must not gain from it). The
check passes when every ``|z| = |mean - E[h]| / se`` is below the two-sided
Bonferroni bound of a family-wise level ``alpha`` over all statistics compared at once.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
from scipy import stats

__all__ = [
    "StationaryCheck",
    "compare_with_draws",
    "compare_with_exact",
    "ess_mean",
    "state_codes",
    "tv_against_mcse",
    "z_bound",
]


def z_bound(n_comparisons: int, alpha: float = 0.01) -> float:
    """Two-sided Bonferroni bound on |z| for ``n_comparisons`` tests at family-wise
    level ``alpha``."""
    return float(stats.norm.isf(alpha / (2 * n_comparisons)))


def ess_mean(x: np.ndarray) -> float:
    if np.ptp(x) == 0:
        return 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        ess = float(az.ess(xr.DataArray(x[None, :], dims=("chain", "draw")), method="mean"))
    return ess if np.isfinite(ess) else 1.0


@dataclass
class StationaryCheck:
    """The comparison table (one row per statistic) and the bound it was held to."""

    table: pd.DataFrame
    bound: float

    @property
    def passed(self) -> bool:
        return bool((self.table["|z|"] < self.bound).all())

    def __str__(self) -> str:
        with pd.option_context("display.width", 140, "display.max_columns", 20):
            return f"|z| bound {self.bound:.2f}\n{self.table}"


def compare_with_exact(draws: dict[str, np.ndarray], exact_mean: dict[str, float], *,
                       exact_sd: dict[str, float] | None = None,
                       n_comparisons: int | None = None,
                       alpha: float = 0.01) -> StationaryCheck:
    """Chain averages of ``draws`` (name -> 1-D array over draws) against
    ``exact_mean`` (module docstring). ``n_comparisons`` (default: this call's
    statistics) sets the Bonferroni bound when one test makes several calls."""
    rows = []
    for name, mean in exact_mean.items():
        x = np.asarray(draws[name], dtype=np.float64)
        ess = ess_mean(x)
        sd = float(x.std(ddof=1))
        if exact_sd is not None and name in exact_sd:
            sd = max(sd, float(exact_sd[name]))
        se = sd / math.sqrt(ess)
        diff = float(x.mean()) - float(mean)
        z = abs(diff) / se if se > 0 else (0.0 if diff == 0 else math.inf)
        rows.append(dict(statistic=name, exact=float(mean), chain=float(x.mean()), se=se,
                         ess=ess, **{"|z|": z}))
    table = pd.DataFrame(rows).set_index("statistic")
    return StationaryCheck(table, z_bound(n_comparisons or len(rows), alpha))


def compare_with_draws(draws: dict[str, np.ndarray], reference: dict[str, np.ndarray], *,
                       n_comparisons: int | None = None,
                       alpha: float = 0.01) -> StationaryCheck:
    """Chain averages of ``draws`` against the averages of independent draws
    ``reference`` from the target (getting-it-right's comparison): the standard error
    counts both, ``sd^2 / n_reference + sd^2 / ESS``, with ``sd`` the larger of the two
    samples'."""
    rows = []
    for name, y in reference.items():
        x = np.asarray(draws[name], dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        ess = ess_mean(x)
        var = max(float(np.var(y, ddof=1)), float(np.var(x, ddof=1)))
        se = math.sqrt(var / y.size + var / ess)
        diff = float(x.mean() - y.mean())
        z = abs(diff) / se if se > 0 else (0.0 if diff == 0 else math.inf)
        rows.append(dict(statistic=name, exact=float(y.mean()), chain=float(x.mean()), se=se,
                         ess=ess, **{"|z|": z}))
    table = pd.DataFrame(rows).set_index("statistic")
    return StationaryCheck(table, z_bound(n_comparisons or len(rows), alpha))


def state_codes(states, enumerated) -> np.ndarray:
    """The position of each of a chain's ``states`` in the ``enumerated`` list of every
    state (arrays compared by value)."""
    index = {tuple(np.ravel(z)): j for j, z in enumerate(enumerated)}
    return np.array([index[tuple(np.ravel(z))] for z in states])


def tv_against_mcse(codes, probs, batches: int = 40) -> tuple[float, float]:
    """The total-variation distance between a chain's state frequencies and the exact
    probabilities ``probs``, and its expectation under the null from the batch-means
    Monte Carlo errors of the frequencies.

    ``codes`` are the chain's states as positions in ``probs``. Each frequency's error is
    about normal with the batch-means standard error ``s``, and ``E|N(0, s^2)| = s
    sqrt(2 / pi)``; summed over the states and halved, that is the TV a correct chain
    shows. A test compares the two with a margin for its false-failure rate.
    """
    codes = np.asarray(codes)
    probs = np.asarray(probs, dtype=float)
    freq = np.bincount(codes, minlength=probs.size) / codes.size
    tv = 0.5 * np.abs(freq - probs).sum()
    length = codes.size // batches
    batch = np.array([np.bincount(codes[b * length:(b + 1) * length], minlength=probs.size)
                      / length for b in range(batches)])
    mcse = batch.std(axis=0, ddof=1) / math.sqrt(batches)
    return tv, 0.5 * math.sqrt(2 / math.pi) * mcse.sum()
