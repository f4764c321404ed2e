"""The answer of :func:`inference.evidence` and the combination of independent chains'
estimates (:mod:`inference.tempering.evidence` says how the estimates and their standard
errors are made). Its own module so that the estimators (stepping stone and thermodynamic
integration in :mod:`inference.tempering.evidence`, annealed importance sampling in
:mod:`inference.tempering.ais`) build it without importing one another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["EvidenceResult", "combine_chains"]


@dataclass(frozen=True, eq=False)
class EvidenceResult:
    """The estimate of ``log p(X)`` and how it was reached.

    Attributes
    ----------
    log_evidence : float
        The estimate (mean of the chains' estimates).
    se : float
        Its standard error (:mod:`inference.tempering.evidence`: batch means and the
        delta method within each chain, combined over the independent chains).
    method : str
    per_chain : tuple of float
        Each chain's estimate (their spread is a check on ``se``).
    table : pandas.DataFrame
        One row per (chain, temperature): ``beta``, the mean, variance and effective
        sample size of the log-likelihood there, and the stepping stone's
        ``log_ratio`` to the next temperature (NaN at beta = 1). For AIS, one row per
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

    def __str__(self) -> str:
        return (
            f"log evidence {self.log_evidence:.3f} ± {self.se:.3f} ({self.method}, "
            f"{self.n_temperatures} temperatures, {self.chains} chains x {self.draws} "
            f"draws; {self.sampler.replace('_', ' ')})"
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


def combine_chains(estimates, variances) -> tuple[float, float, str]:
    """The mean of independent chains' estimates, its standard error (the larger of the
    within-chain and the between-chain figure, module docstring) and which one it is."""
    estimates = np.asarray(estimates, dtype=float)
    within = math.sqrt(float(np.sum(variances))) / estimates.size
    between = 0.0
    if estimates.size >= 2:
        # scaled: estimates near -1e200 (prior draws of a heavy-tailed model) would
        # overflow the squares
        scale = float(np.max(np.abs(estimates))) or 1.0
        between = scale * float(np.std(estimates / scale, ddof=1)) / math.sqrt(estimates.size)
    if between > within:
        return (
            float(estimates.mean()),
            between,
            (
                f"between chains (their estimates' spread, {between:.3g}, exceeds the "
                f"within-chain {within:.3g}: a chain may be stuck in one mode)"
            ),
        )
    return float(estimates.mean()), within, "within chains"
