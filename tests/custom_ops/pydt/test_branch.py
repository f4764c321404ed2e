"""The PYDT branch-point moves (custom_ops.pydt.branch): collapse an internal edge /
expand a branch point.

- The log acceptance ratio the kernel uses equals an independent recomputation: the
  Op's full log density (``custom_ops.pydt.ops.pydt_logp``, compiled once) of the tree
  before and after, plus the proposal probabilities counted here from the two parent
  vectors (collapsible edges, nodes of >= 3 children, subsets by ``math.comb``) and the
  time proposal's density written in ``t`` with ``A(t) = -c log(1 - t)`` and ``H`` from
  its sum (Eq. 4.24) by SciPy's ``gammaln``.
- The closed-form prior ratio of an expansion derived in the module docstring equals
  the change of the prior of ``pydt_forward``.
- The cached change of the density equals two full recursions after every proposal.
- Exact invariance: independent prior draws (4 and 5 leaves, no data) pushed through the
  moves alone keep the closed-form shape probabilities (chi-square over all labelled
  shapes and over the number of branch points), and the planted-bug twins (subset count
  dropped, time density dropped, an expansion's reverse count E(T) taken from the
  current tree instead of the proposed one) are caught by the same test.
"""

import math
from collections import Counter

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.special import gammaln

from custom_ops.pydt import draws as pydt_draws
from custom_ops.pydt import ops as pydt
from custom_ops.pydt.branch import (
    COLLAPSE,
    EXPAND,
    VOID,
    propose_branch_move,
    pydt_branch_moves,
)
from custom_ops.pydt.messages import PYDTParameters
from pp_models.trees import DiffusionTree
from tests.custom_ops.pydt import twins
from tests.oracles.pydt import shape_key, shape_probabilities


def _draw(rng, n, d, c, theta, alpha, sigma2=1.0, noise=0.0):
    parent = np.empty(2 * n - 1, dtype=np.int64)
    log1m_t = np.empty(n - 1)
    pydt_draws.pydt_draw_tree(rng, n, c, theta, alpha, parent, log1m_t)
    X = np.empty((n, d))
    pydt_draws.pydt_draw_data(rng, parent, log1m_t, sigma2, d, X)
    return parent, log1m_t, X + noise * rng.standard_normal(X.shape)


def _op_logp():
    """The Op's log density, compiled once: f(parent, log1m_t, X, c, theta, alpha, s2)."""
    parent = pt.lvector("parent")
    log1m_t = pt.dvector("log1m_t")
    X = pt.dmatrix("X")
    scalars = [pt.dscalar(name) for name in ("c", "theta", "alpha", "sigma2")]
    out = pydt.pydt_logp(parent, log1m_t, X, *scalars)
    return pytensor.function([parent, log1m_t, X, *scalars], out)


def _children(parent, v):
    return [int(w) for w in np.flatnonzero(parent == v)]


def _internal(parent, n):
    return [v for v in range(n, parent.shape[0]) if parent[v] != -2]


def _H(m, theta, alpha):
    """H_m (Eq. 4.24) by its sum."""
    i = np.arange(1, m + 1)
    return float(np.sum(np.exp(gammaln(i - alpha) - gammaln(i + 1 + theta))))


def _log_q_expand(parent, log1m_t, n, v, u, c, theta, alpha):
    """log probability (density in t_v) of proposing, from the tree without ``v``, the
    expansion that made ``v`` (children S) below ``u``; ``parent`` is the expanded tree."""
    S = _children(parent, v)
    k_u = len(_children(parent, u)) - 1 + len(S)
    # B of the tree before the expansion: u had k_u children, v did not exist
    before = parent.copy()
    before[S] = u
    before[v] = -2
    branch_points = sum(len(_children(before, w)) >= 3 for w in _internal(before, n))
    log_subset = -math.log(k_u - 2) - math.log(math.comb(k_u, len(S)))

    # A(t) = -c log(1 - t) and a(t) = c / (1 - t) from the stored log(1 - t): t itself
    # rounds near 1 (Eq. 4.26's divergence function)
    def log1m(w):
        return -math.inf if w < n else float(log1m_t[w - n])

    def A(w):
        return -c * log1m(w)

    leaves = sum(1 for i in range(n) if _is_below(parent, i, v))
    H = _H(leaves - 1, theta, alpha)
    A_min = min(A(w) for w in S)
    log_a_v = math.log(c) - log1m(v)
    log_norm = math.log1p(-math.exp(-H * (A_min - A(u))))
    log_time = log_a_v + math.log(H) - H * (A(v) - A(u)) - log_norm
    return math.log(0.5) - math.log(branch_points) + log_subset + log_time


def _is_below(parent, i, v):
    while i >= 0:
        if i == v:
            return True
        i = int(parent[i])
    return False


def _log_q_collapse(parent, n):
    """log probability of proposing a given collapse from the tree ``parent``."""
    return math.log(0.5) - math.log(len(_internal(parent, n)) - 1)


