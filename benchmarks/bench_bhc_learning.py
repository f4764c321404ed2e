"""Benchmark panel: dendrogram purity of BHC with learned hyperparameters vs the fixed
empirical defaults.

For each data set and seed, three greedy BHC trees (Heller 2007 Alg. 3.2):

* ``default``: α = 1 and the empirical Beta prior of ``bhc.default_hyper`` (Heller
  §3.4.1: prior mean = data mean);
* ``MAP``: ``bhc.learn`` with its default priors (α ~ LogNormal(0, 1.5), the scale
  factors of a and b on the empirical values ~ LogNormal(0, 1)), the tree rebuilt at
  the MAP values;
* ``ML``: ``bhc.learn(priors=False)``, type-II maximum likelihood of Corollary 3.1's
  bound (Heller's scheme; values can run to the optimiser's box).

Data (Bernoulli likelihood; dendrogram purity, Heller §3.5 footnote 3, from
``pp_models.metrics``):

* binarised scikit-learn digits (8x8, pixel > 8 of 0..16, the analogue of Heller's
  CEDAR thresholding), classes {0, 2, 4} and {1, 3, 5, 7}, 50 per class, a new random
  subset per seed (Heller's Table 3.1 used 3 digits, 20 per class);
* two Bernoulli synthetic sets with known classes: ``proto10`` (the generator of
  ``bench_bhc.py``: 10 random prototypes, each bit 1 w.p. 0.3, 25 % of 64 bits flipped,
  n = 200) and ``proto4`` (4 prototypes, 32 bits, 10 % flipped, n = 120).

Prints per data set the mean ± s.d. over seeds of each column, the number of seeds on
which MAP >= default, the learned values, and wall time. Run:
``python benchmarks/bench_bhc_learning.py`` (``--seeds N``, ``--quick`` for 2 seeds and
smaller sets).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits

from benchmarks._memory import process_peak_mb
from pp_models import bhc
from pp_models.metrics import dendrogram_purity


def digits_subset(classes, per_class, seed):
    digits = load_digits()
    X, y = (digits.data > 8).astype(float), digits.target
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [rng.choice(np.flatnonzero(y == c), per_class, replace=False) for c in classes]
    )
    return X[idx], y[idx]


def prototypes(n, d, k, flip, seed, p_one=0.3):
    rng = np.random.default_rng(1000 + seed)
    protos = rng.random((k, d)) < p_one
    z = rng.integers(k, size=n)
    return (protos[z] ^ (rng.random((n, d)) < flip)).astype(float), z


def panel(quick):
    per = 30 if quick else 50
    return {
        "digits {0,2,4}": lambda s: digits_subset((0, 2, 4), per, s),
        "digits {1,3,5,7}": lambda s: digits_subset((1, 3, 5, 7), per, s),
        "proto10": lambda s: prototypes(100 if quick else 200, 64, 10, 0.25, s),
        "proto4": lambda s: prototypes(120, 32, 4, 0.10, s),
    }


def run_one(X, y, max_iter):
    out = {}
    t = time.perf_counter()
    out["default"] = dendrogram_purity(bhc.greedy(X).linkage, y)
    t_default = time.perf_counter() - t
    t = time.perf_counter()
    mp = bhc.learn(X, max_iter=max_iter)
    t_map = time.perf_counter() - t
    out["MAP"] = dendrogram_purity(mp.linkage, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        ml = bhc.learn(X, max_iter=max_iter, priors=False)
    out["ML"] = dendrogram_purity(ml.linkage, y)
    base = bhc.default_hyper(X, "bernoulli")
    learned = {
        "alpha_map": mp.alpha,
        "a_scale_map": float(mp.hyper["a"][0] / base["a"][0]),
        "b_scale_map": float(mp.hyper["b"][0] / base["b"][0]),
        "alpha_ml": ml.alpha,
        "ml_at_bound": bool(caught),
    }
    return out, learned, t_default, t_map


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--max-iter", type=int, default=5)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    seeds = range(2 if args.quick else args.seeds)

    # warm-up: Numba kernels and the learn objective's PyTensor compile
    t = time.perf_counter()
    Xw, _ = prototypes(40, 16, 3, 0.1, 99)
    bhc.learn(Xw, max_iter=1)
    t_warm = time.perf_counter() - t

    rows = []
    for name, make in panel(args.quick).items():
        res, vals, times = [], [], []
        for seed in seeds:
            X, y = make(seed)
            out, learned, t_default, t_map = run_one(X, y, args.max_iter)
            res.append(out)
            vals.append(learned)
            times.append((t_default, t_map))
        cols = {k: np.array([r[k] for r in res]) for k in ("default", "MAP", "ML")}
        wins = int(np.sum(cols["MAP"] >= cols["default"] - 1e-12))
        med = {k: float(np.median([v[k] for v in vals])) for k in vals[0] if k != "ml_at_bound"}
        n_bound = sum(v["ml_at_bound"] for v in vals)
        rows.append((name, X.shape, cols, wins, len(res), med, n_bound, np.mean(times, 0)))
        print(f"{name}: done", flush=True)

    print()
    print("| data (n x d) | default | MAP (learn) | ML (priors=False) | MAP >= default "
          "| worst MAP - default "
          "| MAP alpha, a x, b x (median) | ML alpha (median; runs on box) "
          "| time default / MAP (s) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, shape, cols, wins, n, med, n_bound, tm in rows:
        cell = {k: f"{v.mean():.3f} ± {v.std(ddof=1):.3f}" for k, v in cols.items()}
        print(
            f"| {name} ({shape[0]} x {shape[1]}) | {cell['default']} | {cell['MAP']} "
            f"| {cell['ML']} "
            f"| {wins}/{n} | {np.min(cols['MAP'] - cols['default']):+.3f} "
            f"| {med['alpha_map']:.2g}, {med['a_scale_map']:.2g}, "
            f"{med['b_scale_map']:.2g} | {med['alpha_ml']:.2g} ({n_bound}/{n}) "
            f"| {tm[0]:.2f} / {tm[1]:.2f} |"
        )
    print(f"\nwarm-up (Numba load + first PyTensor compile): {t_warm:.1f} s; each learn call "
          f"also compiles its objective (~0.5 s); process peak RSS {process_peak_mb():.0f} MB")


if __name__ == "__main__":
    main()
