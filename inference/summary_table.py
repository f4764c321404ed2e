"""Posterior summaries that respect label switching."""

from __future__ import annotations

import json
import warnings

import arviz as az
import pandas as pd
import xarray as xr

from pp_models.model_info import posterior_with_labels

__all__ = ["label_invariant_names", "label_variable_names", "summary"]


def label_invariant_names(dt: xr.DataTree) -> list[str]:
    """Names of the label-invariant statistics ``fit`` added to the posterior."""
    return list(json.loads(dt.attrs.get("pp_models_label_invariant", "[]")))


def label_variable_names(dt: xr.DataTree) -> list[str]:
    """Names of variables whose raw values are not identified (component labels)."""
    return list(json.loads(dt.attrs.get("pp_models_label_variables", "[]")))


def summary(
    dt: xr.DataTree, *, var_names=None, include_labels: bool = False, **kwargs
) -> pd.DataFrame:
    """ArviZ's summary, with diagnostics on label-invariant statistics.

    For a model whose component labels are not identified (mixtures, feature
    allocations), R-hat and ESS of the raw labelled variables are meaningless: chains
    that visit different permutations of the same posterior look unconverged. This
    summary therefore shows, by default, the label-invariant statistics the model
    declared (``n_occupied``, sorted weights, ...) and the variables that are identified;
    the labelled ones are left out unless ``include_labels=True``, and then their
    diagnostic columns are blanked.

    Parameters
    ----------
    dt : xarray.DataTree
        What ``inference.fit`` (or ``pm.sample``) returned.
    var_names : list of str, optional
        Restrict to these posterior variables.
    include_labels : bool
        Also list the labelled variables (means and intervals only).
    **kwargs
        Passed to ``arviz.summary`` (e.g. ``ci_prob``, ``ci_kind``).

    Returns
    -------
    pandas.DataFrame
        ArviZ's columns plus ``label_invariant`` (True for the declared statistics).

    Notes
    -----
    A statistic that is the same in every draw of every chain (e.g. ``n_occupied`` when
    no component ever empties) has no defined R-hat (0/0): ArviZ reports it as NaN (and
    ``mcse_sd`` too), here without the floating-point warnings its diagnostics emit for
    it. :func:`inference.convergence.check_convergence` counts such a statistic as
    converged.
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    # fit keeps the raw labels in their own group; older files and pm.sample output
    # have them in the posterior
    posterior = posterior_with_labels(dt)
    available = list(posterior.data_vars)
    labels = set(label_variable_names(dt))
    invariant = set(label_invariant_names(dt))
    if var_names is None:
        var_names = [v for v in available if include_labels or v not in labels]
    else:
        var_names = [var_names] if isinstance(var_names, str) else list(var_names)
        missing = [v for v in var_names if v not in available]
        if missing:
            raise ValueError(f"var_names: not in the posterior: {', '.join(missing)}")
    if not var_names:
        raise ValueError("nothing to summarise: every posterior variable is a raw label")
    with warnings.catch_warnings():
        # numpy's "invalid value encountered in scalar divide" from R-hat / ESS of a
        # constant statistic; the NaN it produces is the answer, documented above
        warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"arviz_stats\.")
        table = az.summary(posterior[var_names], **kwargs)
    table = pd.DataFrame(table)
    row_var = [str(index).split("[")[0] for index in table.index]
    table["label_invariant"] = [v in invariant for v in row_var]
    diagnostic_columns = [c for c in table.columns if c.startswith(("ess", "r_hat", "mcse"))]
    is_label = [v in labels for v in row_var]
    table.loc[is_label, diagnostic_columns] = float("nan")
    return table
