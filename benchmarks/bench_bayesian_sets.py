"""Benchmark: Bayesian Sets retrieval vs scikit-learn's cosine and tf-idf nearest
neighbours, one process.

1. Precision at k on labelled data: the 1,797 scikit-learn digits, pixels binarised
   (grey level > 8). A query is ``--query-size`` random images of one digit; every other
   image is ranked; precision@k is the fraction of the top k (query left out) showing
   the same digit. ``--repeats`` random queries per digit, all ten digits. Methods:

   * Bayesian Sets (``pp_models.bayesian_sets.rank``, kappa = 2, Heller 2007 ch. 4);
   * cosine: ``sklearn.neighbors.NearestNeighbors(metric="cosine")`` queried with the
     mean of the unit-normalised query rows (ranks by the average cosine similarity to
     the query, the COS baseline of Heller 2007 §6.4);
   * cosine, nearest to any: the smallest cosine distance to any query item (NNall of
     §5.3);
   * tf-idf: ``TfidfTransformer`` rows, then the mean-cosine query.

2. Speed at scale: a sparse binary corpus (``--n-large`` items, ``--d-large`` features,
   ~``--nnz-per-row`` ones per row, Zipf-like feature frequencies) with queries of 5
   items: Bayesian Sets (one sparse matrix-vector product per query) against the cosine
   nearest-neighbour query on the same CSR matrix.

Times: index building (scikit-learn's ``fit``; the tf-idf transform) apart from the
per-query time (median over the queries, after one warm-up query); peak RSS of each
method's block (:class:`benchmarks._memory.PeakRSS`, the resident set above the
process's when the block started). Run: ``python -m benchmarks.bench_bayesian_sets``
(``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import normalize

from benchmarks._memory import PeakRSS
from pp_models import bayesian_sets as bs


class BayesianSets:
    name = "Bayesian Sets (ours)"

    def __init__(self, X):
        self.X = X

    def top(self, query, k):
        return bs.rank(self.X, query, top=k, exclude_query=True).items


class CosineMean:
    """Rank by the average cosine similarity to the query items (the query centroid of
    unit rows), through NearestNeighbors."""

    name = "cosine NN (mean)"

    def __init__(self, X):
        self.rows = normalize(X.astype(np.float64))
        self.nn = NearestNeighbors(metric="cosine", algorithm="brute").fit(self.rows)

    def top(self, query, k):
        center = np.asarray(self.rows[query].mean(axis=0)).reshape(1, -1)
        if sp.issparse(self.rows):
            center = sp.csr_matrix(center)
        idx = self.nn.kneighbors(center, n_neighbors=k + len(query),
                                 return_distance=False)[0]
        return idx[~np.isin(idx, query)][:k]


class CosineAny(CosineMean):
    """Rank by the smallest cosine distance to any query item: the union of each query
    item's k + N nearest holds the exact top k of that ranking."""

    name = "cosine NN (nearest to any)"

    def top(self, query, k):
        dist, idx = self.nn.kneighbors(self.rows[query], n_neighbors=k + len(query))
        best = {}
        for d, i in zip(dist.ravel(), idx.ravel(), strict=True):
            if i not in best or d < best[i]:
                best[i] = d
        for q in query:
            best.pop(q, None)
        items = np.fromiter(best, dtype=np.int64)
        dists = np.fromiter(best.values(), dtype=float)
        return items[np.lexsort((items, dists))][:k]


class TfidfMean(CosineMean):
    name = "tf-idf cosine NN (mean)"

    def __init__(self, X):
        self.rows = TfidfTransformer().fit_transform(sp.csr_matrix(X))  # l2-normalised
        if not sp.issparse(X):
            self.rows = self.rows.toarray()
        self.nn = NearestNeighbors(metric="cosine", algorithm="brute").fit(self.rows)


METHODS = (BayesianSets, CosineMean, CosineAny, TfidfMean)


