"""Outputs of a fitted DP mixture (label-invariant, linear in n unless asked).

:func:`summarize` is ``fit``'s post-fit hook (``clustering`` group: point estimate from
contingency tables between draws, co-clustering for small n or a subset of items, the
posterior of K; optional cluster parameters and predictive density);
:func:`cluster_parameters` and :func:`predictive_density` read the conjugate posterior
through :mod:`custom_ops.conjugate` (the latter's loops over draws in
:mod:`custom_ops.dpm.predictive`).
"""

from __future__ import annotations

import numbers

import numpy as np
import pymc as pm
import xarray as xr

from custom_ops import conjugate as cj
from custom_ops.dpm.predictive import (
    crp_conjugate_predictive_density,
    mvn_mixture_density,
    normal_mixture_density,
)
from pp_models import partitions
from pp_models.dpm.hyperpriors import learned_hyperparameters, learned_variable_names
from pp_models.dpm.spec import CONJUGATE, DPMSpec, get_spec
from pp_models.model_info import posterior_with_labels

__all__ = [
    "cluster_parameters",
    "plot_results",
    "posterior_mean_hyperparameters",
    "predictive_density",
    "summarize",
]


def _posterior_z(dt: xr.DataTree) -> np.ndarray:
    posterior = posterior_with_labels(dt)
    if "z" not in posterior.data_vars:
        raise ValueError("dt: the posterior has no 'z' (labels); was the model built by "
                         "dpm.model and fitted with inference.fit?")
    z = np.asarray(posterior["z"].values)
    return z.reshape(-1, z.shape[-1])


def _posterior_alpha(dt, spec, size):
    posterior = dt["posterior"]
    if "alpha" in posterior.data_vars:
        return np.asarray(posterior["alpha"].values).reshape(-1)[:size]
    return np.full(size, spec.alpha)


def _posterior_hyper(dt, spec):
    """Per-draw (flattened) base-measure hyperparameters: a function of the draw index."""
    if not spec.hyperprior:
        return lambda s: spec.prior
    posterior = dt["posterior"]
    names = learned_variable_names(spec)
    missing = [v for v in names if v not in posterior.data_vars]
    if missing:
        raise ValueError(f"dt: the posterior has no {missing} (the learned base-measure "
                         "hyperparameters of this model)")
    flat = {}
    for v in names:
        values = np.asarray(posterior[v].values, dtype=float)
        flat[v] = values.reshape(-1, *values.shape[2:])
    return lambda s: learned_hyperparameters(spec, {v: a[s] for v, a in flat.items()})


def posterior_mean_hyperparameters(dt: xr.DataTree, m: pm.Model) -> dict:
    """The base-measure hyperparameters at the posterior mean of the learned free
    variables (the fixed ``prior`` when nothing is learned)."""
    spec = get_spec(m)
    if spec is None:
        raise ValueError("m must be a model built by pp_models.dpm.model")
    if not spec.hyperprior:
        return dict(spec.prior)
    _posterior_hyper(dt, spec)  # validates
    posterior = dt["posterior"]
    names = learned_variable_names(spec)
    return learned_hyperparameters(
        spec, {v: np.asarray(posterior[v].values, dtype=float).mean(axis=(0, 1))
               for v in names})


def _thin_index(total, max_draws):
    if total <= max_draws:
        return np.arange(total)
    return np.linspace(0, total - 1, max_draws).astype(int)


