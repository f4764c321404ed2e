"""Indian buffet process: Eq. 2.12 by enumeration, the matrix pmf, the Op and its gradient,
prior draws against the buffet's known laws, and the IndianBuffet distribution."""

import itertools
import math
from collections import Counter

import numpy as np
import pymc as pm
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import special, stats

from custom_ops.ibp_fa.ibp import (
    IBPLogp,
    harmonic,
    ibp_dlogp_dalpha,
    ibp_log_lof,
    ibp_log_matrix,
    ibp_logp_op,
    log_history_multiplicity,
)
from pp_models.distributions import IndianBuffet, IndianBuffetRV
from pp_models.distributions.indian_buffet import left_ordered


def lof_reference(columns, D, alpha):
    """Eq. 2.12 written from the formula with Python integers: ``columns`` is a list of
    non-zero D-bit histories (tuples); K_h counts equal columns."""
    H = sum(1.0 / j for j in range(1, D + 1))
    value = len(columns) * math.log(alpha) - alpha * H
    for count in Counter(columns).values():
        value -= math.log(math.factorial(count))
    for col in columns:
        m = sum(col)
        value += math.log(math.factorial(D - m) * math.factorial(m - 1) / math.factorial(D))
    return value


def as_matrix(columns, D, C):
    Z = np.zeros((D, C), dtype=np.int8)
    for k, col in enumerate(columns):
        Z[:, k] = col
    return Z


@pytest.mark.parametrize("D,alpha,T", [(2, 2.0, 12), (3, 0.8, 7)])
def test_lof_class_probabilities_sum_to_the_poisson_cdf(D, alpha, T):
    """Every class with K+ <= T once (a multiset of non-zero histories): the class
    probabilities sum to P(K+ <= T) = Poisson(alpha H_D) CDF, i.e. to 1 as T grows."""
    histories = [h for h in itertools.product((0, 1), repeat=D) if any(h)]
    total = []
    for K in range(T + 1):
        for cols in itertools.combinations_with_replacement(histories, K):
            ref = lof_reference(list(cols), D, alpha)
            got = ibp_log_lof(as_matrix(cols, D, T + 2), alpha)
            assert got == pytest.approx(ref, abs=1e-10)
            total.append(ref)
    H = sum(1.0 / j for j in range(1, D + 1))
    expected = stats.poisson.cdf(T, alpha * H)
    assert math.exp(special.logsumexp(total)) == pytest.approx(expected, abs=1e-12)
    assert 1 - expected < 1e-3  # and that is essentially 1


def test_matrix_pmf_sums_over_all_binary_matrices():
    """P(Z) over all 2^(D C) binary matrices sums to P(K+ <= C)."""
    D, C, alpha = 2, 3, 1.3
    values = [ibp_log_matrix(np.array(bits, dtype=np.int8).reshape(D, C), alpha)
              for bits in itertools.product((0, 1), repeat=D * C)]
    expected = stats.poisson.cdf(C, alpha * 1.5)
    assert math.exp(special.logsumexp(values)) == pytest.approx(expected, abs=1e-12)


def test_permutation_invariance_and_history_multiplicity():
    rng = np.random.default_rng(0)
    Z = pm.draw(IndianBuffet.dist(alpha=3.0, n_rows=6, k_max=30), random_seed=3)
    # duplicate columns on purpose: K_h > 1
    Z[:, -1] = Z[:, -2] = np.array([1, 0, 0, 1, 0, 0])
    for _ in range(5):
        perm = rng.permutation(Z.shape[1])
        assert ibp_log_lof(Z[:, perm], 3.0) == pytest.approx(ibp_log_lof(Z, 3.0))
        assert ibp_log_matrix(Z[:, perm], 3.0) == pytest.approx(ibp_log_matrix(Z, 3.0))
    cols = [tuple(Z[:, k]) for k in range(Z.shape[1]) if Z[:, k].any()]
    ref = sum(math.lgamma(c + 1) for c in Counter(cols).values())
    assert log_history_multiplicity(Z) == pytest.approx(ref)
    assert ibp_log_lof(Z, 3.0) == pytest.approx(lof_reference(cols, 6, 3.0))
    lo = left_ordered(Z)
    assert ibp_log_lof(lo, 3.0) == pytest.approx(ibp_log_lof(Z, 3.0))
    assert lo[:, : len(cols)].any(0).all() and not lo[:, len(cols):].any()


