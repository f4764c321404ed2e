"""What to read off an IOMM fit.

All functions take the ``DataTree`` that ``inference.fit`` returns. The slots of ``Z``
and the cluster parameters are not identified (clusters have no order, and a slot is
reused after its cluster dies), so the outputs are label-invariant: ``U^ = E[Z Z^T]``,
the expected number of clusters each pair of points shares (Heller 2007 §7.6), and the
posterior of each point's number of clusters. Within one chain's stretch without
births and deaths a slot is one cluster; :func:`plot_results` shows the memberships of
the last half of one chain that way.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pp_models.model_info import posterior_with_labels

__all__ = ["MAX_SHARED_POINTS", "membership_counts", "plot_results", "shared_clusters"]

#: Largest number of points :func:`shared_clusters` builds the N x N matrix for unless
#: asked for a subset (``items``).
MAX_SHARED_POINTS = 3000


def _memberships(dt: xr.DataTree) -> np.ndarray:
    posterior = posterior_with_labels(dt)
    if "Z" not in posterior:
        raise ValueError("the posterior has no Z; was it fitted from pp_models.iomm.model?")
    return np.asarray(posterior["Z"].values) != 0  # chain, draw, point, cluster


def shared_clusters(dt: xr.DataTree, *, items=None, burn: int = 0) -> xr.DataArray:
    """``U^ = E[Z Z^T]`` over every chain's draws after the first ``burn``: the expected
    number of clusters points ``i`` and ``j`` share (the diagonal: each point's expected
    number of clusters). ``items`` (indices) restricts it to those points; without it,
    more than :data:`MAX_SHARED_POINTS` points raise ``ValueError``."""
    on = _memberships(dt)[:, burn:]
    if on.shape[1] == 0:
        raise ValueError(f"burn={burn} leaves no draws")
    N = on.shape[2]
    if items is None:
        if N > MAX_SHARED_POINTS:
            raise ValueError(f"{N} points make a {N} x {N} matrix; pass items=[...] (at most "
                             f"{MAX_SHARED_POINTS} points)")
        items = np.arange(N)
    items = np.asarray(items, dtype=np.int64)
    if items.ndim != 1 or items.size == 0 or items.min() < 0 or items.max() >= N:
        raise ValueError(f"items must be indices of points in [0, {N}), got {items!r}")
    Zs = on[:, :, items].reshape(-1, items.size, on.shape[-1]).astype(np.float64)
    U = np.einsum("sik,sjk->ij", Zs, Zs) / Zs.shape[0]
    return xr.DataArray(U, dims=("point", "point_"),
                        coords={"point": items, "point_": items},
                        attrs={"description": "E[Z Z^T]: expected number of shared clusters",
                               "draws_used": int(Zs.shape[0])})


def membership_counts(dt: xr.DataTree, *, burn: int = 0) -> xr.DataArray:
    """Posterior probability that point ``i`` belongs to exactly ``c`` clusters, dims
    (point, count)."""
    on = _memberships(dt)[:, burn:]
    counts = on.sum(axis=-1).reshape(-1, on.shape[2])
    top = int(counts.max()) + 1
    pmf = np.stack([(counts == c).mean(axis=0) for c in range(top)], axis=1)
    return xr.DataArray(pmf, dims=("point", "count"),
                        coords={"point": np.arange(pmf.shape[0]), "count": np.arange(top)},
                        attrs={"description": "posterior P(point i is in c clusters)"})


def _order(U: np.ndarray) -> np.ndarray:
    """Points ordered so that points sharing clusters sit together (average linkage on
    the distance ``max U - U``)."""
    from scipy.cluster.hierarchy import leaves_list, linkage
    from scipy.spatial.distance import squareform

    if U.shape[0] < 3:
        return np.arange(U.shape[0])
    dist = U.max() - U
    np.fill_diagonal(dist, 0.0)
    return leaves_list(linkage(squareform(dist, checks=False), method="average"))


def plot_results(dt: xr.DataTree, path=None, *, chain: int = 0, min_use: float = 0.05,
                 max_points: int = 400):
    """The memberships of an IOMM fit: ``U^ = E[Z Z^T]`` (how many clusters each pair of
    points shares, over all chains; Heller Fig. 7.5), ``P(z_ik = 1)`` over the last half
    of one chain (clusters used in at least ``min_use`` of those draws, by size), and the
    number of clusters per draw of every chain (Fig. 7.6 left).

    Points are ordered by average linkage on ``U^``; with more than ``max_points``
    points an evenly spaced subset is drawn. Saves a PNG to ``path`` when given; returns
    the figure. ``ppzoo fit iomm`` writes it as ``memberships.png``.
    """
    import matplotlib.pyplot as plt

    on = _memberships(dt)
    n_chains, n_draws, N, _C = on.shape
    items = (np.arange(N) if N <= max_points
             else np.linspace(0, N - 1, max_points).round().astype(np.int64))
    U = np.asarray(shared_clusters(dt, items=items).values)
    order = _order(U)
    tail = on[chain, n_draws // 2:][:, items]  # draws, points, slots
    P = tail.mean(axis=0)
    used = tail.any(axis=1).mean(axis=0) >= min_use
    P = P[:, used]
    P = P[:, np.argsort(-P.sum(axis=0), kind="stable")]
    fig, (ax_u, ax_z, ax_k) = plt.subplots(
        1, 3, figsize=(14.5, 4.6), gridspec_kw={"width_ratios": [1.0, 0.8, 1.1]})
    image = ax_u.imshow(U[np.ix_(order, order)], cmap="Greys", interpolation="nearest")
    fig.colorbar(image, ax=ax_u, label="E[shared clusters]")
    ax_u.set_title("U^ = E[Z Z^T] (points ordered by linkage)", fontsize=9)
    ax_u.set_xlabel("point")
    ax_u.set_ylabel("point")
    image = ax_z.imshow(P[order], vmin=0, vmax=1, cmap="Greys", aspect="auto",
                        interpolation="nearest")
    fig.colorbar(image, ax=ax_z, label="P(z_ik = 1)")
    ax_z.set_title(f"memberships, last {tail.shape[0]} draws of chain {chain}", fontsize=9)
    ax_z.set_xlabel("cluster (by size)")
    ax_z.set_ylabel("point")
    k = on.any(axis=2).sum(axis=-1)
    for c in range(n_chains):
        ax_k.plot(np.arange(n_draws), k[c], lw=0.8, label=f"chain {c}")
    ax_k.set_title("number of clusters per draw", fontsize=9)
    ax_k.set_xlabel("draw")
    ax_k.set_ylabel("clusters")
    if n_chains <= 8:
        ax_k.legend(fontsize=7)
    mean_m = on.sum(axis=-1).mean()
    fig.suptitle(f"Infinite overlapping mixture: {N} points, {k.mean():.1f} clusters and "
                 f"{mean_m:.2f} memberships per point on average", fontsize=10)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
