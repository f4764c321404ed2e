"""structure.png: a compact layout, names inside their boxes, a legend for the edge styles."""

import matplotlib.pyplot as plt
import numpy as np
import xarray as xr

from pp_models.mixture_of_trees.outputs import plot_structure
from pp_models.trees import maximum_spanning_tree, spanning_tree_edges

WORDS = ["international", "government", "president", "company", "market", "shares",
         "billion", "percent", "trading", "exchange", "official", "minister", "economic",
         "reuters", "analysts", "quarter", "profit", "dollar", "interest", "central",
         "foreign", "offering", "industry", "products", "agreement", "national", "oil",
         "prices", "production", "futures"]


def _random_tree(rng, V):
    parents = np.full(V, -1)
    order = rng.permutation(V)
    for k in range(1, V):
        parents[order[k]] = order[rng.integers(k)]
    return parents


def _fit_like(K=3, V=30, draws=10, seed=0):
    """A DataTree shaped like a mixture-of-trees fit: per component, three trees drawn
    in 4, 3 and 3 of the draws, so the most probable tree has edges below 0.5."""
    rng = np.random.default_rng(seed)
    trees = np.empty((1, draws, K, V), dtype=np.int64)
    for k in range(K):
        options = [_random_tree(rng, V) for _ in range(3)]
        for s in range(draws):
            trees[0, s, k] = options[0 if s < 4 else 1 if s < 7 else 2]
    w = np.tile(np.array([0.2, 0.5, 0.3])[:K], (1, draws, 1))
    posterior = xr.Dataset({"trees": (("chain", "draw", "component", "node"), trees),
                            "w": (("chain", "draw", "component"), w)},
                           coords={"node": WORDS[:V]})
    return xr.DataTree.from_dict({"posterior": posterior})


def test_structure_is_compact_named_inside_boxes_and_explained():
    # on main: 3 components of 30 nodes made a 4455 x 550 pixel strip, words in circles
    # too small for them, and dashed edges no legend explained
    dt = _fit_like()
    fig = plot_structure(dt)
    width, height = fig.get_size_inches() * 110
    assert width <= 1400 and height <= 2600 and width / height < 3
    for ax in fig.axes:
        boxed = [t for t in ax.texts if t.get_bbox_patch() is not None]
        assert sorted(t.get_text() for t in boxed) == sorted(WORDS)
    assert fig.legends and "posterior probability" in fig.legends[0].get_title().get_text()
    assert any("P < 0.5" in t.get_text() for t in fig.legends[0].get_texts())
    # largest component first; its dashed edges are the tree's edges below 0.5
    assert "weight 0.50" in fig.axes[0].get_title()
    probs = dt["posterior"]["trees"].values  # frequencies of the three trees
    freq = np.zeros((30, 30))
    for parents in probs[0, :, 1]:
        has = parents >= 0
        freq[np.flatnonzero(has), parents[has]] += 0.1
    freq = freq + freq.T
    edges = spanning_tree_edges(maximum_spanning_tree(freq))
    below = sum(freq[u, v] < 0.5 for u, v in edges)
    dashed = [line for line in fig.axes[0].lines if line.get_linestyle() != "-"]
    assert below > 0 and len(dashed) == below
    plt.close(fig)


def test_centred_parents_halves_a_path():
    from pp_models.tree_pictures import centred_parents

    path = np.array([-1, 0, 1, 2, 3, 4, 5])  # 0-1-2-...-6 rooted at an end: depth 6
    centred = centred_parents(path)
    assert centred[3] == -1
    assert sorted(map(tuple, spanning_tree_edges(centred))) == sorted(
        map(tuple, spanning_tree_edges(path)))
