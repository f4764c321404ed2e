"""The Gaussian tree's marginal likelihood by the chain rule of NIW Student-t predictives
(NumPy/SciPy), a different route from the decomposed closed form the kernels use."""

import numpy as np
from scipy import stats

__all__ = ["chain_rule_log_marginal", "niw_predictive"]


def niw_predictive(x, rows, m0, kappa0, nu0, S0):
    """Student-t posterior predictive of NIW (Murphy 2012 Eq. 4.215), NumPy/SciPy."""
    d = len(m0)
    n = len(rows)
    xbar = rows.mean(0) if n else np.zeros(d)
    kn, nn = kappa0 + n, nu0 + n
    mn = (kappa0 * m0 + n * xbar) / kn
    C = (rows - xbar).T @ (rows - xbar) if n else np.zeros((d, d))
    Sn = S0 + C + kappa0 * n / kn * np.outer(xbar - m0, xbar - m0)
    dof = nn - d + 1
    return stats.multivariate_t(loc=mn, shape=Sn * (kn + 1) / (kn * dof), df=dof).logpdf(x)


def chain_rule_log_marginal(X, parents, m0, kappa0, delta, S0):
    """log p(D | T) = sum_i log p(x_i | x_<i, T), each predictive the root's t times
    every child's bivariate t over its parent's t, with the clique hyperparameters
    (m0_C, kappa0, delta + |C| - 1, S0_CC)."""
    total = 0.0
    for i in range(len(X)):
        past = X[:i]
        for v, p in enumerate(parents):
            if p < 0:
                total += niw_predictive(X[i, [v]], past[:, [v]], m0[[v]], kappa0, delta,
                                         S0[np.ix_([v], [v])])
            else:
                c = [p, v]
                total += niw_predictive(X[i, c], past[:, c], m0[c], kappa0, delta + 1,
                                         S0[np.ix_(c, c)])
                total -= niw_predictive(X[i, [p]], past[:, [p]], m0[[p]], kappa0, delta,
                                         S0[np.ix_([p], [p])])
    return total
