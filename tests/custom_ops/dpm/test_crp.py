"""CRP partition probabilities: normalisation by enumeration, closed forms, the Op."""

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special

from custom_ops.dpm.crp import (
    CRPLogp,
    block_sizes,
    canonicalize,
    crp_draw,
    crp_logp,
    crp_logp_op,
    is_canonical,
    log_eppf,
)
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python
from tests.oracles.mixtures import partitions

BELL = [1, 1, 2, 5, 15, 52, 203, 877]


def ewens_reference(z, alpha):
    """Murphy (2012) Eq. 25.60: alpha^K prod Gamma(n_k) Gamma(alpha) / Gamma(n + alpha)."""
    counts = np.bincount(z)
    n = z.size
    return (len(counts) * math.log(alpha) + special.gammaln(counts).sum()
            + special.gammaln(alpha) - special.gammaln(n + alpha))


def pitman_yor_reference(z, alpha, d):
    """Sequential seating: the product of the conditional probabilities of each item."""
    lp, counts = 0.0, []
    for i, k in enumerate(z):
        if k == len(counts):
            lp += math.log((alpha + d * len(counts)) / (alpha + i))
            counts.append(1)
        else:
            lp += math.log((counts[k] - d) / (alpha + i))
            counts[k] += 1
    return lp


@pytest.mark.parametrize("n", range(1, 8))
def test_enumeration_counts_bell_numbers(n):
    assert len(partitions(n)) == BELL[n]


@pytest.mark.parametrize(("alpha", "d"), [(0.7, 0.0), (2.5, 0.0), (1.3, 0.4), (-0.2, 0.5)])
def test_logp_sums_to_one_over_all_partitions(alpha, d):
    for n in range(1, 8):
        total = special.logsumexp([crp_logp(z, alpha, d) for z in partitions(n)])
        assert total == pytest.approx(0.0, abs=1e-12), (n, total)


def test_logp_matches_independent_formulas():
    for z in partitions(6):
        assert crp_logp(z, 0.8, 0.0) == pytest.approx(ewens_reference(z, 0.8), rel=1e-12)
        assert crp_logp(z, 1.7, 0.3) == pytest.approx(pitman_yor_reference(z, 1.7, 0.3),
                                                      rel=1e-12)


def test_sequential_probabilities_multiply_to_the_eppf():
    # Heller digest oracle 7.5.25: the CRP's sequential probabilities give the EPPF.
    z = np.array([0, 1, 0, 0, 2, 1, 3, 0])
    assert log_eppf(block_sizes(z), 2.0, 0.0) == pytest.approx(pitman_yor_reference(z, 2.0, 0.0))


def test_finite_dirichlet_limit_tends_to_ewens():
    # Murphy digest §a.6 table: partition {01}{2}{3}, alpha = 0.7.
    expected = {4: 0.012713, 10: 0.022228, 100: 0.028189, 10_000: 0.028846}
    counts = np.array([2, 1, 1])
    alpha, N, Kp = 0.7, 4, 3
    for K, value in expected.items():
        lp = (special.gammaln(K + 1) - special.gammaln(K - Kp + 1) + special.gammaln(alpha)
              - special.gammaln(N + alpha)
              + np.sum(special.gammaln(counts + alpha / K) - special.gammaln(alpha / K)))
        assert math.exp(lp) == pytest.approx(value, abs=5e-7)
    assert math.exp(crp_logp(np.array([0, 0, 1, 2]), 0.7, 0.0)) == pytest.approx(0.0288524,
                                                                                 abs=5e-8)


def test_non_canonical_and_invalid_give_minus_inf():
    assert crp_logp(np.array([1, 0, 0]), 1.0, 0.0) == -np.inf
    assert crp_logp(np.array([0, 2, 1]), 1.0, 0.0) == -np.inf
    assert crp_logp(np.array([0, -1, 1]), 1.0, 0.0) == -np.inf
    assert crp_logp(np.array([0, 1]), 0.0, 0.0) == -np.inf
    assert crp_logp(np.array([0, 1]), -0.6, 0.5) == -np.inf
    assert crp_logp(np.array([0, 1]), 1.0, 1.0) == -np.inf
    assert crp_logp(np.array([0, 1]), np.nan, 0.0) == -np.inf


