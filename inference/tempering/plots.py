"""The picture of a tempered run: how states travel along the ladder.

:func:`plot_tempering` draws, from a DataTree's ``tempering`` group
(:func:`~inference.tempering.driver.tempering_group`), four panels:

1. the swap acceptance probability of each neighbouring pair against the pair's
   mid-temperature, per chain (the adapted ladder aims at equal values), with the
   fraction of tried swaps made (a pair at 0 is one no state crossed);
2. the estimated cumulative communication barrier ``Lambda(beta)`` (Syed et al. 2022,
   §4.1), per chain: a step in the curve is where the power posteriors change abruptly;
   ``Lambda = Lambda(1)`` is in the legend with the number of temperatures it calls for
   (about ``2 Lambda``, their §5.3);
3. the mean log-likelihood at each temperature (the integrand of thermodynamic
   integration: a jump shows the same abrupt change);
4. the index process of the first chain: the ladder position of a few states over the
   kept draws; a round trip is a state's path from the bottom (the prior) to the top
   (the posterior) and back; the completed round trips per chain are in the title.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import xarray as xr

__all__ = ["plot_tempering", "tempering_figure"]

#: States (labels) whose ladder positions the index panel follows.
_TRACKED = 4


def plot_tempering(dt: xr.DataTree, path: str | os.PathLike) -> None:
    """Write the tempered run's picture (module docstring) as a PNG at ``path``.

    ``ValueError`` when ``dt`` has no ``tempering`` group (not a tempered fit).
    """
    tempering_figure(dt).savefig(path, format="png", dpi=90)


def tempering_figure(dt: xr.DataTree):
    """The matplotlib figure of :func:`plot_tempering` (axes in reading order): a
    :class:`matplotlib.figure.Figure` of its own, outside pyplot's figure list, whatever
    the backend."""
    from matplotlib.figure import Figure

    if "tempering" not in dt.children:
        raise ValueError("dt: no 'tempering' group; fit with tempering=N to draw one")
    g = dt["tempering"].to_dataset()
    ladder = np.asarray(g["ladder"].values, dtype=float)  # (chain, temperature)
    acceptance = np.asarray(g["swap_acceptance"].values, dtype=float)  # (chain, pair)
    cumulative = np.asarray(g["cumulative_barrier"].values, dtype=float)
    barrier = np.asarray(g["barrier"].values, dtype=float)
    trips = np.asarray(g["round_trips"].values).astype(int)
    loglik = np.asarray(g["log_likelihood"].values, dtype=float)  # chain, draw, temp
    index = np.asarray(g["index"].values)  # chain, draw, temperature -> state label
    n_chains, n = ladder.shape

    fig = Figure(figsize=(11, 7.5))
    axes = fig.subplots(2, 2)
    tried = np.isfinite(np.asarray(g["swap_prob"].values, dtype=float)).sum(axis=1)
    swapped = np.asarray(g["swaps_accepted"].values) / np.maximum(tried, 1)

    ax = axes[0, 0]
    for c in range(n_chains):
        mid = 0.5 * (ladder[c, :-1] + ladder[c, 1:])
        line, = ax.plot(mid, acceptance[c], "o-", ms=4,
                        label=f"chain {c}: acceptance probability")
        ax.plot(mid, swapped[c], "x", ms=6, color=line.get_color(),
                label=f"chain {c}: swaps made / tried")
    ax.set(xlabel="beta (pair's midpoint)", ylabel="swap acceptance",
           ylim=(-0.03, 1.03), title="swaps along the ladder")
    ax.legend(fontsize=7)

    ax = axes[0, 1]
    for c in range(n_chains):
        ax.plot(ladder[c], cumulative[c], "o-", ms=3,
                label=f"chain {c}: Lambda {barrier[c]:.1f}")
    ax.set(xlabel="inverse temperature beta", ylabel="Lambda(beta)",
           title=f"barrier: {n} temperatures, about "
                 f"{int(np.ceil(2 * np.nanmax(barrier)))} suggested")
    ax.legend(fontsize=7)

    ax = axes[1, 0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mean_ll = np.nanmean(loglik, axis=1)
    for c in range(n_chains):
        ax.plot(ladder[c], mean_ll[c], "o-", ms=3, label=f"chain {c}")
    ax.set(xlabel="inverse temperature beta", ylabel="mean log-likelihood",
           title="log-likelihood at each temperature")
    ax.legend(fontsize=7)
    for ax in (axes[0, 0], axes[0, 1], axes[1, 0]):
        # the adapted ladders crowd temperatures near the prior: a log scale near 0
        ax.set_xscale("symlog", linthresh=1e-3, linscale=0.5)
        ax.set_xlim(0.0, 1.05)

    ax = axes[1, 1]
    positions = np.argsort(index[0], axis=1)  # (draw, label) -> ladder position
    labels = np.unique(np.linspace(0, n - 1, min(_TRACKED, n)).round().astype(int))
    for label in labels:
        ax.step(np.arange(positions.shape[0]), positions[:, label], where="post", lw=0.9,
                label=f"state {label}")
    ax.set(xlabel="draw (chain 0)", ylabel="ladder position (0 = prior)",
           ylim=(-0.5, n - 0.5),
           title="round trips per chain: " + ", ".join(str(t) for t in trips))
    ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("parallel tempering (non-reversible, Syed et al. 2022)")
    fig.tight_layout()
    return fig
