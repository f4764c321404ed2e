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
    family_figure = _family_figure(dt.attrs.get("pp_models_family"))
    if family_figure is not None:
        paths["structure"] = out / "structure.png"
        _atomic_write(paths["structure"], lambda tmp: family_figure(dt, tmp))
    return paths


def _family_figure(family):
    """A family's own picture of a fit, ``pp_models.<family>.outputs.plot_structure(dt,
    path)`` (PNG), when it has one (e.g. the trees of a mixture of trees)."""
    if not family:
        return None
    import importlib

    try:
        outputs = importlib.import_module(f"pp_models.{family}.outputs")
    except ImportError:
        return None
    return getattr(outputs, "plot_structure", None)


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