CASES = [
    (4, 1, 1.0, 1.0, 0.3),
    (9, 2, 1.0, 2.0, 0.3),
    (25, 3, 0.5, 2.0, 0.5),  # wide multifurcations
    (20, 2, 1.0, 3.0, -1.0),  # at most 3 children: collapses often -inf
    (40, 4, 2.0, 0.5, 0.1),
]


@pytest.mark.parametrize(("n", "d", "c", "theta", "alpha"), CASES)
def test_log_ratio_equals_op_density_and_proposal_terms(n, d, c, theta, alpha):
    logp = _op_logp()
    rng = np.random.default_rng(n)
    kinds = Counter()
    for rep in range(40):
        parent, log1m_t, X = _draw(rng, n, d, c, theta, alpha, 0.8, noise=0.2)
        before = logp(parent, log1m_t, X, c, theta, alpha, 0.8)
        p0, l0 = parent.copy(), log1m_t.copy()
        kind, v, u, log_ratio, _qf, _qr = propose_branch_move(
            rng, parent, log1m_t, X, PYDTParameters(c, theta, alpha, 0.8))
        kinds[int(kind)] += 1
        if kind == VOID:
            np.testing.assert_array_equal(parent, p0)
            np.testing.assert_array_equal(log1m_t, l0)
            continue
        v, u = int(v), int(u)
        after = logp(parent, log1m_t, X, c, theta, alpha, 0.8)
        if kind == EXPAND:
            pydt.check_tree(parent, log1m_t, n)
            assert _children(p0, v) == [] and p0[v] == -2 and parent[v] == u
            log_fwd = _log_q_expand(parent, log1m_t, n, v, u, c, theta, alpha)
            log_rev = _log_q_collapse(parent, n)
        else:
            assert kind == COLLAPSE and p0[v] == u and parent[v] == -2
            log_fwd = _log_q_collapse(p0, n)
            log_rev = _log_q_expand(p0, l0, n, v, u, c, theta, alpha)
        expected = float(after - before) + log_rev - log_fwd
        if not np.isfinite(after):
            assert log_ratio == -np.inf
            continue
        pydt.check_tree(parent, log1m_t, n)
        # the terms are differences of log densities up to |1e9| (leaves just below a
        # deep node): rounding scales with them
        scale = 1.0 + abs(float(before)) + abs(float(after))
        assert log_ratio == pytest.approx(expected, rel=1e-9, abs=1e-12 * scale), (rep, kind)
    assert kinds[COLLAPSE] > 5 and kinds[EXPAND] > 5, kinds


@pytest.mark.parametrize(("n", "c", "theta", "alpha"), [(9, 1.0, 2.0, 0.3),
                                                    (25, 0.5, 2.0, 0.5),
                                                    (40, 2.0, 0.5, 0.1)])
def test_prior_ratio_of_an_expansion_has_the_docstring_closed_form(n, c, theta, alpha):
    """The module docstring's p(T') / p(T) for an expansion (Eqs. 4.23, 4.25 with the
    Gamma factors cancelled) equals the change of the prior part of pydt_forward."""
    rng = np.random.default_rng(7 + n)
    checked = 0
    for _ in range(60):
        parent, log1m_t, _X = _draw(rng, n, 0, c, theta, alpha)
        X = np.zeros((n, 0))
        before = pydt.pydt_forward(parent, log1m_t, X, c, theta, alpha, 1.0)[0]
        kind, v, u, *_ = propose_branch_move(rng, parent, log1m_t, X,
                                             PYDTParameters(c, theta, alpha, 1.0))
        if kind != EXPAND:
            continue
        after = pydt.pydt_forward(parent, log1m_t, X, c, theta, alpha, 1.0)[0]
        v, u = int(v), int(u)
        S = _children(parent, v)
        j = len(S)
        k_u = len(_children(parent, u)) - 1 + j
        leaves = [sum(_is_below(parent, i, w) for i in range(n)) for w in S]
        m_v = sum(leaves)
        l_v, l_u = log1m_t[v - n], log1m_t[u - n]
        log_a_v = math.log(c) - l_v
        prod_new = sum(math.log(theta + (k - 1) * alpha) for k in range(3, j + 1))
        prod_old = sum(math.log(theta + (k - 1) * alpha) for k in range(k_u - j + 2, k_u + 1))
        dA = -c * (l_v - l_u)
        H_sum = sum(_H(nw - 1, theta, alpha) for nw in leaves)
        closed = (log_a_v + gammaln(m_v - alpha) - gammaln(m_v + theta) + prod_new
                  - prod_old - dA * (_H(m_v - 1, theta, alpha) - H_sum))
        assert closed == pytest.approx(after - before, rel=1e-9, abs=1e-9)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize(("n", "d", "c", "theta", "alpha"), CASES)
