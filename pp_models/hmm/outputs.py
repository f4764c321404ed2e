"""What to read off an HMM fit: the label-invariant statistics ``fit`` adds, the paths
drawn after a marginalised fit, the states' posterior probabilities over time and the
family's picture.

States are exchangeable, so any statistic per state first puts each draw's states in a
canonical order: by increasing emission mean (:func:`state_order`). The stationary
distribution solves ``pi P = pi`` with ``sum pi = 1`` (unique for an irreducible ``P``;
Dirichlet draws have every entry positive).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from custom_ops.hmm.draws import markov_chain_draw
from custom_ops.hmm.forward_backward import ffbs_kernel, forward_backward_kernel
from pp_models.hmm.emissions import get_emission
from pp_models.model_info import posterior_with_labels

__all__ = [
    "draw_parameters",
    "emission_means_sorted",
    "log_likelihood",
    "occupancy_sorted",
    "plot_results",
    "recover_paths",
    "simulate",
    "state_order",
    "state_probabilities",
    "stationary_distribution",
    "stationary_sorted",
]


def draw_parameters(posterior: xr.Dataset, spec) -> dict:
    """``{name: (chain, draw, ...)}`` of ``pi0``, ``P`` and the emission parameters."""
    names = ("pi0", "P", *get_emission(spec.emission).parameters)
    return {n: np.asarray(posterior[n].values, dtype=np.float64) for n in names}


def _per_draw(params, c, s):
    return {n: v[c, s] for n, v in params.items()}


def log_likelihood(posterior: xr.Dataset, spec, y) -> xr.DataArray:
    """``log p(y | pi0, P, theta)`` per draw, the path summed out (forward algorithm)."""
    emission = get_emission(spec.emission)
    params = draw_parameters(posterior, spec)
    chains, draws = params["pi0"].shape[:2]
    out = np.empty((chains, draws))
    with np.errstate(divide="ignore"):
        for c in range(chains):
            log_lik = emission.log_lik({n: params[n][c] for n in emission.parameters}, y)
            log_pi0, log_P = np.log(params["pi0"][c]), np.log(params["P"][c])
            for s in range(draws):
                out[c, s] = forward_backward_kernel(
                    log_pi0[s], log_P[s], np.ascontiguousarray(log_lik[s]), spec.offsets
                )[0].sum()
    return xr.DataArray(out, dims=("chain", "draw"))


def stationary_distribution(P) -> np.ndarray:
    """``pi`` with ``pi P = pi``, ``sum pi = 1``, for a stack of transition matrices
    ``(..., K, K)``."""
    P = np.asarray(P, dtype=np.float64)
    K = P.shape[-1]
    A = np.swapaxes(P, -1, -2) - np.eye(K)
    A[..., -1, :] = 1.0
    b = np.zeros(P.shape[:-1])
    b[..., -1] = 1.0
    return np.linalg.solve(A, b[..., None])[..., 0]


def stationary_sorted(posterior: xr.Dataset) -> xr.DataArray:
    pi = stationary_distribution(posterior["P"].values)
    return xr.DataArray(-np.sort(-pi, axis=-1), dims=("chain", "draw", "state_rank"))


def occupancy_sorted(posterior: xr.Dataset, spec, y) -> xr.DataArray:
    """The fraction of time in each state, decreasing: from the path ``z`` when it was
    sampled, else its expectation given the draw's parameters (smoothed marginals)."""
    K = spec.n_states
    if "z" in posterior:
        z = np.asarray(posterior["z"].values)
        counts = np.stack([(z == k).sum(axis=-1) for k in range(K)], axis=-1)
        occupancy = counts / z.shape[-1]
    else:
        occupancy = _smoothed(posterior, spec, y).mean(axis=2)
    return xr.DataArray(-np.sort(-occupancy, axis=-1), dims=("chain", "draw", "state_rank"))


def _smoothed(posterior, spec, y) -> np.ndarray:
    """``(chain, draw, T, K)`` smoothed marginals per draw."""
    emission = get_emission(spec.emission)
    params = draw_parameters(posterior, spec)
    chains, draws = params["pi0"].shape[:2]
    out = np.empty((chains, draws, y.shape[0], spec.n_states))
    with np.errstate(divide="ignore"):
        for c in range(chains):
            log_lik = emission.log_lik({n: params[n][c] for n in emission.parameters}, y)
            for s in range(draws):
                out[c, s] = forward_backward_kernel(
                    np.log(params["pi0"][c, s]),
                    np.log(params["P"][c, s]),
                    np.ascontiguousarray(log_lik[s]),
                    spec.offsets,
                )[1]
    return out


