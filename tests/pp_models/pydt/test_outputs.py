"""PYDT predictive density (§7.6): a proper density, the exact two-point case, and the
quadrature (default) against the Monte Carlo form."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from pp_models.pydt.outputs import log_predictive_tree
from pp_models.trees import DiffusionTree


def test_predictive_integrates_to_one_in_1d():
    rng = np.random.default_rng(0)
    tree = DiffusionTree(np.array([3, 3, 4, 4, -1]), np.log1p(-np.array([0.7, 0.3])))
    X = rng.normal(size=(3, 1))
    grid = np.linspace(-12, 12, 2001)[:, None]
    dens = np.exp(log_predictive_tree(tree, X, grid, c=1.0, theta=1.0, alpha=0.2,
                                      sigma2=1.0, n_positions=30, random_seed=1))
    assert integrate.trapezoid(dens, grid[:, 0]) == pytest.approx(1.0, abs=2e-3)


def test_two_leaves_single_position_matches_conditional_normal():
    """With a deterministic attachment (alpha -> 0, theta = 0, c huge: the new point
    diverges at t ~ 0 on the root segment) x* ~ N(0, sigma2) independent of X."""
    tree = DiffusionTree(np.array([2, 2, -1]), np.array([math.log1p(-0.5)]))
    X = np.array([[0.4], [-0.3]])
    x_new = np.array([[0.25], [1.5]])
    lp = log_predictive_tree(tree, X, x_new, c=1e6, theta=0.0, alpha=0.0, sigma2=2.0,
                             n_positions=5, random_seed=0)
    np.testing.assert_allclose(lp, stats.norm(0, math.sqrt(2.0)).logpdf(x_new[:, 0]),
                               rtol=1e-4)


def test_plot_results_draws_the_most_probable_sampled_tree(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import xarray as xr

    from pp_models.pydt.outputs import plot_results

    X = np.array([[-3.0], [-3.1], [3.0], [3.1]])
    times = np.log1p(-np.array([0.2, 0.9, 0.9]))
    # draw 0 pairs each cluster, draw 1 (the last) pairs points from different clusters
    wrong = DiffusionTree(np.array([5, 6, 5, 6, -1, 4, 4]), times).to_packed()
    right = DiffusionTree(np.array([5, 5, 6, 6, -1, 4, 4]), times).to_packed()
    packed = np.stack([right, wrong])[None]
    dims = ("chain", "draw")
    posterior = xr.Dataset({
        "tree": (dims + tuple(f"tree_dim_{i}" for i in range(packed.ndim - 2)), packed),
        "c": (dims, np.ones((1, 2))),
        "theta": (dims, np.ones((1, 2))),
        "alpha": (dims, np.full((1, 2), 0.5)),
        "sigma2": (dims, np.ones((1, 2))),
    })
    observed = xr.Dataset({"X": (("X_dim_0", "X_dim_1"), X)})
    dt = xr.DataTree.from_dict({"posterior": posterior, "observed_data": observed})
    path = tmp_path / "tree.png"
    fig = plot_results(dt, path)
    assert path.stat().st_size > 0
    title = fig.axes[0].get_title()
    assert "draw 0" in title
    # leaves are drawn in tree order: each cluster side by side
    ticks = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert {ticks[0], ticks[1]} in ({"0", "1"}, {"2", "3"})
    plt.close(fig)
    dt_no_data = xr.DataTree.from_dict({"posterior": posterior})
    fig = plot_results(dt_no_data)
    assert "last sampled tree" in fig.axes[0].get_title()
    assert "draw 1" in fig.axes[0].get_title()
    plt.close(fig)


def test_quadrature_predictive_matches_monte_carlo_over_positions():
    """The default predictive (position integrated out by messages + quadrature) against
    the Monte Carlo one (positions drawn from the generative process, each scored by the
    Op's p(X, x* | tree + x*) / p(X | tree)): independent code paths, agreement within
    the Monte Carlo error (test points away from the leaves, where its error is light)."""
    from pp_models import pydt

    for seed, (c, theta, alpha) in enumerate([(1.0, 1.0, 0.2), (2.0, 0.0, 0.0)]):
        draw = pydt.sample_prior(6, c=c, theta=theta, alpha=alpha, dim=2, sigma2=0.7,
                                 random_seed=seed)[0]
        x_new = np.random.default_rng(seed).normal(size=(3, 2))
        kw = dict(c=c, theta=theta, alpha=alpha, sigma2=0.7)
        exact = np.exp(log_predictive_tree(draw.tree, draw.X, x_new, **kw))
        blocks = np.exp([log_predictive_tree(draw.tree, draw.X, x_new, n_positions=500,
                                             random_seed=10 + b, **kw) for b in range(8)])
        se = blocks.std(axis=0, ddof=1) / math.sqrt(len(blocks))
        z = (exact - blocks.mean(axis=0)) / se
        assert np.all(np.abs(z) < 4), z


def test_quadrature_predictive_integrates_to_one_in_1d():
    from pp_models import pydt

    draw = pydt.sample_prior(5, c=1.0, theta=1.0, alpha=0.3, dim=1, sigma2=1.0,
                             random_seed=3)[0]
    grid = np.linspace(-15, 15, 3001)[:, None]
    dens = np.exp(log_predictive_tree(draw.tree, draw.X, grid, c=1.0, theta=1.0,
                                      alpha=0.3, sigma2=1.0))
    assert integrate.trapezoid(dens, grid[:, 0]) == pytest.approx(1.0, abs=1e-3)


def test_tree_picture_spreads_the_branch_points_and_names_the_leaves():
    # on main the times were drawn on a linear axis (a fitted tree's branch points crowd
    # into t = 0.8-1.0) and leaves past 40 went unnamed
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(3)
    n = 60
    parent = np.full(2 * n - 1, -1)
    active = list(range(n))
    next_slot = n
    while len(active) > 1:  # a random binary tree, merged bottom-up
        i, j = rng.choice(len(active), size=2, replace=False)
        a, b = active[i], active[j]
        parent[a] = parent[b] = next_slot
        active = [v for k, v in enumerate(active) if k not in (i, j)] + [next_slot]
        next_slot += 1
    # times increase towards the leaves: t = 1 - 10^-(depth-ish), all in [0.8, 0.99999]
    depth = np.zeros(2 * n - 1)
    for v in range(2 * n - 2, n - 1, -1):
        depth[v] = 0.0 if parent[v] < 0 else depth[parent[v]] + 1
    t = 1 - 0.2 * 10.0 ** (-depth[n:] / depth[n:].max() * 4)
    tree = DiffusionTree(parent, np.log1p(-t))
    names = [f"row {i}" for i in range(n)]
    ax = tree.plot(labels=names)
    y = np.concatenate([seg[:, 1] for seg in ax.collections[0].get_segments()])
    internal = np.sort(-np.log1p(-t))
    # every branch point is drawn at -log(1 - t): on this clock the 59 branch points span
    # more than 70 % of the axis above the leaves (on t's own axis: 20 %)
    assert np.all(np.isin(np.round(internal, 9), np.round(y, 9)))
    leaf_y = y.max()
    assert (internal.max() - internal.min()) / leaf_y > 0.7
    assert "1 (leaves)" in [tick.get_text() for tick in ax.get_yticklabels()]
    assert sorted(tick.get_text() for tick in ax.get_xticklabels()) == sorted(names)
    linear = tree.plot(labels=names, time_axis="linear")
    assert linear.get_ylim()[0] == pytest.approx(1.02)
    plt.close("all")
