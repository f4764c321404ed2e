"""Randomized Bayesian hierarchical clustering for large n (Heller 2007 §3.6):
:func:`randomized` (RBHC, Alg. 3.4 with the filter of Alg. 3.5) and :func:`embhc`
(Alg. 3.6). Both build an ordinary BHC tree over all points from greedy BHC on
subsamples (:class:`~pp_models.bhc.greedy.TreeBuilder`)."""

from __future__ import annotations

import math

import numpy as np

from custom_ops.bhc import builders as kernels
from custom_ops.bhc import evidence as ops
from pp_models import trees
from pp_models.bhc.greedy import build_tree
from pp_models.bhc.result import BHCResult
from pp_models.validation import check_choice, check_int, rng_from_seed

__all__ = ["embhc", "randomized"]


class _MergeList:
    """Accumulates merges over global node ids (leaves 0..n-1, merge t -> n + t)."""

    def __init__(self, n):
        self.n = n
        self.rows = []

    def add(self, i, j):
        self.rows.append((int(i), int(j)))
        return self.n + len(self.rows) - 1

    def add_local(self, idx, local_merges):
        """Append a local tree over rows ``idx``; return its root's global id."""
        k = len(idx)
        if k == 1:
            return int(idx[0])
        ids = list(int(i) for i in idx)
        for i, j in local_merges:
            ids.append(self.add(ids[i], ids[j]))
        return ids[-1]

    def array(self):
        return np.array(self.rows, dtype=np.int64).reshape(-1, 2)


def _local_log_pi(local_merges, k, alpha):
    """log π of every node of a local tree (Alg. 3.3; π = 1 at leaves)."""
    la = math.log(alpha)
    log_d = np.full(2 * k - 1, la)
    log_pi = np.zeros(2 * k - 1)
    sizes = np.ones(2 * k - 1)
    for t, (i, j) in enumerate(local_merges):
        sizes[k + t] = sizes[i] + sizes[j]
        log_d[k + t] = np.logaddexp(la + math.lgamma(sizes[k + t]), log_d[i] + log_d[j])
        log_pi[k + t] = la + math.lgamma(sizes[k + t]) - log_d[k + t]
    return log_pi, sizes


def _frontier(local_merges, k, split):
    """Nodes of the subsample tree the remaining points are filtered into.

    ``split="top"``: the two children of the root (Heller 2007 Alg. 3.4 verbatim).
    ``split="balanced"``: descend from the root, always opening the largest node, until
    no node holds more than half of the subsample; BHC's top merges are often very
    unbalanced (an outlier split off), and this bounds the recursion depth by O(log n).
    """
    sizes = np.ones(2 * k - 1)
    for t, (i, j) in enumerate(local_merges):
        sizes[k + t] = sizes[i] + sizes[j]
    root = 2 * k - 2
    front = [int(c) for c in local_merges[root - k]]
    if split == "balanced":
        while True:
            big = max(front, key=lambda c: sizes[c])
            if sizes[big] <= k / 2 or big < k:
                break
            front.remove(big)
            front.extend(int(c) for c in local_merges[big - k])
    return front


def _frontier_mixture(builder, sub, local, front, log_prior):
    """Nodes of the subtrees under the frontier with log weights log π_g + log ω_k^(g)
    (Eq. 3.11 within subtree g), for the tree-predictive filter."""
    k = len(sub)
    stats = kernels.node_stats(builder.fam, builder.X[sub], local)
    _log_p, log_r, log_q, _d, _ml, _s = ops.tree_forward(
        builder.fam, builder.pstats[sub], local, builder.alpha, builder.H
    )
    sizes = stats[:, 0]
    rows, weights, groups = [], [], []
    for g, f in enumerate(front):
        stack = [(f, 0.0)]
        while stack:
            c, log_g = stack.pop()
            rows.append(c)
            weights.append(log_prior[g] + log_g + log_r[c])
            groups.append(g)
            if c >= k:
                for child in local[c - k]:
                    stack.append((int(child), log_g + log_q[c] + math.log(sizes[child] / sizes[c])))
    return stats[np.array(rows)], np.array(weights), np.array(groups)


