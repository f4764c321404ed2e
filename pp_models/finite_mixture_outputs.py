"""The finite mixture's picture of a fit: the data coloured by their posterior component,
with the components' posterior mean locations (``ppzoo fit finite_mixture`` writes it as
``mixture.png``)."""

from __future__ import annotations

import itertools

import numpy as np
import xarray as xr

from pp_models.model_info import posterior_with_labels

__all__ = ["component_assignments", "plot_results"]

#: Features drawn in pairs, one panel per pair, at most this many.
MAX_FEATURES = 4


def component_assignments(dt: xr.DataTree, *, chain: int = 0):
    """Each point's most frequent component in the second half of one chain, how often
    it was there, and the components' posterior mean locations over the same draws.

    The component labels are not identified across chains (nor before a chain settles
    in one labelling), so one chain's second half is read: within it the labels are
    those of one mode.

    Returns
    -------
    component : ndarray of int, shape (n,)
    share : ndarray of float, shape (n,)
        The fraction of the draws that put the point in ``component``.
    means : ndarray, shape (K, d)
        ``mu`` averaged over the draws.
    """
    posterior = posterior_with_labels(dt)
    if "z" not in posterior or "mu" not in posterior:
        raise ValueError("dt needs the finite mixture's z and mu (a fit of "
                         "pp_models.finite_mixture.model)")
    posterior = posterior.isel(chain=chain)
    posterior = posterior.isel(draw=slice(posterior.sizes["draw"] // 2, None))
    z = np.asarray(posterior["z"].values)  # (draws, n)
    mu = np.asarray(posterior["mu"].values)  # (draws, K, d)
    # one component at a time: memory linear in the draws times n
    counts = np.stack([(z == k).sum(axis=0) for k in range(mu.shape[1])], axis=1)
    component = counts.argmax(axis=1)
    share = counts.max(axis=1) / z.shape[0]
    return component, share, mu.mean(axis=0)


def plot_results(dt: xr.DataTree, path=None, *, chain: int = 0):
    """The answer of a finite mixture fit: the data, each point coloured by its
    posterior component (:func:`component_assignments`: its most frequent one in the
    second half of chain ``chain``; paler where that is less sure), and each occupied
    component's posterior mean location ``mu`` marked x in its colour. One panel per
    pair of the first four features (one feature: its values against the point's
    row). Needs the observed data (``observed_data`` group, as ``fit`` writes it).
    Saves a PNG to ``path`` when given; returns the figure.
    """
    import matplotlib.pyplot as plt

    if not isinstance(dt, xr.DataTree) or "observed_data" not in dt.children:
        raise ValueError("dt has no 'observed_data' group: plot a fit of "
                         "pp_models.finite_mixture.model")
    observed = dt["observed_data"]["X"]
    X = np.asarray(observed.values, dtype=float)
    names = [str(v) for v in observed[observed.dims[-1]].values]
    component, share, means = component_assignments(dt, chain=chain)
    occupied = np.unique(component)
    colours = plt.get_cmap("tab10")
    d = min(X.shape[1], MAX_FEATURES)
    pairs = list(itertools.combinations(range(d), 2)) or [(None, 0)]
    columns = min(len(pairs), 3)
    rows = -(-len(pairs) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.8 * rows),
                             squeeze=False)
    for ax, (i, j) in zip(axes.ravel(), pairs, strict=False):
        x = np.arange(X.shape[0]) if i is None else X[:, i]
        for k in occupied:
            mine = component == k
            colour = colours(int(k) % 10)
            ax.scatter(x[mine], X[mine, j], s=14, color=colour,
                       alpha=np.clip(share[mine], 0.25, 1.0), linewidths=0,
                       label=f"component {k} ({mine.sum()})")
            if i is not None:
                ax.scatter(means[k, i], means[k, j], marker="x", s=90, color=colour,
                           linewidths=2.5)
        ax.set_xlabel("row" if i is None else names[i])
        ax.set_ylabel(names[j])
    for ax in axes.ravel()[len(pairs):]:
        ax.set_axis_off()
    axes[0, 0].legend(fontsize=7, loc="best")
    fig.suptitle(f"Points by posterior component (chain {chain}, second half), "
                 "component means x", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
    return fig