def cluster_parameters(m_or_spec, z, *, hyperparameters: dict | None = None) -> xr.Dataset:
    """Posterior means of each cluster's parameters given partition ``z`` (conjugate).

    For ``"gaussian"`` (NIW posterior, Murphy 2012 Eq. 4.214): ``mean`` = m_n and
    ``covariance`` = S_n / (nu_n - d - 1) (the posterior mean of Sigma, defined for
    nu_n > d + 1). ``"diag_gaussian"``: ``mean`` and ``variance`` = b_n / (a_n - 1).
    ``"bernoulli"``: ``p`` = (a + m) / (a + b + N). ``"multinomial"``: ``p`` =
    (concentration + m) / sum. Always ``size`` (items per cluster). ``hyperparameters``
    (e.g. :func:`posterior_mean_hyperparameters`) replace the model's ``prior`` values,
    which for learned keys are their hyperprior means.
    """
    spec = m_or_spec if isinstance(m_or_spec, DPMSpec) else get_spec(m_or_spec)
    if spec is None:
        raise ValueError("cluster_parameters needs a model built by pp_models.dpm.model")
    if spec.likelihood not in CONJUGATE:
        raise ValueError(f"cluster_parameters: the {spec.likelihood!r} likelihood is not "
                         "conjugate; read the parameters from the posterior instead")
    z = partitions.canonical_labels(z)
    X = spec.X
    if z.size != X.shape[0]:
        raise ValueError(f"z has {z.size} labels but the model has {X.shape[0]} rows")
    h = spec.prior if hyperparameters is None else hyperparameters
    K = int(z.max()) + 1
    d = X.shape[1]
    sizes = np.bincount(z, minlength=K)
    feats = list(spec.feature_names)
    coords = {"cluster": np.arange(K), "feature": feats}
    hyper = tuple(h[name] for name in cj.FAMILIES[spec.likelihood].hyper_names)

    def posterior(k):
        return cj.posterior_parameters(spec.likelihood, cj.FAMILIES[spec.likelihood].stats(
            np.ascontiguousarray(X[z == k], dtype=np.float64)), hyper)

    if spec.likelihood == "gaussian":
        mean = np.empty((K, d))
        cov = np.empty((K, d, d))
        for k in range(K):
            post = posterior(k)
            mean[k] = post["m"]
            cov[k] = post["S"] / (post["nu"] - d - 1) if post["nu"] > d + 1 else np.nan
        return xr.Dataset(
            {"size": ("cluster", sizes), "mean": (("cluster", "feature"), mean),
             "covariance": (("cluster", "feature", "feature_"), cov)},
            coords={**coords, "feature_": feats},
        )
    if spec.likelihood == "diag_gaussian":
        mean = np.empty((K, d))
        var = np.empty((K, d))
        for k in range(K):
            post = posterior(k)
            mean[k] = post["m"]
            var[k] = np.where(post["a"] > 1, post["b"] / (post["a"] - 1), np.nan)
        return xr.Dataset(
            {"size": ("cluster", sizes), "mean": (("cluster", "feature"), mean),
             "variance": (("cluster", "feature"), var)},
            coords=coords,
        )
    if spec.likelihood == "bernoulli":
        p = np.array([post["a"] / (post["a"] + post["b"]) for post in map(posterior, range(K))])
    else:
        counts = np.array([posterior(k)["concentration"] for k in range(K)])
        p = counts / counts.sum(1, keepdims=True)
    return xr.Dataset({"size": ("cluster", sizes), "p": (("cluster", "feature"), p)},
                      coords=coords)


