"""Chow-Liu trees: the maximum-likelihood tree-structured distribution (Murphy 2012 §26.3.2).

For discrete data the log likelihood of a tree at its MLE is, per observation,
``sum_t -H(x_t) + sum_{(s,t) in T} I(x_s; x_t)`` (Murphy Eqs. 26.10-26.12), so the ML tree
is the maximum-weight spanning tree of the pairwise empirical mutual informations. For
Gaussian data ``I = -1/2 log(1 - rho^2)`` and the ML tree-GGM's precision has the closed
form of a decomposable graph (Lauritzen 1996, Prop. 5.9; spec §c.2)::

    Omega = sum_{(s,t) in T} [S_{st}^{-1}]^0 - sum_v (deg v - 1) [1 / S_vv]^0.

Weighted data (EM's responsibilities) and Dirichlet smoothing are supported; mutual
informations come from count matrices (one product ``Z^T diag(w) Z`` of one-hot
indicators) and the tree from Prim's algorithm (Numba).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from custom_ops.trees.spanning import (
    pairwise_mutual_information,
    tree_edge_tables,
    tree_log_density_rows,
)
from pp_models.tree_pictures import plot_spanning_tree
from pp_models.trees import maximum_spanning_tree, spanning_tree_edges
from pp_models.validation import (
    as_data_matrix,
    as_whole_numbers,
    check_feature_names,
    check_int,
    check_real,
    rng_from_seed,
)

__all__ = ["TreeModel", "as_discrete_data", "chow_liu", "discrete_statistics"]

_KINDS = ("discrete", "gaussian")
# what the rows and columns of a data matrix are, for as_data_matrix's messages
_AXES = "n_observations, n_variables"


@dataclass(frozen=True)
class TreeModel:
    """A tree-structured distribution over V variables.

    Attributes
    ----------
    kind : {"discrete", "gaussian"}
    parents : int64 (V,)
        Parent of each node in the tree directed away from ``root`` (``-1`` at roots; a
        forest from :func:`~pp_models.mixture_of_trees.map_forest` has several).
    root : int
    edges : int64 (E, 2)
        Undirected edges ``u < v``, sorted.
    edge_weights : float64 (V, V)
        The weights the spanning tree maximised (mutual information in nats for
        ``chow_liu``; score gains for ``map_forest``).
    order : int64 (V,)
        Nodes in topological order (every parent before its children).
    n_categories : int64 (V,) or None
        Categories of each discrete variable.
    log_cpt : float64 (V, K, K) or None
        ``log_cpt[v, j, k] = log p(x_v = k | x_parent = j)``; a root's distribution is in
        row ``j = 0``.
    mean, precision : float64 (V,), (V, V) or None
        The Gaussian tree's parameters.
    log_likelihood : float
        Weighted log likelihood of the data it was fitted to.
    n_observations : float
        Total weight of that data.
    log_score : float
        The structure score a MAP forest maximised (``log p(D | G)`` for BDeu, the BIC
        for BIC); NaN for Chow-Liu.
    """

    kind: str
    parents: np.ndarray
    root: int
    edges: np.ndarray
    edge_weights: np.ndarray
    order: np.ndarray
    n_categories: np.ndarray | None = None
    log_cpt: np.ndarray | None = None
    mean: np.ndarray | None = None
    precision: np.ndarray | None = None
    log_likelihood: float = float("nan")
    n_observations: float = 0.0
    log_score: float = float("nan")
    feature_names: tuple[str, ...] | None = field(default=None)

    @property
    def n_nodes(self) -> int:
        return int(self.parents.size)

    def logpdf(self, X) -> np.ndarray:
        """log p(x) of every row of ``X`` (n, V) under the tree (Murphy Eq. 26.1)."""
        if self.kind == "discrete":
            X = as_discrete_data(X, n_categories=self.n_categories, min_rows=1)[0]
            return tree_log_density(X, self.parents, self.log_cpt)
        X = as_data_matrix(X, "X", min_rows=1, axes=_AXES)
        if X.shape[1] != self.n_nodes:
            raise ValueError(f"X has {X.shape[1]} columns, the tree has {self.n_nodes} nodes")
        R = X - self.mean
        _sign, logdet = np.linalg.slogdet(self.precision)
        quad = np.einsum("ij,jk,ik->i", R, self.precision, R)
        return 0.5 * (logdet - self.n_nodes * np.log(2 * np.pi) - quad)

    def sample(self, n: int, random_seed=None) -> np.ndarray:
        """``n`` independent draws (ancestral sampling for discrete trees)."""
        n = check_int(n, "n", minimum=0)
        rng = rng_from_seed(random_seed)
        if self.kind == "gaussian":
            chol = np.linalg.cholesky(self.precision)
            z = rng.standard_normal((n, self.n_nodes))
            return self.mean + np.linalg.solve(chol.T, z.T).T
        out = np.zeros((n, self.n_nodes), dtype=np.int64)
        u = rng.random((n, self.n_nodes))
        for v in self.order:
            p = self.parents[v]
            rows = np.zeros(n, dtype=np.int64) if p < 0 else out[:, p]
            cdf = np.cumsum(np.exp(self.log_cpt[v, rows, : self.n_categories[v]]), axis=1)
            out[:, v] = np.minimum((u[:, v, None] * cdf[:, -1:] > cdf).sum(axis=1),
                                   self.n_categories[v] - 1)
        return out

    def plot(self, ax=None, *, labels=None, title=None):
        """Draw the tree, line widths proportional to the edge weights."""
        if labels is None:
            labels = self.feature_names
        return plot_spanning_tree(self.parents, labels=labels, edge_values=self.edge_weights,
                                  ax=ax, title=title)


# ---------------------------------------------------------------------------------------
# Data
# ---------------------------------------------------------------------------------------


def as_discrete_data(X, *, n_categories=None, name: str = "X", min_rows: int = 1):
    """Validate discrete data: (n, V) integer codes >= 0 (whole-number floats accepted).

    Returns ``(codes int64 (n, V), n_categories int64 (V,))``; ``n_categories`` defaults to
    ``max + 1`` per column (at least 2, so a constant column is a binary variable that
    never showed its other value).
    """
    if hasattr(X, "to_numpy"):
        X = X.to_numpy()
    arr = np.asarray(X)
    if arr.dtype == bool:
        arr = arr.astype(np.int64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D (n_observations, n_variables), got shape "
                         f"{arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {arr.shape[0]}")
    codes = as_whole_numbers(arr, name, "category codes")
    observed = codes.max(axis=0) + 1 if codes.shape[0] else np.ones(codes.shape[1], np.int64)
    if n_categories is None:
        K = np.maximum(observed, 2).astype(np.int64)
    else:
        K = np.asarray(n_categories)
        if K.ndim != 0 and K.shape != (codes.shape[1],):
            raise ValueError(f"n_categories must be one integer or one per column "
                             f"({codes.shape[1]}), got shape {K.shape}")
        K = np.broadcast_to(K, (codes.shape[1],))
        if not np.issubdtype(K.dtype, np.integer) or np.any(K < 1):
            raise ValueError("n_categories must be positive integers (one per column)")
        K = K.astype(np.int64)
        bad = np.flatnonzero(observed > K)
        if bad.size:
            raise ValueError(f"{name}: column {bad[0]} has code {observed[bad[0]] - 1} >= "
                             f"n_categories = {K[bad[0]]}")
    return np.ascontiguousarray(codes), K


def _check_weights(weights, n):
    if weights is None:
        return None
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must have shape ({n},), got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be finite and >= 0")
    if w.sum() <= 0:
        raise ValueError("weights must not all be zero")
    return w


def one_hot_reduced(codes, n_categories):
    """Indicators of every variable's categories but the last, float64 (n, sum(K - 1)),
    and each variable's first column."""
    V = codes.shape[1]
    K = n_categories
    offsets = np.zeros(V, dtype=np.int64)
    np.cumsum(K[:-1] - 1, out=offsets[1:])
    col_var = np.repeat(np.arange(V), K - 1)
    col_cat = np.arange(col_var.size) - offsets[col_var]
    return (codes[:, col_var] == col_cat).astype(np.float64), offsets


