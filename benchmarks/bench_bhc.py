"""Benchmark: Bayesian hierarchical clustering vs scipy's average linkage, one process.

1. greedy BHC (Heller 2007 Alg. 3.2, ``bhc.greedy``) against
   ``scipy.cluster.hierarchy.linkage(X, "average")`` on the same data:
   the 1,797 scikit-learn digits with pixels binarised (grey level > 8), and
   ``--n-large`` (10,000) synthetic binary points. Wall and CPU seconds after a warm-up
   call that compiles (its time printed apart), the kernel alone (the tree, without
   input checks and the evaluation of the result) as a second figure, peak RSS of each
   call (resident memory above the process's when the call started), the ratio, and
   the greedy kernel's pair counts (distinct pairs scored, re-scored by stale nodes,
   and how many needed the exact log r);
2. the purity cost of randomization: greedy vs randomized vs EMBHC on 2,000 points;
3. randomized BHC (RBHC, Alg. 3.4; and EMBHC, Alg. 3.6) on n = 20,000 against scipy's
   average linkage on the same 20,000 points.

Synthetic data: binary 64-d points from a mixture of 10 random prototypes (each bit 1
w.p. 0.3) with 25 % of the bits flipped, so the true classes are known, the problem is
not trivial, and dendrogram purity measures tree quality.

Run: ``python -m benchmarks.bench_bhc`` (``--quick`` for a smaller smoke run,
``--no-scipy-large`` to skip scipy on 20,000 points: it needs ~1.6 GB for the condensed
distance matrix). Times are single runs; on a shared machine compare the CPU seconds
(the process's own) as well as the wall-clock ones.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.cluster.hierarchy import linkage
from sklearn.datasets import load_digits

from benchmarks._memory import PeakRSS
from pp_models import bhc
from pp_models.bhc.defaults import resolve_hyper
from pp_models.bhc.greedy import TreeBuilder
from pp_models.metrics import dendrogram_purity


def make_data(n, d=64, k=10, flip=0.25, seed=0):
    rng = np.random.default_rng(seed)
    protos = rng.random((k, d)) < 0.3
    z = rng.integers(k, size=n)
    X = (protos[z] ^ (rng.random((n, d)) < flip)).astype(float)
    return X, z


def timed(fn, *args, **kwargs):
    t = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t


def measured(fn, *args, **kwargs):
    """(result, wall s, CPU s, peak RSS MB above the start) of one call."""
    with PeakRSS() as mem:
        wall, cpu = time.perf_counter(), time.process_time()
        out = fn(*args, **kwargs)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return out, wall, cpu, mem.peak_mb - mem.start_mb


def greedy_kernel_alone(X):
    """The greedy tree of binary ``X`` without input checks or the result's evaluation;
    returns the builder (its pair counts)."""
    hyper, _ = resolve_hyper(X, "bernoulli", None)
    builder = TreeBuilder(X, "bernoulli", 1.0, hyper)
    builder.greedy_points(np.arange(X.shape[0]))
    return builder


def greedy_vs_average(name, X, z):
    print(f"\n== greedy BHC vs scipy average linkage: {name}, n = {X.shape[0]}, "
          f"d = {X.shape[1]} binary ==")
    res, t_bhc, c_bhc, m_bhc = measured(bhc.greedy, X, progressbar=False)
    builder, t_k, c_k, _m = measured(greedy_kernel_alone, X)
    Z_avg, t_avg, c_avg, m_avg = measured(linkage, X, "average")
    n = X.shape[0]
    print(f"{'':16s} {'wall s':>8s} {'CPU s':>8s} {'peak MB':>8s} {'purity':>7s}")
    print(f"{'greedy BHC':16s} {t_bhc:8.3f} {c_bhc:8.3f} {m_bhc:8.1f} "
          f"{dendrogram_purity(res.linkage, z):7.4f}")
    print(f"{'  kernel alone':16s} {t_k:8.3f} {c_k:8.3f}")
    print(f"{'scipy average':16s} {t_avg:8.3f} {c_avg:8.3f} {m_avg:8.1f} "
          f"{dendrogram_purity(Z_avg, z):7.4f}")
    print(f"ratio BHC / average: wall {t_bhc / t_avg:.2f}, CPU {c_bhc / c_avg:.2f} "
          "(goal: within 5)")
    print(f"pairs: {builder.n_scored:,} distinct (= (n - 1)^2: {(n - 1) ** 2:,}), "
          f"{builder.n_rescored:,} re-scored by stale nodes, {builder.n_exact:,} "
          f"needed the exact log r; log p(D|T) = {res.log_evidence:.6f}")
    return res, t_bhc


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-large", type=int, default=10_000)
    parser.add_argument("--n-greedy", type=int, default=2000)
    parser.add_argument("--n-random", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="n = 500 / 2000 / 5000")
    parser.add_argument("--no-scipy-large", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_g, n_l, n_r = ((500, 2000, 5000) if args.quick
                     else (args.n_greedy, args.n_large, args.n_random))

    # warm-up: compile / load every Numba kernel used below
    Xw, _ = make_data(300, seed=99)
    t = time.perf_counter()
    bhc.greedy(Xw, progressbar=False)
    for estimator in (bhc.randomized, bhc.embhc):
        estimator(Xw, random_seed=0, subsample=50)
    greedy_kernel_alone(Xw)
    linkage(Xw, "average")
    print(f"warm-up (compiling or loading the kernels): {time.perf_counter() - t:.1f} s")

    digits = load_digits()
    greedy_vs_average("binarised digits", (digits.data > 8).astype(float), digits.target)
    X, z = make_data(n_l, seed=args.seed)
    greedy_vs_average("synthetic", X, z)

    X, z = make_data(n_g, seed=args.seed)
    res, t_bhc = timed(bhc.greedy, X, progressbar=False)
    dp_bhc = dendrogram_purity(res.linkage, z)
    print(f"\n== purity cost of randomization, same n = {n_g} ==")
    rows = [("greedy", res, t_bhc)]
    for method in ("randomized", "embhc"):
        r, t = timed(getattr(bhc, method), X, random_seed=args.seed)
        rows.append((method, r, t))
    for name, r, t in rows:
        dp = dendrogram_purity(r.linkage, z)
        print(
            f"{name:12s} {t:8.2f} s   purity {dp:.4f} ({dp - dp_bhc:+.4f} vs greedy)   "
            f"log p(D|T) {r.log_evidence:12.1f}   pairs scored {r.n_scored}"
        )

    print(f"\n== randomized BHC vs scipy average linkage, n = {n_r}, d = 64 binary ==")
    X, z = make_data(n_r, seed=args.seed + 1)
    times = {}
    for method in ("randomized", "embhc"):
        r, t = timed(getattr(bhc, method), X, random_seed=args.seed)
        times[method] = t
        print(
            f"{method:12s} {t:8.2f} s   purity {dendrogram_purity(r.linkage, z):.4f}   "
            f"pairs scored {r.n_scored}  (greedy would score {(n_r - 1) ** 2})"
        )
    if args.no_scipy_large:
        print("scipy average  skipped (--no-scipy-large)")
    else:
        Z_avg, t_avg = timed(linkage, X, "average")
        print(f"scipy average  {t_avg:8.2f} s   purity {dendrogram_purity(Z_avg, z):.4f}")
        for method, t in times.items():
            print(f"time ratio {method} / average = {t / t_avg:.2f}")
    print("(target: randomized BHC < 60 s)")


if __name__ == "__main__":
    main()