def predictive_density(dt: xr.DataTree, m: pm.Model, *, dims=(0, 1), grid=None,
                       grid_size: int = 80, max_draws: int = 200) -> xr.Dataset:
    """Posterior predictive density of a new row on a 1-D or 2-D grid, averaged over
    draws: the marginal density of the columns ``dims``.

    CRP (collapsed) draws: ``sum_k (n_k - d)/(n+alpha) p(x | X_k) + (alpha + K d)/(n+alpha)
    p(x)`` (Pitman-Yor discount d; d = 0 is the Dirichlet process) with
    the conjugate posterior predictives (Student-t; Murphy 2012 Eq. 25.27 with H
    integrated out). Stick-breaking draws: ``sum_k w_k F(x | theta_k)`` (``"gaussian"``:
    each component's covariance block on the shown columns). Non-conjugate CRP
    draws: the same as the CRP with ``F(x | theta_k)`` and a Monte Carlo prior predictive
    (500 draws of the base measure from ``default_rng(0)``). Gaussian-type likelihoods
    only. The sums over draws, tables and grid points run in the Numba kernels of
    :mod:`custom_ops.dpm.predictive` (the marginal Student-t of each table from
    :func:`custom_ops.conjugate.log_predictive_columns`).

    Parameters
    ----------
    dims : int or pair of int
        Columns to show (1 or 2); the others are marginalised.
    grid : array or pair of arrays, optional
        Grid points per shown column (default ``grid_size`` points over the data range
        padded by 10 %).
    max_draws : int
        Draws used (thinned evenly).
    """
    spec = get_spec(m)
    if spec is None:
        raise ValueError("predictive_density needs a model built by pp_models.dpm.model")
    if spec.likelihood not in ("gaussian", "diag_gaussian", "normal"):
        raise ValueError(f"predictive_density: not available for the {spec.likelihood!r} "
                         "likelihood (continuous Gaussian-type likelihoods only)")
    X = spec.X
    d = X.shape[1]
    dims = (dims,) if isinstance(dims, numbers.Integral) else tuple(dims)
    if not 1 <= len(dims) <= 2 or any(not 0 <= j < d for j in dims) or len(set(dims)) != len(dims):
        raise ValueError(f"dims must be one or two distinct column indices in [0, {d}), "
                         f"got {dims}")
    if grid is None:
        axes = []
        for j in dims:
            lo, hi = X[:, j].min(), X[:, j].max()
            pad = 0.1 * (hi - lo if hi > lo else 1.0)
            axes.append(np.linspace(lo - pad, hi + pad, grid_size))
    else:
        axes = [np.asarray(grid, dtype=float)] if len(dims) == 1 else [
            np.asarray(g, dtype=float) for g in grid]
        if len(axes) != len(dims):
            raise ValueError("grid must have one axis per shown column")
    mesh = np.meshgrid(*axes, indexing="ij")
    pts = np.stack([g.reshape(-1) for g in mesh], axis=1)  # (G, len(dims))
    cols = np.asarray(dims, dtype=np.int64)
    if spec.truncation is not None:
        post = posterior_with_labels(dt)
        w = np.asarray(post["w"].values, dtype=np.float64).reshape(-1, spec.truncation)
        idx = _thin_index(w.shape[0], max_draws)
        mu = np.ascontiguousarray(np.asarray(post["mu"].values, dtype=np.float64)
                                  .reshape(-1, spec.truncation, d)[idx][..., cols])
        if spec.likelihood == "gaussian":
            # marginal covariance of the shown columns: Sigma = (U U')^-1, its block
            U = np.asarray(post["precision_chol"].values, dtype=np.float64).reshape(
                -1, spec.truncation, d, d)[idx]
            sigma = np.linalg.inv(U @ np.swapaxes(U, -1, -2))[..., cols[:, None], cols]
            dens = mvn_mixture_density(w[idx], mu, np.linalg.cholesky(sigma), pts)
        else:
            sg = np.ascontiguousarray(np.asarray(post["sigma"].values, dtype=np.float64)
                                      .reshape(-1, spec.truncation, d)[idx][..., cols])
            dens = normal_mixture_density(w[idx], mu, sg, pts)
    else:
        Z = _posterior_z(dt)
        idx = _thin_index(Z.shape[0], max_draws)
        alphas = _posterior_alpha(dt, spec, Z.shape[0])[idx].astype(np.float64)
        labels = np.ascontiguousarray(Z[idx], dtype=np.int64)
        if spec.likelihood == "normal":
            dens = _normal_crp_density(dt, spec, labels, alphas, idx, pts, cols)
        else:
            hyper_of = _posterior_hyper(dt, spec)
            family = cj.FAMILIES[spec.likelihood]
            draws = idx if spec.hyperprior else idx[:1]
            hps = np.stack([cj.pack_hyper(spec.likelihood, [
                np.asarray(hyper_of(s)[name], dtype=np.float64) for name in family.hyper_names])
                for s in draws])
            dens = crp_conjugate_predictive_density(
                cj.FAMILY_CODES[spec.likelihood], np.ascontiguousarray(X, dtype=np.float64),
                labels, alphas, float(spec.discount), hps, pts, cols)
    dens /= idx.size
    names = [spec.feature_names[j] for j in dims]
    return xr.Dataset(
        {"density": (tuple(names), dens.reshape(mesh[0].shape))},
        coords={name: ax for name, ax in zip(names, axes, strict=True)},
        attrs={"description": "posterior predictive density of a new row, marginal over "
                              "the other columns", "draws_used": int(idx.size)},
    )


def _conjugate_log_pred(spec, pts, sel, Xk, hyperparameters):
    """log predictive density of points ``pts`` (G, len(sel)) marginal on columns ``sel``
    given the rows ``Xk`` of one cluster (None: the prior predictive); Gaussian families
    (benchmarks/bench_pydt_heldout.py scores held-out rows with it)."""
    d = spec.X.shape[1]
    family = cj.FAMILIES[spec.likelihood]
    if Xk is None or len(Xk) == 0:
        st = np.zeros(family.stats_size(d))
    else:
        st = family.stats(np.ascontiguousarray(Xk, dtype=np.float64))
    hp = cj.pack_hyper(spec.likelihood, [np.asarray(hyperparameters[name], dtype=np.float64)
                                         for name in family.hyper_names])
    out = np.empty(len(pts))
    cj.log_predictive_columns(cj.FAMILY_CODES[spec.likelihood],
                              np.ascontiguousarray(pts, dtype=np.float64),
                              np.asarray(sel, dtype=np.int64), st, hp, out)
    return out