def test_cached_change_equals_full_recursion(n, d, c, theta, alpha):
    """After every proposal (kept or undone) of 200 moves: the change of the log density
    the ratio uses and the cached total agree with pydt_forward; moves are accepted."""
    rng = np.random.default_rng(100 + n)
    parent, log1m_t, X = _draw(rng, n, d, c, theta, alpha, 0.8, noise=0.3)
    accepted, err = pydt_branch_moves(rng, parent, log1m_t, X,
                                      PYDTParameters(c, theta, alpha, 0.8), 200, True)
    assert err < 1e-9
    pydt.check_tree(parent, log1m_t, n)
    assert accepted > 0


def test_ddt_move_is_void():
    """theta = alpha = 0: binary trees only, every collapse rejected, nothing to expand."""
    rng = np.random.default_rng(3)
    parent, log1m_t, X = _draw(rng, 30, 2, 1.0, 0.0, 0.0)
    p0, l0 = parent.copy(), log1m_t.copy()
    accepted, _ = pydt_branch_moves(rng, parent, log1m_t, X,
                                    PYDTParameters(1.0, 0.0, 0.0, 1.0), 100, False)
    assert accepted == 0
    np.testing.assert_array_equal(parent, p0)
    np.testing.assert_array_equal(log1m_t, l0)


# ------------------------------------------------------------------ exact invariance
PARAMS = {"c": 1.0, "theta": 1.0, "alpha": 0.3}


def run_moves(seed, n_leaves, bug=None, n_chains=4000, n_moves=10, params=PARAMS):
    """p-values (labelled shapes, number of branch points) of ``n_chains`` independent
    prior draws after ``n_moves`` branch moves each (the twin of ``bug``, a key of
    ``twins.BRANCH_BUGS``, for a bug), against the closed form."""
    moves = pydt_branch_moves if bug is None else twins.branch_twin(bug)
    rng = np.random.default_rng(seed)
    X = np.zeros((n_leaves, 0))
    probs = shape_probabilities(n_leaves, params["theta"], params["alpha"])
    keys = []
    for _ in range(n_chains):
        parent, log1m_t, _ = _draw(rng, n_leaves, 0, **params)
        moves(rng, parent, log1m_t, X, PYDTParameters(**params, sigma2=1.0), n_moves, False)
        keys.append(shape_key(DiffusionTree(parent, log1m_t, validate=False)))
    counts = Counter(keys)
    assert set(counts) <= set(probs)
    # shapes of probability 0 (a degree above the bound when alpha < 0) are never kept:
    # their proposals have density 0
    assert all(probs[k] > 0 for k in counts)
    support = [k for k, p in probs.items() if p > 0]
    observed = np.array([counts.get(k, 0) for k in support], dtype=float)
    expected = np.array([probs[k] for k in support]) * n_chains
    p_shape = stats.chisquare(observed, expected).pvalue
    sizes = np.array([len(k) for k in support])
    levels = sorted(set(sizes))
    obs_b = np.array([observed[sizes == j].sum() for j in levels])
    exp_b = np.array([expected[sizes == j].sum() for j in levels])
    p_branch = stats.chisquare(obs_b, exp_b).pvalue
    return p_shape, p_branch


def rejects(p_values, level=0.01):
    """Bonferroni over the tests at family-wise ``level``."""
    return min(p_values) * len(p_values) < level


@pytest.mark.parametrize("n_leaves", [4, 5])
def test_moves_keep_the_exact_prior(n_leaves):
    p = run_moves(seed=10 + n_leaves, n_leaves=n_leaves)
    print(f"{n_leaves} leaves, correct moves: p (shapes, branch points) = {p}")
    assert not rejects(p)


@pytest.mark.parametrize(("seed", "bug"), [(21, "subset count dropped"),
                                         (22, "time density dropped"),
                                         (23, "reverse count of the current tree")])
def test_planted_bugs_are_caught(seed, bug):
    p = run_moves(seed=seed, n_leaves=4, bug=bug)
    print(f"{bug}: p (shapes, branch points) = {p}")
    assert rejects(p)


@pytest.mark.slow
@pytest.mark.parametrize("params", [PARAMS, {"c": 0.5, "theta": 3.0, "alpha": -1.0},
                                    {"c": 2.0, "theta": 0.5, "alpha": 0.6}])
def test_false_alarm_and_power_over_ten_seeds(params):
    """Ten seeds of the exact test at 5 leaves for each parameter set (bounded degree
    3 in the second). Measured (seeds 300-309, 4000 draws x 10 moves):
    correct moves rejected 1, 0, 0 of 10; the subset-count and time-density twins
    caught 10 of 10 everywhere; the reverse-count twin 10, 8 (degree <= 3: few
    expansions to make) and 10 of 10."""
    seeds = range(300, 310)
    correct = sum(rejects(run_moves(s, 5, params=params)) for s in seeds)
    caught = {bug: sum(rejects(run_moves(s, 5, bug=bug, params=params)) for s in seeds)
              for bug in twins.BRANCH_BUGS}
    print(f"{params}: correct rejected {correct}/10; twins caught {caught}")
    assert correct <= 2
    assert caught["subset count dropped"] >= 9 and caught["time density dropped"] >= 9
    assert caught["reverse count of the current tree"] >= 6
