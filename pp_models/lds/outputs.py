"""What to read off an LDS fit: the state paths drawn after a marginalised fit (the
simulation smoother per posterior draw) and the family's picture, the smoothed signal
``C x_t`` with its posterior band over the series."""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.lds.kalman import kalman_filter_kernel
from custom_ops.lds.simulation import simulation_smoother_kernel

__all__ = [
    "add_signal",
    "draw_parameters",
    "plot_results",
    "recover_paths",
]


def draw_parameters(posterior, spec, c, s) -> tuple:
    """``(A, C, Q, R, m0, P0)`` of draw ``(c, s)`` of the posterior (fixed ones from
    ``spec``), float64 and C-contiguous."""
    n, p = spec.state_dim, spec.obs_dim
    A = spec.A if spec.A is not None else posterior["A"].values[c, s].reshape(n, n)
    C = spec.C if spec.C is not None else posterior["C"].values[c, s].reshape(p, n)
    Q = np.diag(posterior["sigma_state"].values[c, s] ** 2)
    R = np.diag(posterior["sigma_obs"].values[c, s] ** 2)
    return tuple(
        np.ascontiguousarray(v, dtype=np.float64)
        for v in (A, C, Q, R, spec.initial_mean, spec.initial_cov)
    )


def recover_paths(dt: xr.DataTree, spec, y, random_seed=None) -> xr.DataTree:
    """A marginalised fit's post-processing: one state path per posterior draw, drawn by
    the simulation smoother given that draw's parameters, added to ``posterior`` as
    ``x`` (chain, draw, time, state)."""
    posterior = dt["posterior"].to_dataset()
    chains, draws = posterior.sizes["chain"], posterior.sizes["draw"]
    seed = random_seed if random_seed is not None else dt.attrs.get("pp_models_random_seed")
    try:
        rng = np.random.default_rng(None if seed is None else int(seed))
    except (TypeError, ValueError):
        rng = np.random.default_rng()
    T, n = y.shape[0], spec.state_dim
    x = np.full((chains, draws, T, n), np.nan)
    y = np.ascontiguousarray(y, dtype=np.float64)
    for c in range(chains):
        for s in range(draws):
            A, C, Q, R, m0, P0 = draw_parameters(posterior, spec, c, s)
            log_lik, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
            if np.isnan(log_lik).any():
                continue  # a draw at which the filter fails keeps a NaN path
            x[c, s] = simulation_smoother_kernel(A, mf, Pf, mp, Pp, rng.standard_normal((T, n)))
    dims = ("chain", "draw", "time", "state")
    coords = {"time": np.arange(T), "state": np.arange(n)}
    dt["posterior"] = xr.DataTree(posterior.assign(x=xr.DataArray(x, dims=dims, coords=coords)))
    return add_signal(dt, spec)


def add_signal(dt: xr.DataTree, spec) -> xr.DataTree:
    """Add ``signal``, ``C x_t`` per draw (chain, draw, time, obs), to ``posterior``
    from its paths ``x`` (the path form's post-processing)."""
    posterior = dt["posterior"].to_dataset()
    x = np.asarray(posterior["x"].values, dtype=np.float64)
    if spec.C is not None:
        signal = x @ spec.C.T
    else:
        signal = np.einsum("cdtn,cdpn->cdtp", x, np.asarray(posterior["C"].values))
    dims = ("chain", "draw", "time", "obs")
    coords = {"time": np.arange(x.shape[2]), "obs": np.arange(signal.shape[-1])}
    signal = xr.DataArray(signal, dims=dims, coords=coords)
    dt["posterior"] = xr.DataTree(posterior.assign(signal=signal))
    return dt


def plot_results(dt: xr.DataTree, path, *, band=0.9):
    """The family's picture: each observed series (up to three) with the posterior mean
    of the signal ``C x_t`` and its central ``band`` interval; returns the figure."""
    import matplotlib.pyplot as plt

    posterior = dt["posterior"].to_dataset()
    y = np.asarray(dt["observed_data"]["y"].values, dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if "signal" not in posterior:
        raise ValueError("the posterior has no signal C x to draw (fit(postprocess=True) adds it)")
    signal = np.asarray(posterior["signal"].values, dtype=np.float64).reshape(-1, *y.shape)
    signal = signal[~np.isnan(signal).any(axis=(1, 2))]
    lo, hi = np.quantile(signal, [(1 - band) / 2, (1 + band) / 2], axis=0)
    mean = signal.mean(axis=0)
    shown = min(y.shape[1], 3)
    fig, axes = plt.subplots(shown, 1, figsize=(8, 2.8 * shown), squeeze=False)
    t = np.arange(y.shape[0])
    for j in range(shown):
        ax = axes[j, 0]
        ax.plot(t, y[:, j], "o", ms=3, color="0.3", label="observed")
        ax.plot(t, mean[:, j], color="C0", label="smoothed signal C x (posterior mean)")
        ax.fill_between(
            t, lo[:, j], hi[:, j], color="C0", alpha=0.25, label=f"{band:.0%} posterior band"
        )
        ax.set_ylabel(f"y[{j}]")
    axes[0, 0].legend(loc="best", fontsize=8)
    axes[-1, 0].set_xlabel("time step")
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    plt.close(fig)
    return fig
