"""The Beta prior of Bayesian Sets (Heller 2007 §4.3-4.4): :func:`beta_prior`.

Each binary feature j has its own Beta(alpha_j, beta_j) prior on the probability
theta_j that an item has it (Eq. 4.8). By default the prior is "vague but centred on
the mean of the data" (§4.3): alpha_j = kappa m_j, beta_j = kappa (1 - m_j), m_j the
fraction of all items (not only the query) that have feature j.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pp_models.validation import as_binary_matrix, check_positive, check_positive_vector

__all__ = ["BetaPrior", "beta_prior", "column_means", "resolve_prior"]


@dataclass(frozen=True)
class BetaPrior:
    """Beta(alpha_j, beta_j) per feature, on the features that carry information.

    Attributes
    ----------
    alpha, beta : ndarray (n_informative,)
        The hyperparameters of the informative features, all > 0.
    informative : ndarray of int64
        Their column numbers in ``X``. With the default empirical prior a feature that
        every item has (m_j = 1) or none has (m_j = 0) gets alpha_j = 0 or beta_j = 0:
        its theta_j is 1 or 0 almost surely, every item of ``X`` agrees with it, and its
        factor in every score is exactly 1 (the limit of Eq. 4.11), so it is left out.
        With hyperparameters given by the user every column is informative.
    n_features : int
        Columns of ``X``.
    """

    alpha: np.ndarray
    beta: np.ndarray
    informative: np.ndarray
    n_features: int


def column_means(X) -> np.ndarray:
    """m_j: the fraction of rows of a (dense or sparse) binary ``X`` with feature j,
    O(nnz) for sparse input."""
    return np.asarray(X.sum(axis=0), dtype=np.float64).ravel() / X.shape[0]


def beta_prior(X, *, kappa=2.0, alpha=None, beta=None) -> BetaPrior:
    """The Beta prior of Bayesian Sets for the binary data ``X``.

    Parameters
    ----------
    X : (n, J) binary array or scipy.sparse matrix
        All items (rows) by binary features (columns).
    kappa : float
        Strength of the empirical prior (> 0): alpha = kappa m, beta = kappa (1 - m).
        Not used when ``alpha`` and ``beta`` are given.
    alpha, beta : float or array (J,), optional
        The Beta hyperparameters, both or neither (> 0).

    Returns
    -------
    BetaPrior
    """
    kappa = check_positive(kappa, "kappa")
    X = as_binary_matrix(X)
    return resolve_prior(X, kappa, alpha, beta)


def _check_hyper(alpha, beta, n_features):
    """Validated (alpha, beta), or (None, None) for the empirical default."""
    if (alpha is None) != (beta is None):
        given, missing = ("alpha", "beta") if beta is None else ("beta", "alpha")
        raise ValueError(f"{missing}: give alpha and beta together (only {given} was given), "
                         "or neither for the empirical prior alpha = kappa m, "
                         "beta = kappa (1 - m)")
    if alpha is None:
        return None, None
    return (check_positive_vector(alpha, "alpha", n_features),
            check_positive_vector(beta, "beta", n_features))


def resolve_prior(X, kappa, alpha, beta) -> BetaPrior:
    """:func:`beta_prior` on validated ``X`` and ``kappa``."""
    J = X.shape[1]
    alpha, beta = _check_hyper(alpha, beta, J)
    if alpha is not None:
        return BetaPrior(alpha, beta, np.arange(J, dtype=np.int64), J)
    m = column_means(X)
    informative = np.flatnonzero((m > 0) & (m < 1)).astype(np.int64)
    m = m[informative]
    return BetaPrior(kappa * m, kappa * (1.0 - m), informative, J)
