"""Bayesian Sets retrieval (Heller 2007 ch. 4; Ghahramani & Heller 2005): score every
item by how well it fits a query set, :func:`scores` and :func:`rank`.

The score of an item x given the query Q = {x_1..x_N} is the Bayes factor (Eq. 4.1-4.2)

    score(x) = p(x | Q) / p(x) = p(x, Q) / (p(x) p(Q)),

the evidence that x and Q share one parameter vector theta over the evidence that they
have their own (Fig. 4.1). Under independent Bernoulli features with Beta(alpha_j,
beta_j) priors it is log-linear in the binary row (Eqs. 4.11-4.14):

    log score(x) = c + sum_j q_j x_j,
    q_j = log(alpha~_j / alpha_j) - log(beta~_j / beta_j),
    c   = sum_j log(alpha_j + beta_j) - log(alpha_j + beta_j + N) + log(beta~_j / beta_j),

with alpha~_j = alpha_j + s_j, beta~_j = beta_j + N - s_j and s_j the query items with
feature j. So one matrix-vector product scores every item (Eq. 4.15): O(nnz(X)) for a
``scipy.sparse`` X, which is never densified.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pp_models.bayesian_sets.prior import BetaPrior, resolve_prior
from pp_models.validation import (
    as_binary_matrix,
    check_int,
    check_positive,
    check_row_indices,
)

__all__ = ["QueryWeights", "Ranking", "check_inputs", "query_weights", "rank", "scores"]


@dataclass(frozen=True)
class QueryWeights:
    """The query's linear form log score(x) = ``constant`` + x . ``weights`` (Eq. 4.12).

    Attributes
    ----------
    constant : float
        c of Eq. 4.13.
    weights : ndarray (J,)
        q_j of Eq. 4.14 for every column of ``X`` (0 for a column the prior leaves out,
        see :class:`~pp_models.bayesian_sets.BetaPrior`). A feature frequent in the
        query and rare in the data weighs most (§4.5, Eq. 4.17).
    query : ndarray of int64
        The query's row numbers.
    prior : BetaPrior
    """

    constant: float
    weights: np.ndarray
    query: np.ndarray
    prior: BetaPrior

    def top_features(self, k: int = 10) -> np.ndarray:
        """Column numbers of the ``k`` largest weights, largest first."""
        k = check_int(k, "k", minimum=1)
        return np.argsort(-self.weights, kind="stable")[:k]


@dataclass(frozen=True)
class Ranking:
    """The best-scoring items of a Bayesian Sets query (Alg. 4.1's output).

    Attributes
    ----------
    items : ndarray of int64
        Row numbers, best first (ties: the smaller row number first).
    scores : ndarray
        Their log scores log p(x | Q) / p(x).
    query_weights : QueryWeights
        The query's linear form (its weights say which features drove the ranking).
    """

    items: np.ndarray
    scores: np.ndarray
    query_weights: QueryWeights


def check_inputs(X, query, kappa):
    """Validated (X, query, kappa), in the order a user reads the arguments."""
    kappa = check_positive(kappa, "kappa")
    X = as_binary_matrix(X)
    query = check_row_indices(query, "query", X.shape[0])
    return X, query, kappa


def _weights(X, query, prior: BetaPrior) -> QueryWeights:
    rows = X[query]
    s = np.asarray(rows.sum(axis=0), dtype=np.float64).ravel()[prior.informative]
    N = float(query.size)
    a, b = prior.alpha, prior.beta
    # log1p keeps the small ratios s / a and (N - s) / b exact where a, b are large
    log_b_ratio = np.log1p((N - s) / b)
    q = np.zeros(prior.n_features)
    q[prior.informative] = np.log1p(s / a) - log_b_ratio
    c = float(np.sum(np.log(a + b) - np.log(a + b + N) + log_b_ratio))
    return QueryWeights(c, q, query, prior)


def query_weights(X, query, *, kappa=2.0, alpha=None, beta=None) -> QueryWeights:
    """The linear form of a query's log scores (Heller 2007 Eqs. 4.12-4.14).

    Parameters are those of :func:`scores`.

    Returns
    -------
    QueryWeights
    """
    X, query, kappa = check_inputs(X, query, kappa)
    return _weights(X, query, resolve_prior(X, kappa, alpha, beta))


def _apply(X, w: QueryWeights) -> np.ndarray:
    out = X @ w.weights
    return np.asarray(out, dtype=np.float64).ravel() + w.constant


def scores(X, query, *, kappa=2.0, alpha=None, beta=None) -> np.ndarray:
    """Bayesian Sets log scores log p(x | Q) / p(x) of every row of ``X`` (Heller 2007
    Eq. 4.15: one matrix-vector product).

    Parameters
    ----------
    X : (n, J) binary array or scipy.sparse matrix
        Items (rows) by binary features. A sparse matrix is never densified: scoring
        costs O(nnz(X)) plus O(J).
    query : sequence of int
        Row numbers of the query items (at least one, distinct, in ``[0, n)``).
    kappa : float
        Strength of the empirical prior (> 0): alpha_j = kappa m_j, beta_j = kappa
        (1 - m_j), m_j the fraction of all rows with feature j.
    alpha, beta : float or array (J,), optional
        The Beta prior's hyperparameters, both or neither; they replace the empirical
        prior (``kappa`` is then unused).

    Returns
    -------
    ndarray (n,)
        The natural-log score of every row; the query's own rows included.

    Raises
    ------
    ValueError
        ``X`` is not binary, ``query`` is empty, out of range or repeats a row,
        ``kappa`` <= 0, or only one of ``alpha`` and ``beta`` is given.
    """
    X, query, kappa = check_inputs(X, query, kappa)
    return _apply(X, _weights(X, query, resolve_prior(X, kappa, alpha, beta)))


def rank(X, query, *, top=10, exclude_query=False, kappa=2.0, alpha=None,
         beta=None) -> Ranking:
    """The ``top`` rows of ``X`` that best complete the set ``query`` (Heller 2007 Alg.
    4.1).

    Parameters
    ----------
    X, query, kappa, alpha, beta
        As in :func:`scores`.
    top : int
        How many items to return (>= 1; fewer when ``X`` has fewer candidates).
    exclude_query : bool
        Leave the query's own rows out of the ranking (the thesis's tables keep them:
        they usually come first).

    Returns
    -------
    Ranking
    """
    X, query, kappa = check_inputs(X, query, kappa)
    top = check_int(top, "top", minimum=1)
    if not isinstance(exclude_query, bool | np.bool_):
        raise TypeError(f"exclude_query must be True or False, got {exclude_query!r}")
    w = _weights(X, query, resolve_prior(X, kappa, alpha, beta))
    s = _apply(X, w)
    if exclude_query:
        keep = np.ones(X.shape[0], dtype=bool)
        keep[query] = False
        candidates = np.flatnonzero(keep)
    else:
        candidates = np.arange(X.shape[0])
    k = min(top, candidates.size)
    if k == 0:
        return Ranking(np.zeros(0, np.int64), np.zeros(0), w)
    cs = s[candidates]
    # partial selection, then a stable sort of the few (O(n + k log k))
    if k < candidates.size:
        part = np.argpartition(-cs, k - 1)[:k]
        threshold = cs[part].min()
        part = np.flatnonzero(cs >= threshold)  # every tie at the boundary, then cut
    else:
        part = np.arange(candidates.size)
    order = part[np.lexsort((candidates[part], -cs[part]))][:k]
    return Ranking(candidates[order].astype(np.int64), cs[order], w)
