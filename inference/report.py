"""Writing a fit's results to disk: posterior, summary table, trace plot (and the
family's picture, and for a tempered run the ladder's, ``tempering.png``).

The files are written into a hidden staging folder that then replaces the output folder
by renames, so an interrupted run never leaves a truncated file under the final name nor
one run's files beside another's. A partial (interrupted) result never replaces a
complete one: it goes beside it, into ``<out>.interrupted``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from inference.summary import label_variable_names

__all__ = ["RESULT_FILES", "TEMPERING_PLOT", "check_output_dir", "holds_complete_result",
           "plot_trace",
           "result_folder", "write_results"]


#: The files :func:`write_results` writes; a folder holding only these (or nothing) is a
#: previous result that a new one may replace.
RESULT_FILES = ("posterior.nc", "summary.csv", "trace.png")


#: The picture of a tempered run (a DataTree with a ``tempering`` group).
TEMPERING_PLOT = "tempering.png"


def _result_names() -> set[str]:
    """The files of a previous result: :data:`RESULT_FILES`, every family's picture
    (``Family.plot_name``, read without importing the families) and a tempered run's
    :data:`TEMPERING_PLOT`."""
    from pp_models.registry import list_family_summaries

    return (set(RESULT_FILES) | {f"{s.plot_name}.png" for s in list_family_summaries()
                                 if s.plot_name} | {TEMPERING_PLOT})


def check_output_dir(out_dir: str | os.PathLike) -> Path:
    """``out_dir`` as a Path if :func:`write_results` may write there, else ValueError.

    Call it before sampling: a file of that name, or a folder holding anything but a
    previous result, is refused (nothing is overwritten or mixed).
    """
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out: {out} exists and is not a folder")
    if out.is_dir():
        other = sorted(p.name for p in out.iterdir() if p.name not in _result_names())
        if other:
            raise ValueError(f"--out: {out} holds files that are not a previous result "
                             f"({', '.join(other[:3])}{', ...' if len(other) > 3 else ''}); "
                             "choose a new or empty folder")
    parent = out.parent if str(out.parent) else Path(".")
    probe = parent
    while not probe.exists():
        probe = probe.parent
    if not os.access(probe, os.W_OK):
        raise ValueError(f"--out: cannot write into {probe}")
    return out


def holds_complete_result(out_dir: str | os.PathLike) -> bool:
    """Whether ``out_dir`` holds a result of a run that was not interrupted."""
    path = Path(out_dir) / "posterior.nc"
    if not path.is_file():
        return False
    try:
        import h5netcdf

        with h5netcdf.File(path, "r") as f:
            return not int(f.attrs.get("pp_models_interrupted", 0))
    except Exception:  # not a readable result (a broken or foreign file): replaceable
        return False


def _is_partial(dt: xr.DataTree) -> bool:
    return bool(dt.attrs.get("pp_models_interrupted", 0))


def result_folder(dt: xr.DataTree, out_dir: str | os.PathLike) -> Path:
    """The folder :func:`write_results` writes ``dt`` into for ``out_dir``: ``out_dir``
    itself, unless ``dt`` is a partial (interrupted) result and ``out_dir`` holds a
    complete one, which it must not replace; then ``<out_dir>.interrupted`` (or
    ``.interrupted-2``, ... when that name holds something else than a partial result)."""
    out = Path(out_dir)
    if not (_is_partial(dt) and holds_complete_result(out)):
        return out
    for k in range(1, 1000):
        beside = out.with_name(out.name + (".interrupted" if k == 1 else f".interrupted-{k}"))
        try:
            check_output_dir(beside)
        except ValueError:
            continue
        if not holds_complete_result(beside):
            return beside
    raise ValueError(f"--out: no free name beside {out} for the interrupted run")


def write_results(dt: xr.DataTree, table: pd.DataFrame, out_dir: str | os.PathLike) -> dict:
    """Write ``posterior.nc``, ``summary.csv`` and ``trace.png`` into ``out_dir``.

    The files are written into a new hidden folder beside ``out_dir`` which then takes
    its place by renames: ``out_dir`` holds either the previous run's files or this
    run's, never a mix, whenever the process is stopped. A previous result in
    ``out_dir`` is replaced, except a complete one by a partial one (``dt`` interrupted):
    that goes beside it (:func:`result_folder`); a folder with other files is refused
    (:func:`check_output_dir`).

    Returns the paths written, by kind (all in one folder).
    """
    out = check_output_dir(result_folder(dt, check_output_dir(out_dir)))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".new"))
    try:
        _atomic_write(staging / "posterior.nc",
                      lambda tmp: dt.to_netcdf(tmp, engine="h5netcdf",
                                               encoding=_compressed_encoding(dt)))
        _atomic_write(staging / "summary.csv", lambda tmp: table.to_csv(tmp))
        _draw_picture(staging / "trace.png", lambda tmp: plot_trace(dt, tmp))
        family_plot = _family_plot(dt)
        if family_plot is not None:
            name, plot = family_plot
            # an interrupted run may have skipped the post-processing its picture needs;
            # the CLI already says it was interrupted, so a missing picture is no news
            quiet = bool(dt.attrs.get("pp_models_interrupted", 0))
            if not _draw_picture(staging / f"{name}.png", lambda tmp: plot(dt, tmp),
                                 quiet=quiet):
                family_plot = None
        tempered = "tempering" in dt.children
        if tempered:
            from inference.tempering.plots import plot_tempering

            tempered = _draw_picture(staging / TEMPERING_PLOT,
                                     lambda tmp: plot_tempering(dt, tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)
        _swap_in(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    paths = {kind: out / name for kind, name in zip(("posterior", "summary", "trace"),
                                                    RESULT_FILES, strict=True)
             if (out / name).exists()}
    if family_plot is not None:
        paths[family_plot[0]] = out / f"{family_plot[0]}.png"
    if tempered:
        paths["tempering"] = out / TEMPERING_PLOT
    return paths


#: Variables from this many bytes up are written gzip-compressed (level 4, byte-shuffled):
#: the smaller ones stay contiguous, quick to read, and would gain little.
_COMPRESS_FROM_BYTES = 1 << 20


def _compressed_encoding(dt: xr.DataTree) -> dict:
    """``DataTree.to_netcdf``'s ``encoding`` that gzips every numeric variable of at least
    :data:`_COMPRESS_FROM_BYTES`. Random floats shrink little, but the runs of zeros some
    families write (IBP-FA's unused slots) and integer labels shrink many-fold."""
    encoding = {}
    for node in dt.subtree:
        chosen = {name: {"compression": "gzip", "compression_opts": 4, "shuffle": True}
                  for name, var in node.data_vars.items()
                  if var.dtype.kind in "biufc" and var.nbytes >= _COMPRESS_FROM_BYTES}
        if chosen:
            encoding[node.path] = chosen
    return encoding


def _draw_picture(path: Path, draw: Callable[[str], None], *, quiet: bool = False) -> bool:
    """Write a picture; if drawing fails, warn (unless ``quiet``) and go on, so the fit's
    posterior and summary are still saved (a picture is a view of them, they are the
    result)."""
    try:
        _atomic_write(path, draw)
    except Exception as err:  # any plotting failure: reported, the result still saved
        if quiet:
            return False
        warnings.warn(f"could not draw {path.name} ({type(err).__name__}: {err}); "
                      "posterior.nc and summary.csv are written", UserWarning, stacklevel=3)
        return False
    return True


def _swap_in(staging: Path, out: Path) -> None:
    """Put the folder ``staging`` at ``out``; a previous ``out`` is moved aside first
    and deleted after (each rename is atomic)."""
    if not out.exists():
        os.rename(staging, out)
        return
    retired = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.", suffix=".old"))
    os.rmdir(retired)
    os.rename(out, retired)
    try:
        os.rename(staging, out)
    except BaseException:
        os.rename(retired, out)
        raise
    shutil.rmtree(retired, ignore_errors=True)


def _family_plot(dt: xr.DataTree):
    """``(file stem, plot(dt, path))`` of the fitted family (its :class:`Family` record's
    ``plot_name`` and ``plot``), if it has one."""
    from pp_models.registry import get_family, list_family_summaries

    name = dt.attrs.get("pp_models_family", "")
    if name not in {s.name for s in list_family_summaries()}:
        return None
    family = get_family(name)
    return (family.plot_name, family.plot) if family.plot is not None else None


def plot_trace(dt: xr.DataTree, path: str | os.PathLike, *, max_variables: int = 8) -> None:
    """Trace and marginal plots of the identified / label-invariant quantities.

    Raw labels and quantities constant over every draw are left out (a constant has no
    density to draw); at most ``max_variables`` variables are shown.
    """
    import arviz as az
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    posterior = dt["posterior"]
    labels = set(label_variable_names(dt))
    names = [
        v
        for v in posterior.data_vars
        if v not in labels and _every_element_varies(posterior[v].values)
    ][:max_variables]
    if not names:
        fig = Figure(figsize=(4, 1))
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no varying identified quantity to plot", ha="center")
        ax.axis("off")
        fig.savefig(path, format="png")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        collection = az.plot_trace_dist(dt, var_names=names)
    collection.savefig(path, format="png")
    plt.close("all")


def _every_element_varies(values) -> bool:
    """Whether each element of a (chain, draw, ...) variable varies within every chain:
    ArviZ's density plot fails on an element that is constant in all of its chains'
    draws (e.g. a number of features each chain holds fixed)."""
    values = np.asarray(values, dtype=float)
    flat = values.reshape(values.shape[0], values.shape[1], -1)
    if flat.shape[2] == 0 or not np.all(np.isfinite(flat)):
        return False
    # a range below ~1e-10 of the values' size cannot be cut into ArviZ's histogram bins
    # ("Too many bins for data range"): a chain stuck at one point, up to rounding
    scale = np.maximum(np.abs(flat).max(axis=1), 1e-300)
    return bool(np.all(np.ptp(flat, axis=1) > 1e-10 * scale))


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
