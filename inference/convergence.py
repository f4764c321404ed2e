"""Convergence checks on label-invariant statistics."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr

from inference.summary import label_variable_names
from pp_models.model_info import posterior_with_labels
from pp_models.validation import check_real

__all__ = ["ConvergenceReport", "check_convergence"]


@dataclass(frozen=True)
class ConvergenceReport:
    """Per-quantity R-hat and ESS against thresholds.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per scalar quantity: ``r_hat, ess_bulk, ess_tail, ok, reason``.
    rhat_max, ess_bulk_min, ess_tail_min : float
        The thresholds used.
    n_divergent : int or None
        Divergent NUTS transitions, when the data say.
    """

    table: pd.DataFrame
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    n_divergent: int | None

    @property
    def passed(self) -> bool:
        """True when every quantity meets every threshold and nothing diverged."""
        return bool(self.table["ok"].all()) and not self.n_divergent

    def failures(self) -> pd.DataFrame:
        """The rows that failed."""
        return self.table[~self.table["ok"]]

    def advice(self) -> str:
        """What failed, and what to try: one line per kind of failure ("" when passed)."""
        if self.passed:
            return ""
        failed = self.failures()
        lines = []

        def names(mask) -> str:
            shown = list(failed.index[mask])
            more = f" and {len(shown) - 5} more" if len(shown) > 5 else ""
            return ", ".join(shown[:5]) + more

        reasons = failed["reason"].astype(str)
        stuck = reasons.str.contains("stuck")
        rhat = reasons.str.contains("R-hat") & ~stuck
        ess = reasons.str.contains("ESS") & ~rhat & ~stuck
        if stuck.any():
            lines.append(f"  {names(stuck)}: each chain stayed at its own value -- the "
                         "chains found different modes; run longer (--tune, --draws) or "
                         "from other starts, and compare the chains.")
        if rhat.any():
            lines.append(f"  {names(rhat)}: R-hat above {self.rhat_max} -- the chains "
                         "disagree; run longer (--tune and --draws, e.g. x4) and keep "
                         "several chains (--chains 4).")
        if ess.any():
            lines.append(f"  {names(ess)}: too few effective draws (need "
                         f"{self.ess_bulk_min:g} bulk / {self.ess_tail_min:g} tail) -- more "
                         "--draws or more --chains add them.")
        if self.n_divergent:
            lines.append(f"  {self.n_divergent} divergent NUTS transitions -- the sampler "
                         "missed part of the posterior; try a higher target_accept or "
                         "another method (--method).")
        return "What failed and what to try:\n" + "\n".join(lines)

    def __bool__(self) -> bool:
        return self.passed

    def __str__(self) -> str:
        head = (
            f"Convergence: {'PASSED' if self.passed else 'FAILED'} "
            f"(R-hat <= {self.rhat_max}, bulk ESS >= {self.ess_bulk_min:g}, "
            f"tail ESS >= {self.ess_tail_min:g}"
            + (f"; {self.n_divergent} divergent transitions" if self.n_divergent else "")
            + ")"
        )
        with pd.option_context("display.width", 120, "display.max_rows", 60):
            body = self.table.to_string(float_format=lambda v: f"{v:.3f}")
        return f"{head}\n{body}"


def check_convergence(
    dt: xr.DataTree,
    *,
    var_names=None,
    rhat_max: float = 1.01,
    ess_bulk_min: float = 400,
    ess_tail_min: float = 400,
) -> ConvergenceReport:
    """Check R-hat and effective sample sizes (Vehtari et al. 2021).

    By default the quantities checked are the posterior's identified variables and the
    label-invariant statistics a zoo model declared (see ``inference.summary``); raw
    component labels are left out because label switching between chains makes their
    R-hat meaningless. A quantity that is constant over every draw of every chain passes
    (e.g. the number of occupied components when it never changes); one that is constant
    within chains but differs between them fails.

    Parameters
    ----------
    dt : xarray.DataTree
        With a ``posterior`` group of at least 2 chains (R-hat needs them).
    var_names : list of str, optional
    rhat_max, ess_bulk_min, ess_tail_min : float

    Returns
    -------
    ConvergenceReport
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    # R-hat is >= 1 and an ESS >= 0: a threshold outside would fail (or pass) every
    # quantity, and NaN would fail every one, without saying why
    rhat_max = check_real(rhat_max, "rhat_max", minimum=1.0)
    ess_bulk_min = check_real(ess_bulk_min, "ess_bulk_min", minimum=0.0)
    ess_tail_min = check_real(ess_tail_min, "ess_tail_min", minimum=0.0)
    posterior = posterior_with_labels(dt)
    if posterior.sizes.get("chain", 0) < 2:
        raise ValueError("convergence checks need at least 2 chains")
    labels = set(label_variable_names(dt))
    if var_names is None:
        var_names = [v for v in posterior.data_vars if v not in labels]
    else:
        var_names = [var_names] if isinstance(var_names, str) else list(var_names)
        missing = [v for v in var_names if v not in posterior.data_vars]
        if missing:
            raise ValueError(f"var_names: not in the posterior: {', '.join(missing)}")
    if not var_names:
        raise ValueError("var_names: nothing to check")

    rows = []
    for name in var_names:
        da = posterior[name]
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        stacked = da.stack(_element=extra) if extra else da.expand_dims("_element", axis=-1)
        for i in range(stacked.sizes["_element"]):
            values = np.asarray(stacked.isel(_element=i).values, dtype=np.float64)
            label = name if not extra else f"{name}[{_index_label(stacked, i)}]"
            rows.append(_diagnose(label, values, rhat_max, ess_bulk_min, ess_tail_min))
    table = pd.DataFrame(rows).set_index("quantity")

    n_divergent = None
    if "sample_stats" in dt.children and "diverging" in dt["sample_stats"].data_vars:
        n_divergent = int(dt["sample_stats"]["diverging"].sum())
    return ConvergenceReport(table, rhat_max, ess_bulk_min, ess_tail_min, n_divergent)


def _index_label(stacked: xr.DataArray, i: int) -> str:
    index = stacked["_element"].values[i]
    index = index if isinstance(index, tuple) else (index,)
    return ", ".join(str(v) for v in index)


def _diagnose(label, values, rhat_max, ess_bulk_min, ess_tail_min) -> dict:
    if np.ptp(values) == 0:
        return dict(quantity=label, r_hat=1.0, ess_bulk=np.nan, ess_tail=np.nan, ok=True,
                    reason="constant")
    if np.all(np.ptp(values, axis=1) == 0):
        return dict(quantity=label, r_hat=np.inf, ess_bulk=np.nan, ess_tail=np.nan, ok=False,
                    reason="each chain stuck at a different value")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        da = xr.DataArray(values, dims=("chain", "draw"))
        r_hat = float(az.rhat(da))
        ess_bulk = float(az.ess(da, method="bulk"))
        ess_tail = float(az.ess(da, method="tail"))
    reasons = []
    if not r_hat <= rhat_max:
        reasons.append(f"R-hat {r_hat:.3f} > {rhat_max}")
    if not ess_bulk >= ess_bulk_min:
        reasons.append(f"bulk ESS {ess_bulk:.0f} < {ess_bulk_min:g}")
    if not ess_tail >= ess_tail_min:
        reasons.append(f"tail ESS {ess_tail:.0f} < {ess_tail_min:g}")
    return dict(quantity=label, r_hat=r_hat, ess_bulk=ess_bulk, ess_tail=ess_tail,
                ok=not reasons, reason="; ".join(reasons))
