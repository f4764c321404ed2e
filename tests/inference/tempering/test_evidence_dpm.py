"""The evidence of DP mixtures against the exact sum over every partition.

For n = 8 rows the DP mixture's evidence ``log sum_z p(z) p(X | z)`` is a sum over
Bell(8) = 4140 partitions, each block's marginal from ``oracles`` (SciPy only). The
stepping-stone estimate of a tempered run of the zoo's collapsed model must lie within
3 standard errors of it, for every conjugate likelihood the zoo has (full and diagonal
Gaussian, Bernoulli, multinomial, categorical = multinomial with one-hot rows). BHC's
tree-consistent bound (Heller 2007 Corollary 3.1) lies below the exact value.
"""

import numpy as np
import pytest
from scipy import special

from inference import evidence
from pp_models import bhc, dpm
from pp_models.dpm.spec import PRIOR_KEYS
from tests.helpers.evidence_checks import check_against_exact
from tests.oracles import mixtures as oracles

N = 8
RNG = np.random.default_rng(21)


def _data(likelihood):
    if likelihood in ("gaussian", "diag_gaussian"):
        return np.concatenate([RNG.normal(-1.5, 0.6, (4, 2)), RNG.normal(1.5, 0.6, (4, 2))])
    if likelihood == "bernoulli":
        p = np.repeat([[0.85, 0.15, 0.7], [0.1, 0.9, 0.3]], 4, axis=0)
        return (RNG.random((N, 3)) < p).astype(float)
    if likelihood == "multinomial":
        p = np.repeat([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]], 4, axis=0)
        return np.array([RNG.multinomial(5, q) for q in p], dtype=float)
    # categorical: one-hot rows of 3 categories
    labels = np.concatenate([RNG.choice(3, 4, p=[0.8, 0.1, 0.1]),
                             RNG.choice(3, 4, p=[0.1, 0.1, 0.8])])
    return np.eye(3)[labels]


CASES = ["gaussian", "diag_gaussian", "bernoulli", "multinomial", "categorical"]


def exact_log_evidence(m, X, alpha):
    spec = dpm.get_spec(m)
    hyper = [spec.prior[k] for k in PRIOR_KEYS[spec.likelihood]]
    block = oracles.block_function(spec.likelihood, hyper)
    cache = {}

    def cached(Xk):
        key = Xk.tobytes()
        if key not in cache:
            cache[key] = block(Xk)
        return cache[key]

    return oracles.dp_log_evidence(X, cached, alpha)


@pytest.mark.parametrize("case", CASES)
def test_dp_mixture_evidence_matches_the_sum_over_partitions(case):
    likelihood = "multinomial" if case == "categorical" else case
    X = _data(case)
    m = dpm.model(X, likelihood=likelihood, alpha=1.0)
    exact = exact_log_evidence(m, X, 1.0)
    result = evidence(m, n_temperatures=8, draws=1200, tune=300, chains=2, random_seed=4)
    print(f"{case}: exact {exact:.4f}, {result}")
    # an error of 1.75 nats is caught (tests/helpers/evidence_checks.py)
    check_against_exact(result, exact, detect=1.75)


def test_dp_mixture_evidence_with_a_random_concentration():
    """alpha ~ Gamma(2, 2) (Escobar-West step): the exact evidence integrates alpha out
    of the partition prior on a prior-quantile grid."""
    from scipy import stats

    X = _data("diag_gaussian")
    m = dpm.model(X, likelihood="diag_gaussian", alpha=(2.0, 2.0))
    spec = dpm.get_spec(m)
    hyper = [spec.prior[k] for k in PRIOR_KEYS["diag_gaussian"]]
    grid = stats.gamma(2.0, scale=0.5).ppf((np.arange(2000) + 0.5) / 2000)
    parts = oracles.partitions(N)
    block = oracles.block_function("diag_gaussian", hyper)
    blocks = {}
    total = []
    for z in parts:
        counts = np.bincount(z)
        K = counts.size
        # EPPF(alpha) = alpha^(K-1) Gamma(alpha+1)/Gamma(alpha+n) prod Gamma(n_k)
        log_eppf = ((K - 1) * np.log(grid) + special.gammaln(grid + 1)
                    - special.gammaln(grid + N) + special.gammaln(counts).sum())
        lik = 0.0
        for k in range(K):
            key = tuple(np.flatnonzero(z == k))
            if key not in blocks:
                blocks[key] = block(X[list(key)])
            lik += blocks[key]
        total.append(special.logsumexp(log_eppf) - np.log(grid.size) + lik)
    exact = float(special.logsumexp(total))
    result = evidence(m, n_temperatures=8, draws=1200, tune=300, chains=2, random_seed=5)
    print(f"random alpha: exact {exact:.4f}, {result}")
    check_against_exact(result, exact)


def test_bhc_bound_lies_below_the_exact_dpm_evidence():
    """Heller (2007) Corollary 3.1 with the same prior (alpha, NIW / Beta hyperparameters):
    the tree-consistent bound is below the sum over every partition; the gap is printed."""
    for likelihood in ("gaussian", "bernoulli"):
        X = _data(likelihood)
        m = dpm.model(X, likelihood=likelihood, alpha=1.0)
        spec = dpm.get_spec(m)
        exact = exact_log_evidence(m, X, 1.0)
        tree = bhc.greedy(X, likelihood=likelihood, alpha=1.0, hyper=dict(spec.prior),
                          progressbar=False)
        bound = tree.dpm_lower_bound()
        print(f"{likelihood}: BHC bound {bound:.4f} <= exact {exact:.4f} "
              f"(gap {exact - bound:.4f} nats); log p(D|T) = {tree.log_evidence:.4f}")
        assert bound <= exact + 1e-9
        assert exact - bound < 5.0  # a bound, and not a vacuous one
