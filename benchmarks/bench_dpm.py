"""Benchmark: DP mixture on 10,000 2-D points from 5 Gaussian clusters.

Time for our collapsed Gibbs sampler (Neal's Algorithm 3 + Jain-Neal split-merge, the
step ``fit`` uses for ``pp_models.dpm.model``) to reach ARI >= 0.94 against the true
labels, versus scikit-learn's variational ``BayesianGaussianMixture(
weight_concentration_prior_type="dirichlet_process", n_components=20)``, in the same
process. Both start from scratch: ours from one cluster (PyMC's initial point) in a
tuning chain, as ``fit`` runs it, so the step's first call also tries its greedy
sequential seating (``greedy_start``; also measured without it); sklearn from its
default k-means initialisation. ARI evaluations are not timed.

The user's path: ``fit(dpm.model(X), draws=100, tune=50, chains=1)`` after a warm-up
``fit`` on 200 points, with its default outputs and with ``postprocess=False``, each in
a fresh process so its peak RSS (``ru_maxrss``) is its own (``--fit-only``, with
``--n`` for other sizes).

Run: ``python benchmarks/bench_dpm.py [--seeds 5] [--quick]`` or
``python benchmarks/bench_dpm.py --fit-only [--n 100000 --draws 200]``. Prints steps/s, the time
to ARI >= 0.94 (median over chains), sklearn's time to the same ARI (checked every
``--sk-every`` EM iterations with ``warm_start``; median of 3 runs) and the ratios. The
machine is shared with other jobs: timings vary (sklearn's BLAS threads especially).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

TARGET_ARI = 0.94


def make_data(n=10_000, K=5, seed=42):
    """Five well-separated 2-D Gaussian clusters with random covariances."""
    rng = np.random.default_rng(seed)
    angles = np.arange(K) * 2 * np.pi / K
    means = 5.0 * np.c_[np.cos(angles), np.sin(angles)]
    truth = rng.integers(0, K, n)
    chols = []
    for _ in range(K):
        A = rng.normal(size=(2, 2)) * 0.5
        chols.append(np.linalg.cholesky(A @ A.T + 0.6 * np.eye(2)))
    eps = rng.normal(size=(n, 2))
    X = means[truth] + np.einsum("nij,nj->ni", np.array(chols)[truth], eps)
    return X, truth


def run_ours(X, truth, seed, max_sweeps=300, greedy_start=True):
    """(seconds to ARI >= target or None, steps used, steps/s after reaching it).

    Driven like ``fit`` drives it: the chain starts from PyMC's initial point (one
    cluster) and tunes, so with ``greedy_start`` the first step also tries the greedy
    sequential seating (counted in the time)."""
    from inference.gibbs import CRPCollapsedGibbs
    from pp_models import dpm, partitions

    model = dpm.model(X)
    with model:
        step = CRPCollapsedGibbs([model["z"]], greedy_start=greedy_start)
    step.setup_chain(np.random.default_rng(seed), 1000, 1000)
    point = model.initial_point()
    elapsed = 0.0
    reached = None
    steady_start = steady_steps = 0
    for sweep in range(1, max_sweeps + 1):
        start = time.perf_counter()
        point, _ = step.step(point)
        elapsed += time.perf_counter() - start
        if reached is None and partitions.adjusted_rand_index(point["z"], truth) >= TARGET_ARI:
            reached = (elapsed, sweep)
            steady_start, steady_steps = elapsed, 0
        elif reached is not None:
            steady_steps += 1
            if steady_steps >= 30:
                break
    rate = steady_steps / (elapsed - steady_start) if steady_steps else sweep / elapsed
    return (reached[0] if reached else None), (reached[1] if reached else None), rate


def run_fit_end_to_end(X, truth, draws=100, tune=50, postprocess=True):
    """``inference.fit`` as a user calls it, after a warm-up ``fit`` on 200 points (Numba
    kernels compiled or loaded from the cache, apart). Returns (warm-up seconds, fit
    seconds, ARI of the point estimate or None)."""
    from inference import fit
    from pp_models import dpm, partitions

    start = time.perf_counter()
    fit(dpm.model(X[:200]), draws=2, tune=2, chains=1, random_seed=0, progressbar=False)
    warm = time.perf_counter() - start
    model = dpm.model(X)
    start = time.perf_counter()
    dt = fit(model, draws=draws, tune=tune, chains=1, random_seed=0, progressbar=False,
             postprocess=postprocess)
    seconds = time.perf_counter() - start
    ari = None
    if "clustering" in dt.children:
        z_hat = dt["clustering"]["point_estimate"].values
        ari = partitions.adjusted_rand_index(z_hat, truth)
    return warm, seconds, ari


def _fit_child(args):
    """One ``fit`` in this (fresh) process; prints a JSON line with its peak RSS."""
    import json
    import resource

    X, truth = make_data(n=args.n)
    warm, seconds, ari = run_fit_end_to_end(X, truth, args.draws, args.tune,
                                            postprocess=args.child == "default")
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3
    print(json.dumps({"warm": warm, "seconds": seconds, "ari": ari, "peak_mb": peak_mb}))


def compare_fit_outputs(n, draws, tune):
    """``fit`` with its default outputs vs ``postprocess=False``, each in a fresh process
    (peak RSS is a per-process figure)."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))}
    out = {}
    for kind in ("default", "no-postprocess"):
        proc = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", kind, "--n", str(n),
             "--draws", str(draws), "--tune", str(tune)],
            capture_output=True, text=True, env=env)
        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
        if proc.returncode or not lines:
            print(f"fit ({kind}) failed:\n{proc.stderr[-3000:]}")
            return None
        out[kind] = json.loads(lines[-1])
        r = out[kind]
        ari = "" if r["ari"] is None else f", ARI of the point estimate {r['ari']:.3f}"
        print(f"fit n={n} ({kind}): {r['seconds']:.1f} s after a {r['warm']:.1f} s warm-up, "
              f"peak RSS {r['peak_mb']:,.0f} MB{ari}")
    d, b = out["default"], out["no-postprocess"]
    print(f"fit n={n}: default outputs / postprocess=False: wall "
          f"{d['seconds'] / b['seconds']:.2f}x, peak RSS {d['peak_mb'] / b['peak_mb']:.2f}x")
    return out


