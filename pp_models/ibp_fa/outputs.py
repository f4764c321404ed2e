"""What to read off an NSFA fit, and the synthetic problem of Knowles §3.3.1.

All functions take the ``DataTree`` that ``inference.fit`` returns. Raw slots of ``Z``,
``V`` and ``X`` are not identified (features have no order), so the outputs are
label-invariant: the number of active features per draw, each row's number of features,
and the reconstruction ``G X`` (its posterior mean and standard deviation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from pp_models.model_info import LABELS_GROUP, posterior_with_labels

__all__ = [
    "SyntheticFactors",
    "active_features",
    "loading_error",
    "plot_results",
    "reconstruction",
    "reconstruction_error",
    "row_feature_counts",
    "summarize",
    "synthetic",
    "zero_unused_slots",
]


def _posterior(dt: xr.DataTree) -> xr.Dataset:
    return posterior_with_labels(dt)


def _loadings(posterior: xr.Dataset, spike_scale=None, lambda_fixed=None):
    """(draws, D, K) loadings and their on/off pattern, finite or non-parametric."""
    if "Z" in posterior:
        Z = np.asarray(posterior["Z"].values) != 0
        G = Z * np.asarray(posterior["V"].values)
    elif "G" in posterior:
        from pp_models.ibp_fa.model import finite_responsibilities

        G = np.asarray(posterior["G"].values)
        Z = finite_responsibilities(posterior, spike_scale=spike_scale or 0.01,
                                    lambda_fixed=lambda_fixed) > 0.5
    else:
        raise ValueError("the posterior has neither Z and V (NSFA) nor G (finite "
                         "approximation); was it fitted from pp_models.ibp_fa.model?")
    return G.reshape(-1, *G.shape[2:]), Z.reshape(-1, *Z.shape[2:])


def active_features(dt: xr.DataTree) -> xr.DataArray:
    """Number of active features per draw, dims (chain, draw)."""
    posterior = _posterior(dt)
    if "n_features" in posterior:
        return posterior["n_features"]
    Z = np.asarray(posterior["Z"].values) != 0
    return xr.DataArray(Z.any(axis=2).sum(axis=-1), dims=("chain", "draw"))


def row_feature_counts(dt: xr.DataTree, *, spike_scale=None) -> xr.DataArray:
    """Posterior probability that row ``d`` uses exactly ``c`` features, dims (dim, count)."""
    _G, Z = _loadings(_posterior(dt), spike_scale)
    counts = Z.sum(axis=-1)  # (draws, D)
    top = int(counts.max()) + 1
    pmf = np.stack([(counts == c).mean(axis=0) for c in range(top)], axis=1)
    return xr.DataArray(pmf, dims=("dim", "count"),
                        coords={"dim": np.arange(pmf.shape[0]), "count": np.arange(top)},
                        attrs={"description": "posterior P(row d has c active features)"})


def reconstruction(dt: xr.DataTree, *, max_draws: int | None = None,
                   spike_scale=None) -> xr.Dataset:
    """Posterior mean and standard deviation of ``G X`` (D x N), streamed over draws.

    ``G X`` is identified (no label switching), unlike ``G`` or ``X``.
    """
    posterior = _posterior(dt)
    G, _Z = _loadings(posterior, spike_scale)
    X = np.asarray(posterior["X"].values)
    X = X.reshape(-1, *X.shape[2:])
    idx = np.arange(G.shape[0])
    if max_draws is not None and idx.size > max_draws:
        idx = np.linspace(0, idx.size - 1, max_draws).astype(int)
    total = np.zeros((G.shape[1], X.shape[-1]))
    total_sq = np.zeros_like(total)
    for s in idx:
        active = np.flatnonzero((G[s] != 0).any(axis=0))
        GX = G[s][:, active] @ X[s][active]
        total += GX
        total_sq += GX * GX
    mean = total / idx.size
    sd = np.sqrt(np.maximum(total_sq / idx.size - mean**2, 0.0))
    return xr.Dataset({"mean": (("dim", "obs"), mean), "sd": (("dim", "obs"), sd)},
                      attrs={"draws_used": int(idx.size),
                             "description": "posterior mean and sd of the reconstruction GX"})


def zero_unused_slots(dt: xr.DataTree) -> xr.DataTree:
    """A copy of an NSFA result whose values outside the likelihood are 0: ``X`` of the
    slots no dimension loads on (inactive features) and ``V_dk`` where ``Z_dk = 0``.

    ``Y`` depends on ``V`` and ``X`` only through ``G X`` with ``G = Z o V``, so those
    values are draws from their prior that no output reads (the reconstruction, the
    loadings, the log-likelihood and the replicates are unchanged), yet they fill most of
    ``X`` (all ``k_max`` slots x samples per draw while a few features are active).
    Zeroed, they compress away when written (``ppzoo fit ibp_fa`` writes this). A
    finite-approximation result (no ``Z``) is returned unchanged.
    """
    group = LABELS_GROUP if LABELS_GROUP in dt.children else "posterior"
    if group not in dt.children or "Z" not in dt[group]:
        return dt
    labels = dt[group].to_dataset()
    on = labels["Z"] != 0  # dims (chain, draw, dim, feature), shared with V and X
    changed = {}
    if "V" in labels:
        changed["V"] = labels["V"].where(on, 0.0)
    if "X" in labels:
        changed["X"] = labels["X"].where(on.any(labels["Z"].dims[2]), 0.0)
    out = dt.copy()
    out[group] = xr.DataTree(labels.assign(changed))
    return out


def reconstruction_error(GX_true, GX_hat) -> float:
    """``|GX_hat - GX|^2 / |GX|^2``, the benchmark's quality measure."""
    GX_true = np.asarray(GX_true, dtype=float)
    return float(np.sum((np.asarray(GX_hat) - GX_true) ** 2) / np.sum(GX_true**2))