def _normal_crp_density(dt, spec, labels, alphas, idx, pts, cols):
    """Sum over the draws ``idx`` of non-conjugate CRP draws' predictive density: the
    occupied slots' normals with the Pitman-Yor seating weights, plus a new table's
    Monte Carlo prior predictive (500 draws of the base measure, fixed seed)."""
    n, d = spec.X.shape
    post = posterior_with_labels(dt)
    mu, sg = (np.ascontiguousarray(
        np.asarray(post[v].values, dtype=np.float64).reshape(-1, n, d)[idx][..., cols])
        for v in ("mu", "sigma"))
    # Pitman-Yor seating of a new row (Pitman 2006 Eq. 3.6; discount 0 is the DP)
    sizes = np.stack([np.bincount(z, minlength=n) for z in labels]).astype(np.float64)
    n_tables = labels.max(axis=1) + 1
    occupied = np.arange(n)[None, :] < n_tables[:, None]
    weights = np.where(occupied, (sizes - spec.discount) / (n + alphas[:, None]), 0.0)
    new_table = (alphas + n_tables * spec.discount) / (n + alphas)
    h = spec.prior
    rng = np.random.default_rng(0)
    mu0 = rng.normal(h["mu_loc"], h["mu_scale"], size=(500, d))
    sg0 = np.exp(rng.normal(h["sigma_loc"], h["sigma_scale"], size=(500, d)))
    prior_pred = normal_mixture_density(np.full((1, 500), 1.0 / 500),
                                        np.ascontiguousarray(mu0[None][..., cols]),
                                        np.ascontiguousarray(sg0[None][..., cols]), pts)
    return normal_mixture_density(weights, mu, sg, pts) + new_table.sum() * prior_pred


def summarize(dt: xr.DataTree, m: pm.Model | None = None, *, loss: str = "binder",
              max_coclustering: int = 2000, cluster_params: bool = False,
              predictive: bool | None = None, dims=(0, 1), grid_size: int = 80,
              max_draws: int = 200, coclustering_items=None) -> xr.DataTree:
    """Add the label-invariant outputs of a DP mixture fit to ``dt`` (a new DataTree).

    Groups added:

    - ``clustering``: ``coclustering`` (``obs``, ``obs_``) posterior similarity matrix (when
      n <= ``max_coclustering``; else ``coclustering_subset`` (``item``, ``item_``) for the
      indices ``coclustering_items`` if given), ``point_estimate`` (obs) minimising the expected
      ``loss`` ("binder" or "vi"), its ``expected_loss``, and ``n_clusters_pmf``, the
      posterior of the number of clusters;
    - ``cluster_parameters`` (``cluster_params=True``, conjugate likelihoods): posterior
      means for the point-estimate partition (:func:`cluster_parameters`);
    - ``predictive``: :func:`predictive_density` on a grid over columns ``dims`` (default:
      on for Gaussian-type likelihoods).

    ``m`` (the model from :func:`model`) is needed for the last two; the first works for
    any posterior with labels ``z`` (for stick-breaking fits, the drawn assignments).
    """
    if not isinstance(dt, xr.DataTree) or "posterior" not in dt.children:
        raise TypeError("dt must be an xarray.DataTree with a 'posterior' group")
    spec = get_spec(m) if m is not None else None
    if m is not None and spec is None:
        raise ValueError("m must be a model built by pp_models.dpm.model")
    Z = _posterior_z(dt)
    n = Z.shape[1]
    out = dt.copy()
    ds = {}
    P = None
    if n <= max_coclustering:
        P = partitions.coclustering(Z)
        ds["coclustering"] = (("obs", "obs_"), P)
    elif coclustering_items is not None:  # n x n too big: the items asked for
        ds["coclustering_subset"] = (("item", "item_"),
                                     partitions.coclustering(Z, coclustering_items))
    # linear in n (contingency tables between draws, never the n x n matrix)
    z_hat, expected = partitions.greedy_point_estimate(Z, loss=loss)
    ds["point_estimate"] = (("obs",), z_hat)
    ks = partitions.n_blocks(Z)
    values, counts = np.unique(ks, return_counts=True)
    clustering = xr.Dataset(ds, coords={"obs": np.arange(n), "obs_": np.arange(n)})
    if "coclustering_subset" in ds:
        items = np.asarray(coclustering_items)
        clustering = clustering.assign_coords(item=items, item_=items)
    clustering["n_clusters_pmf"] = xr.DataArray(counts / counts.sum(), dims=("n_clusters",),
                                                coords={"n_clusters": values})
    clustering.attrs.update(loss=loss, expected_loss=expected, draws=int(Z.shape[0]))
    out["clustering"] = xr.DataTree(clustering)
    if cluster_params:
        if spec is None:
            raise ValueError("cluster_params=True needs the model m")
        out["cluster_parameters"] = xr.DataTree(cluster_parameters(
            spec, z_hat, hyperparameters=posterior_mean_hyperparameters(dt, m)))
    if predictive is None:
        predictive = spec is not None and spec.likelihood in ("gaussian", "diag_gaussian",
                                                               "normal")
    if predictive:
        if spec is None:
            raise ValueError("predictive=True needs the model m")
        d = spec.X.shape[1]
        use = tuple(dims)[: min(2, d)] if d > 1 else (0,)
        out["predictive"] = xr.DataTree(
            predictive_density(dt, m, dims=use, grid_size=grid_size, max_draws=max_draws))
    return out


