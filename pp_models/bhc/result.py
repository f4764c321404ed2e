"""The result of a BHC estimator (a frozen :class:`BHCResult`) and what it answers: the
tree cut (Heller 2007 Alg. 3.2's output), node weights and the predictive (Eqs. 3.10-3.11),
Corollary 3.1's DPM lower bound, the dendrogram."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.bhc import builders as kernels
from custom_ops.bhc import evidence as ops
from pp_models import trees

__all__ = ["LOG_HEIGHT_LABEL", "NOT_COMPUTABLE", "BHCResult", "evaluate"]


@dataclass(frozen=True, eq=False)
class BHCResult:
    """A BHC tree with its evidence.

    Attributes
    ----------
    X : (n, d) ndarray
    likelihood : str
    alpha : float
    hyper : dict
        The conjugate prior's hyperparameters used (validated arrays / floats).
    merges : (n - 1, 2) int64 ndarray
        Merge ``t`` joins nodes ``merges[t]`` into node ``n + t`` (scipy convention).
    linkage : (n - 1, 4) ndarray
        scipy format: ``[i, j, height, size]`` with height_k = max(height of children)
        - log r_k >= 0 (monotone, so ``scipy.cluster.hierarchy.dendrogram`` works; merges
        the model is sure of add little height, doubtful ones a lot).
    log_evidence : float
        log p(D | T) (Heller 2007 Eq. 3.2 at the root).
    log_rk : (n - 1,) ndarray
        log r_k of each merge (Eq. 3.3), merge order.
    log_d : (2n - 1,) ndarray
        log d_k of every node (Alg. 3.3), leaves first.
    n_scored : int
        Candidate merges whose r_k was evaluated while building the tree.
    method : str
    history : tuple of dict
        Filled by :func:`~pp_models.bhc.learn`: one entry per iteration.
    """

    X: np.ndarray
    likelihood: str
    alpha: float
    hyper: dict
    merges: np.ndarray
    linkage: np.ndarray
    log_evidence: float
    log_rk: np.ndarray
    log_d: np.ndarray
    n_scored: int = 0
    method: str = "greedy"
    history: tuple = field(default_factory=tuple)

    @property
    def n(self):
        return self.X.shape[0]

    def _H(self):
        names = cj.FAMILIES[self.likelihood].hyper_names
        return cj.pack_hyper(self.likelihood, [self.hyper[k] for k in names])

    def cut(self, threshold=0.5):
        """Flat partition: top-down, a node is a cluster when r_k >= ``threshold``
        (Heller 2007 Alg. 3.2 output: cut where r_k < 0.5). Returns labels (n,) in
        0..K-1, numbered by first appearance along the rows."""
        if not (0.0 <= float(threshold) <= 1.0):
            raise ValueError(f"threshold: must lie in [0, 1], got {threshold}")
        n = self.n
        r = np.ones(2 * n - 1)
        r[n:] = np.exp(self.log_rk)
        labels = np.empty(n, dtype=np.int64)
        stack = [2 * n - 2]
        cluster = 0
        while stack:
            k = stack.pop()
            if k < n or r[k] >= threshold:
                for leaf in trees.leaves_under(self.merges, k):
                    labels[leaf] = cluster
                cluster += 1
            else:
                i, j = self.merges[k - n]
                stack.extend((int(j), int(i)))
        _, first = np.unique(labels, return_index=True)
        order = np.argsort(np.argsort(first))
        return order[labels]

    def node_weights(self):
        """ω_k (Heller 2007 Eq. 3.11) of every node (2n - 1,), leaves first; sums to 1."""
        n = self.n
        sizes = trees.node_sizes(self.merges)
        log_r = np.zeros(2 * n - 1)
        log_r[n:] = self.log_rk
        log_1mr = np.full(2 * n - 1, -np.inf)
        log_1mr[n:] = np.log(-np.expm1(self.log_rk))
        log_g = np.zeros(2 * n - 1)
        for t in range(n - 2, -1, -1):
            k = n + t
            for c in self.merges[t]:
                log_g[c] = log_g[k] + log_1mr[k] + math.log(sizes[c] / sizes[k])
        return np.exp(log_g + log_r)

    def predictive_logpdf(self, x_new):
        """log p(x | D) (Heller 2007 Eqs. 3.10-3.11) with the new-cluster term:
        n/(n+α) Σ_k ω_k p(x | D_k) + α/(n+α) p(x). ``x_new``: one row (d,) or rows
        (m, d); returns a float or (m,)."""
        x = np.asarray(x_new, dtype=np.float64)
        single = x.ndim == 1
        x = np.atleast_2d(x)
        if x.shape[1] != self.X.shape[1]:
            raise ValueError(f"x_new: expected {self.X.shape[1]} columns, got {x.shape[1]}")
        cj.check_data(self.likelihood, x, "x_new")
        fam = cj.FAMILY_CODES[self.likelihood]
        H = self._H()
        stats = kernels.node_stats(fam, self.X, self.merges)
        log_w = np.log(self.node_weights())
        keep = np.flatnonzero(np.isfinite(log_w))
        n, a = self.n, self.alpha
        out = kernels.predictive_kernel(
            fam, x, stats[keep], log_w[keep], H, math.log(n / (n + a)), math.log(a / (n + a))
        )
        return float(out[0]) if single else out

    def dpm_lower_bound(self):
        """Heller (2007) Corollary 3.1: log[d_root Γ(α) / Γ(n + α)] + log p(D | T), a lower
        bound on the DP-mixture marginal likelihood log p(D)."""
        n, a = self.n, self.alpha
        # log Γ(α)/Γ(n + α) without cancelling two lgammas ~α log α (as in
        # custom_ops.bhc.evidence.bhc_dpm_lower_bound)
        log_gamma_ratio = -np.sum(np.log(a + np.arange(n)))
        return float(self.log_d[-1] + log_gamma_ratio + self.log_evidence)

    def plot(self, ax=None, threshold=0.5, heights="log", **dendrogram_kwargs):
        """Dendrogram coloured by r_k: merges with r_k < ``threshold`` (where the tree is
        cut) in red, the others in blue. Returns the matplotlib axes.

        ``heights="log"`` (default) draws :func:`readable_linkage`'s log-scaled heights,
        so the few very doubtful top merges (-log r_k in the hundreds) do not squash the
        rest of the tree flat; ``heights="evidence"`` draws :attr:`linkage` as it is
        (height = max(children) - log r_k).
        """
        import matplotlib.pyplot as plt
        from scipy.cluster.hierarchy import dendrogram

        if heights not in ("log", "evidence"):
            raise ValueError(f"heights: 'log' or 'evidence', got {heights!r}")
        if ax is None:
            _, ax = plt.subplots(figsize=(10, 4))
        n = self.n
        r = np.exp(self.log_rk)

        def color(k):
            return "tab:red" if k >= n and r[k - n] < threshold else "tab:blue"

        dendrogram_kwargs.setdefault("no_labels", n > 60)
        Z = self.linkage if heights == "evidence" else readable_linkage(self.merges,
                                                                       self.log_rk)
        dendrogram(Z, ax=ax, link_color_func=color, **dendrogram_kwargs)
        ax.set_ylabel("merge height (-log r_k added at each merge)" if heights == "evidence"
                      else LOG_HEIGHT_LABEL)
        ax.set_title(f"BHC ({self.likelihood}), log p(D|T) = {self.log_evidence:.1f}")
        return ax


#: y-axis label of the log-scaled dendrograms (:func:`readable_linkage`): what the
#: height means, not its formula.
LOG_HEIGHT_LABEL = "merge height\n(a taller step: a merge the model doubts more)"


def readable_linkage(merges: np.ndarray, log_rk: np.ndarray) -> np.ndarray:
    """scipy linkage of a BHC tree with readable heights: a merge's height is its taller
    child's plus 0.2 + log(1 - log r_k). Monotone like BHC's own height
    max(children) - log r_k, so the drawing keeps its order, but on a log scale: the
    few very doubtful top merges (-log r_k in the hundreds) do not squash the rest
    of the tree flat, and confident merges (r_k near 1) keep a visible step."""
    merges = np.asarray(merges)
    n = merges.shape[0] + 1
    height = np.zeros(2 * n - 1)
    size = np.ones(2 * n - 1)
    Z = np.empty((n - 1, 4))
    for t, (i, j) in enumerate(merges):
        k = n + t
        height[k] = max(height[i], height[j]) + 0.2 + np.log1p(max(-float(log_rk[t]), 0.0))
        size[k] = size[i] + size[j]
        Z[t] = (i, j, height[k], size[k])
    return Z


#: Why an estimator cannot score a tree: the conjugate posterior of some cluster is not
#: numerically valid (its marginal is NaN, or a filter's block state could not be made).
NOT_COMPUTABLE = (
    "hyper: the evidence cannot be computed at these hyperparameter values: the conjugate "
    "posterior of some cluster is not numerically valid (gaussian: its scale matrix is not "
    "positive definite, e.g. kappa0 or S0 extreme for the data); use less extreme values, "
    "or standardise X"
)


def evaluate(X, likelihood, alpha, hyper_tuple, hyper_dict, merges, method, n_scored):
    """The :class:`BHCResult` of the tree ``merges`` built by ``method``; ``ValueError``
    if the evidence is NaN (a NaN marginal at any node reaches the root), so that a tree
    built on NaN scores is not returned."""
    fam = cj.FAMILY_CODES[likelihood]
    H = cj.pack_hyper(likelihood, hyper_tuple)
    n = X.shape[0]
    log_p, log_r, _q, log_d, _ml, _s = ops.tree_forward(
        fam, cj.point_stats(fam, X), merges, alpha, H
    )
    if np.isnan(log_p[-1]):
        raise ValueError(NOT_COMPUTABLE)
    height = np.zeros(2 * n - 1)
    sizes = trees.node_sizes(merges)
    Z = np.empty((n - 1, 4))
    for t, (i, j) in enumerate(merges):
        k = n + t
        height[k] = max(height[i], height[j]) - log_r[k]
        Z[t] = (i, j, height[k], sizes[k])
    return BHCResult(
        X=X,
        likelihood=likelihood,
        alpha=alpha,
        hyper=hyper_dict,
        merges=merges,
        linkage=Z,
        log_evidence=float(log_p[-1]),
        log_rk=log_r[n:].copy(),
        log_d=log_d,
        n_scored=int(n_scored),
        method=method,
    )
