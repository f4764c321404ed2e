"""An independent reference for LDS tests: the stacked vector ``(x_1..x_T, y_1..y_T)``
is one Gaussian; its moments are built densely and conditioned on the observed entries
of ``y`` with plain linear algebra (no recursion shared with the code under test)."""

import numpy as np
from scipy import stats
from scipy.stats import multivariate_normal

__all__ = [
    "dense_conditioning",
    "prior_moments",
    "random_lds",
    "steady_state_case",
    "whitened_p_values",
]


def random_lds(rng, n, p):
    """A stable random LDS with positive definite covariances."""
    A = rng.normal(size=(n, n))
    A *= 0.9 / max(1.0, np.max(np.abs(np.linalg.eigvals(A))))
    C = rng.normal(size=(p, n))
    G = rng.normal(size=(n, n))
    Q = G @ G.T / n + 0.2 * np.eye(n)
    H = rng.normal(size=(p, p))
    R = H @ H.T / p + 0.3 * np.eye(p)
    m0 = rng.normal(size=n)
    F = rng.normal(size=(n, n))
    P0 = F @ F.T / n + 0.5 * np.eye(n)
    return A, C, Q, R, m0, P0


def steady_state_case():
    """A series long enough for the covariance recursions to reach their floating-point
    fixed point (where the kernels reuse a step's covariance arithmetic), broken by a
    block with an entry missing and a fully missing step, then reached again."""
    rng = np.random.default_rng(0)
    A, C, Q, R, m0, P0 = random_lds(rng, 2, 2)
    y = rng.normal(size=(150, 2))
    y[60:64, 0] = np.nan
    y[100] = np.nan
    return y, A, C, Q, R, m0, P0


def prior_moments(A, C, Q, R, m0, P0, T):
    """``(E[x], Cov(x), E[y], Cov(y))`` of the stacked path ``x`` (``(T, n)``, its
    covariance ``(T n, T n)``) and observations ``y`` (``(T p,)``, ``(T p, T p)``) under
    the model, built densely."""
    n = A.shape[0]
    mean_x = np.zeros((T, n))
    cov_x = np.zeros((T, n, T, n))
    mean_x[0] = m0
    cov_x[0, :, 0, :] = P0
    for t in range(1, T):
        mean_x[t] = A @ mean_x[t - 1]
        for s in range(t):
            cov_x[t, :, s, :] = A @ cov_x[t - 1, :, s, :]
            cov_x[s, :, t, :] = cov_x[t, :, s, :].T
        cov_x[t, :, t, :] = A @ cov_x[t - 1, :, t - 1, :] @ A.T + Q
    Sxx = cov_x.reshape(T * n, T * n)
    big_C = np.kron(np.eye(T), C)
    mean_y = big_C @ mean_x.reshape(-1)
    Syy = big_C @ Sxx @ big_C.T + np.kron(np.eye(T), R)
    return mean_x, Sxx, mean_y, Syy


def dense_conditioning(y, A, C, Q, R, m0, P0, cumulative=True):
    """``(log p(y_{1:t} observed) for t = 1..T, E[x | y], Cov(x | y))`` with ``x``
    stacked ``(T, n)`` and its covariance ``(T, n, T, n)``; with ``cumulative=False``
    the first entry holds ``log p(y observed)`` alone (one density, not T)."""
    T = y.shape[0]
    n = A.shape[0]
    mean_x, Sxx, mean_y, Syy = prior_moments(A, C, Q, R, m0, P0, T)
    p = C.shape[0]
    big_C = np.kron(np.eye(T), C)
    Sxy = Sxx @ big_C.T
    observed = ~np.isnan(y.reshape(-1))
    cumulative_log_p = []
    for t in range(1, T + 1) if cumulative else (T,):
        idx = np.flatnonzero(observed[: t * p])
        if idx.size == 0:
            cumulative_log_p.append(0.0)
            continue
        cumulative_log_p.append(
            multivariate_normal(mean_y[idx], Syy[np.ix_(idx, idx)]).logpdf(y.reshape(-1)[idx])
        )
    idx = np.flatnonzero(observed)
    gain = np.linalg.solve(Syy[np.ix_(idx, idx)], Sxy[:, idx].T).T
    post_mean = mean_x.reshape(-1) + gain @ (y.reshape(-1)[idx] - mean_y[idx])
    post_cov = Sxx - gain @ Sxy[:, idx].T
    return (np.array(cumulative_log_p), post_mean.reshape(T, n), post_cov.reshape(T, n, T, n))


def whitened_p_values(draws, mean, cov):
    """p-values of draws of the path (``N x T x n``) against ``N(mean, cov)`` (the
    shapes of :func:`dense_conditioning`'s answer).

    The draws are whitened by the exact moments, ``z = L^{-1}(x - mean)``, i.i.d.
    ``N(0, I_d)`` under the hypothesis: ``N |mean z|^2 ~ chi2_d`` (one p-value);
    ``sum_n z_ni^2 ~ chi2_N`` per coordinate (two-sided); ``sum_n z_ni z_nj / sqrt(N)``,
    approximately ``N(0, 1)`` per pair (CLT). Compare the smallest with ``alpha / size``
    (Bonferroni) for a false-failure rate of at most ``alpha``.
    """
    N = draws.shape[0]
    d = mean.size
    L = np.linalg.cholesky(cov.reshape(d, d))
    z = np.linalg.solve(L, (draws.reshape(N, d) - mean.reshape(-1)).T).T
    p = [stats.chi2.sf(N * np.sum(z.mean(axis=0) ** 2), d)]
    ss = np.sum(z**2, axis=0)
    p += list(2 * np.minimum(stats.chi2.sf(ss, N), stats.chi2.cdf(ss, N)))
    i, j = np.triu_indices(d, 1)
    cross = np.sum(z[:, i] * z[:, j], axis=0) / np.sqrt(N)
    p += list(2 * stats.norm.sf(np.abs(cross)))
    return np.array(p)
