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
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from inference.summary_table import label_variable_names

__all__ = ["LOG_DENSITY_STATS", "MAX_CHAIN_PANELS", "RESULT_FILES", "TEMPERING_PLOT",
           "chain_selection", "check_output_dir", "holds_complete_result", "plot_family",
           "plot_trace", "pooled_picture_note", "result_folder", "write_results"]


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


def write_results(dt: xr.DataTree, table: pd.DataFrame, out_dir: str | os.PathLike, *,
                  model=None) -> dict:
    """Write ``posterior.nc``, ``summary.csv`` and ``trace.png`` into ``out_dir``.

    ``trace.png`` draws what the convergence check saw (:func:`plot_trace`). The
    family's picture pools the chains when the check's verdict is ``converged``, and
    otherwise draws one panel per chain, by stacking weight for a ``multimodal`` run
    (:func:`plot_family`). ``model``, the fitted model, lets a family whose picture
    reads a summary of all chains' draws (its post-processing) summarise each chain
    alone, and gives the pointwise log-likelihood the stacking weights need when ``dt``
    has none; without it such a picture stays pooled, with a line above it saying so
    (:func:`pooled_picture_note`). A ``multimodal`` run's stacking weights are saved
    with its draws (:func:`inference.stacking.stacking_attrs`), where ``ppzoo check``
    reads them.

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
        report = _check_quietly(dt)
        weights, saved = None, dt
        if report is not None and report.verdict == "multimodal":
            # computed once, for the picture's order and for `ppzoo check` of the file
            stacking, _ = _chain_stacking(dt, model)
            if stacking is not None:
                from inference.stacking import stacking_attrs

                weights = stacking[0]
                saved = dt.copy(deep=False)
                saved.attrs.update(stacking_attrs(*stacking))
        _atomic_write(staging / "posterior.nc",
                      lambda tmp: saved.to_netcdf(tmp, engine="h5netcdf",
                                                  encoding=_compressed_encoding(dt)))
        _atomic_write(staging / "summary.csv", lambda tmp: table.to_csv(tmp))
        _draw_picture(staging / "trace.png", lambda tmp: plot_trace(dt, tmp, report=report))
        family_plot = _family_plot(dt)
        if family_plot is not None:
            name, plot = family_plot
            # an interrupted run may have skipped the post-processing its picture needs;
            # the CLI already says it was interrupted, so a missing picture is no news
            quiet = bool(dt.attrs.get("pp_models_interrupted", 0))
            if not _draw_picture(staging / f"{name}.png",
                                 lambda tmp: plot_family(dt, tmp, plot, report=report,
                                                         model=model, weights=weights),
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


def _check_quietly(dt: xr.DataTree):
    """The convergence check of ``dt`` for its pictures, or None when it has too few
    chains or draws, or nothing to check."""
    from inference.convergence import check_convergence

    posterior = dt["posterior"] if "posterior" in dt.children else None
    if posterior is None or posterior.sizes.get("chain", 0) < 2 \
            or posterior.sizes.get("draw", 0) < 4:
        return None
    try:
        return check_convergence(dt)
    except ValueError:
        return None


#: Groups of a result that hold data, not draws: one chain's selection keeps them whole.
_DATA_GROUPS = frozenset({"observed_data", "constant_data", "predictions_constant_data"})

#: At most this many chains get a panel of their own in a family's picture.
MAX_CHAIN_PANELS = 8


def chain_selection(dt: xr.DataTree, chain: int, *, postprocess=None) -> xr.DataTree | None:
    """``dt`` as if only its chain at position ``chain`` had been run.

    Every group with a ``chain`` dimension keeps that chain (as a chain dimension of
    length 1, so a picture reading position 0 reads it); the data groups
    (:data:`_DATA_GROUPS`) and the root attributes stay whole. A group without a
    ``chain`` dimension is a summary of all chains' draws, made by the family's
    post-processing (``ZooModelInfo.postprocess``: the DP mixture's ``clustering``, the
    BHC tree at the posterior median, the GGM's ``graph``): it is made again from this
    chain's draws by ``postprocess``.

    Parameters
    ----------
    dt : xarray.DataTree
    chain : int
        Position along ``posterior``'s ``chain`` dimension.
    postprocess : callable ``DataTree -> DataTree``, optional
        The family's post-processing.

    Returns
    -------
    xarray.DataTree or None
        None when ``dt`` has a summary of all chains and no ``postprocess`` to make it
        again (the chain's own picture cannot be drawn).
    """
    pooled = [path for path, ds in _groups(dt)
              if path not in _DATA_GROUPS and ds.data_vars and "chain" not in ds.dims]
    if pooled and postprocess is None:
        return None
    groups = {}
    for path, ds in _groups(dt):
        if path in pooled:
            continue
        groups[path] = ds.isel(chain=[chain]) if "chain" in ds.dims else ds
    one = xr.DataTree.from_dict(groups)
    one.attrs.update(dt.attrs)
    if pooled:
        one = postprocess(one)
        if any(path not in {p for p, _ in _groups(one)} for path in pooled):
            return None
    return one


def _groups(dt: xr.DataTree) -> list[tuple[str, xr.Dataset]]:
    """``(path relative to the root, its own variables)`` of every group below the root."""
    return [(node.relative_to(dt), node.to_dataset(inherit=False))
            for node in dt.subtree if node is not dt]


def plot_family(dt: xr.DataTree, path: str | os.PathLike, plot, *, report=None, model=None,
                weights=None) -> list[str]:
    """Draw a family's picture of ``dt``: pooled when the chains agree, else per chain.

    When the convergence check's verdict is ``converged`` (or there is no check), ``plot``
    draws all chains' draws together. Otherwise pooling would average chains that sit
    in different places, so ``plot`` draws each chain's draws alone
    (:func:`chain_selection`) and the pictures are put side by side (or one above the
    other when wider than tall), one panel per chain, under a title saying why: for a
    ``multimodal`` run by decreasing stacking weight (Yao, Vehtari & Gelman 2022;
    :mod:`inference.stacking`), each panel's title giving its chain's weight, for a
    ``not_converged`` run in chain order. At most :data:`MAX_CHAIN_PANELS` chains are
    drawn. When a chain's own picture cannot be made (a summary of all chains and no
    ``model`` to make it per chain), the pooled picture is drawn with a line above it
    saying so (:func:`pooled_picture_note`).

    Parameters
    ----------
    dt : xarray.DataTree
    path : str or path-like
        The PNG written.
    plot : callable
        ``plot(dt, path)``, the family's picture (its ``Family.plot``).
    report : ConvergenceReport, optional
        The check of ``dt``.
    model : pymc.Model, optional
        The fitted model: its post-processing summarises each chain, its pointwise
        log-likelihood gives the stacking weights when ``dt`` has no ``log_likelihood``
        group.
    weights : array_like, optional
        The chains' stacking weights (computed here for a ``multimodal`` run when not
        given).

    Returns
    -------
    list of str
        The panels' titles, one per chain drawn; empty for a pooled picture.
    """
    if report is None or report.verdict == "converged":
        plot(dt, path)
        return []
    postprocess = None
    if model is not None:
        from pp_models.model_info import get_info

        info = get_info(model)
        postprocess = None if info is None else info.postprocess
    n_chains = dt["posterior"].sizes["chain"]
    first = chain_selection(dt, 0, postprocess=postprocess)
    if first is None:
        _plot_with_note(plot, dt, path, pooled_picture_note(report))
        return []
    why_no_weights = ""
    if report.verdict == "multimodal" and weights is None:
        stacking, why_no_weights = _chain_stacking(dt, model)
        weights = None if stacking is None else stacking[0]
    order = list(range(n_chains))
    if weights is not None:
        weights = np.asarray(weights, dtype=float)
        order = [int(c) for c in np.argsort(-weights, kind="stable")]
    shown = order[:MAX_CHAIN_PANELS]
    titles, images = [], []
    with tempfile.TemporaryDirectory() as folder:
        for c in shown:
            one = first if c == 0 else chain_selection(dt, c, postprocess=postprocess)
            picture = Path(folder) / f"chain{c}.png"
            plot(one, picture)
            images.append(_read_png(picture))
            titles.append(f"chain {c}" + ("" if weights is None
                                          else f": stacking weight {weights[c]:.3f}"))
    _compose(images, titles, _per_chain_headline(report, n_chains, len(shown),
                                                 weights is not None, why_no_weights),
             path)
    return titles


def _per_chain_headline(report, n_chains: int, n_shown: int, weighted: bool,
                        why_no_weights: str) -> str:
    """The title of a per-chain picture: the verdict, why the chains are drawn apart, in
    what order."""
    if report.verdict == "multimodal":
        text = ("Verdict multimodal: every chain is stationary, but the chains sit in "
                "separate modes; pooled they would be averaged, so each chain is drawn "
                "alone, " + ("by stacking weight (Yao, Vehtari & Gelman 2022; per-chain "
                             "PSIS-LOO)." if weighted else
                             f"in chain order (no stacking weights: {why_no_weights})."))
    else:
        failing = report.failures()
        worst = failing["r_hat"].astype(float).max() if len(failing) else float("nan")
        what = f"{len(failing)} checked quantities fail"
        if np.isfinite(worst):
            what += f", worst R-hat {worst:.3g}"
        if report.n_divergent:
            what += f", {report.n_divergent} divergent transitions"
        text = (f"Verdict not_converged ({what}): the chains have not reached one "
                "distribution; pooled they would be averaged, so each chain is drawn "
                "alone, in chain order (trace.png shows them over their draws).")
    if n_shown < n_chains:
        text += f" The first {n_shown} of {n_chains} chains."
    return text + " Inside a panel its chain is numbered 0."


def _chain_stacking(dt: xr.DataTree, model) -> tuple[tuple | None, str]:
    """The chains' stacking ``(weights, elpd, pareto_k)`` from ``dt``'s
    ``log_likelihood`` group, or from ``model``'s pointwise log-likelihood; else None and
    why."""
    from inference.stacking import chain_loo, stacking_weights

    source = dt
    if "log_likelihood" not in dt.children:
        if model is None:
            return None, "they need the pointwise log-likelihood: fit(..., log_likelihood=True)"
        from inference.log_likelihood import compute_log_likelihood

        try:
            group = compute_log_likelihood(dt, model, extend_inferencedata=False)
        except ValueError as err:  # a variable the terms need was not recorded
            return None, str(err)
        source = xr.DataTree.from_dict({"log_likelihood": group})
    try:
        elpd, pareto_k = chain_loo(source)
        return (stacking_weights(elpd), elpd, pareto_k), ""
    except ValueError as err:
        return None, str(err)


def _read_png(path: Path) -> np.ndarray:
    import matplotlib.image as mpimg

    return mpimg.imread(path, format="png")


def _compose(images: list[np.ndarray], titles: list[str], headline: str, path):
    """Put pictures in one figure at their own size, one panel each under its title:
    side by side when taller than wide, else one above the other."""
    from matplotlib.figure import Figure

    dpi = 100
    height = max(image.shape[0] for image in images)
    width = max(image.shape[1] for image in images)
    across = height > width
    rows, cols = (1, len(images)) if across else (len(images), 1)
    fig_w = cols * width
    # about 8 pixels per character at the headline's size
    headline = "\n".join(textwrap.wrap(headline, width=max(40, int(fig_w / 8))))
    band, top = 28, 16 * (headline.count("\n") + 1) + 16  # pixels for the titles
    fig_h = rows * (height + band) + top
    fig = Figure(figsize=(fig_w / dpi, fig_h / dpi), dpi=dpi)
    for k, (image, title) in enumerate(zip(images, titles, strict=True)):
        r, c = (0, k) if across else (k, 0)
        bottom = fig_h - top - (r + 1) * (height + band)
        ax = fig.add_axes((c * width / fig_w, bottom / fig_h, width / fig_w, height / fig_h))
        ax.imshow(image)
        ax.set_axis_off()
        ax.set_title(title, fontsize=11, fontweight="bold")
    fig.suptitle(headline, y=1 - 8 / fig_h, va="top", fontsize=10, color="darkred")
    fig.savefig(path, format="png", dpi=dpi)
    return fig


def pooled_picture_note(report) -> str:
    """The line put above a family's picture, which pools the chains' draws, when the
    check's verdict is not ``converged`` and the chains cannot be drawn apart ("" when it
    is, or when there is no check)."""
    if report is None or report.verdict == "converged":
        return ""
    if report.verdict == "multimodal":
        why = "the chains sit in separate modes (`ppzoo check` gives their stacking weights)"
    else:
        why = "the chains have not converged"
    return (f"Chains pooled although {why}: verdict {report.verdict}; "
            "trace.png shows each chain")


def _plot_with_note(plot, dt: xr.DataTree, path: str, note: str) -> None:
    """Draw the family's picture; with a ``note``, redraw it with the note above."""
    plot(dt, path)
    if not note:
        return
    import matplotlib.image as mpimg
    from matplotlib.figure import Figure

    image = mpimg.imread(path, format="png")
    height, width = image.shape[:2]
    dpi = 100
    band = 40  # pixels for the note
    fig = Figure(figsize=(width / dpi, (height + band) / dpi), dpi=dpi)
    ax = fig.add_axes((0, 0, 1, height / (height + band)))
    ax.imshow(image)
    ax.axis("off")
    fig.text(0.5, 1 - 0.5 * band / (height + band), note, ha="center", va="center",
             fontsize=9, color="darkred", wrap=True)
    fig.savefig(path, format="png", dpi=dpi)


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


