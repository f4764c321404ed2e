"""Spanning-tree kernels and Op against enumeration of every labelled tree (Cayley)."""

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from scipy import stats
from scipy.sparse.csgraph import minimum_spanning_tree

from custom_ops.mixture_of_trees.spanning_tree import SpanningTreeLogpGrad, spanning_tree_logp_op
from custom_ops.trees import spanning as kernels
from pp_models.trees import (
    all_spanning_trees,
    check_spanning_tree,
    parents_from_edges,
    spanning_tree_edge_marginals,
    spanning_tree_edges,
    spanning_tree_log_partition,
)
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python


def _weights(V, seed):
    rng = np.random.default_rng(seed)
    W = rng.gamma(1.0, size=(V, V))
    W = W + W.T
    np.fill_diagonal(W, 0.0)
    return W


def _enumerated(W):
    trees = all_spanning_trees(W.shape[0])
    logw = np.array([sum(np.log(W[u, v]) for u, v in spanning_tree_edges(t)) for t in trees])
    return trees, logw


@pytest.mark.parametrize("V", [2, 3, 4, 5, 6])
def test_cayley_count_and_matrix_tree_theorem(V):
    trees = all_spanning_trees(V)
    assert len(trees) == V ** max(V - 2, 0)
    assert len({tuple(t) for t in trees}) == len(trees)
    assert all(kernels.is_spanning_tree(t) for t in trees)
    W = _weights(V, V)
    _, logw = _enumerated(W)
    np.testing.assert_allclose(spanning_tree_log_partition(W), np.logaddexp.reduce(logw),
                               rtol=1e-12)


@pytest.mark.parametrize("V", [4, 5, 6])
def test_edge_marginals_equal_enumeration(V):
    W = _weights(V, 10 + V)
    trees, logw = _enumerated(W)
    p = np.exp(logw - np.logaddexp.reduce(logw))
    expected = np.zeros((V, V))
    for t, pt_ in zip(trees, p, strict=True):
        for u, v in spanning_tree_edges(t):
            expected[u, v] += pt_
            expected[v, u] += pt_
    np.testing.assert_allclose(spanning_tree_edge_marginals(W), expected, atol=1e-12)


@pytest.mark.parametrize(("V", "n_draws"), [(4, 16_000), (5, 40_000)])
def test_wilson_sampler_chi_square(V, n_draws):
    W = _weights(V, 20 + V)
    trees, logw = _enumerated(W)
    p = np.exp(logw - np.logaddexp.reduce(logw))
    index = {tuple(t): i for i, t in enumerate(trees)}
    rng = np.random.default_rng(7)
    counts = np.zeros(len(trees))
    for _ in range(n_draws):
        counts[index[tuple(kernels.wilson_spanning_tree(rng, W))]] += 1
    chi2, pval = stats.chisquare(counts, n_draws * p)
    assert pval > 1e-3, (chi2, pval)


def test_maximum_spanning_tree_matches_scipy_and_forest():
    W = _weights(30, 1)
    parents = kernels.maximum_spanning_forest(W, False)
    assert kernels.is_spanning_tree(parents)
    ours = sum(W[u, v] for u, v in spanning_tree_edges(parents))
    ref = -minimum_spanning_tree(-W).sum()
    np.testing.assert_allclose(ours, ref, rtol=1e-12)
    signed = W - 1.5  # some edges negative: a forest of the positive ones
    forest = kernels.maximum_spanning_forest(signed, True)
    assert all(signed[u, v] > 0 for u, v in spanning_tree_edges(forest))


def test_representation_round_trip_and_validation():
    parents = np.array([-1, 0, 1, 1, 0])
    edges = spanning_tree_edges(parents)
    np.testing.assert_array_equal(parents_from_edges(edges, 5), parents)
    np.testing.assert_array_equal(kernels.reroot(kernels.reroot(parents, 3), 0), parents)
    with pytest.raises(ValueError, match="spanning tree"):
        parents_from_edges([[0, 1], [1, 2], [0, 2], [3, 4]], 5)
    with pytest.raises(ValueError, match="not a spanning tree"):
        check_spanning_tree([-1, 2, 1, 0])


