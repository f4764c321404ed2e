"""Binary merge trees (pp_models.trees): conversions round-trip, validation names the
problem, statistics agree with scipy."""

import numpy as np
import pytest
from scipy.cluster import hierarchy

from pp_models import trees


def _random_linkage(n, seed):
    X = np.random.default_rng(seed).normal(size=(n, 3))
    return hierarchy.linkage(X, "average")


@pytest.mark.parametrize("seed", range(4))
def test_round_trips(seed):
    Z = _random_linkage(12 + seed, seed)
    m = trees.merges_from_linkage(Z)
    n = m.shape[0] + 1
    np.testing.assert_array_equal(m, Z[:, :2].astype(np.int64))
    # linkage: same merges, heights and sizes as scipy's
    L = trees.to_linkage(m, Z[:, 2])
    np.testing.assert_allclose(L, Z)
    assert hierarchy.is_valid_linkage(trees.to_linkage(m))
    # parent vector: children sorted within a row, otherwise the same merges
    back = trees.from_parents(trees.to_parents(m))
    np.testing.assert_array_equal(back, np.sort(m, axis=1))
    # Newick: leaves keep their ids, merges come back in post-order with the same clusters
    text = trees.to_newick(m, heights=Z[:, 2])
    m2, names, heights = trees.from_newick(text)
    ids = np.array([int(s) for s in names])
    relabelled = np.where(m2 < n, ids[np.minimum(m2, n - 1)], m2)

    def clusters(merges):
        return {frozenset(trees.leaves_under(merges, k)) for k in range(n, 2 * n - 1)}

    assert clusters(relabelled) == clusters(m)
    order = {frozenset(trees.leaves_under(relabelled, n + t)): t for t in range(n - 1)}
    h_by_cluster = {c: heights[t] for c, t in order.items()}
    for t in range(n - 1):
        assert h_by_cluster[frozenset(trees.leaves_under(m, n + t))] == pytest.approx(Z[t, 2])
    assert trees.from_newick(trees.to_newick(m))[2] is None


def test_newick_names_and_lengths():
    m = np.array([[0, 1], [3, 2]])
    assert trees.to_newick(m) == "((0,1),2);"
    assert trees.to_newick(np.array([[0, 1], [2, 3]])) == "(2,(0,1));"
    assert trees.to_newick(m, ["a", "b", "c"], heights=[1.0, 3.0]) == "((a:1.0,b:1.0):2.0,c:3.0);"
    merges, names, heights = trees.from_newick("((a:1,b:1):2,c:3);")
    np.testing.assert_array_equal(merges, m)
    assert names == ["a", "b", "c"]
    np.testing.assert_allclose(heights, [1.0, 3.0])


@pytest.mark.parametrize("seed", range(3))
def test_statistics_agree_with_scipy(seed):
    Z = _random_linkage(15, seed)
    m = trees.merges_from_linkage(Z)
    n = 15
    root = hierarchy.to_tree(Z)
    nodes = {}
    stack = [root]
    while stack:
        node = stack.pop()
        nodes[node.id] = node
        if not node.is_leaf():
            stack.extend((node.left, node.right))
    sizes = trees.node_sizes(m)
    for k in range(2 * n - 1):
        assert sorted(trees.leaves_under(m, k)) == sorted(nodes[k].pre_order())
        assert sizes[k] == nodes[k].get_count()
    np.testing.assert_array_equal(sizes[n:], Z[:, 3])

    def height(node):
        return 0 if node.is_leaf() else 1 + max(height(node.left), height(node.right))

    assert trees.tree_height(m) == height(root)
    depths = trees.node_depths(m)
    assert depths[2 * n - 2] == 0 and depths.max() == height(root)


@pytest.mark.parametrize(
    ("merges", "n", "match"),
    [
        (np.zeros((3, 3)), 4, "shape"),
        (np.array([[0, 5], [1, 2]]), 3, "must exist"),
        (np.array([[0, 1], [0, 2]]), 3, "merged twice"),
        (np.array([[1, 1], [0, 3]]), 3, "with itself"),
        (np.array([[0.5, 1], [2, 3]]), 3, "integers"),
        (np.array([["a", "b"], ["c", "d"]]), 3, "numeric"),
        (np.array([[0, 1]]), 1, "at least 2"),
    ],
)
def test_validation_errors(merges, n, match):
    with pytest.raises(ValueError, match=match):
        trees.validate_merges(merges, n)


def test_conversion_errors():
    with pytest.raises(ValueError, match="parents"):
        trees.from_parents(np.array([3, 3, 4, 4, 4]))  # node 4 is its own parent
    with pytest.raises(ValueError, match="two children"):
        trees.from_parents(np.array([4, 4, 4, 4, -1]))
    with pytest.raises(ValueError, match="binary"):
        trees.from_newick("(a,b,c);")
    with pytest.raises(ValueError, match=";"):
        trees.from_newick("(a,b)")
    with pytest.raises(ValueError, match="heights"):
        trees.to_linkage(np.array([[0, 1]]), [1.0, 2.0])
    with pytest.raises(ValueError, match="delimiter"):
        trees.to_newick(np.array([[0, 1]]), ["a,", "b"])
    with pytest.raises(ValueError, match="node"):
        trees.leaves_under(np.array([[0, 1]]), 3)


def test_diffusion_tree_clades_are_the_leaf_sets_under_its_non_root_branch_points():
    from pp_models.trees import UNUSED_SLOT, DiffusionTree

    # 5 leaves; root 8 -> (5 -> 0, 1, 2 [a multifurcation]), (6 -> 3, 4); slot 7 unused
    parent = np.array([5, 5, 5, 6, 6, 8, 8, UNUSED_SLOT, -1])
    tree = DiffusionTree(parent, np.log1p(-np.array([0.5, 0.6, 0.0, 0.2])))
    np.testing.assert_array_equal(tree.clades().astype(int),
                                  [[1, 1, 1, 0, 0], [0, 0, 0, 1, 1]])