def run_sklearn(X, truth, every=5, max_iter=500):
    """(seconds to ARI >= target or None, iterations, ARI at the end, default-fit seconds,
    default-fit ARI)."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.metrics import adjusted_rand_score
    from sklearn.mixture import BayesianGaussianMixture

    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    kwargs = dict(weight_concentration_prior_type="dirichlet_process", n_components=20,
                  random_state=0)
    start = time.perf_counter()
    default = BayesianGaussianMixture(**kwargs).fit(X)
    default_seconds = time.perf_counter() - start
    default_ari = adjusted_rand_score(truth, default.predict(X))

    model = BayesianGaussianMixture(**kwargs, warm_start=True, max_iter=every)
    elapsed, iters, ari = 0.0, 0, 0.0
    while iters < max_iter:
        start = time.perf_counter()
        model.fit(X)
        elapsed += time.perf_counter() - start
        iters += every
        ari = adjusted_rand_score(truth, model.predict(X))
        if ari >= TARGET_ARI:
            return elapsed, iters, ari, default_seconds, default_ari
    return None, iters, ari, default_seconds, default_ari


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="chains of our sampler")
    parser.add_argument("--sk-every", type=int, default=5)
    parser.add_argument("--sk-max-iter", type=int, default=500)
    parser.add_argument("--quick", action="store_true", help="skip the end-to-end fit()")
    parser.add_argument("--fit-only", action="store_true",
                        help="only the end-to-end fit() comparison (default outputs vs "
                        "postprocess=False)")
    parser.add_argument("--n", type=int, default=10_000, help="points for --fit-only")
    parser.add_argument("--draws", type=int, default=100)
    parser.add_argument("--tune", type=int, default=50)
    parser.add_argument("--child", choices=["default", "no-postprocess"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _fit_child(args)
        return
    if args.fit_only:
        compare_fit_outputs(args.n, args.draws, args.tune)
        return

    X, truth = make_data()
    print(f"data: {X.shape[0]} points, 2-D, 5 clusters; target ARI >= {TARGET_ARI}")

    # JIT compile / cache load, once per process (reported, not counted)
    start = time.perf_counter()
    run_ours(X[:50], truth[:50], seed=0, max_sweeps=2)
    run_ours(X[:50], truth[:50], seed=0, max_sweeps=2, greedy_start=False)
    print(f"ours: first call (Numba cache load or compile): {time.perf_counter() - start:.2f} s")
    print("ours: a chain as fit() runs it (starts from one cluster, tuning); the greedy "
          "start is the step's default")

    results = {}
    for label, greedy in (("greedy start", True), ("one cluster", False)):
        times, steps, rates = [], [], []
        for seed in range(args.seeds):
            t, s, r = run_ours(X, truth, seed, greedy_start=greedy)
            times.append(np.inf if t is None else t)
            steps.append(s)
            rates.append(r)
            print(f"  {label}, chain {seed}: ARI >= {TARGET_ARI} after {s} steps, {t:.3f} s"
                  if t is not None else f"  {label}, chain {seed}: not reached")
        results[label] = float(np.median(times))
        print(f"ours ({label}): median time to ARI >= {TARGET_ARI}: {results[label]:.3f} s "
              f"(median {np.median([s for s in steps if s is not None]):.0f} steps); "
              f"{np.median(rates):.1f} steps/s (a step = 1 Gibbs sweep + 1 split-merge "
              f"proposal)")
    ours = results["greedy start"]
    if not args.quick:
        compare_fit_outputs(X.shape[0], args.draws, args.tune)

    runs = [run_sklearn(X, truth, args.sk_every, args.sk_max_iter) for _ in range(3)]
    for r in runs:
        print(f"  sklearn run: default fit {r[3]:.2f} s (ARI {r[4]:.3f}); time to ARI >= "
              f"{TARGET_ARI}: " + ("not reached" if r[0] is None else f"{r[0]:.2f} s"))
    # median run by time to target (not reached counts as slowest)
    runs.sort(key=lambda r: np.inf if r[0] is None else r[0])
    sk_time, sk_iters, sk_ari, _, sk_default_ari = runs[1]
    sk_default = float(np.median([r[3] for r in runs]))
    print(f"sklearn BayesianGaussianMixture default fit (max_iter=100), median of 3: "
          f"{sk_default:.2f} s, ARI {sk_default_ari:.3f}")
    if sk_time is None:
        print(f"sklearn: ARI {sk_ari:.3f} < {TARGET_ARI} after {sk_iters} EM iterations")
        print(f"ratio: sklearn did not reach the target; default fit / ours = "
              f"{sk_default / ours:.1f}x")
    else:
        print(f"sklearn: time to ARI >= {TARGET_ARI} (median of 3): {sk_time:.2f} s "
              f"({sk_iters} iterations)")
        print(f"ratio (sklearn / ours, time to ARI >= {TARGET_ARI}): {sk_time / ours:.1f}x "
              f"(greedy_start=False: {sk_time / results['one cluster']:.1f}x); "
              f"sklearn default fit / ours: {sk_default / ours:.1f}x")


if __name__ == "__main__":
    main()
