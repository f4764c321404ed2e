"""What ``fit`` adds to a BHC hyperparameter fit, and the picture ``ppzoo fit bhc`` draws.

The PyMC model (:func:`pp_models.bhc.model`) samples the DP concentration and the prior's
hyperparameters for a fixed tree; the answer a user wants is the tree itself and where it
is cut. :class:`TreeAtPosteriorMedian` (the model's ``postprocess``) re-scores the fixed
tree at the posterior median of the sampled hyperparameters (Heller 2007, Alg. 3.1's
r_k) and stores it in a ``bhc_tree`` group; :func:`plot_results` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from custom_ops import conjugate as cj
from pp_models.bhc.defaults import resolve_hyper
from pp_models.bhc.result import LOG_HEIGHT_LABEL, BHCResult, evaluate, readable_linkage

__all__ = ["TREE_GROUP", "TreeAtPosteriorMedian", "plot_results"]

#: The DataTree group holding the re-scored tree.
TREE_GROUP = "bhc_tree"


@dataclass(frozen=True, eq=False)
class TreeAtPosteriorMedian:
    """``fit``'s post-fit hook for a BHC model: the model's fixed tree scored at the
    posterior median of the free hyperparameters (fixed ones keep their values)."""

    X: np.ndarray
    likelihood: str
    merges: np.ndarray
    alpha: float
    hyper: dict

    def result(self, dt: xr.DataTree) -> BHCResult:
        posterior = dt["posterior"]
        alpha = self.alpha
        if "alpha" in posterior:
            alpha = float(posterior["alpha"].median())
        names = cj.FAMILIES[self.likelihood].hyper_names
        hyper = dict(self.hyper)
        for name in names:
            if name in posterior:
                value = np.asarray(posterior[name].median(("chain", "draw")).values)
                # a scalar prior on a per-dimension hyperparameter is shared by all of them
                shape = np.shape(self.hyper[name])
                hyper[name] = np.broadcast_to(value, shape).copy() if shape else float(value)
        hyper_tuple, hyper_dict = resolve_hyper(self.X, self.likelihood, hyper)
        return evaluate(self.X, self.likelihood, alpha, hyper_tuple, hyper_dict,
                        self.merges, "fixed tree at posterior median", 0)

    def __call__(self, dt: xr.DataTree) -> xr.DataTree:
        tree = self.result(dt)
        cut = tree.cut()
        ds = xr.Dataset(
            {
                "merges": (("merge", "child"), np.asarray(tree.merges, dtype=np.int64)),
                "log_rk": (("merge",), np.asarray(tree.log_rk, dtype=np.float64)),
                "cut": (("point",), np.asarray(cut, dtype=np.int64)),
            },
            coords={"merge": np.arange(tree.merges.shape[0]), "child": [0, 1],
                    "point": np.arange(tree.n)},
        )
        ds.attrs.update(alpha=tree.alpha, log_evidence=tree.log_evidence,
                        n_clusters=int(cut.max() + 1), likelihood=self.likelihood,
                        description="the model's fixed tree scored at the posterior "
                                    "median of the sampled hyperparameters; cut where "
                                    "r_k < 0.5 (Heller 2007, Alg. 3.2)")
        out = dt.copy()
        out[TREE_GROUP] = xr.DataTree(ds)
        return out


def plot_results(dt: xr.DataTree, path=None, *, labels=None):
    """Dendrogram of the BHC tree in ``dt``'s ``bhc_tree`` group, its clusters (the cut
    at r_k < 0.5) in colours, the merges above the cut in grey. Heights: see
    :func:`~pp_models.bhc.result.readable_linkage`. Saves a PNG to ``path`` when given;
    returns the figure. ``ppzoo fit bhc`` writes it as ``tree.png``.
    """
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex
    from scipy.cluster.hierarchy import dendrogram

    if not isinstance(dt, xr.DataTree) or TREE_GROUP not in dt.children:
        raise ValueError(f"dt has no {TREE_GROUP!r} group: fit a pp_models.bhc.model with "
                         "postprocess=True")
    ds = dt[TREE_GROUP].to_dataset()
    merges = np.asarray(ds["merges"].values)
    log_rk = np.asarray(ds["log_rk"].values)
    cut = np.asarray(ds["cut"].values)
    n = cut.size
    Z = readable_linkage(merges, log_rk)
    colours = plt.get_cmap("tab10")
    node_cluster = np.full(2 * n - 1, -1)
    node_cluster[:n] = cut
    for t, (i, j) in enumerate(merges):
        if node_cluster[i] == node_cluster[j]:
            node_cluster[n + t] = node_cluster[i]

    def colour(k):
        c = node_cluster[k]
        return "0.6" if c < 0 else to_hex(colours(c % 10))

    fig, ax = plt.subplots(figsize=(max(7.0, min(0.09 * n, 16.0)), 4.8))
    show_labels = labels is not None and n <= 80
    dendrogram(Z, ax=ax, link_color_func=colour, no_labels=not show_labels,
               labels=list(labels) if show_labels else None, leaf_font_size=7)
    if not show_labels:
        ax.set_xlabel(f"{n} data points (leaves)")
    K = int(cut.max() + 1)
    sizes = np.bincount(cut)
    ax.set_ylabel(LOG_HEIGHT_LABEL)
    ax.set_title(f"BHC tree ({ds.attrs.get('likelihood', '')}), cut at r_k < 0.5: {K} clusters "
                 f"of sizes {', '.join(map(str, sorted(sizes, reverse=True)))}\n"
                 f"alpha = {float(ds.attrs.get('alpha', np.nan)):.3g} (posterior median), "
                 f"log p(D | T) = {float(ds.attrs.get('log_evidence', np.nan)):.1f}; "
                 "grey: merges the model doubts (r_k < 0.5)", fontsize=9)
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, format="png", dpi=110)
        plt.close(fig)
    return fig