def test_op_value_shape_and_gradient():
    V = 5
    W = _weights(V, 3)
    trees, logw = _enumerated(W)
    rows = trees[[0, 17, 99]]
    parents = pt.lmatrix("parents")
    weights = pt.tensor3("weights")
    out = spanning_tree_logp_op(parents, weights)
    f = pytensor.function([parents, weights], out)
    W3 = np.broadcast_to(W, (3, V, V)).copy()
    expected = logw[[0, 17, 99]] - np.logaddexp.reduce(logw)
    np.testing.assert_allclose(f(rows, W3), expected, rtol=1e-12)
    assert out.type.ndim == 1
    shape_fn = pytensor.function([parents, weights], out.shape)
    np.testing.assert_array_equal(shape_fn(rows, W3), [3])
    # not a tree: -inf; sums to one over all trees
    np.testing.assert_array_equal(f(np.array([[-1, 2, 1, 0, 0]]), W3[:1]), [-np.inf])
    all_lp = f(trees, np.broadcast_to(W, (len(trees), V, V)).copy())
    np.testing.assert_allclose(np.exp(all_lp).sum(), 1.0, rtol=1e-12)
    rng = np.random.default_rng(0)
    # the Ops' perform (test_python_and_numba_backends_agree compares Numba with it)
    pytensor.gradient.verify_grad(lambda w: spanning_tree_logp_op(rows, w).sum() * 1.0,
                                  [W3 + 0.5], rng=rng, mode=PYTHON_MODE)
    pytensor.gradient.verify_grad(
        lambda w: (spanning_tree_logp_op(rows, w) * np.array([0.3, -1.0, 2.0])).sum(),
        [W3 + 0.1], rng=rng, mode=PYTHON_MODE)
    with pytest.raises(TypeError, match="integer"):
        spanning_tree_logp_op(pt.matrix(), weights)


def test_python_and_numba_backends_agree():
    # perform (PyTensor's Python backend) once crashed: its kernels lacked the wrapper
    # that a call from Python needs
    V = 5
    W = _weights(V, 4)
    rows = all_spanning_trees(V)[[3, 50, 124]]
    parents = pt.lmatrix("parents")
    weights = pt.tensor3("weights")
    lp = spanning_tree_logp_op(parents, weights)
    g = pytensor.grad((lp * np.array([0.5, -1.0, 2.0])).sum(), weights)
    W3 = np.broadcast_to(W + 0.2, (3, V, V)).copy()
    assert_numba_matches_python([parents, weights], [lp, g], [rows, W3],
                                op=SpanningTreeLogpGrad)


@pytest.mark.parametrize(("V", "n_draws", "scale"), [(4, 8000, 1.0), (5, 20_000, 1.0),
                                                     (5, 20_000, 60.0)])
def test_sequential_sampler_chi_square(V, n_draws, scale):
    """Exact even when log weights span ~hundreds of nats (scale 60), where Wilson's
    random walks would not finish."""
    rng = np.random.default_rng(V)
    logW = scale * rng.normal(size=(V, V))
    logW = logW + logW.T
    trees = all_spanning_trees(V)
    logw = np.array([sum(logW[u, v] for u, v in spanning_tree_edges(t)) for t in trees])
    p = np.exp(logw - np.logaddexp.reduce(logw))
    index = {tuple(t): i for i, t in enumerate(trees)}
    counts = np.zeros(len(trees))
    for _ in range(n_draws):
        counts[index[tuple(kernels.sequential_spanning_tree(rng, logW))]] += 1
    keep = n_draws * p > 5  # chi-square cells with enough expected counts; pool the rest
    observed = np.r_[counts[keep], counts[~keep].sum()]
    expected = np.r_[n_draws * p[keep], n_draws * p[~keep].sum()]
    if expected[-1] == 0:
        assert observed[-1] == 0
        observed, expected = observed[:-1], expected[:-1]
    if len(expected) > 1:
        assert stats.chisquare(observed, expected).pvalue > 1e-3
    else:
        assert observed[0] == n_draws


def _enumerated_log_marginals(logW):
    V = logW.shape[0]
    trees = all_spanning_trees(V)
    logw = np.array([sum(logW[u, v] for u, v in spanning_tree_edges(t)) for t in trees])
    log_p = logw - np.logaddexp.reduce(logw)
    out = np.full((V, V), -np.inf)
    for t, lp in zip(trees, log_p, strict=True):
        for u, v in spanning_tree_edges(t):
            out[u, v] = out[v, u] = np.logaddexp(out[u, v], lp)
    return out


@pytest.mark.parametrize("V", [4, 5])
@pytest.mark.parametrize("scale", [0.5, 150.0])
def test_log_edge_marginals_equal_enumeration(V, scale):
    """Relative accuracy of every edge marginal, including ones near e^-600 and ones
    that round to exactly 1, when the log weights span hundreds of nats (scale 150)."""
    rng = np.random.default_rng(int(V + scale))
    logW = scale * rng.normal(size=(V, V))
    logW = logW + logW.T
    expected = _enumerated_log_marginals(logW)
    got = kernels.spanning_tree_log_edge_marginals(logW)
    off = ~np.eye(V, dtype=bool)
    assert np.all(got[off] <= 0.0) and np.all(np.isneginf(np.diag(got)))
    np.testing.assert_allclose(got[off], expected[off], rtol=0, atol=1e-10)
    if scale > 1:
        assert got[off].min() < -100  # the range that a Laplacian solve would lose
    np.testing.assert_allclose(np.exp(got).sum(), 2 * (V - 1), rtol=1e-12)