def loading_error(G_true, G_hat) -> float:
    """Knowles Eq. 3.18: ``1/(D K) sum_k min_k' sum_d (G_dk - G^_dk')^2``.

    Each true column is matched to its closest estimated column (no rotation; extra
    estimated columns are not penalised). Because ``(g_k, x_k) -> (-g_k, -x_k)`` leaves
    the model unchanged, each match may also flip the estimated column's sign; an
    estimate with no columns counts every true column against zero.
    """
    G_true = np.asarray(G_true, dtype=float)
    G_hat = np.asarray(G_hat, dtype=float)
    if G_true.ndim != 2 or G_hat.ndim != 2 or G_true.shape[0] != G_hat.shape[0]:
        raise ValueError(f"G_true and G_hat must be 2-D with the same number of rows, got "
                         f"{G_true.shape} and {G_hat.shape}")
    D, K = G_true.shape
    if G_hat.shape[1] == 0:
        return float(np.sum(G_true**2) / (D * K))
    diff_plus = ((G_true[:, :, None] - G_hat[:, None, :]) ** 2).sum(0)
    diff_minus = ((G_true[:, :, None] + G_hat[:, None, :]) ** 2).sum(0)
    best = np.minimum(diff_plus, diff_minus).min(axis=1)
    return float(best.sum() / (D * K))


def summarize(dt: xr.DataTree, *, spike_scale=None) -> xr.DataTree:
    """Add a ``factors`` group: the reconstruction's mean and sd, each row's
    feature-count posterior, and the posterior of the number of active features."""
    out = dt.copy()
    rec = reconstruction(dt, spike_scale=spike_scale)
    k = np.asarray(active_features(dt).values).reshape(-1)
    values, counts = np.unique(k, return_counts=True)
    ds = xr.Dataset(
        {"reconstruction_mean": rec["mean"], "reconstruction_sd": rec["sd"],
         "row_feature_counts": row_feature_counts(dt, spike_scale=spike_scale),
         "n_features_pmf": xr.DataArray(counts / counts.sum(), dims=("n_features",),
                                        coords={"n_features": values})})
    out["factors"] = xr.DataTree(ds)
    return out


@dataclass(frozen=True)
class SyntheticFactors:
    """A synthetic sparse factor problem with its truth."""

    Y: np.ndarray  # (D, N)
    G: np.ndarray  # (D, K)
    X: np.ndarray  # (K, N)
    Z: np.ndarray  # (D, K) int8
    noise_variance: float

    @property
    def GX(self) -> np.ndarray:
        return self.G @ self.X


