"""The non-centred map of the PYDT divergence times (custom_ops.pydt.noncentred) against
independent references: it keeps the standardised gaps ``w_v = c H_{m(v)-1} (u_v -
u_parent)`` (H by scipy's log-gamma), its log-Jacobian ``log |dt/dw|`` equals a
finite-difference determinant, and with it the times' prior cancels to the structure
probability (the identity the non-centred update relies on)."""

import math

import numpy as np
import pytest
from scipy.special import gammaln

from custom_ops.pydt.noncentred import noncentred_times
from custom_ops.pydt.ops import check_tree, log_structure_prob, pydt_forward
from pp_models.pydt import sample_prior

CASES = [
    # (n, c, theta, alpha) -> (c', theta', alpha')
    (6, (1.0, 1.0, 0.3), (2.5, 0.4, 0.6)),
    (12, (0.3, 2.0, 0.5), (0.7, 3.0, 0.1)),  # wide multifurcations
    (9, (1.0, 0.0, 0.0), (0.2, 0.0, 0.0)),  # DDT: c alone, u -> u c / c'
    (10, (1.5, 3.0, -1.0), (0.9, 2.0, -1.0)),  # at most 3 children
]


def h_reference(j, theta, alpha):
    """Eq. 4.24 by direct summation in log space."""
    i = np.arange(1, j + 1)
    return float(np.sum(np.exp(gammaln(i - alpha) - gammaln(i + 1 + theta))))


def leaves_below(parent, n):
    counts = np.zeros(parent.shape[0], dtype=int)
    for leaf in range(n):
        v = parent[leaf]
        while v >= 0:
            counts[v] += 1
            v = parent[v]
    return counts


def gaps(parent, log1m_t, n, c, theta, alpha):
    """w_v per used internal node, from u = -log(1 - t)."""
    m = leaves_below(parent, n)
    out = {}
    for v in range(n, parent.shape[0]):
        if parent[v] == -2:
            continue
        p = parent[v]
        u_parent = 0.0 if p < 0 else -log1m_t[p - n]
        out[v] = c * h_reference(m[v] - 1, theta, alpha) * (-log1m_t[v - n] - u_parent)
    return out


def _tree(n, params, seed):
    c, theta, alpha = params
    return sample_prior(n, c=c, theta=theta, alpha=alpha, dim=0, random_seed=seed)[0].tree


@pytest.mark.parametrize(("n", "old", "new"), CASES)
def test_gaps_are_kept_and_the_tree_stays_valid(n, old, new):
    for seed in range(5):
        tree = _tree(n, old, seed)
        l1, log_jac = noncentred_times(tree.parent, tree.log1m_t, n, tuple(old), tuple(new))
        check_tree(tree.parent, l1, n)
        w0 = gaps(tree.parent, tree.log1m_t, n, *old)
        w1 = gaps(tree.parent, l1, n, *new)
        for v in w0:
            assert w1[v] == pytest.approx(w0[v], rel=1e-10)
        # the log-Jacobian in closed form from the independent H
        m = leaves_below(tree.parent, n)
        ref = sum(l1[v - n] - math.log(new[0] * h_reference(m[v] - 1, new[1], new[2]))
                  for v in w0)
        assert log_jac == pytest.approx(ref, rel=1e-10)
        # back again: the map is a bijection given the parameters
        l0, _ = noncentred_times(tree.parent, l1, n, tuple(new), tuple(old))
        np.testing.assert_allclose(l0, tree.log1m_t, rtol=1e-10)


def test_ddt_scaling_is_u_over_lambda():
    """theta = alpha = 0, c -> lambda c: every u = -log(1 - t) is divided by lambda (the
    joint move of c and the times in the issue)."""
    tree = _tree(9, (1.0, 0.0, 0.0), 3)
    lam = 2.7
    l1, _ = noncentred_times(tree.parent, tree.log1m_t, 9, (1.0, 0.0, 0.0), (lam, 0.0, 0.0))
    used = tree.parent[9:] != -2
    np.testing.assert_allclose(l1[used], tree.log1m_t[used] / lam, rtol=1e-13)


