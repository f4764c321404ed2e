"""Pictures of trees and forests over V labelled nodes (spanning trees: Chow-Liu,
mixtures of trees): a compact layout rooted at each component's centre, and the drawing.

The trees themselves (parent vectors, edge lists) are :mod:`pp_models.trees`'.
"""

from __future__ import annotations

import numpy as np

from pp_models.trees import spanning_tree_edges

__all__ = ["centred_parents", "plot_spanning_tree", "tree_figure_size", "tree_layout"]


def tree_layout(parents) -> np.ndarray:
    """(V, 2) positions for drawing a tree or forest: depth downwards, leaves spread
    evenly left to right, each parent centred over its children."""
    parents = np.asarray(parents, dtype=np.int64)
    V = parents.size
    children = [[] for _ in range(V)]
    for v, p in enumerate(parents):
        if p >= 0:
            children[p].append(v)
    pos = np.zeros((V, 2))
    next_x = [0.0]

    def place(v, depth):  # iterative would be longer; depth <= V stays small in practice
        if children[v]:
            xs = [place(c, depth + 1) for c in children[v]]
            x = 0.5 * (min(xs) + max(xs))
        else:
            x = next_x[0]
            next_x[0] += 1.0
        pos[v] = (x, -depth)
        return x

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * V + 100))
    try:
        for root in np.flatnonzero(parents < 0):
            place(int(root), 0)
    finally:
        sys.setrecursionlimit(limit)
    return pos


def centred_parents(parents) -> np.ndarray:
    """The same tree or forest re-rooted at each component's centre (a node of least
    eccentricity), which halves the depth of a path-like tree: the layout of
    :func:`tree_layout` then needs about half the height."""
    parents = np.asarray(parents, dtype=np.int64)
    V = parents.size
    neighbours = [[] for _ in range(V)]
    for v, p in enumerate(parents):
        if p >= 0:
            neighbours[v].append(int(p))
            neighbours[int(p)].append(v)

    def bfs(start):
        order, parent = [start], {start: -1}
        for v in order:
            for w in neighbours[v]:
                if w not in parent:
                    parent[w] = v
                    order.append(w)
        return order, parent

    out = np.full(V, -1, dtype=np.int64)
    seen = np.zeros(V, dtype=bool)
    for root in range(V):
        if seen[root]:
            continue
        order, _ = bfs(root)
        far, _ = bfs(order[-1])  # a longest path runs from order[-1] to far[-1]
        _, back = bfs(far[-1])
        path = [order[-1]]
        while path[-1] != far[-1]:
            path.append(back[path[-1]])
        centre = path[len(path) // 2]
        component, parent = bfs(centre)
        for v in component:
            out[v] = parent[v]
            seen[v] = True
    return out


def plot_spanning_tree(parents, *, labels=None, edge_values=None, ax=None, title=None,
                       fontsize: float = 8.0, dashed_below: float | None = None,
                       max_width: float = 4.0, vmax: float | None = None):
    """Draw a tree or forest rooted at its centre (:func:`centred_parents`,
    :func:`tree_layout`), each node's label written inside its box.

    ``edge_values`` (V, V) sets each line's width (e.g. mutual information or posterior
    edge probability), ``max_width`` at ``vmax`` (default: the largest value); edges
    whose value is below ``dashed_below`` are dashed. Returns the axes.
    """
    import matplotlib.pyplot as plt

    parents = centred_parents(parents)
    pos = tree_layout(parents)
    if ax is None:
        width, height = tree_figure_size(pos)
        _, ax = plt.subplots(figsize=(width, height))
    edges = spanning_tree_edges(parents)
    if edge_values is not None:
        vals = np.array([edge_values[u, v] for u, v in edges]) if edges.size else np.zeros(0)
        top = vmax if vmax is not None else (vals.max() if vals.size and vals.max() > 0
                                             else 1.0)
        widths = 0.5 + (max_width - 0.5) * np.minimum(vals / top, 1.0)
    else:
        vals = np.ones(len(edges))
        widths = np.full(len(edges), 1.5)
    for (u, v), lw, value in zip(edges, widths, vals, strict=True):
        dashed = dashed_below is not None and value < dashed_below
        ax.plot(pos[[u, v], 0], pos[[u, v], 1], color="0.35", lw=lw, zorder=1,
                ls=(0, (3, 2)) if dashed else "-")
    names = [str(i) for i in range(parents.size)] if labels is None else list(labels)
    for v, name in enumerate(names):
        ax.text(pos[v, 0], pos[v, 1], name, ha="center", va="center", fontsize=fontsize,
                zorder=3, bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="0.3", lw=0.8))
    ax.set_xlim(pos[:, 0].min() - 0.8, pos[:, 0].max() + 0.8)
    ax.set_ylim(pos[:, 1].min() - 0.6, pos[:, 1].max() + 0.6)
    ax.set_axis_off()
    if title:
        ax.set_title(title, fontsize=fontsize + 1)
    return ax


def tree_figure_size(pos, *, per_leaf: float = 0.75, per_level: float = 0.5) -> tuple:
    """(width, height) in inches for a :func:`tree_layout` ``pos``: room for a short
    word per leaf column and per level, at least 3 x 2."""
    pos = np.asarray(pos, dtype=np.float64)
    columns = np.ptp(pos[:, 0]) + 1 if pos.size else 1
    levels = np.ptp(pos[:, 1]) + 1 if pos.size else 1
    return max(3.0, per_leaf * columns + 0.6), max(2.0, per_level * levels + 0.8)