def plot_results(dt: xr.DataTree, path=None):
    """The answer of a DP mixture fit: the posterior co-clustering matrix, rows and
    columns ordered by the point-estimate partition (blocks on the diagonal are its
    clusters, off-diagonal shading is the uncertainty between them), and the posterior
    of the number of clusters. Needs the ``clustering`` group :func:`summarize` adds
    (``fit`` does, with the co-clustering matrix for n <= 2000 points, else for the
    items asked for). Saves a PNG to ``path`` when given; returns the figure.
    ``ppzoo fit dpm`` writes it as ``clustering.png``.
    """
    import matplotlib.pyplot as plt

    if not isinstance(dt, xr.DataTree) or "clustering" not in dt.children:
        raise ValueError("dt has no 'clustering' group: fit with postprocess=True or "
                         "call pp_models.dpm.summarize(dt) first")
    clustering = dt["clustering"].to_dataset()
    fig, (ax_p, ax_k) = plt.subplots(1, 2, figsize=(10.5, 4.6),
                                     gridspec_kw={"width_ratios": [1.25, 1]})
    z_hat = np.asarray(clustering["point_estimate"].values)
    if "coclustering" in clustering:
        P, items = np.asarray(clustering["coclustering"].values), np.arange(z_hat.size)
        what = f"all {z_hat.size} points"
    elif "coclustering_subset" in clustering:
        P = np.asarray(clustering["coclustering_subset"].values)
        items = np.asarray(clustering["item"].values)
        what = f"{items.size} of {z_hat.size} points (the matrix is n x n)"
    else:
        P, items, what = None, None, ""
    if P is not None:
        labels = z_hat[items]
        # clusters largest first (equal sizes by label, so that two clusters of one size
        # stay apart), points in a cluster by how surely they belong to it
        sizes = np.bincount(labels)
        within = np.array([P[i, labels == labels[i]].mean() for i in range(items.size)])
        order = np.lexsort((-within, labels, -sizes[labels]))
        image = ax_p.imshow(P[np.ix_(order, order)], vmin=0, vmax=1, cmap="Blues",
                            interpolation="nearest")
        bounds = np.flatnonzero(np.diff(labels[order])) + 0.5
        for b in bounds:
            ax_p.axhline(b, color="tab:red", lw=0.6)
            ax_p.axvline(b, color="tab:red", lw=0.6)
        fig.colorbar(image, ax=ax_p, fraction=0.046, pad=0.04,
                     label="P(i and j in the same cluster | data)")
        ax_p.set_title(f"Co-clustering, {what}\nordered by the point estimate "
                       f"({sizes[sizes > 0].size} clusters, red lines)", fontsize=9)
        ax_p.set_xlabel("point (reordered)")
        ax_p.set_ylabel("point (reordered)")
    else:
        ax_p.text(0.5, 0.5, f"n = {z_hat.size} > the co-clustering limit:\n"
                  "pass coclustering_items to summarize", ha="center", va="center")
        ax_p.set_axis_off()
    pmf = clustering["n_clusters_pmf"]
    ks = np.asarray(pmf["n_clusters"].values)
    ax_k.bar(ks, pmf.values, width=0.8, color="tab:blue")
    ax_k.set_xticks(ks)
    ax_k.set_xlabel("number of clusters K")
    ax_k.set_ylabel("posterior probability")
    ax_k.set_title(f"Posterior of K ({int(clustering.attrs.get('draws', 0))} draws)",
                   fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