def synthetic(D: int = 100, N: int = 100, K: int = 16, *, density: float = 0.1,
              snr: float = 10.0, seed=None) -> SyntheticFactors:
    """Knowles §3.3.1's problem with a random sparse ``Z`` (the E. coli matrix is not
    shipped): ``Z_dk ~ Bernoulli(density)`` with every column used by >= 2 rows, ``G = Z o
    V`` with ``V, X ~ N(0, 1)``, white noise of variance ``var(G X) / snr``."""
    from pp_models.validation import check_int, check_positive, rng_from_seed

    D = check_int(D, "D", minimum=2)
    N = check_int(N, "N", minimum=1)
    K = check_int(K, "K", minimum=1)
    density = check_positive(density, "density")
    snr = check_positive(snr, "snr")
    rng = rng_from_seed(seed, "seed")
    Z = (rng.random((D, K)) < density).astype(np.int8)
    for k in range(K):
        while Z[:, k].sum() < 2:
            Z[:, k] = rng.random(D) < density
    G = Z * rng.normal(size=(D, K))
    X = rng.normal(size=(K, N))
    GX = G @ X
    noise_variance = float(GX.var() / snr)
    Y = GX + rng.normal(scale=np.sqrt(noise_variance), size=(D, N))
    return SyntheticFactors(Y=Y, G=G, X=X, Z=Z, noise_variance=noise_variance)


def plot_results(dt: xr.DataTree, path=None, *, chain: int = 0, min_use: float = 0.05):
    """The answer of a sparse factor analysis fit: which observed dimensions each
    feature loads on (posterior mean of ``Z``, the D x K feature matrix) and the mean
    loadings ``G = Z o V`` (Knowles & Ghahramani 2011, Eq. 1: ``Y = G X + E``).

    Feature labels are not identified across chains (nor across a birth that reuses a
    slot), so the means are over the second half of one chain (``chain``); features used
    in fewer than ``min_use`` of those draws are left out, and the rest are ordered by
    how many dimensions load on them. Saves a PNG to ``path`` when given; returns the
    figure. ``ppzoo fit ibp_fa`` writes it as ``features.png``.
    """
    import matplotlib.pyplot as plt

    posterior = _posterior(dt).isel(chain=chain)
    posterior = posterior.isel(draw=slice(posterior.sizes["draw"] // 2, None))
    if "Z" not in posterior or "V" not in posterior:
        raise ValueError("plot_results needs the NSFA posterior (Z and V) from "
                         "pp_models.ibp_fa.model")
    Z = np.asarray(posterior["Z"].values) != 0  # draws, D, K
    G = Z * np.asarray(posterior["V"].values)
    used = Z.any(axis=1).mean(axis=0) >= min_use
    P, L = Z.mean(axis=0)[:, used], G.mean(axis=0)[:, used]
    order = np.argsort(-P.sum(axis=0), kind="stable")
    P, L = P[:, order], L[:, order]
    dims = [str(d) for d in posterior["Z"][posterior["Z"].dims[-2]].values]
    K = P.shape[1]
    longest = max((len(d) for d in dims), default=1) if len(dims) <= 40 else 0
    width = min(5.5 + 0.12 * longest + 1.2 * max(K, 1), 16.0)
    height = min(2.6 + 0.3 * len(dims), 12.0)
    fig, (ax_z, ax_g) = plt.subplots(1, 2, figsize=(width, height))
    feature_ticks = np.arange(K)
    image = ax_z.imshow(P, vmin=0, vmax=1, cmap="Greys", aspect="auto")
    fig.colorbar(image, ax=ax_z, label="P(Z_dk = 1)")
    ax_z.set_title("Feature matrix: which dimensions\neach feature loads on", fontsize=9)
    bound = max(float(np.abs(L).max()), 1e-12)
    image = ax_g.imshow(L, vmin=-bound, vmax=bound, cmap="RdBu_r", aspect="auto")
    fig.colorbar(image, ax=ax_g, label="mean loading G_dk")
    ax_g.set_title("Loadings G = Z o V", fontsize=9)
    for ax in (ax_z, ax_g):
        ax.set_xticks(feature_ticks, [f"f{k + 1}" for k in feature_ticks])
        ax.set_xlabel("feature")
        if len(dims) <= 40:
            ax.set_yticks(np.arange(len(dims)), dims)
        else:
            ax.set_ylabel("observed dimension")
    for d in range(P.shape[0] if P.size <= 200 else 0):
        for k in range(K):
            ax_z.text(k, d, f"{P[d, k]:.2f}", ha="center", va="center", fontsize=7,
                      color="white" if P[d, k] > 0.5 else "black")
            ax_g.text(k, d, f"{L[d, k]:.2f}", ha="center", va="center", fontsize=7)
    n_draws = posterior.sizes["draw"]
    fig.suptitle(f"IBP factor analysis: {K} feature{'s' if K != 1 else ''} used in "
                 f">= {min_use:.0%} of the last {n_draws} draws of chain {chain}\n"
                 "(features ordered by how many dimensions load on them)", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