def discrete_statistics(codes, n_categories, weights=None, one_hot=None, joint=None):
    """Weighted sufficient statistics of discrete data for every pair at once.

    Returns ``(joint, marginal, offsets, total)``: ``joint = Z^T diag(w) Z`` for the
    one-hot matrix ``Z`` of every variable's categories but the last (binary data: just
    ``X^T X`` up to recoding), ``marginal[v, k]`` the weighted category counts.
    ``one_hot`` may pass a precomputed :func:`one_hot_reduced` (EM reuses it), ``joint``
    a precomputed ``Z^T diag(w) Z`` (EM computes all components' in one product).
    """
    V = codes.shape[1]
    K = n_categories
    k_max = int(K.max())
    Z, offsets = one_hot_reduced(codes, K) if one_hot is None else one_hot
    if joint is not None:
        pass
    elif weights is None and codes.shape[0] < 2**24:
        # whole counts below 2^24 are exact in float32: half the memory traffic
        Z32 = Z.astype(np.float32)
        joint = (Z32.T @ Z32).astype(np.float64)
    else:
        joint = Z.T @ Z if weights is None else (Z * weights[:, None]).T @ Z
    total = float(codes.shape[0] if weights is None else weights.sum())
    # one-hot columns square to themselves: the diagonal holds the category counts
    diag = np.diag(joint)
    marginal = np.zeros((V, k_max))
    col_var = np.repeat(np.arange(V), K - 1)
    marginal[col_var, np.arange(col_var.size) - offsets[col_var]] = diag
    marginal[np.arange(V), K - 1] = total - np.bincount(col_var, weights=diag, minlength=V)
    return joint, marginal, offsets, total


