"""The nonparanormal (Gaussian copula) transform of Liu, Lafferty & Wasserman (2009).

Each column ``x_j`` is replaced by ``f_j(x) = mu_j + sigma_j Phi^{-1}(F_j(x))`` with
``F_j`` the empirical CDF Winsorised to ``[delta_n, 1 - delta_n]``, ``delta_n = 1 /
(4 n^{1/4} sqrt(pi log n))`` (Liu et al. 2009 Eq. 12; Murphy 2012 §26.7.4), and
``mu_j``, ``sigma_j`` the column's sample mean and standard deviation. A Gaussian
graphical model on the transformed data is a Gaussian-copula graphical model.
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

from pp_models.validation import as_data_matrix

__all__ = ["nonparanormal_transform"]


def nonparanormal_transform(X) -> np.ndarray:
    """Winsorised normal scores of every column of ``X`` (n >= 2), rescaled to its moments.

    Ties get their average rank.
    """
    X = as_data_matrix(X, "X", min_rows=2)
    n = X.shape[0]
    delta = 1.0 / (4.0 * n**0.25 * np.sqrt(np.pi * np.log(n)))
    ecdf = rankdata(X, axis=0) / n
    scores = ndtri(np.clip(ecdf, delta, 1.0 - delta))
    sd = scores.std(axis=0)
    sd[sd == 0] = 1.0
    scores = (scores - scores.mean(axis=0)) / sd
    return X.mean(axis=0) + X.std(axis=0) * scores
