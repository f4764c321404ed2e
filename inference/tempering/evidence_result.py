"""The answer of :func:`inference.evidence` and the combination of independent chains'
estimates (:mod:`inference.tempering.evidence` says how the estimates and their standard
errors are made). Its own module so that the estimators (stepping stone and thermodynamic
integration in :mod:`inference.tempering.evidence`, annealed importance sampling in
:mod:`inference.tempering.ais`) build it without importing one another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["DISAGREEMENT_LEVEL", "CombinedChains", "EvidenceResult", "combine_chains"]


@dataclass(frozen=True, eq=False)
class EvidenceResult:
    """The estimate of ``log p(X)`` and how it was reached.

    Attributes
    ----------
    log_evidence : float
        The estimate (mean of the chains' estimates).
    se : float
        Its standard error (:mod:`inference.tempering.evidence`: the delta method and
        the effective sample size within each chain, combined over the independent
        chains).
    method : str
    per_chain : tuple of float
        Each chain's estimate (their spread is a check on ``se``).
    table : pandas.DataFrame
        One row per (chain, temperature): ``beta``, the mean, variance and effective
        sample size of the log-likelihood there, and the stepping stone's
        ``log_ratio`` to the next temperature and the Pareto shape ``pareto_k`` of its
        weights (NaN at beta = 1). For AIS, one row per
        (chain, particle): its log weight.
    se_method : str
        How ``se`` was computed.
    draws, chains, n_temperatures : int
    tempering : xarray.DataTree or None
        The tempered run the estimate came from (``fit``'s DataTree), when it came from
        one.
    sampler : str
        Where the draws came from: ``"parallel_tempering"``, ``"nutpie"`` (independent
        runs per temperature) or ``"ais"``.
    se_dof : float
        Degrees of freedom of ``se**2`` (a Student-t interval ``estimate ± t_dof se``).
    ladder_error : float
        The thermodynamic minus the stepping-stone estimate from the same draws: the
        ladder's discretisation error as far as it can be seen (NaN where it cannot:
        AIS, a ladder without draws at beta = 1).
    """

    log_evidence: float
    se: float
    method: str
    per_chain: tuple[float, ...]
    table: pd.DataFrame
    se_method: str
    draws: int
    chains: int
    n_temperatures: int
    tempering: xr.DataTree | None = field(default=None, repr=False)
    sampler: str = "parallel_tempering"
    se_dof: float = math.inf
    ladder_error: float = math.nan

    def __str__(self) -> str:
        ladder = "" if math.isnan(self.ladder_error) else f"; ladder error {self.ladder_error:+.3f}"
        return (
            f"log evidence {self.log_evidence:.3f} ± {self.se:.3f} ({self.method}, "
            f"{self.n_temperatures} temperatures, {self.chains} chains x {self.draws} "
            f"draws; {self.sampler.replace('_', ' ')}{ladder})"
        )

    def plot(self, ax=None):
        """Stepping stone / thermodynamic: the mean log-likelihood against beta (the
        thermodynamic integrand) with ±2 standard errors, per chain, and the estimate
        in the title. AIS: the particles' log weights. Returns the figure."""
        import matplotlib.pyplot as plt

        if ax is None:
            fig, ax = plt.subplots(figsize=(6, 4))
        else:
            fig = ax.figure
        if self.method == "ais":
            for c, rows in self.table.groupby(level="chain"):
                ax.hist(rows["log_weight"].values, bins=30, alpha=0.5, label=f"chain {c}")
            ax.set_xlabel("log importance weight")
            ax.set_ylabel("particles")
        else:
            for c, rows in self.table.groupby(level="chain"):
                se = np.sqrt(rows["var_log_likelihood"] / rows["ess"])
                ax.errorbar(
                    rows["beta"],
                    rows["mean_log_likelihood"],
                    yerr=2 * se,
                    marker="o",
                    ms=3,
                    capsize=2,
                    label=f"chain {c}",
                )
            ax.set_xscale("symlog", linthresh=1e-3)
            ax.set_xlabel("inverse temperature beta")
            ax.set_ylabel("E_beta[log p(X | theta)]")
        ax.set_title(f"log p(X) = {self.log_evidence:.2f} ± {self.se:.2f} ({self.method})")
        ax.legend(fontsize="small")
        fig.tight_layout()
        return fig


# ---------------------------------------------------------------------- estimators


class CombinedChains(NamedTuple):
    """Independent chains' estimates combined (:func:`combine_chains`)."""

    estimate: float
    se: float
    which: str
    dof: float


#: Significance level at which the chains' spread is judged larger than their own
#: standard errors explain (then the chains disagree: a chain may be stuck in one mode).
DISAGREEMENT_LEVEL = 0.01


def combine_chains(estimates, variances, dofs=None) -> CombinedChains:
    """The mean of independent chains' estimates, its standard error, how it was set and
    its degrees of freedom.

    With the within-chain variance ``W = sum(variances) / C^2`` (``dofs``: its degrees
    of freedom per chain, infinite when not given) and the between-chain ``B = s^2 / C``
    (``s^2`` the sample variance of the ``C`` estimates), ``B / W`` is about
    ``chi2_{C-1} / (C-1)`` when the chains agree. Beyond its ``1 - DISAGREEMENT_LEVEL``
    quantile the chains disagree (a chain stuck in one mode): ``se = sqrt(B)`` with ``C -
    1`` degrees of freedom. Otherwise both estimate the same variance and are pooled,
    weighted by their degrees of freedom.
    """
    from scipy import stats

    estimates = np.asarray(estimates, dtype=float)
    c = estimates.size
    within = float(np.sum(variances)) / c**2
    within_dof = math.inf if dofs is None else float(np.sum(dofs))
    if c < 2:
        return CombinedChains(
            float(estimates.mean()), math.sqrt(within), "within chains", within_dof
        )
    # in units of the largest estimate: estimates near -1e200 (prior draws of a
    # heavy-tailed model) would overflow the squares
    scale = float(np.max(np.abs(estimates))) or 1.0
    within_scaled = float(np.sum(np.asarray(variances, dtype=float) / scale / scale)) / c**2
    between_scaled = float(np.var(estimates / scale, ddof=1)) / c
    limit = float(stats.chi2.isf(DISAGREEMENT_LEVEL, c - 1)) / (c - 1)
    mean = float(estimates.mean())
    if not between_scaled <= limit * within_scaled:
        between = scale * math.sqrt(between_scaled)
        return CombinedChains(
            mean,
            between,
            (
                f"between chains (their estimates' spread, {between:.3g}, exceeds the "
                f"within-chain {scale * math.sqrt(within_scaled):.3g}: a chain may be stuck "
                "in one mode)"
            ),
            float(c - 1),
        )
    if math.isinf(within_dof):
        return CombinedChains(mean, math.sqrt(within), "within chains", within_dof)
    pooled = (within_dof * within_scaled + (c - 1) * between_scaled) / (within_dof + c - 1)
    return CombinedChains(
        mean, scale * math.sqrt(pooled), "within and between chains, pooled", within_dof + c - 1
    )