def emission_means_sorted(posterior: xr.Dataset, spec) -> xr.DataArray:
    means = get_emission(spec.emission).means(draw_parameters(posterior, spec))
    return xr.DataArray(np.sort(means, axis=-1), dims=("chain", "draw", "state_rank"))


def state_order(posterior: xr.Dataset, spec) -> np.ndarray:
    """``(chain, draw, K)``: each draw's states by increasing emission mean (rank r is
    state ``order[..., r]``)."""
    means = get_emission(spec.emission).means(draw_parameters(posterior, spec))
    return np.argsort(means, axis=-1, kind="stable")


def recover_paths(dt: xr.DataTree, spec, y, random_seed=None) -> xr.DataTree:
    """A marginalised fit's post-processing: one path per posterior draw, drawn by FFBS
    given that draw's parameters, added to ``posterior`` as ``z`` (a label variable)."""
    posterior = dt["posterior"].to_dataset()
    emission = get_emission(spec.emission)
    params = draw_parameters(posterior, spec)
    chains, draws = params["pi0"].shape[:2]
    seed = random_seed if random_seed is not None else dt.attrs.get("pp_models_random_seed")
    try:
        rng = np.random.default_rng(None if seed is None else int(seed))
    except (TypeError, ValueError):
        rng = np.random.default_rng()
    T = y.shape[0]
    z = np.zeros((chains, draws, T), dtype=np.int64)
    with np.errstate(divide="ignore"):
        for c in range(chains):
            log_lik = emission.log_lik({n: params[n][c] for n in emission.parameters}, y)
            for s in range(draws):
                ffbs_kernel(
                    np.log(params["pi0"][c, s]),
                    np.log(params["P"][c, s]),
                    np.ascontiguousarray(log_lik[s]),
                    spec.offsets,
                    rng.random(T),
                    z[c, s],
                )
    dims = ("chain", "draw", "time")
    coords = {"time": np.arange(T)}
    dt["posterior"] = xr.DataTree(posterior.assign(z=xr.DataArray(z, dims=dims, coords=coords)))
    return dt


def simulate(emission, rng, pi0, P, params, offsets) -> np.ndarray:
    """A path and observations from the model (the marginalised form's forward draw)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    z = np.empty(int(offsets[-1]), dtype=np.int64)
    markov_chain_draw(
        rng,
        np.ascontiguousarray(pi0, dtype=np.float64),
        np.ascontiguousarray(P, dtype=np.float64),
        offsets,
        z,
    )
    return emission.draw(rng, params, z)


def state_probabilities(dt, spec=None) -> np.ndarray:
    """``(T, K)``: the posterior probability that ``y_t`` comes from the state of rank k
    (states ordered by emission mean per draw), from the drawn paths."""
    posterior = posterior_with_labels(dt)
    z = np.asarray(posterior["z"].values)
    if spec is None:
        spec = _spec_from(posterior)
    order = state_order(posterior, spec)
    rank = np.argsort(order, axis=-1)  # rank[c, s, k]: the rank of state k
    ranked = np.take_along_axis(rank, z, axis=-1)
    K = order.shape[-1]
    return np.stack([(ranked == r).mean(axis=(0, 1)) for r in range(K)], axis=-1)


def _spec_from(posterior):
    from types import SimpleNamespace

    for emission, names in (
        ("gaussian", ("mu", "tau")),
        ("poisson", ("rate",)),
        ("bernoulli", ("p",)),
        ("categorical", ("phi",)),
    ):
        if all(n in posterior for n in names):
            return SimpleNamespace(emission=emission, n_states=posterior["P"].shape[-1])
    raise ValueError("the posterior holds no HMM emission parameters")


def plot_results(dt, path=None):
    """The series coloured by the most probable state (states ranked by emission mean),
    above a band of the states' posterior probabilities over time."""
    import matplotlib.pyplot as plt

    probs = state_probabilities(dt)
    y = np.asarray(dt["observed_data"]["y"].values, dtype=float)
    T, K = probs.shape
    t = np.arange(T)
    colours = plt.get_cmap("viridis")(np.linspace(0.1, 0.9, K))
    fig, (top, bottom) = plt.subplots(
        2, 1, figsize=(9, 5), sharex=True, gridspec_kw={"height_ratios": [2, 1]}
    )
    top.plot(t, y, color="0.7", lw=0.8, zorder=1)
    modal = probs.argmax(axis=1)
    for r in range(K):
        sel = modal == r
        top.scatter(
            t[sel], y[sel], s=14, color=colours[r], zorder=2, label=f"state {r} (by emission mean)"
        )
    top.set_ylabel("y")
    top.legend(loc="best", fontsize=8)
    bottom.stackplot(t, probs.T, colors=colours)
    bottom.set_ylim(0, 1)
    bottom.set_ylabel("p(state | y)")
    bottom.set_xlabel("t")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