def _rbhc(builder, rng, subsample, leaf_size, filter_prior, split, filter_predictive):
    """Randomized BHC (Heller 2007 Alg. 3.4 with the Filter of Alg. 3.5), iteratively.

    A set larger than ``leaf_size`` is organised by greedy BHC on ``subsample`` of its
    points; every other point x is filtered into the frontier node g of that subsample
    tree (:func:`_frontier`) maximising π_g p(x | D_g^[m]) (predictives against the
    subsample only, as in Alg. 3.5; p(x | D_g^[m]) is the BHC tree predictive of the
    subtree g (Eqs. 3.10-3.11) or, with ``filter_predictive="cluster"``, the single-
    cluster conjugate predictive); each frontier group is built recursively and the
    groups are joined by the subsample tree's own merges above the frontier. Sets of at
    most ``leaf_size`` points get exact greedy BHC.
    """
    X = builder.X
    n = X.shape[0]
    out = _MergeList(n)
    slots = [None]
    # explicit stack (unbalanced splits could recurse deeply): ("build", idx, slot) or
    # ("join", (local merges, frontier, child slots, k), slot)
    work = [("build", np.arange(n), 0)]
    while work:
        kind, payload, slot = work.pop()
        if kind == "join":
            local, front, child_slots, k = payload
            ids = {f: slots[s] for f, s in zip(front, child_slots, strict=True)}
            for t, (i, j) in enumerate(local):
                if int(i) in ids and int(j) in ids:
                    ids[k + t] = out.add(ids.pop(int(i)), ids.pop(int(j)))
            (slots[slot],) = ids.values()
            continue
        idx = payload
        if len(idx) <= leaf_size:
            slots[slot] = out.add_local(idx, builder.greedy_points(idx) if len(idx) > 1 else None)
            builder.placed(len(idx))
            continue
        sub_pos = rng.choice(len(idx), size=subsample, replace=False)
        sub = idx[sub_pos]
        k = len(sub)
        local = builder.greedy_points(sub)
        front = _frontier(local, k, split)
        groups = [np.array(trees.leaves_under(local, f)) for f in front]
        rest_mask = np.ones(len(idx), dtype=bool)
        rest_mask[sub_pos] = False
        rest = idx[rest_mask]
        if filter_prior == "size":
            log_prior = np.log(np.array([len(g) for g in groups], dtype=float))
        else:
            # literal reading of Alg. 3.5: the π the BHC run computed for those nodes
            log_pi, _sizes = _local_log_pi(local, k, builder.alpha)
            log_prior = np.array([log_pi[f] for f in front])
        if filter_predictive == "tree":
            cst, log_w, group = _frontier_mixture(builder, sub, local, front, log_prior)
            side = builder.assign(X[rest], cst, log_w, group, len(front))
        else:
            cst = np.stack([builder.pstats[sub[g]].sum(0) for g in groups])
            side = builder.assign(X[rest], cst, log_prior)
        child_slots = []
        for _ in front:
            slots.append(None)
            child_slots.append(len(slots) - 1)
        work.append(("join", (local, front, child_slots, k), slot))
        for g_pos, (g, cs) in enumerate(zip(groups, child_slots, strict=True)):
            work.append(("build", np.concatenate([sub[g], rest[side == g_pos]]), cs))
    return out.array()


def _embhc(builder, rng, subsample, em_iterations):
    """EMBHC (Heller 2007 Alg. 3.6): ``subsample`` random points seed clusters; the
    others are filtered into them; ``em_iterations`` rounds of hard EM reassign every
    point to argmax_c log n_c + log p(x | D_c); then greedy BHC inside each cluster, and
    greedy BHC over the clusters as leaves, each leaf carrying its subtree's log d and
    log p(D | T) (so the whole tree is an ordinary BHC tree over the points)."""
    X = builder.X
    n = X.shape[0]
    seeds = rng.choice(n, size=subsample, replace=False)
    cst = builder.pstats[seeds].copy()
    z = builder.assign(X, cst, np.zeros(len(seeds)))
    z[seeds] = np.arange(len(seeds))
    for _ in range(em_iterations):
        used = np.unique(z)
        z = np.searchsorted(used, z)
        cst = np.zeros((len(used), builder.pstats.shape[1]))
        np.add.at(cst, z, builder.pstats)
        counts = np.bincount(z, minlength=len(used)).astype(float)
        z_new = builder.assign(X, cst, np.log(counts))
        if np.array_equal(z_new, z):
            break
        z = z_new
    z = np.searchsorted(np.unique(z), z)
    out = _MergeList(n)
    C = int(z.max()) + 1
    roots, stats, log_d, log_p = [], [], [], []
    for c in range(C):
        idx = np.flatnonzero(z == c)
        local = builder.greedy_points(idx) if len(idx) > 1 else None
        roots.append(out.add_local(idx, local))
        builder.placed(len(idx))
        s, ld, lp = builder.subtree_values(idx, local)
        stats.append(s)
        log_d.append(ld)
        log_p.append(lp)
    if C > 1:
        top = builder.greedy_nodes(np.array(stats), np.array(log_d), np.array(log_p))
        ids = list(roots)
        for i, j in top:
            ids.append(out.add(ids[i], ids[j]))
    return out.array()


