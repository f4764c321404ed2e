"""The two-feature row update draws a row's entries from their exact conditional.

D = 2 rows, N = 4 columns, two used features. From one fixed state the update
(:func:`custom_ops.ibp_fa.feature_moves.two_feature_row_update`) is run many times; the
row it updates is uniform over the two rows, so the resulting ``Z`` has the mixture over
rows of the conditionals of that row's two entries. Each conditional is computed here
independently: the slot IBP prior's column factors times ``prod_n N(r_n; 0, diag(1 /
(beta tau)) + G G^T)`` (scipy), the factor rows integrated out, ``G`` the loadings
``Z o V`` of the option, restricted to options leaving both features used. Chi-square
against the counts (false-failure rate 1e-3); the twin whose integral takes the two
factors apart must fail the same test.
"""

import math

import numpy as np
import pytest
from scipy import stats

from custom_ops.ibp_fa.feature_moves import two_feature_row_update
from custom_ops.ibp_fa.nsfa import FactorState
from tests.custom_ops.ibp_fa.twins import factors_apart
from tests.helpers.twin_kernels import twin_kernel

D, N, C = 2, 4, 3
Y = np.array([[1.3, -0.7, 2.1, 0.4], [0.9, -1.5, 1.2, -0.2]])
V = np.array([[1.1, -0.8, 0.5], [0.7, 1.4, -0.3]])
TAU = np.array([2.0, 1.5])
LAM = np.ones(C)  # not read by the update
Z0 = np.array([[1, 0, 0], [1, 1, 0]], dtype=np.int8)
X0 = np.zeros((C, N))
N_DRAWS = 6000


def log_f(m):
    return math.lgamma(D - m + 1) + math.lgamma(m) - math.lgamma(D + 1)


def exact_final(beta):
    """Probabilities of the resulting Z (as the tuple of its 4 entries in features 0, 1)."""
    out = {}
    for d in range(D):
        weights = {}
        for on0 in (0, 1):
            for on1 in (0, 1):
                Z = Z0.copy()
                Z[d, 0], Z[d, 1] = on0, on1
                m = Z[:, :2].sum(axis=0)
                if (m == 0).any():
                    continue
                G = Z[:, :2] * V[:, :2]
                cov = np.diag(1.0 / (beta * TAU)) + G @ G.T
                logw = log_f(m[0]) + log_f(m[1]) + sum(
                    stats.multivariate_normal.logpdf(Y[:, n], np.zeros(D), cov)
                    for n in range(N))
                weights[tuple(Z[:, :2].ravel())] = logw
        top = max(weights.values())
        total = sum(math.exp(w - top) for w in weights.values())
        for key, w in weights.items():
            out[key] = out.get(key, 0.0) + 0.5 * math.exp(w - top) / total
    return out


def counts_of(kernel, beta, seed):
    rng = np.random.default_rng(seed)
    E = np.empty((D, N))
    W = np.ones((D, N))
    counts = {}
    tally = np.zeros(2, dtype=np.int64)
    for _ in range(N_DRAWS):
        Z = Z0.copy()
        X = X0.copy()
        kernel(rng, FactorState(Y, W, Z, V, X, LAM, TAU, E), beta, tally)
        key = tuple(Z[:, :2].ravel())
        counts[key] = counts.get(key, 0) + 1
    return counts


def pvalue(counts, probs):
    keys = sorted(probs)
    assert set(counts) <= set(keys)
    observed = np.array([counts.get(k, 0) for k in keys], dtype=float)
    expected = np.array([probs[k] for k in keys]) * N_DRAWS
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.mark.parametrize("beta", [1.0, 0.3])
def test_row_update_draws_the_exact_conditional(beta):
    probs = exact_final(beta)
    assert min(probs.values()) * N_DRAWS >= 20  # every cell large enough for chi-square
    assert pvalue(counts_of(two_feature_row_update, beta, seed=5), probs) > 1e-3


def test_twin_with_the_factors_apart_is_caught():
    twin = twin_kernel(two_feature_row_update, two_feature_log_marginal=factors_apart)
    assert pvalue(counts_of(twin, 1.0, seed=5), exact_final(1.0)) < 1e-6
