"""Writing a fit's results to disk: posterior, summary table, trace plot.

Every file is written to a temporary name in the destination directory and renamed
into place, so an interrupted run never leaves a truncated file under the final name.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from inference.summary import label_variable_names

__all__ = ["plot_trace", "write_results"]


def write_results(dt: xr.DataTree, table: pd.DataFrame, out_dir: str | os.PathLike) -> dict:
    """Write ``posterior.nc``, ``summary.csv`` and ``trace.png`` into ``out_dir``.

    Returns the paths written, by kind.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "posterior": out / "posterior.nc",
        "summary": out / "summary.csv",
        "trace": out / "trace.png",
    }
    _atomic_write(paths["posterior"], lambda tmp: dt.to_netcdf(tmp, engine="h5netcdf"))
    _atomic_write(paths["summary"], lambda tmp: table.to_csv(tmp))
    _atomic_write(paths["trace"], lambda tmp: plot_trace(dt, tmp))
    family_plot = _family_plot(dt)
    if family_plot is not None:
        name, plot = family_plot
        paths[name] = out / f"{name}.png"
        _atomic_write(paths[name], lambda tmp: plot(dt, tmp))
    return paths


#: Families that draw a picture of their results: family -> (file stem, module path).
FAMILY_PLOTS = {"ggm": ("graph", "pp_models.ggm.outputs")}


def _family_plot(dt: xr.DataTree):
    """``(file stem, plot_results(dt, path))`` of the fitted family, if it has one."""
    import importlib

    entry = FAMILY_PLOTS.get(dt.attrs.get("pp_models_family", ""))
    if entry is None:
        return None
    stem, module = entry
    return stem, importlib.import_module(module).plot_results


def plot_trace(dt: xr.DataTree, path: str | os.PathLike, *, max_variables: int = 8) -> None:
    """Trace and marginal plots of the identified / label-invariant quantities.

    Raw labels and quantities constant over every draw are left out (a constant has no
    density to draw); at most ``max_variables`` variables are shown.
    """
    import arviz as az
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    posterior = dt["posterior"]
    labels = set(label_variable_names(dt))
    names = [
        v
        for v in posterior.data_vars
        if v not in labels and np.ptp(np.asarray(posterior[v].values, dtype=float)) > 0
    ][:max_variables]
    if not names:
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.text(0.5, 0.5, "no varying identified quantity to plot", ha="center")
        ax.axis("off")
        fig.savefig(path, format="png")
        plt.close(fig)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        collection = az.plot_trace_dist(dt, var_names=names)
    collection.savefig(path, format="png")
    plt.close("all")


def _atomic_write(path: Path, write: Callable[[str], None]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        # mkstemp creates the file private (0600); give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