def test_op_values_gradient_and_invalid_inputs():
    Z = np.array([[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 0]], dtype=np.int8)
    a = pt.dscalar("a")
    f = pytensor.function([a], [ibp_logp_op(Z, a), ibp_logp_op(Z, a, lof_class=True)])
    v_matrix, v_lof = f(1.7)
    cols = [tuple(Z[:, k]) for k in range(3)]
    assert v_lof == pytest.approx(lof_reference(cols, 3, 1.7))
    assert v_matrix == pytest.approx(v_lof + math.log(math.factorial(1) / math.factorial(4)))
    assert ibp_dlogp_dalpha(Z, 1.7) == pytest.approx(3 / 1.7 - harmonic(3))
    rng = np.random.default_rng(1)
    for lof in (False, True):
        pytensor.gradient.verify_grad(lambda x, lof=lof: ibp_logp_op(Z, x, lof_class=lof),
                                      [np.array(1.7)], rng=rng)
    assert ibp_log_matrix(Z, -1.0) == -np.inf
    assert ibp_log_lof(np.array([[2, 0]], dtype=np.int8), 1.0) == -np.inf
    with pytest.raises(TypeError, match="Z must be a 2-D integer"):
        IBPLogp()(np.zeros((2, 2)), 1.0)
    with pytest.raises(TypeError, match="alpha must be a scalar"):
        IBPLogp()(Z, np.ones(2))


def test_prior_draws_follow_the_buffet_laws():
    """K+ ~ Poisson(alpha H_D) (mean and variance), row sums ~ Poisson(alpha), slots used
    uniformly."""
    alpha, D, C, S = 2.5, 7, 60, 8000
    Z = pm.draw(IndianBuffet.dist(alpha=alpha, n_rows=D, k_max=C), draws=S, random_seed=4)
    assert Z.shape == (S, D, C) and Z.dtype == np.int8
    K = (Z.sum(1) > 0).sum(1)
    lam = alpha * sum(1.0 / j for j in range(1, D + 1))
    assert abs(K.mean() - lam) < 4 * math.sqrt(lam / S)
    # the sample variance of a Poisson has variance ~ (lam + 2 lam^2) / S
    assert abs(K.var() - lam) < 4 * math.sqrt((lam + 2 * lam**2) / S)
    rows = Z.sum(2).reshape(-1)
    assert abs(rows.mean() - alpha) < 4 * math.sqrt(alpha / rows.size) * math.sqrt(D)
    assert abs(rows.var() - alpha) < 0.15 * alpha
    assert abs(np.mean(K == 0) - math.exp(-lam)) < 4 * math.sqrt(math.exp(-lam) / S) + 1e-3
    used = (Z.sum(1) > 0).mean(0)  # per slot: E[K+] / C
    assert np.all(np.abs(used - lam / C) < 5 * math.sqrt(lam / C / S))


def test_distribution_in_a_model_draw_and_bad_arguments():
    z = pm.draw(IndianBuffet.dist(alpha=2.5, n_rows=7, k_max=60), random_seed=1)
    assert z.shape == (7, 60)
    with pm.Model() as m:
        alpha = pm.Gamma("alpha", 2.0, 1.0)
        Z = IndianBuffet("Z", alpha=alpha, n_rows=4, k_max=5)
    assert isinstance(Z.owner.op, IndianBuffetRV)
    point = m.initial_point()
    np.testing.assert_array_equal(point["Z"], np.zeros((4, 5)))
    lp = m.compile_logp(vars=[Z])
    value = np.array([[1, 0, 0, 0, 0], [1, 0, 1, 0, 0], [0, 0, 0, 0, 0], [0, 0, 1, 0, 0]],
                     dtype=np.int8)
    a = float(np.exp(point["alpha_log__"]))
    assert lp(point | {"Z": value}) == pytest.approx(ibp_log_matrix(value, a))
    # the gradient in alpha through the model
    dlogp = m.compile_dlogp(vars=[alpha])
    assert np.isfinite(dlogp(point | {"Z": value})).all()
    assert lp(point | {"Z": np.full((4, 5), 2, dtype=np.int8)}) == -np.inf
    for kwargs, err, msg in [
        (dict(alpha=1.0, n_rows=0, k_max=3), ValueError, "n_rows must be >= 1"),
        (dict(alpha=1.0, n_rows=3, k_max=0), ValueError, "k_max must be >= 1"),
        (dict(alpha=1.0, n_rows=3.0, k_max=3), TypeError, "n_rows must be an integer, got 3.0"),
        (dict(alpha=0.0, n_rows=3, k_max=3), ValueError, "alpha must be > 0"),
    ]:
        with pytest.raises(err, match=msg):
            IndianBuffet.dist(**kwargs)
    with pytest.raises(ValueError, match="raise k_max"):
        pm.draw(IndianBuffet.dist(alpha=30.0, n_rows=5, k_max=10), random_seed=0)
    with pytest.raises(Exception, match="alpha > 0"):
        pm.logp(IndianBuffet.dist(alpha=pt.constant(-1.0), n_rows=4, k_max=5), value).eval()
