"""MAP forests under decomposable scores (Murphy 2012 §26.3.3).

The maximum-likelihood score never leaves an edge out; a marginal-likelihood (BDeu) or
BIC score can. With a decomposable score, ``log p(D | T) = sum_t w_{pa(t), t} +
sum_t score(t | none)`` (Murphy Eq. 26.14) with edge weights ``w_st = score(t | s) -
score(t | none)``; BDeu is likelihood-equivalent (Eq. 26.15), so ``W`` is symmetric and
the best forest is Kruskal's / Prim's maximum-weight forest of the positive edges
(Edwards et al. 2010).
"""

from __future__ import annotations

import numpy as np

from custom_ops.conjugate import dirichlet_categorical_log_marginal
from custom_ops.trees.spanning import (
    pairwise_bdeu_gain,
    pairwise_mutual_information,
    tree_edge_tables,
)
from pp_models.mixture_of_trees.chow_liu import (
    _AXES,
    TreeModel,
    _weighted_moments,
    as_discrete_data,
    discrete_statistics,
    discrete_tree_from_tables,
    gaussian_mutual_information,
    topological_order,
    tree_precision,
)
from pp_models.trees import maximum_spanning_tree, spanning_tree_edges
from pp_models.validation import as_data_matrix, check_feature_names, check_positive

__all__ = ["forest_log_marginal", "map_forest"]

_SCORES = ("bdeu", "bic")


def map_forest(X, *, score: str = "bdeu", ess: float = 1.0, kind: str = "discrete",
               n_categories=None, feature_names=None) -> TreeModel:
    """The maximum-score forest: drop negative-weight edges, then a maximum-weight forest.

    Parameters
    ----------
    X : array (n, V)
        Discrete codes (``kind="discrete"``) or real values (``kind="gaussian"``, BIC only).
    score : {"bdeu", "bic"}
        ``"bdeu"``: Dirichlet marginal likelihood with ``alpha_tck = ess / (K_t C_t)``
        (Murphy Eqs. 26.28-26.30). ``"bic"``: edge weight ``N I_st - (K_s - 1)(K_t - 1)
        log(N) / 2`` (discrete) or ``-N/2 log(1 - rho^2) - log(N) / 2`` (Gaussian).
    ess : float
        BDeu equivalent sample size ``alpha > 0``.

    Returns
    -------
    TreeModel
        ``parents`` has ``-1`` at the root of every tree of the forest (the smallest node
        of each); ``edge_weights`` the score gains; ``log_score`` the forest's score
        (``log p(D | G)`` for BDeu); CPTs are posterior means (BDeu) or ML (BIC).
    """
    if score not in _SCORES:
        raise ValueError(f"score must be one of {_SCORES}, got {score!r}")
    ess = check_positive(ess, "ess")
    if kind not in ("discrete", "gaussian"):
        raise ValueError(f"kind must be 'discrete' or 'gaussian', got {kind!r}")
    if kind == "gaussian" and score != "bic":
        raise ValueError("kind='gaussian' supports score='bic' only")
    if kind == "gaussian":
        data = as_data_matrix(X, "X", axes=_AXES)
        names = check_feature_names(feature_names, data.shape[1])
        return _gaussian_bic_forest(data, None if names is None else tuple(names))
    codes, K = as_discrete_data(X, n_categories=n_categories)
    n, V = codes.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns), got {V}")
    names = check_feature_names(feature_names, V)
    names = None if names is None else tuple(names)
    joint, marginal, offsets, total = discrete_statistics(codes, K)
    if score == "bdeu":
        gains = pairwise_bdeu_gain(joint, marginal, offsets, K, float(ess))
        alone = sum(dirichlet_categorical_log_marginal(marginal[v, : K[v]], ess / K[v])
                    for v in range(V))
        prior = float(ess)
    else:
        mi = pairwise_mutual_information(joint, marginal, offsets, K, total, 0.0)
        gains = total * mi - 0.5 * np.outer(K - 1, K - 1) * np.log(total)
        np.fill_diagonal(gains, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = marginal / total
            entropy = -np.sum(np.where(p > 0, p * np.log(p), 0.0), axis=1)
        alone = float(np.sum(-total * entropy - 0.5 * (K - 1) * np.log(total)))
        prior = 0.0
    parents = maximum_spanning_tree(gains, drop_nonpositive=True)
    edges = spanning_tree_edges(parents)
    log_score = float(alone + sum(gains[u, v] for u, v in edges))
    tables = tree_edge_tables(joint, marginal, offsets, K, parents)
    return discrete_tree_from_tables(tables, K, prior, parents, root=0, weights_matrix=gains,
                                     total=float(n), names=names, log_score=log_score)


def _gaussian_bic_forest(data, names):
    n, V = data.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns), got {V}")
    mean, cov = _weighted_moments(data, None, 0.0)
    gains = n * gaussian_mutual_information(cov) - 0.5 * np.log(n)
    np.fill_diagonal(gains, 0.0)
    parents = maximum_spanning_tree(gains, drop_nonpositive=True)
    edges = spanning_tree_edges(parents)
    omega = tree_precision(cov, edges)
    tree = TreeModel(kind="gaussian", parents=parents, root=0, edges=edges,
                     edge_weights=gains, order=topological_order(parents), mean=mean,
                     precision=omega, n_observations=float(n), feature_names=names)
    ll = float(tree.logpdf(data).sum())
    # free parameters: V means, V variances, one covariance per edge
    penalty = 0.5 * (2 * V + len(edges)) * np.log(n)
    object.__setattr__(tree, "log_likelihood", ll)
    object.__setattr__(tree, "log_score", ll - penalty)
    return tree


def forest_log_marginal(X, parents, *, ess: float = 1.0, n_categories=None) -> float:
    """BDeu ``log p(D | G)`` of a given forest, by direct counting (Murphy Eq. 26.28)."""
    codes, K = as_discrete_data(X, n_categories=n_categories)
    parents = np.asarray(parents, dtype=np.int64)
    if parents.shape != (codes.shape[1],):
        raise ValueError(f"parents must have shape ({codes.shape[1]},), got {parents.shape}")
    total = 0.0
    for t, p in enumerate(parents):
        Kt = int(K[t])
        if p < 0:
            counts = np.bincount(codes[:, t], minlength=Kt).astype(np.float64)
            total += dirichlet_categorical_log_marginal(counts, ess / Kt)
            continue
        Kp = int(K[p])
        table = np.zeros((Kp, Kt))
        np.add.at(table, (codes[:, p], codes[:, t]), 1.0)
        for row in table:
            total += dirichlet_categorical_log_marginal(row, ess / (Kp * Kt))
    return float(total)
