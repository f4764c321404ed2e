"""Benchmark: Bayesian hierarchical clustering vs scipy's average linkage, one process.

Data: binary 64-d points from a mixture of 10 random prototypes (each bit 1 w.p. 0.3)
with 25 % of the bits flipped, so the true classes are known, the problem is not
trivial, and dendrogram purity measures tree quality.

1. greedy BHC (Heller 2007 Alg. 3.2) on n = 2000 (target < 10 s) against
   ``scipy.cluster.hierarchy.linkage(X, "average")``;
2. randomized BHC (RBHC, Alg. 3.4; and EMBHC, Alg. 3.6) on n = 20,000 (target < 60 s)
   against scipy's average linkage on the same 20,000 points;
3. the purity cost of randomization: greedy vs randomized vs EMBHC on the n = 2000 set.

Run: ``python benchmarks/bench_bhc.py`` (``--quick`` for a smaller smoke run,
``--no-scipy-large`` to skip scipy on 20,000 points: it needs ~1.6 GB for the condensed
distance matrix). Times are wall-clock seconds of single runs after a warm-up that
compiles the Numba kernels; on a shared machine expect +-20 % noise.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.cluster.hierarchy import linkage

from pp_models import bhc
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-greedy", type=int, default=2000)
    parser.add_argument("--n-random", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true", help="n = 500 / 5000")
    parser.add_argument("--no-scipy-large", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    n_g, n_r = (500, 5000) if args.quick else (args.n_greedy, args.n_random)

    # warm-up: compile / load every Numba kernel used below
    Xw, _ = make_data(300, seed=99)
    bhc.greedy(Xw)
    for estimator in (bhc.randomized, bhc.embhc):
        estimator(Xw, random_seed=0, subsample=50)

    print(f"== greedy BHC vs scipy average linkage, n = {n_g}, d = 64 binary ==")
    X, z = make_data(n_g, seed=args.seed)
    res, t_bhc = timed(bhc.greedy, X)
    Z_avg, t_avg = timed(linkage, X, "average")
    dp_bhc = dendrogram_purity(res.linkage, z)
    dp_avg = dendrogram_purity(Z_avg, z)
    print(f"greedy BHC      {t_bhc:8.2f} s   purity {dp_bhc:.4f}   pairs scored {res.n_scored}")
    print(f"scipy average   {t_avg:8.2f} s   purity {dp_avg:.4f}")
    print(f"time ratio BHC / average = {t_bhc / t_avg:.1f}  (target: BHC < 10 s)")

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
            f"pairs scored {r.n_scored}  (greedy would score ~{n_r * (n_r - 1)})"
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