def test_canonicalize_and_is_canonical():
    z, K = canonicalize(np.array([7, 7, 3, 9, 3]))
    np.testing.assert_array_equal(z, [0, 0, 1, 2, 1])
    assert K == 3 and is_canonical(z) and not is_canonical(np.array([0, 2, 1]))
    # huge label values go through the sort-based path
    z2, K2 = canonicalize(np.array([10**12, 5, 10**12, 7, 5]))
    np.testing.assert_array_equal(z2, [0, 1, 0, 2, 1])
    assert K2 == 3


def test_draws_are_canonical_and_match_expected_number_of_blocks():
    # E[K] = sum_i alpha / (alpha + i - 1) (Murphy digest §a.4); alpha = 1, n = 50: 4.4992
    rng = np.random.default_rng(0)
    n, alpha, S = 50, 1.0, 20_000
    out = np.empty(n, dtype=np.int64)
    K = np.empty(S)
    for s in range(S):
        crp_draw(rng, alpha, 0.0, n, out)
        if s < 50:
            assert is_canonical(out)
        K[s] = out.max() + 1
    mean = sum(alpha / (alpha + i) for i in range(n))
    var = sum(alpha * i / (alpha + i) ** 2 for i in range(n))
    assert mean == pytest.approx(4.4992, abs=1e-4) and var == pytest.approx(2.8741, abs=1e-4)
    assert abs(K.mean() - mean) < 4 * math.sqrt(var / S)


def test_pitman_yor_draw_frequencies_match_eppf():
    rng = np.random.default_rng(1)
    n, alpha, d, S = 4, 0.9, 0.35, 40_000
    parts = partitions(n)
    index = {tuple(z): j for j, z in enumerate(parts)}
    counts = np.zeros(len(parts))
    out = np.empty(n, dtype=np.int64)
    for _ in range(S):
        crp_draw(rng, alpha, d, n, out)
        counts[index[tuple(out)]] += 1
    p = np.exp([crp_logp(z, alpha, d) for z in parts])
    from scipy import stats

    assert stats.chisquare(counts, p * S).pvalue > 1e-3


def test_op_value_gradient_and_numba_backend():
    z = np.array([0, 0, 1, 0, 2, 1, 1, 3])
    zv, a, d = pt.lvector("z"), pt.dscalar("a"), pt.dscalar("d")
    out = crp_logp_op(zv, a, d)
    f = assert_numba_matches_python(
        [zv, a, d], [out, *pytensor.grad(out, [a, d])], [z, 1.3, 0.2], op=CRPLogp
    )
    value, ga, gd = f(z, 1.3, 0.2)
    assert value == pytest.approx(pitman_yor_reference(z, 1.3, 0.2), rel=1e-12)
    eps = 1e-6
    fd_a = (pitman_yor_reference(z, 1.3 + eps, 0.2) - pitman_yor_reference(z, 1.3 - eps, 0.2)) / (
        2 * eps)
    fd_d = (pitman_yor_reference(z, 1.3, 0.2 + eps) - pitman_yor_reference(z, 1.3, 0.2 - eps)) / (
        2 * eps)
    assert ga == pytest.approx(fd_a, rel=1e-6) and gd == pytest.approx(fd_d, rel=1e-6)
    rng = np.random.default_rng(2)
    # Python backend for the finite differences (short compiles); Numba is checked above
    fast = dict(rng=rng, mode=PYTHON_MODE)
    pytensor.gradient.verify_grad(lambda a_: crp_logp_op(z, a_, 0.2), [np.array(1.3)], **fast)
    pytensor.gradient.verify_grad(lambda d_: crp_logp_op(z, 1.3, d_), [np.array(0.2)], **fast)
    pytensor.gradient.verify_grad(lambda a_: crp_logp_op(z, a_, 0.0), [np.array(0.6)], **fast)


def test_op_shape_and_validation():
    out = crp_logp_op(pt.lvector(), 1.0, 0.0)
    assert out.ndim == 0 and out.dtype == "float64"
    assert isinstance(out.owner.op, CRPLogp)
    with pytest.raises(TypeError, match="z must be a 1-D integer tensor"):
        crp_logp_op(pt.dvector(), 1.0, 0.0)
    with pytest.raises(TypeError, match="alpha must be a scalar"):
        crp_logp_op(pt.lvector(), pt.dvector(), 0.0)
    # the z input has no gradient (discrete)
    with pytest.raises(Exception, match="discrete"):
        zf = pt.lvector()
        pytensor.grad(crp_logp_op(zf, 1.0, 0.0), zf)