def test_log_edge_marginals_of_a_near_bridge_and_larger_graphs():
    """Node 4 hangs on one edge of weight 1 and three of e^-800 (below the smallest
    double): that edge's marginal is exactly 1 and the others' logs are exact; at V = 16
    and 40 with weights spanning ~1000 nats the marginals are finite and sum to V - 1."""
    rng = np.random.default_rng(3)
    logW = rng.normal(size=(5, 5))
    logW = logW + logW.T
    logW[4, :4] = logW[:4, 4] = -800.0
    logW[4, 2] = logW[2, 4] = 0.0
    got = kernels.spanning_tree_log_edge_marginals(logW)
    expected = _enumerated_log_marginals(logW)
    assert np.exp(got[4, 2]) == 1.0
    np.testing.assert_allclose(got[4, [0, 1, 3]], expected[4, [0, 1, 3]], rtol=1e-12)
    for V in (16, 40):
        logW = 150.0 * rng.normal(size=(V, V))
        logW = logW + logW.T
        p = np.exp(kernels.spanning_tree_log_edge_marginals(logW))
        assert np.all(np.isfinite(p)) and p.max() <= 1.0
        np.testing.assert_allclose(p.sum() / 2, V - 1, rtol=1e-10)
    # moderate weights: equal to the Laplacian-inverse formula
    W = _weights(7, 5)
    logW = np.log(W + np.eye(7))  # the diagonal is ignored
    np.testing.assert_allclose(np.exp(kernels.spanning_tree_log_edge_marginals(logW)),
                               spanning_tree_edge_marginals(W), atol=1e-12)


def _python_breadth_first(parents):
    """Plain BFS from node 0 over the children lists, children in increasing index."""
    children = {v: [] for v in range(len(parents))}
    for v, p in enumerate(parents):
        if p >= 0:
            children[int(p)].append(v)
    order, queue = [], [0]
    while queue:
        u = queue.pop(0)
        order.append(u)
        queue.extend(children[u])
    return order


@pytest.mark.parametrize("V", [1, 2, 3, 7, 30])
def test_breadth_first_order_matches_python_bfs_on_random_trees(V):
    rng = np.random.default_rng(V)
    for _ in range(20):
        parents = kernels.prufer_to_parents(rng.integers(0, V, size=V - 2), V) if V > 1 \
            else np.array([-1], dtype=np.int64)
        order = kernels.breadth_first_order(parents)
        assert order.tolist() == _python_breadth_first(parents)
        position = np.empty(V, dtype=np.int64)
        position[order] = np.arange(V)
        assert all(position[p] < position[v] for v, p in enumerate(parents) if p >= 0)


def test_breadth_first_order_leaves_out_nodes_off_the_tree():
    # nodes 2 and 3 form a cycle that never reaches node 0
    order = kernels.breadth_first_order(np.array([-1, 0, 3, 2, 1]))
    assert order.tolist() == [0, 1, 4]


def test_max_categories():
    assert kernels.max_categories(np.array([2, 5, 3])) == 5
    assert kernels.max_categories(np.zeros(0, dtype=np.int64)) == 0


def test_children_lists_and_capacity_of_the_shared_breadth_first_walk():
    from custom_ops.trees import breadth_first, children_lists

    rng = np.random.default_rng(5)
    for _ in range(20):
        V = int(rng.integers(1, 25))
        # a forest with unused slots: entries -1 (root) and -2 (unused) have no parent
        parents = np.array([rng.integers(-2, v) if v else -1 for v in range(V)])
        ptr, idx = children_lists(parents)
        for v in range(V):
            assert idx[ptr[v]:ptr[v + 1]].tolist() == \
                [w for w in range(V) if parents[w] == v]
        order, n_reached, complete = breadth_first(0, ptr, idx, V)
        assert complete
        assert order[:n_reached].tolist() == _python_breadth_first(np.where(
            parents >= 0, parents, -1))
    # a cycle through the root overflows the capacity instead of looping
    ptr, idx = children_lists(np.array([1, 0]))
    order, n_reached, complete = breadth_first(0, ptr, idx, 2)
    assert not complete and order[:n_reached].tolist() == [0, 1]
