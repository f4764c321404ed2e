"""What to read off a fitted Gaussian graphical model.

Functions of the ``DataTree`` that :func:`inference.fit` returns for
:func:`pp_models.ggm.model` (or of precision draws), and a graph plot with the nodes on
a circle.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = [
    "edge_inclusion",
    "graph_summary",
    "inclusion_probability_array",
    "partial_correlation_array",
    "plot_graph",
    "plot_results",
    "posterior_mean_precision",
    "posterior_partial_correlation",
]


def partial_correlation_array(omega: np.ndarray) -> np.ndarray:
    """``-omega_ij / sqrt(omega_ii omega_jj)`` over the last two axes, unit diagonal."""
    omega = np.asarray(omega, dtype=np.float64)
    d = np.sqrt(np.diagonal(omega, axis1=-2, axis2=-1))
    rho = -omega / (d[..., :, None] * d[..., None, :])
    p = omega.shape[-1]
    rho[..., np.arange(p), np.arange(p)] = 1.0
    return rho


def inclusion_probability_array(omega, v0: float, v1: float, pi: float) -> np.ndarray:
    """``P(z_ij = 1 | omega_ij)`` under the spike-and-slab prior (Wang 2015), 0 diagonal."""
    w2 = np.asarray(omega, dtype=np.float64) ** 2
    log_odds = (np.log(pi) - np.log1p(-pi) + np.log(v0) - np.log(v1)
                - 0.5 * w2 / v1**2 + 0.5 * w2 / v0**2)
    prob = 0.5 * (1.0 + np.tanh(0.5 * log_odds))  # a logistic that does not overflow
    p = prob.shape[-1]
    prob[..., np.arange(p), np.arange(p)] = 0.0
    return prob


def _posterior(dt) -> xr.Dataset:
    if isinstance(dt, xr.DataTree):
        return dt["posterior"].to_dataset()
    if isinstance(dt, xr.Dataset):
        return dt
    raise TypeError(f"expected the DataTree fit returns, got {type(dt).__name__}")


def posterior_mean_precision(dt) -> xr.DataArray:
    """Posterior mean of ``Omega`` (node x node)."""
    return _posterior(dt)["Omega"].mean(("chain", "draw"))


def posterior_partial_correlation(dt) -> xr.DataArray:
    """Posterior mean of the partial correlations (node x node)."""
    omega = _posterior(dt)["Omega"]
    rho = xr.DataArray(partial_correlation_array(omega.values), dims=omega.dims,
                       coords=omega.coords)
    return rho.mean(("chain", "draw"))


def edge_inclusion(dt) -> xr.DataArray:
    """Posterior edge-inclusion probabilities of a spike-and-slab fit (node x node).

    Read from the ``graph`` group that ``fit`` adds (:func:`graph_summary`).
    """
    if isinstance(dt, xr.DataTree) and "graph" in dt.children:
        graph = dt["graph"].to_dataset()
        if "edge_inclusion" in graph:
            return graph["edge_inclusion"]
    raise ValueError(
        "no edge_inclusion in the DataTree: fit a prior='spike_slab' model with "
        "postprocess=True (for the graphical lasso prior use |partial correlation| or "
        "credible intervals)"
    )


def graph_summary(dt: xr.DataTree, v0=None, v1=None, pi=None) -> xr.DataTree:
    """A copy of ``dt`` with a ``graph`` group: ``precision_mean``,
    ``partial_correlation_mean`` and, given the spike-and-slab ``v0, v1, pi``,
    ``edge_inclusion`` = the posterior mean of ``P(z_ij = 1 | omega_ij)`` (Wang 2015
    Eq. 7; Rao-Blackwellised edge-inclusion probabilities)."""
    omega = _posterior(dt)["Omega"]
    values = omega.values
    dims = omega.dims[2:]
    coords = {d: omega.coords[d] for d in dims if d in omega.coords}
    flat = values.reshape(-1, *values.shape[2:])
    data = {
        "precision_mean": (dims, flat.mean(axis=0)),
        "partial_correlation_mean": (dims, partial_correlation_array(flat).mean(axis=0)),
    }
    if v0 is not None:
        data["edge_inclusion"] = (dims, inclusion_probability_array(flat, v0, v1, pi).mean(0))
    out = dt.copy()
    graph = xr.Dataset(data, coords=coords)
    graph.attrs["draws"] = int(flat.shape[0])
    out["graph"] = xr.DataTree(graph)
    return out


def plot_graph(weights, names=None, *, ax=None, threshold: float = 0.0, max_width: float = 6.0,
               title: str | None = None, true_edges=None, vmax: float | None = None,
               signs=None, legend: str | None = None):
    """Draw a graph with the nodes on a circle; edge width and opacity grow with
    ``|weight|`` from ``threshold`` (thin, faint) to ``vmax`` (``max_width``, opaque).

    Parameters
    ----------
    weights : array (p, p)
        Symmetric edge weights (inclusion probabilities, partial correlations, an
        adjacency matrix); the diagonal is ignored.
    names : sequence of str, optional
    ax : matplotlib Axes, optional
    threshold : float
        Edges with ``|weight| <= threshold`` are not drawn.
    max_width : float
        Line width of an edge of weight ``vmax``.
    true_edges : bool array (p, p), optional
        Drawn as thin grey lines underneath, for comparison.
    vmax : float, optional
        The ``|weight|`` drawn widest and opaque (default: the largest); give the scale's
        own top (1 for probabilities) so that widths read the same in every picture.
    signs : array (p, p), optional
        Sign of each edge (default: of ``weights``): positive blue, negative red.
    legend : str, optional
        Title of a legend of three widths on the scale (e.g. ``"P(edge | data)"``) and of
        the two signs.

    Returns
    -------
    matplotlib Axes
    """
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    W = np.asarray(weights, dtype=np.float64)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"weights must be a square matrix, got shape {W.shape}")
    p = W.shape[0]
    S = W if signs is None else np.asarray(signs, dtype=np.float64)
    names = [f"x{j}" for j in range(p)] if names is None else [str(s) for s in names]
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 5))
    angle = np.pi / 2 - 2 * np.pi * np.arange(p) / p
    xy = np.column_stack([np.cos(angle), np.sin(angle)])
    if true_edges is not None:
        for i, j in zip(*np.nonzero(np.triu(np.asarray(true_edges, dtype=bool), 1))):
            ax.plot(*xy[[i, j]].T, color="0.8", lw=1.0, zorder=1)
    off = np.abs(W[np.triu_indices(p, 1)])
    if vmax is None:
        vmax = off.max() if off.size and off.max() > 0 else 1.0

    def style(w, sign):
        # from just above the threshold (thin, faint) to vmax (max_width, opaque)
        level = float(np.clip((abs(w) - threshold) / (vmax - threshold), 0.0, 1.0)
                      if vmax > threshold else 1.0)
        return dict(color="C0" if sign >= 0 else "C3", lw=0.6 + (max_width - 0.6) * level,
                    alpha=0.3 + 0.7 * level, solid_capstyle="round")

    # weakest first, so the strong edges are drawn on top
    pairs = [(i, j) for i in range(p) for j in range(i + 1, p) if abs(W[i, j]) > threshold]
    for i, j in sorted(pairs, key=lambda ij: abs(W[ij])):
        ax.plot(*xy[[i, j]].T, zorder=2, **style(W[i, j], S[i, j]))
    ax.scatter(*xy.T, s=300, color="white", edgecolor="k", zorder=3)
    for (x, y), name in zip(xy, names):
        ax.annotate(name, (1.18 * x, 1.18 * y), ha="center", va="center", fontsize=9)
    ax.set_xlim(-1.4, 1.4)
    ax.set_ylim(-1.4, 1.4)
    ax.set_aspect("equal")
    ax.axis("off")
    if legend:
        levels = np.unique(np.round(np.linspace(threshold, vmax, 3), 2))
        handles = [Line2D([], [], **style(v, 1.0)) for v in levels]
        labels = [f"{v:g}" for v in levels]
        if (S[np.triu_indices(p, 1)] < 0).any():
            handles += [Line2D([], [], **style(vmax, 1.0)), Line2D([], [], **style(vmax, -1.0))]
            labels += ["positive partial correlation", "negative partial correlation"]
        ax.legend(handles, labels, title=legend, loc="upper left", bbox_to_anchor=(1.0, 1.0),
                  fontsize=8, title_fontsize=8, frameon=False)
    if title:
        ax.set_title(title)
    return ax


def plot_results(dt, path=None):
    """The posterior graph of a fit: for a spike-and-slab fit the edges whose posterior
    inclusion probability is above 0.5, width and opacity by that probability on the
    fixed scale 0.5-1; otherwise the edges with ``|posterior mean partial correlation| >
    0.05``, by that magnitude. Colour gives the sign of the partial correlation; a
    legend reads both. Saves a PNG to ``path`` when given; returns the figure.

    ``inference.report.write_results`` calls it (as ``graph.png``) for a ``ggm`` fit.
    """
    import matplotlib.pyplot as plt

    post = _posterior(dt)
    names = [str(v) for v in post["Omega"].coords[post["Omega"].dims[-2]].values]
    rho = posterior_partial_correlation(dt).values
    p = rho.shape[0]
    has_graph = isinstance(dt, xr.DataTree) and "graph" in dt.children
    if has_graph and "edge_inclusion" in dt["graph"].to_dataset():
        weights, threshold, vmax = edge_inclusion(dt).values, 0.5, 1.0
        legend = "P(edge | data)"
        what = "posterior edge-inclusion probability > 0.5"
    else:
        weights, threshold, vmax = rho, 0.05, None
        legend = "|partial correlation|"
        what = "|posterior mean partial correlation| > 0.05"
    drawn = int((np.abs(weights[np.triu_indices(p, 1)]) > threshold).sum())
    fig, ax = plt.subplots(figsize=(8.0, 5.6))
    plot_graph(weights, names, ax=ax, threshold=threshold, vmax=vmax, signs=rho,
               legend=legend,
               title=f"{what}:\n{drawn} of {p * (p - 1) // 2} pairs of {p} variables")
    fig.subplots_adjust(left=0.0, right=0.7, top=0.88, bottom=0.02)
    if path is not None:
        fig.savefig(path, format="png", dpi=100)
        plt.close(fig)
    return fig
