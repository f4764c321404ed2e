"""BHC's answer for ``ppzoo fit bhc``: the re-scored tree, its readable heights, the plot."""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import xarray as xr
from scipy.cluster.hierarchy import is_valid_linkage

from pp_models import bhc
from pp_models.bhc.outputs import TREE_GROUP, TreeAtPosteriorMedian, plot_results
from pp_models.bhc.result import readable_linkage

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def three_groups():
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(c, 0.3, (10, 2)) for c in (-4.0, 0.0, 4.0)])
    return X, bhc.greedy(X, likelihood="gaussian", alpha=1.0)


def test_readable_heights_keep_the_tree_and_unsquash_it(three_groups):
    _, tree = three_groups
    Z = readable_linkage(tree.merges, tree.log_rk)
    assert is_valid_linkage(Z)
    np.testing.assert_array_equal(Z[:, [0, 1, 3]], tree.linkage[:, [0, 1, 3]])
    # every merge sits above both children, by at least the 0.2 step
    n = tree.n
    heights = np.concatenate([np.zeros(n), Z[:, 2]])
    for t, (i, j) in enumerate(tree.merges):
        assert heights[n + t] >= max(heights[i], heights[j]) + 0.2 - 1e-12
    # the evidence heights put the top merges far above the rest; the readable ones
    # leave the within-cluster merges a visible share of the plot
    top_share = lambda h: np.median(h) / h.max()  # noqa: E731
    assert tree.linkage[:, 2].max() > 20  # the squashed case the issue describes
    assert top_share(Z[:, 2]) > 3 * top_share(tree.linkage[:, 2])


def _posterior_dt(alpha_draws):
    ds = xr.Dataset({"alpha": (("chain", "draw"), np.asarray(alpha_draws, float)[None, :])},
                    coords={"chain": [0], "draw": np.arange(len(alpha_draws))})
    return xr.DataTree.from_dict({"posterior": ds})


def test_tree_is_rescored_at_the_posterior_median(three_groups):
    X, tree = three_groups
    hook = TreeAtPosteriorMedian(X, "gaussian", tree.merges, 7.0, dict(tree.hyper))
    # median of the alpha draws is 1.0, the value the greedy tree was scored at
    out = hook(_posterior_dt([0.2, 1.0, 9.0]))
    np.testing.assert_allclose(out[TREE_GROUP]["log_rk"].values, tree.log_rk, rtol=1e-10)
    np.testing.assert_array_equal(out[TREE_GROUP]["cut"].values, tree.cut())
    assert out[TREE_GROUP].attrs["n_clusters"] == 3
    # a larger alpha makes "one cluster" less likely a priori: r_k goes down
    higher = hook(_posterior_dt([50.0, 50.0, 50.0]))[TREE_GROUP]["log_rk"].values
    assert np.all(higher <= tree.log_rk + 1e-12) and np.any(higher < tree.log_rk - 1e-3)


def test_plot_results_writes_a_png(three_groups, tmp_path):
    X, tree = three_groups
    hook = TreeAtPosteriorMedian(X, "gaussian", tree.merges, 1.0, dict(tree.hyper))
    path = tmp_path / "tree.png"
    plot_results(hook(_posterior_dt([1.0, 1.0])), path)
    assert path.stat().st_size > 0
    with pytest.raises(ValueError, match=TREE_GROUP):
        plot_results(_posterior_dt([1.0]), path)


def test_height_axis_reads_as_words_not_a_formula(three_groups):
    # it read "height: max(children) + 0.2 + log(1 - log r_k)"
    import matplotlib.pyplot as plt

    X, tree = three_groups
    hook = TreeAtPosteriorMedian(X, "gaussian", tree.merges, 1.0, dict(tree.hyper))
    fig = plot_results(hook(_posterior_dt([1.0, 1.0])))
    labels = [fig.axes[0].get_ylabel(), tree.plot().get_ylabel()]
    for label in labels:
        assert label.startswith("merge height")
        assert not any(s in label for s in ("max(children)", "log(1", "+ 0.2"))
    plt.close("all")