def randomized(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    random_seed=None,
    subsample=None,
    leaf_size=None,
    filter_prior="size",
    split="balanced",
    filter_predictive="tree",
    progressbar: bool = True,
) -> BHCResult:
    """Randomized BHC (RBHC; Heller 2007 Alg. 3.4 with the filter of Alg. 3.5):
    O(n m log n) time for subsample size m.

    Parameters
    ----------
    X, likelihood, alpha, hyper
        As for :func:`~pp_models.bhc.greedy`.
    random_seed : int or numpy Generator, optional
        For the subsamples.
    subsample : int, optional
        m, the subsample size (default min(n, 200)).
    leaf_size : int, optional
        Sets of at most this many points get exact greedy BHC (default 4 m).
    filter_prior : {"size", "pi"}
        The filter weights π_g: the nodes' subsample sizes (DPM-natural, default) or the
        literal π that BHC computed for those nodes (Heller's Alg. 3.5 is ambiguous).
    split : {"balanced", "top"}
        Filter through the two top-level children of the subsample tree (``"top"``,
        Alg. 3.4 verbatim) or through the frontier where no node holds more than half
        of the subsample (``"balanced"``, default; keeps the recursion O(log n) deep
        when BHC's top split peels off outliers).
    filter_predictive : {"tree", "cluster"}
        p(x | D_g^[m]) in the filter is the BHC tree predictive of the subsample subtree
        (Eq. 3.10, default) or one conjugate cluster's predictive.
    progressbar : bool
        A progress line (points placed in the tree) when the run takes over a second;
        off in CI (see :mod:`pp_models.progress`).

    Returns
    -------
    BHCResult
    """
    def merges_of(builder):
        m, ls = _randomized_options(
            builder.X.shape[0], "randomized", subsample, leaf_size, 3, filter_prior, split,
            filter_predictive,
        )
        rng = rng_from_seed(random_seed)
        return _rbhc(builder, rng, m, ls, filter_prior, split, filter_predictive)

    return build_tree(X, likelihood, alpha, hyper, "randomized", merges_of,
                      progressbar=progressbar)


def embhc(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    random_seed=None,
    subsample=None,
    em_iterations=3,
    progressbar: bool = True,
) -> BHCResult:
    """EMBHC (Heller 2007 Alg. 3.6): ``subsample`` random points seed clusters, hard EM
    reassigns the points, then greedy BHC inside each cluster and over the clusters.

    Heller's Prop. 3.3 counts O(k n m) for the filter and EM passes and a tree over the
    m clusters; the tree here goes on down to the points, with greedy BHC inside every
    cluster: about n^2 / m pair scores more (n^1.5 with the default m = sqrt(n)), a
    small fraction of :func:`~pp_models.bhc.greedy`'s n^2 (the first call in a process
    compiles the kernels).

    Parameters
    ----------
    X, likelihood, alpha, hyper
        As for :func:`~pp_models.bhc.greedy`.
    random_seed : int or numpy Generator, optional
        For the seeds.
    subsample : int, optional
        m, the number of seed points (default min(n, max(20, sqrt(n)))).
    em_iterations : int
        Hard-EM rounds.
    progressbar : bool
        A progress line (points placed in the tree) when the run takes over a second;
        off in CI (see :mod:`pp_models.progress`).

    Returns
    -------
    BHCResult
    """
    def merges_of(builder):
        m, _ls = _randomized_options(
            builder.X.shape[0], "embhc", subsample, None, em_iterations, "size", "balanced",
            "tree",
        )
        rng = rng_from_seed(random_seed)
        return _embhc(builder, rng, m, int(em_iterations))

    return build_tree(X, likelihood, alpha, hyper, "embhc", merges_of,
                      progressbar=progressbar)


def _randomized_options(
    n, method, subsample, leaf_size, em_iterations, filter_prior, split, filter_predictive
):
    """Validate the randomized builders' options; return (m, leaf size)."""
    check_choice(filter_predictive, "filter_predictive", ("tree", "cluster"))
    check_choice(split, "split", ("balanced", "top"))
    check_choice(filter_prior, "filter_prior", ("size", "pi"))
    check_int(em_iterations, "em_iterations", minimum=0)
    default_m = min(n, 200) if method == "randomized" else min(n, max(20, int(math.sqrt(n))))
    # the bounds depend on the data: n points, and leaves of at least subsample points
    m = default_m if subsample is None else check_int(subsample, f"subsample (n = {n})",
                                                      minimum=2, maximum=n)
    ls = 4 * m if leaf_size is None else check_int(leaf_size, f"leaf_size (subsample = {m})",
                                                   minimum=m)
    return m, ls