#: Per-draw log densities drawn at the top of ``trace.png`` when the posterior or the
#: sample stats hold one: the Gibbs steps' ``log_joint`` (LDA) and ``log_marginal``
#: (mixtures of trees), NUTS's ``lp``, a model's ``log_likelihood`` statistic.
LOG_DENSITY_STATS = ("log_joint", "lp", "log_marginal", "log_likelihood", "logp")

#: Points per chain drawn in a trace (longer chains are thinned evenly for the picture).
_TRACE_POINTS = 2000


def plot_trace(dt: xr.DataTree, path: str | os.PathLike, *, max_variables: int = 12,
               report=None) -> list[str]:
    """Traces and per-chain histograms of what the convergence check saw.

    One row per scalar quantity :func:`inference.convergence.check_convergence` checks
    (raw labels left out), the worst first (largest R-hat: a quantity each chain holds at
    its own constant comes first), constant ones included; above them the log density
    per draw where the posterior or the sample stats have one (:data:`LOG_DENSITY_STATS`).
    Each chain has its own colour, so chains that disagree are seen apart. At most
    ``max_variables`` quantities are drawn; the title says how many there are and the
    verdict.

    Parameters
    ----------
    dt : xarray.DataTree
    path : str or path-like
        The PNG written.
    max_variables : int
    report : ConvergenceReport, optional
        The check of ``dt`` (computed here when not given, and when ``dt`` has 2 chains
        or more).

    Returns
    -------
    list of str
        The rows drawn, top to bottom.
    """
    from matplotlib.figure import Figure

    from inference.convergence import check_convergence, scalar_quantities
    from pp_models.model_info import posterior_with_labels

    posterior = posterior_with_labels(dt)
    if report is None and posterior.sizes.get("chain", 0) >= 2 \
            and posterior.sizes.get("draw", 0) >= 4:
        try:
            report = check_convergence(dt)
        except ValueError:  # nothing checkable (e.g. only raw labels): draw what there is
            report = None
    labels = set(label_variable_names(dt))
    names = [v for v in posterior.data_vars
             if v not in labels and posterior[v].dtype.kind in "biuf"]
    quantities = dict(scalar_quantities(posterior, names))
    if report is not None:
        rhat = report.table["r_hat"].astype(float).fillna(1.0)
        order = list(rhat.sort_values(ascending=False, kind="stable").index)
        order = [q for q in order if q in quantities]
    else:
        order = list(quantities)
    densities = _log_densities(dt)
    # a log density the posterior holds is a checked statistic too: drawn once, on top
    order = [q for q in order if q not in {name for name, _ in densities}]
    shown = order[:max_variables]
    checked = set() if report is None else set(report.table.index)
    rows = [(name, values, report.table.loc[name] if name in checked else None)
            for name, values in densities]
    rows += [(q, quantities[q], None if report is None else report.table.loc[q])
             for q in shown]
    if not rows:
        fig = Figure(figsize=(4, 1))
        ax = fig.subplots()
        ax.text(0.5, 0.5, "no identified quantity to plot", ha="center")
        ax.axis("off")
        fig.savefig(path, format="png")
        return []
    fig = Figure(figsize=(11, 1.7 * len(rows) + 0.9))
    axes = fig.subplots(len(rows), 2, gridspec_kw={"width_ratios": [3, 1]}, squeeze=False)
    for (name, values, row), (trace_ax, hist_ax) in zip(rows, axes, strict=True):
        _draw_row(trace_ax, hist_ax, name, np.asarray(values, dtype=float), row)
    verdict = "" if report is None else f"verdict: {report.verdict}; "
    drawn = len(shown) + len(checked & {name for name, _ in densities})
    total = len(order) + len(checked & {name for name, _ in densities})
    fig.suptitle(f"{verdict}{drawn} of {total} checked quantities, worst (largest R-hat) "
                 "first; one colour per chain"
                 + (f"\non top, the log density per draw "
                    f"({', '.join(n for n, _ in densities)})" if densities else ""),
                 fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.5 / (1.7 * len(rows) + 0.9)))
    fig.savefig(path, format="png", dpi=80)
    return [name for name, _, _ in rows]


