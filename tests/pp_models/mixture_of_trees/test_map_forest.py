"""MAP forest: Neapolitan (2003, p438) BDeu example, symmetry, BIC, brute force."""

import numpy as np
import pytest
from scipy.special import gammaln

from pp_models.mixture_of_trees import forest_log_marginal, map_forest
from pp_models.trees import all_spanning_trees, spanning_tree_edges

# the 8 cases of (X1, X2), values 1/2 recoded 0/1
NEAPOLITAN = np.array([(1, 1), (1, 2), (1, 1), (2, 2), (1, 1), (2, 1), (1, 1), (2, 2)]) - 1


def test_neapolitan_bdeu_example():
    g1 = forest_log_marginal(NEAPOLITAN, [-1, 0], ess=4.0)  # X1 -> X2
    g2 = forest_log_marginal(NEAPOLITAN, [-1, -1], ess=4.0)  # no edge
    np.testing.assert_allclose(np.exp(g1), 7.2150e-6, rtol=1e-4)
    np.testing.assert_allclose(np.exp(g1), 1 / 138600, rtol=1e-12)
    np.testing.assert_allclose(np.exp(g2), 6.7465e-6, rtol=1e-4)
    post = np.exp([g1, g2]) / np.exp([g1, g2]).sum()
    np.testing.assert_allclose(post, [0.51678, 0.48322], atol=1e-5)
    forest = map_forest(NEAPOLITAN, ess=4.0)
    np.testing.assert_array_equal(forest.edges, [[0, 1]])
    np.testing.assert_allclose(forest.log_score, g1, rtol=1e-12)
    # reversing the edge gives the same score (likelihood equivalence, Eq. 26.15)
    np.testing.assert_allclose(forest_log_marginal(NEAPOLITAN[:, ::-1], [-1, 0], ess=4.0), g1,
                               rtol=1e-12)
    # a small equivalent sample size penalises the edge less/more, but never breaks it
    assert map_forest(NEAPOLITAN, ess=4.0).edge_weights[0, 1] == pytest.approx(g1 - g2)


def test_neapolitan_by_hand():
    # G2 written out with Gamma functions (Murphy Eq. 26.26 corrected): priors (2, 2)
    def ml(counts, a):
        return (gammaln(sum(a)) - gammaln(sum(counts) + sum(a))
                + sum(gammaln(c + x) - gammaln(x) for c, x in zip(counts, a, strict=True)))

    by_hand = ml([5, 3], [2, 2]) + ml([5, 3], [2, 2])
    np.testing.assert_allclose(forest_log_marginal(NEAPOLITAN, [-1, -1], ess=4.0), by_hand)


def test_forest_is_the_best_forest_by_brute_force():
    rng = np.random.default_rng(4)
    V, n = 5, 60
    X = rng.integers(0, 2, size=(n, V))
    X[:, 1] = np.where(rng.random(n) < 0.85, X[:, 0], X[:, 1])
    X[:, 3] = np.where(rng.random(n) < 0.8, X[:, 2], X[:, 3])
    forest = map_forest(X, ess=1.0)
    # every forest is a spanning tree with some edges removed: enumerate trees x subsets
    best = -np.inf
    for t in all_spanning_trees(V):
        edges = spanning_tree_edges(t)
        for mask in range(2 ** len(edges)):
            keep = [e for i, e in enumerate(edges) if mask >> i & 1]
            parents = np.full(V, -1)
            # orient each kept component away from its smallest node
            adj = {v: [] for v in range(V)}
            for a, b in keep:
                adj[a].append(b)
                adj[b].append(a)
            seen = set()
            for r in range(V):
                if r in seen:
                    continue
                stack, seen = [r], seen | {r}
                while stack:
                    u = stack.pop()
                    for w in adj[u]:
                        if w not in seen:
                            parents[w] = u
                            seen.add(w)
                            stack.append(w)
            best = max(best, forest_log_marginal(X, parents, ess=1.0))
    np.testing.assert_allclose(forest.log_score, best, rtol=1e-12)
    assert 1 <= len(forest.edges) < V - 1  # a proper forest here
    assert {tuple(e) for e in forest.edges} >= {(0, 1), (2, 3)}


def test_bdeu_gains_symmetric_and_bic_drops_weak_edges():
    rng = np.random.default_rng(0)
    X = rng.integers(0, [2, 3, 4, 2], size=(200, 4))
    forest = map_forest(X, ess=2.0)
    np.testing.assert_allclose(forest.edge_weights, forest.edge_weights.T, atol=1e-9)
    bic = map_forest(X, score="bic")
    assert len(bic.edges) == 0  # independent columns: BIC keeps no edge
    G = rng.normal(size=(300, 4))
    G[:, 1] += 2 * G[:, 0]
    g = map_forest(G, score="bic", kind="gaussian")
    np.testing.assert_array_equal(g.edges, [[0, 1]])


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"score": "aic"}, "score"), ({"ess": 0.0}, "ess"), ({"ess": np.nan}, "ess"),
    ({"kind": "gaussian"}, "bic.* only"),
    ({"feature_names": ["a", "b", "c"]}, "feature_names has 3 names but X has 2 columns"),
    ({"feature_names": ["a"], "kind": "gaussian", "score": "bic"},
     "feature_names has 1 names but X has 2 columns"),
])
def test_bad_input(kwargs, match):
    with pytest.raises(ValueError, match=match):
        map_forest(NEAPOLITAN, **kwargs)
