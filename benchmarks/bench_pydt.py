"""Pitman-Yor diffusion tree: the Op (log density + gradient) at N = 2000, D = 171, and the
cost of full MCMC sweeps (every subtree moved once, every time slice-sampled) as N grows.

Knowles' C++ sampler (2014) needs 64.5 s per sweep at N = 1800, D = 171 (anchors-wave2.md;
not on PyPI, so not run here). A DP Gaussian mixture step on the same data is printed
beside ours for scale (scikit-learn's variational BayesianGaussianMixture, one fit).

Usage: python benchmarks/bench_pydt.py [--sweep-sizes 100 200 400] [--dim 171]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from custom_ops.pydt import pydt_forward, pydt_value_and_grad
from inference.gibbs.pydt import _log_post, _n_nonroot, detach_reattach, slice_time
from pp_models import pydt
from pp_models.pydt.greedy import greedy


def op_timing(n, d, reps=20):
    draw = pydt.sample_prior(n, c=1.0, theta=1.0, alpha=0.2, dim=d, random_seed=0)[0]
    t = draw.tree
    args = (t.parent, t.log1m_t, draw.X, 1.0, 1.0, 0.2, 1.0)
    t0 = time.perf_counter()
    pydt_value_and_grad(*args, 1.0, 1.0)
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(reps):
        pydt_forward(*args)
    fwd = (time.perf_counter() - t0) / reps
    t0 = time.perf_counter()
    for _ in range(reps):
        pydt_value_and_grad(*args, 1.0, 1.0)
    both = (time.perf_counter() - t0) / reps
    return compile_s, fwd, both


def sweep_timing(n, d, sweeps=1, seed=0):
    draw = pydt.sample_prior(n, c=1.0, theta=1.0, alpha=0.2, dim=d, random_seed=seed)[0]
    X = draw.X
    c, theta, alpha, sigma2 = 1.0, 1.0, 0.2, 1.0
    t0 = time.perf_counter()
    tree = greedy(X, c=c, theta=theta, alpha=alpha, sigma2=sigma2).tree
    greedy_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    current = _log_post(tree, X, c, theta, alpha, sigma2)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        for _ in range(_n_nonroot(tree)):
            cand = np.flatnonzero(tree.parent >= 0)
            v = int(cand[rng.integers(cand.size)])
            _ok, current = detach_reattach(rng, tree, v, X, c, theta, alpha, sigma2, current)
        for v in tree.internal_nodes:
            current = slice_time(rng, tree, int(v), X, c, theta, alpha, sigma2, current)
    return greedy_s, (time.perf_counter() - t0) / sweeps


def dpm_timing(X):
    try:
        from sklearn.mixture import BayesianGaussianMixture
    except ImportError:
        return None
    t0 = time.perf_counter()
    BayesianGaussianMixture(n_components=20, covariance_type="diag", max_iter=100,
                            random_state=0).fit(X)
    return time.perf_counter() - t0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep-sizes", type=int, nargs="+", default=[100, 200, 400])
    parser.add_argument("--dim", type=int, default=171)
    args = parser.parse_args()
    compile_s, fwd, both = op_timing(2000, args.dim)
    print(f"Op at N=2000, D={args.dim}: first call {compile_s:.2f} s (Numba, cached); "
          f"log density {fwd * 1e3:.2f} ms; log density + gradient {both * 1e3:.2f} ms "
          f"(goal < 20 ms)")
    times = []
    for n in args.sweep_sizes:
        greedy_s, sweep = sweep_timing(n, args.dim)
        times.append(sweep)
        X = pydt.sample_prior(n, c=1.0, theta=1.0, alpha=0.2, dim=args.dim,
                              random_seed=1)[0].X
        dpm = dpm_timing(X)
        dpm_txt = f"; sklearn DP mixture fit {dpm:.2f} s" if dpm is not None else ""
        print(f"N={n:5d} D={args.dim}: greedy build {greedy_s:.2f} s, one sweep "
              f"{sweep:.2f} s{dpm_txt}")
    if len(times) > 1:
        slope = np.polyfit(np.log(args.sweep_sizes), np.log(times), 1)[0]
        est = times[-1] * (1800 / args.sweep_sizes[-1]) ** slope
        print(f"sweep cost ~ N^{slope:.2f}; extrapolated N=1800: {est:.0f} s per sweep, "
              f"{100 * est / 60:.0f} min per 100 sweeps (C++ anchor: 64.5 s per sweep)")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