def _log_densities(dt: xr.DataTree) -> list[tuple[str, np.ndarray]]:
    """``(name, (chain, draw) values)`` of the per-draw log densities the fit kept."""
    found = []
    for group in ("posterior", "sample_stats"):
        if group not in dt.children:
            continue
        ds = dt[group]
        for name in LOG_DENSITY_STATS:
            if name in ds.data_vars and set(ds[name].dims) == {"chain", "draw"}:
                found.append((name if group == "posterior" else f"{name} ({group})",
                              np.asarray(ds[name].transpose("chain", "draw").values,
                                         dtype=float)))
    return found


def _draw_row(trace_ax, hist_ax, name, values, row) -> None:
    """One quantity: its traces (thinned to :data:`_TRACE_POINTS` per chain) and a
    histogram per chain on shared bins; a constant gets one bin around its value."""
    colours = [f"C{c % 10}" for c in range(values.shape[0])]
    step = max(1, values.shape[1] // _TRACE_POINTS)
    draws = np.arange(values.shape[1])[::step]
    for chain, colour in zip(values, colours, strict=True):
        trace_ax.plot(draws, chain[::step], color=colour, lw=0.6, alpha=0.8)
    finite = values[np.isfinite(values)]
    if finite.size:
        low, high = float(finite.min()), float(finite.max())
        if not high - low > 1e-12 * max(abs(low), abs(high), 1e-300):
            low, high = low - 0.5, high + 0.5
        bins = np.linspace(low, high, 31)
        for chain, colour in zip(values, colours, strict=True):
            chain = chain[np.isfinite(chain)]
            hist_ax.hist(np.clip(chain, low, high), bins=bins, color=colour, alpha=0.45,
                         histtype="stepfilled", orientation="horizontal")
        hist_ax.set_ylim(trace_ax.get_ylim())
    hist_ax.set_yticklabels([])
    title = name
    if row is not None:
        title += f"   R-hat {row['r_hat']:.3f}"
        if np.isfinite(row.get("chain_r_hat", np.nan)):
            title += f", worst chain's split R-hat {row['chain_r_hat']:.3f}"
        if np.isfinite(row["ess_bulk"]):
            title += f", bulk ESS {row['ess_bulk']:.0f}"
        if row.get("reason"):
            title += f"  [{row['reason']}]"
    trace_ax.set_title(title, fontsize=9, loc="left")
    trace_ax.tick_params(labelsize=8)
    hist_ax.tick_params(labelsize=8)


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