def run(method_cls, X, queries, k_max):
    """(method, index seconds, per-query wall seconds, per-query CPU seconds, tops, peak
    RSS MB over the block)."""
    with PeakRSS() as mem:
        t = time.perf_counter()
        method = method_cls(X)
        t_index = time.perf_counter() - t
        method.top(queries[0], k_max)  # warm-up
        tops, times, cpus = [], [], []
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            tops.append(method.top(q, k_max))
            times.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
    return (method, t_index, np.array(times), np.array(cpus), tops,
            mem.peak_mb - mem.start_mb)


def precision_at_k(args):
    digits = load_digits()
    X = (digits.data > 8).astype(np.float64)
    y = digits.target
    rng = np.random.default_rng(args.seed)
    queries, labels = [], []
    for c in range(10):
        members = np.flatnonzero(y == c)
        for _ in range(args.repeats):
            queries.append(rng.choice(members, size=args.query_size, replace=False))
            labels.append(c)
    ks = (10, 50, 100)
    print(f"== precision@k, binarised digits: n = {X.shape[0]}, d = {X.shape[1]}, "
          f"{len(queries)} queries of {args.query_size} images (each digit "
          f"{args.repeats} times) ==")
    header = (f"{'method':30s} " + " ".join(f"{'P@' + str(k):>12s}" for k in ks)
              + f" {'index s':>8s} {'ms/query':>9s} {'peak MB':>8s}")
    print(header)
    for cls in METHODS:
        _m, t_index, times, _cpus, tops, peak = run(cls, X, queries, max(ks))
        precs = []
        for k in ks:
            p = np.array([np.mean(y[top[:k]] == c) for top, c in zip(tops, labels,
                                                                        strict=True)])
            precs.append(f"{p.mean():.3f}±{p.std(ddof=1) / np.sqrt(p.size):.3f}")
        print(f"{cls.name:30s} " + " ".join(f"{s:>12s}" for s in precs)
              + f" {t_index:8.3f} {1e3 * np.median(times):9.3f} {peak:8.1f}")
    print("(± one standard error over queries)")


def zipf_corpus(n, d, nnz_per_row, seed):
    rng = np.random.default_rng(seed)
    freq = 1.0 / np.arange(1, d + 1) ** 0.9
    freq /= freq.sum()
    nnz = n * nnz_per_row
    rows = np.repeat(np.arange(n), nnz_per_row)
    cols = rng.choice(d, size=nnz, p=freq)
    X = sp.csr_matrix((np.ones(nnz), (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X.data[:] = 1.0
    return X


def speed_at_scale(args):
    X = zipf_corpus(args.n_large, args.d_large, args.nnz_per_row, args.seed)
    rng = np.random.default_rng(args.seed + 1)
    queries = [rng.choice(X.shape[0], size=5, replace=False) for _ in range(args.n_queries)]
    k = 100
    print(f"\n== speed: sparse binary corpus n = {X.shape[0]:,}, d = {X.shape[1]:,}, "
          f"nnz = {X.nnz:,} ({X.nnz * 12 / 1e6:.0f} MB as CSR); {len(queries)} queries of 5, "
          f"top {k} ==")
    print(f"{'method':30s} {'index s':>8s} {'ms/query':>9s} {'CPU ms':>8s} {'peak MB':>8s}")
    ours = None
    for cls in (BayesianSets, CosineMean, TfidfMean):
        _m, t_index, times, cpus, _tops, peak = run(cls, X, queries, k)
        ms, cpu = 1e3 * np.median(times), 1e3 * np.median(cpus)
        ours = (ms, cpu) if ours is None else ours
        ratio = ("" if cls is BayesianSets
                 else f"  ({ms / ours[0]:.1f}x ours wall, {cpu / ours[1]:.1f}x CPU)")
        print(f"{cls.name:30s} {t_index:8.3f} {ms:9.2f} {cpu:8.2f} {peak:8.1f}{ratio}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--query-size", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--n-large", type=int, default=500_000)
    parser.add_argument("--d-large", type=int, default=50_000)
    parser.add_argument("--nnz-per-row", type=int, default=40)
    parser.add_argument("--n-queries", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="5 repeats, n = 50,000")
    args = parser.parse_args(argv)
    if args.quick:
        args.repeats, args.n_large, args.n_queries = 5, 50_000, 5
    precision_at_k(args)
    speed_at_scale(args)


if __name__ == "__main__":
    main()