@pytest.mark.parametrize(("n", "old", "new"), CASES[:2])
def test_log_jacobian_is_the_determinant_of_dt_dw(n, old, new):
    """log |det dt/dw| at the new parameters: central differences of l = log(1 - t) as a
    function of the gaps w (written independently: cumulative sums of w / (c H) down the
    tree), plus log |dt/dl| = l per node (t itself rounds to 1 for small c)."""
    tree = _tree(n, old, 11)
    l1, log_jac = noncentred_times(tree.parent, tree.log1m_t, n, tuple(old), tuple(new))
    w = gaps(tree.parent, tree.log1m_t, n, *old)
    nodes = sorted(w)
    m = leaves_below(tree.parent, n)
    c, theta, alpha = new

    def log1m_times(wvec):
        u = {}
        for v in sorted(nodes, key=lambda v: depth(tree.parent, v)):
            p = tree.parent[v]
            rate = c * h_reference(m[v] - 1, theta, alpha)
            u[v] = (0.0 if p < 0 else u[p]) + wvec[nodes.index(v)] / rate
        return np.array([-u[v] for v in nodes])

    w0 = np.array([w[v] for v in nodes])
    l_ref = log1m_times(w0)
    np.testing.assert_allclose(l_ref, l1[np.array(nodes) - n], rtol=1e-10)
    jac = np.empty((len(nodes), len(nodes)))
    for j in range(len(nodes)):
        h = 1e-6 * max(1.0, abs(w0[j]))
        up, down = w0.copy(), w0.copy()
        up[j] += h
        down[j] -= h
        jac[:, j] = (log1m_times(up) - log1m_times(down)) / (2 * h)
    sign, logdet = np.linalg.slogdet(jac)
    assert sign != 0
    assert logdet + l_ref.sum() == pytest.approx(log_jac, abs=1e-6)


def depth(parent, v):
    d = 0
    while parent[v] >= 0:
        v = parent[v]
        d += 1
    return d


@pytest.mark.parametrize(("n", "old", "new"), CASES)
def test_times_prior_cancels_to_the_structure_probability(n, old, new):
    """log p(structure, t' | new) + log |dt/dw|(new) - [the same at old] =
    log P(structure | theta', alpha') - log P(structure | theta, alpha): the prior of the
    standardised gaps does not depend on the parameters (Eqs. 4.23, 4.25 by the Op,
    Markov-branching probability by log_structure_prob)."""
    for seed in range(4):
        tree = _tree(n, old, 20 + seed)
        X = np.zeros((n, 0))
        _l, jac0 = noncentred_times(tree.parent, tree.log1m_t, n, tuple(old), tuple(old))
        l1, jac1 = noncentred_times(tree.parent, tree.log1m_t, n, tuple(old), tuple(new))
        lp0 = pydt_forward(tree.parent, tree.log1m_t, X, *old, 1.0)[0]
        lp1 = pydt_forward(tree.parent, l1, X, *new, 1.0)[0]
        lhs = (lp1 + jac1) - (lp0 + jac0)
        rhs = (log_structure_prob(tree.parent, new[1], new[2])
               - log_structure_prob(tree.parent, old[1], old[2]))
        assert lhs == pytest.approx(rhs, abs=1e-9 * (1 + abs(lp0)))


def test_invalid_parameters_give_minus_infinity():
    tree = _tree(5, (1.0, 1.0, 0.3), 0)
    for new in ((0.0, 1.0, 0.3), (1.0, 1.0, 1.0), (1.0, -1.0, 0.3)):
        l1, log_jac = noncentred_times(tree.parent, tree.log1m_t, 5, (1.0, 1.0, 0.3), tuple(new))
        assert log_jac == -np.inf
        np.testing.assert_array_equal(l1, tree.log1m_t)