def _check_prior(prior, kind):
    if prior is None:
        return 0.0
    what = "Dirichlet pseudo-count" if kind == "discrete" else "covariance ridge"
    return check_real(prior, f"prior (a {what})", minimum=0.0)


# ---------------------------------------------------------------------------------------
# Estimator
# ---------------------------------------------------------------------------------------


def chow_liu(X, *, kind: str = "discrete", weights=None, prior=None, n_categories=None,
             root: int = 0, feature_names=None) -> TreeModel:
    """The maximum-likelihood tree (Chow & Liu 1968; Murphy 2012 §26.3.2, Eqs. 26.9-26.12).

    Parameters
    ----------
    X : array (n, V)
        Discrete category codes (``kind="discrete"``) or real values (``"gaussian"``);
        ``V >= 2``.
    kind : {"discrete", "gaussian"}
    weights : array (n,), optional
        Non-negative observation weights (EM's responsibilities); counts become sums of
        weights.
    prior : float, optional
        Discrete: a Dirichlet pseudo-count spread uniformly over every pairwise table
        (``prior / (K_u K_v)`` per cell, ``prior / K_v`` per marginal cell: BDeu-style, so
        the smoothed tables are consistent). Gaussian: a ridge added to the diagonal of
        the covariance (needed when a column is constant). Default none (pure ML).
    n_categories : int or array (V,), optional
        Categories per discrete variable (default ``max + 1``, at least 2).
    root : int
        Root of the directed form (the choice does not change the distribution,
        Murphy Eqs. 26.2-26.8).
    feature_names : sequence of str, optional

    Returns
    -------
    TreeModel

    Notes
    -----
    A constant discrete column has zero mutual information with everything: it joins
    the tree by a zero-weight edge, its conditional table puts probability one on its
    observed value (with ``prior=None``); a parent value never observed gets a uniform
    conditional row.
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    prior = _check_prior(prior, kind)
    if kind == "discrete":
        codes, K = as_discrete_data(X, n_categories=n_categories)
        n, V = codes.shape
    else:
        data = as_data_matrix(X, "X", min_rows=1, axes=_AXES)
        n, V = data.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns) for a tree, got {V}")
    root = check_int(root, "root (a node index)", minimum=0, maximum=V - 1)
    w = _check_weights(weights, n)
    names = check_feature_names(feature_names, V)
    names = None if names is None else tuple(names)
    if kind == "discrete":
        return fit_discrete_tree(codes, K, w, prior, root=root, names=names)
    return fit_gaussian_tree(data, w, prior, root=root, names=names)


def fit_discrete_tree(codes, K, weights, prior, *, root=0, names=None, one_hot=None,
                      joint=None):
    """Chow-Liu on validated codes (the work of :func:`chow_liu`, reused by EM)."""
    joint, marginal, offsets, total = discrete_statistics(codes, K, weights, one_hot, joint)
    mi = pairwise_mutual_information(joint, marginal, offsets, K, total, prior)
    parents = _reroot(maximum_spanning_tree(mi), root)
    tables = tree_edge_tables(joint, marginal, offsets, K, parents)
    return discrete_tree_from_tables(tables, K, prior, parents, root=root, weights_matrix=mi,
                                     total=total, names=names)


def log_cpt_from_tables(tables, K, prior, parents):
    """``log p(x_v = k | x_parent = j)`` from (weighted) edge tables smoothed by ``prior``
    spread over the cells (a parent value never seen gets a uniform row)."""
    V = parents.size
    k_max = tables.shape[1]
    log_cpt = np.full((V, k_max, k_max), -np.inf)
    for v in range(V):
        Kv = int(K[v])
        Kp = 1 if parents[v] < 0 else int(K[parents[v]])
        counts = tables[v, :Kp, :Kv] + prior / (Kp * Kv)
        totals = counts.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            rows = np.where(totals > 0, np.log(counts) - np.log(totals), -np.log(Kv))
        log_cpt[v, :Kp, :Kv] = rows
    return log_cpt


def discrete_tree_from_tables(tables, K, prior, parents, *, root, weights_matrix, total, names,
                              log_score=float("nan")):
    """The discrete :class:`TreeModel` with edges ``parents`` whose CPTs are estimated
    from the edge count tables ``tables`` (:func:`log_cpt_from_tables`, Dirichlet
    pseudo-count ``prior``; ``K`` categories per variable): its ``root``, the edge
    weights it was chosen by ``weights_matrix`` (V, V), the total weight of the
    observations ``total``, the feature ``names`` and the score ``log_score`` of the
    structure search (NaN: none), with the log likelihood at the estimated CPTs."""
    log_cpt = log_cpt_from_tables(tables, K, prior, parents)
    with np.errstate(invalid="ignore"):
        ll = float(np.sum(np.where(tables > 0, tables * log_cpt, 0.0)))
    return TreeModel(
        kind="discrete", parents=parents, root=int(root), edges=spanning_tree_edges(parents),
        edge_weights=weights_matrix, order=topological_order(parents), n_categories=K,
        log_cpt=log_cpt, log_likelihood=ll, n_observations=total, log_score=log_score,
        feature_names=names)


def fit_gaussian_tree(data, weights, ridge, *, root=0, names=None):
    """Chow-Liu on validated real data (reused by EM)."""
    mean, cov = _weighted_moments(data, weights, ridge)
    mi = gaussian_mutual_information(cov)
    parents = _reroot(maximum_spanning_tree(mi), root)
    return _gaussian_tree(data, weights, mean, cov, parents, root, mi, names)


def _reroot(parents, root):
    from custom_ops.trees.spanning import reroot

    return reroot(parents, root) if root != 0 else parents


def topological_order(parents) -> np.ndarray:
    """Nodes of a forest ordered so every parent precedes its children (BFS from roots)."""
    parents = np.asarray(parents)
    children = [[] for _ in range(parents.size)]
    for v, p in enumerate(parents):
        if p >= 0:
            children[p].append(v)
    order = list(np.flatnonzero(parents < 0))
    i = 0
    while i < len(order):
        order.extend(children[order[i]])
        i += 1
    return np.asarray(order, dtype=np.int64)


def tree_log_density(codes, parents, log_cpt):
    """log p(x_i) = sum_v log p(x_iv | x_i,parent(v)) for every row (Murphy Eq. 26.1)."""
    return tree_log_density_rows(codes, np.asarray(parents, dtype=np.int64), log_cpt)


def _weighted_moments(data, w, ridge):
    if w is None:
        mean = data.mean(axis=0)
        R = data - mean
        cov = R.T @ R / data.shape[0]
    else:
        mean = w @ data / w.sum()
        R = data - mean
        cov = (R * w[:, None]).T @ R / w.sum()
    cov = 0.5 * (cov + cov.T)
    if ridge:
        cov = cov + ridge * np.eye(cov.shape[0])
    return mean, cov


def gaussian_mutual_information(cov) -> np.ndarray:
    """``-1/2 log(1 - rho^2)`` for every pair (zero for a constant variable)."""
    sd = np.sqrt(np.diag(cov))
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = np.where(np.outer(sd, sd) > 0, cov / np.outer(sd, sd), 0.0)
    r2 = np.clip(rho**2, 0.0, 1.0 - 1e-15)
    mi = -0.5 * np.log1p(-r2)
    np.fill_diagonal(mi, 0.0)
    return mi


def tree_precision(cov, edges) -> np.ndarray:
    """Closed-form ML precision of a Gaussian tree (or forest) given the covariance S:
    ``sum_edges [S_st^{-1}]^0 - sum_v (deg v - 1) [1/S_vv]^0`` (Lauritzen 1996 Prop 5.9)."""
    diag = np.diag(cov)
    if np.any(diag <= 0):
        bad = int(np.flatnonzero(diag <= 0)[0])
        raise ValueError(f"X: column {bad} is constant; a Gaussian tree needs positive "
                         "variances (pass prior > 0 to add a ridge)")
    omega = np.diag(1.0 / diag)
    for u, v in edges:
        block = cov[np.ix_([u, v], [u, v])]
        det = block[0, 0] * block[1, 1] - block[0, 1] ** 2
        if det <= 0:
            raise ValueError(f"X: columns {u} and {v} are perfectly correlated; pass prior > 0")
        inv = np.array([[block[1, 1], -block[0, 1]], [-block[0, 1], block[0, 0]]]) / det
        omega[np.ix_([u, v], [u, v])] += inv
        omega[u, u] -= 1.0 / diag[u]
        omega[v, v] -= 1.0 / diag[v]
    return omega


def _gaussian_tree(data, w, mean, cov, parents, root, mi, names):
    edges = spanning_tree_edges(parents)
    omega = tree_precision(cov, edges)
    tree = TreeModel(kind="gaussian", parents=parents, root=int(root), edges=edges,
                     edge_weights=mi, order=topological_order(parents), mean=mean,
                     precision=omega, n_observations=float(data.shape[0] if w is None
                                                            else w.sum()),
                     feature_names=names)
    ll = tree.logpdf(data)
    total = float(ll.sum() if w is None else w @ ll)
    object.__setattr__(tree, "log_likelihood", total)
    return tree
