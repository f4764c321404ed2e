"""Benchmark: Chow-Liu trees and mixture-of-trees EM, one process.

Data: 10,000 x 100 binary from a random tree (random recursive tree; the root is a fair
coin, each child = parent XOR Bernoulli(0.2)), as in the project's anchors note.

1. ``pp_models.mixture_of_trees.chow_liu`` against pgmpy 1.1.2
   ``TreeSearch(df).estimate(estimator_type="chow-liu")`` and against a plain NumPy
   mutual-information matrix (X^T X and the margins) + ``scipy.sparse.csgraph.
   minimum_spanning_tree`` on -MI; edges recovered out of 99 for each;
2. the kernels alone (count matrix + MI + Prim) without validation and CPTs;
3. ``em(X, 5)`` (Meilă-Jordan, 1 restart, max 100 iterations) on the same data;
4. the Bayesian sampler's sweeps per second at V = 50 through ``inference.fit``.

Run ``python benchmarks/bench_trees.py`` (``--quick``: 2,000 rows; ``--no-pgmpy``;
``--no-bayes``). Times are medians of 5 runs after a warm-up call that compiles the
Numba kernels (compile time printed apart); on a shared machine expect +-20 % noise.
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np
from scipy.sparse.csgraph import minimum_spanning_tree

from custom_ops.trees.spanning import (
    maximum_spanning_forest,
    pairwise_mutual_information,
)
from pp_models.mixture_of_trees import chow_liu, em
from pp_models.mixture_of_trees.chow_liu import discrete_statistics
from pp_models.trees import spanning_tree_edges


def make_data(n, V, flip=0.2, seed=0):
    rng = np.random.default_rng(seed)
    parents = np.array([-1] + [int(rng.integers(0, v)) for v in range(1, V)])
    X = np.zeros((n, V), dtype=np.int64)
    X[:, 0] = rng.integers(0, 2, n)
    for v in range(1, V):
        X[:, v] = X[:, parents[v]] ^ (rng.random(n) < flip)
    return X, parents


def numpy_scipy_chow_liu(X):
    """The practical baseline: MI of binary pairs from X^T X, then scipy's MST on -MI."""
    n = X.shape[0]
    Xf = X.astype(np.float64)
    n11 = Xf.T @ Xf
    n1 = Xf.sum(axis=0)
    p1 = n1 / n
    p0 = 1 - p1
    cells = [
        (n11, p1[:, None], p1[None, :]),
        (n1[:, None] - n11, p1[:, None], p0[None, :]),
        (n1[None, :] - n11, p0[:, None], p1[None, :]),
        (n - n1[:, None] - n1[None, :] + n11, p0[:, None], p0[None, :]),
    ]
    mi = np.zeros_like(n11)
    with np.errstate(divide="ignore", invalid="ignore"):
        for c, pa, pb in cells:
            p = c / n
            mi += np.where(p > 0, p * np.log(p / (pa * pb)), 0.0)
    np.fill_diagonal(mi, 0.0)
    mst = minimum_spanning_tree(-mi).tocoo()
    return np.sort(np.stack([mst.row, mst.col], axis=1), axis=1)


def kernels_only(X, K):
    joint, marginal, offsets, total = discrete_statistics(X, K)
    mi = pairwise_mutual_information(joint, marginal, offsets, K, total, 0.0)
    return maximum_spanning_forest(mi, False)


def pgmpy_chow_liu(X):
    import pandas as pd
    from pgmpy.estimators import TreeSearch

    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    dag = TreeSearch(df).estimate(estimator_type="chow-liu", show_progress=False)
    return np.sort(np.array([[int(u[1:]), int(v[1:])] for u, v in dag.edges()]), axis=1)


def median_time(fn, *args, repeats=5, **kwargs):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn(*args, **kwargs)
        times.append(time.perf_counter() - t)
    return out, float(np.median(times))


def recovered(edges, truth):
    return len({tuple(e) for e in edges} & {tuple(e) for e in truth})


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bayes_sweeps_per_second(V=50, n=1000, K=3, draws=100):
    import warnings

    from inference import fit
    from pp_models import mixture_of_trees

    X, _ = make_data(n, V, seed=3)
    model = mixture_of_trees.model(X, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit(model, method="gibbs", draws=5, tune=0, chains=1, random_seed=0, progressbar=False)
        t = time.perf_counter()
        fit(model, method="gibbs", draws=draws, tune=0, chains=1, random_seed=1,
            progressbar=False)
    return draws / (time.perf_counter() - t)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-pgmpy", action="store_true")
    parser.add_argument("--no-bayes", action="store_true")
    args = parser.parse_args(argv)
    n, V = (2000, 100) if args.quick else (10_000, 100)
    X, parents = make_data(n, V)
    truth = spanning_tree_edges(parents)

    t = time.perf_counter()
    chow_liu(X[:200, :5])
    print(f"warm-up (Numba compile or cache load): {time.perf_counter() - t:.2f} s")
    chow_liu(X)
    numpy_scipy_chow_liu(X)
    print(f"== Chow-Liu, {n} x {V} binary, flip 0.2 ==")
    tree, t_ours = median_time(chow_liu, X)
    base_edges, t_base = median_time(numpy_scipy_chow_liu, X)
    K = np.full(V, 2, dtype=np.int64)
    kern, t_kern = median_time(kernels_only, X, K)
    print(f"pp_models chow_liu       {t_ours:8.4f} s   edges {recovered(tree.edges, truth)}/99")
    print(f"  kernels alone          {t_kern:8.4f} s   edges "
          f"{recovered(spanning_tree_edges(kern), truth)}/99")
    print(f"NumPy MI + scipy MST     {t_base:8.4f} s   edges "
          f"{recovered(base_edges, truth)}/99   ratio ours/baseline {t_ours / t_base:.2f}")
    if not args.no_pgmpy:
        pg_edges, t_pg = median_time(pgmpy_chow_liu, X, repeats=1)
        print(f"pgmpy 1.1.2 TreeSearch   {t_pg:8.4f} s   edges {recovered(pg_edges, truth)}/99"
              f"   speed-up {t_pg / t_ours:.0f}x")
    print(f"== EM, K = 5, 1 restart, max 100 iterations, {n} x {V} ==")
    t = time.perf_counter()
    mix = em(X, 5, random_seed=0, max_iter=100)
    t_em = time.perf_counter() - t
    print(f"em                       {t_em:8.2f} s   {mix.n_iter} iterations, "
          f"{t_em / mix.n_iter * 1000:.0f} ms each, converged {mix.converged}, "
          f"log-lik {mix.log_likelihood:.1f}")
    if not args.no_bayes:
        rate = bayes_sweeps_per_second()
        print(f"== Bayesian mixture of trees, V = 50, n = 1000, K = 3 ==\n"
              f"fit(method='gibbs')      {rate:8.1f} sweeps/s")
    print(f"peak RSS {peak_rss_mb():.0f} MB; load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores (times scale with it on a shared machine)")


if __name__ == "__main__":
    main()
