"""Pitman-Yor diffusion tree: the Op (log density + gradient) at N = 2000, D = 171; one full
MCMC sweep (every subtree detach-reattach once, every divergence time slice-sampled) as N
grows and its exponent; 100 iterations at N = 1800, D = 171 through ``fit`` (the tree
sweep plus NUTS on c, theta, alpha and the precision), next to a DP mixture
(``pp_models.dpm``, collapsed Gibbs) on the same data through ``fit``.

Knowles' C++ sampler (2014) needs 64.5 s per sweep at N = 1800, D = 171 (anchors-wave2.md;
not on PyPI, so not run here: ~107 min per 100 sweeps).

Data: D = 171 synthetic from the PYDT prior (c = 1, theta = 1, alpha = 0.2, sigma2 = 1).
Every timing is after a warm-up call; compile time (Numba, PyTensor) is printed apart.

``--drift``: instead, one long ``fit(pydt.model(X))`` at N = 1800, D = 171 (the same
data) with theta, alpha, c learned under the thesis's hyperpriors, printing the traces of
alpha, c, theta and the number of branch points at the start, middle and end (the
concern: Knowles' C++ sampler drifts to alpha -> 1, c -> 0, a few huge multifurcations).
Measured (10 tuning + 1000 kept iterations, 20.5 min on a loaded box; means of
the first / middle / last 100 draws; truth in brackets): alpha 0.38 / 0.31 / 0.29 (0.2),
c 0.47 / 0.61 / 0.67 (1), theta 0.12 / 0.42 / 0.56 (1), sigma2 0.86 / 1.00 / 1.03 (1),
branch points 964 / 973 / 948 (946), multifurcations 280 / 327 / 353 (362), largest
branch-point degree 56 / 33 / 26 (21): no drift to alpha -> 1 or c -> 0; the chain moves from
the greedy start towards the truth (not yet there after 1000 iterations: c and theta
still rising).

Usage: python benchmarks/bench_pydt.py [--sizes 200 400 800 1800] [--dim 171]
       [--fit-n 1800] [--fit-draws 100] [--fit-tune 10] [--dpm-draws 10] [--no-fit]
       python benchmarks/bench_pydt.py --drift [--drift-draws 600] [--fit-n 1800]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import warnings

import numpy as np

from custom_ops.pydt.messages import PYDTParameters
from custom_ops.pydt.ops import Cotangents, pydt_forward, pydt_value_and_grad
from custom_ops.pydt.sweep import pydt_sweep
from pp_models import pydt
from pp_models.pydt.greedy import greedy

# the moves written in Python on the full recursion live with the tests (their reference)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from tests.inference.gibbs.pydt.python_moves import (
    _log_post,
    _n_nonroot,
    detach_reattach,
    slice_time,
)

PARAMS = {"c": 1.0, "theta": 1.0, "alpha": 0.2}


def data(n, d, seed=0):
    return pydt.sample_prior(n, **PARAMS, dim=d, random_seed=seed)[0]


def timed(f, *args, reps=20):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f(*args)
        out.append(time.perf_counter() - t0)
    return min(out), float(np.median(out))


def op_timing(n, d):
    draw = data(n, d)
    t = draw.tree
    args = (t.parent, t.log1m_t, draw.X, *PARAMS.values(), 1.0)
    grad_args = (*args[:3], PYDTParameters(*args[3:]), Cotangents(1.0, 1.0))
    t0 = time.perf_counter()
    pydt_value_and_grad(*grad_args)
    pydt_forward(*args)
    first = time.perf_counter() - t0
    return first, timed(pydt_forward, *args), timed(pydt_value_and_grad, *grad_args)


def model_gradient_timing(X, tree):
    """logp + dlogp of the PyMC model in the hyperparameters at a fixed tree: what one
    NUTS leapfrog step costs (PyTensor's compiled graph around the Op)."""
    m = pydt.model(X)
    hyper = [m.rvs_to_values[m[v]] for v in ("c", "theta", "alpha", "precision")]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        f = m.logp_dlogp_function(hyper)
        compile_s = time.perf_counter() - t0
    f.set_extra_values({"tree": tree.to_packed()})
    ip = m.initial_point()
    x = np.concatenate([np.atleast_1d(ip[v.name]).ravel() for v in hyper])
    f(x)
    return compile_s, timed(f, x)


def sweep_timing(n, d, sweeps=3, seed=0):
    """Greedy start, then ``sweeps`` kernel sweeps (median)."""
    X = data(n, d, seed).X
    c, theta, alpha = PARAMS.values()
    t0 = time.perf_counter()
    tree = greedy(X, c=c, theta=theta, alpha=alpha, sigma2=1.0).tree
    greedy_s = time.perf_counter() - t0
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(sweeps):
        t0 = time.perf_counter()
        pydt_sweep(rng, tree.parent, tree.log1m_t, X, PYDTParameters(c, theta, alpha, 1.0), -1,
                   True, False)
        out.append(time.perf_counter() - t0)
    return greedy_s, float(np.median(out)), tree


def python_sweep_timing(n, d, seed=0):
    """One sweep of the earlier Python moves (full O(n D) recursion per
    proposal and per slice evaluation), for the speed-up."""
    X = data(n, d, seed).X
    c, theta, alpha = PARAMS.values()
    tree = greedy(X, c=c, theta=theta, alpha=alpha, sigma2=1.0).tree
    rng = np.random.default_rng(seed)
    current = _log_post(tree, X, c, theta, alpha, 1.0)
    t0 = time.perf_counter()
    for _ in range(_n_nonroot(tree)):
        cand = np.flatnonzero(tree.parent >= 0)
        v = int(cand[rng.integers(cand.size)])
        _ok, current = detach_reattach(rng, tree, v, X, c, theta, alpha, 1.0, current)
    for v in tree.internal_nodes:
        current = slice_time(rng, tree, int(v), X, c, theta, alpha, 1.0, current)
    return time.perf_counter() - t0


def fit_timing(model_fn, X, draws, tune, hook=None):
    """Warm-up fit (compiles), then the timed one; returns (warm-up s, timed s, idata)."""
    from inference.fitting import fit

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fit(model_fn(X), draws=2, tune=1, chains=1, random_seed=1, progressbar=False)
        warm = time.perf_counter() - t0
        t0 = time.perf_counter()
        idata = fit(model_fn(X), draws=draws, tune=tune, chains=1, random_seed=2,
                    progressbar=False)
        return warm, time.perf_counter() - t0, idata


def drift(n, d, draws, tune, seed=0):
    """One chain of ``fit(pydt.model(X))`` on the benchmark data; prints the traces of the
    learned hyperparameters and of the tree's size in windows of the run."""
    from inference.fitting import fit
    from pp_models.model_info import posterior_with_labels

    draw = data(n, d)
    truth = draw.tree
    print(f"drift run N={n} D={d}: data from the PYDT prior with c {PARAMS['c']}, "
          f"theta {PARAMS['theta']}, alpha {PARAMS['alpha']}, sigma2 1 "
          f"({truth.n_internal} branch points, {truth.n_multifurcations} multifurcations, "
          f"largest degree {truth.n_children().max()}); "
          f"thesis hyperpriors {pydt.DEFAULT_PRIORS}", flush=True)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(pydt.model(draw.X), draws=draws, tune=tune, chains=1, random_seed=seed,
                 progressbar=False)
    total = time.perf_counter() - t0
    post = dt["posterior"]
    traces = {v: post[v].values.reshape(-1) for v in ("alpha", "c", "theta", "sigma2")}
    traces["branch points"] = post["n_internal"].values.reshape(-1).astype(float)
    traces["multifurcations"] = post["n_multifurcations"].values.reshape(-1).astype(float)
    traces["largest degree"] = np.array([
        t.n_children().max() for t in pydt.trees_from_posterior(posterior_with_labels(dt))
    ], dtype=float)
    print(f"{tune} tuning + {draws} kept iterations in {total / 60:.1f} min "
          f"({total / (draws + tune):.2f} s each)")
    width = max(1, draws // 10)
    windows = {"start": slice(0, width), "middle": slice(draws // 2 - width // 2,
                                                         draws // 2 + (width + 1) // 2),
               "end": slice(draws - width, draws)}
    print(f"first kept draw; means over windows of {width} draws (first / middle / last); "
          "min-max overall")
    for name, x in traces.items():
        cells = "  ".join(f"{w} {x[sl].mean():8.3g}" for w, sl in windows.items())
        print(f"  {name:16s} draw 0 {x[0]:8.3g}  {cells}   range [{x.min():.3g}, "
              f"{x.max():.3g}]", flush=True)
    return traces


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 400, 800, 1800])
    parser.add_argument("--dim", type=int, default=171)
    parser.add_argument("--fit-n", type=int, default=1800)
    parser.add_argument("--fit-draws", type=int, default=100)
    parser.add_argument("--fit-tune", type=int, default=10)
    parser.add_argument("--dpm-draws", type=int, default=10)
    parser.add_argument("--no-fit", action="store_true")
    parser.add_argument("--drift", action="store_true")
    parser.add_argument("--drift-draws", type=int, default=600)
    args = parser.parse_args()
    d = args.dim
    if args.drift:
        drift(args.fit_n, d, args.drift_draws, args.fit_tune)
        return

    first, fwd, both = op_timing(2000, d)
    print(f"Op at N=2000, D={d}: first calls {first:.2f} s (Numba compile or cache load); "
          f"log density {fwd[0] * 1e3:.2f} ms best / {fwd[1] * 1e3:.2f} ms median; "
          f"log density + gradient {both[0] * 1e3:.2f} / {both[1] * 1e3:.2f} ms (goal < 20)")

    times = []
    for n in args.sizes:
        greedy_s, sweep, tree = sweep_timing(n, d)
        times.append(sweep)
        print(f"N={n:5d} D={d}: greedy build {greedy_s:6.2f} s; one full sweep "
              f"{sweep:6.3f} s ({tree.n_internal} internal nodes)")
    if len(times) > 1:
        slope = np.polyfit(np.log(args.sizes), np.log(times), 1)[0]
        print(f"sweep cost ~ N^{slope:.2f}")
        est = times[-1] * (1800 / args.sizes[-1]) ** slope
        print(f"N=1800: {est:.2f} s per sweep -> {100 * est / 60:.1f} min per 100 sweeps "
              f"(C++ anchor 64.5 s per sweep, ~107 min)")
    py = python_sweep_timing(200, d)
    i200 = args.sizes.index(200) if 200 in args.sizes else None
    if i200 is not None:
        print(f"N=  200: earlier Python sweep {py:.2f} s vs kernel {times[i200]:.3f} s "
              f"({py / times[i200]:.0f}x)")

    if not args.no_fit:
        n = args.fit_n
        draw = data(n, d)
        X = draw.X
        tree = greedy(X, **PARAMS, sigma2=1.0).tree
        comp, grad = model_gradient_timing(X, tree)
        print(f"PyMC logp + dlogp (one NUTS leapfrog) at N={n}: {grad[0] * 1e3:.1f} ms best / "
              f"{grad[1] * 1e3:.1f} ms median (compile {comp:.1f} s)")
        from inference.gibbs.pydt import PYDTTreeStep

        spent = {"s": 0.0}
        original = PYDTTreeStep.step

        def counted(self, point):
            t0 = time.perf_counter()
            out = original(self, point)
            spent["s"] += time.perf_counter() - t0
            return out

        PYDTTreeStep.step = counted
        try:
            warm, total, idata = fit_timing(pydt.model, X, args.fit_draws, args.fit_tune)
        finally:
            PYDTTreeStep.step = original
        iters = args.fit_draws + args.fit_tune
        leapfrogs = float(idata.sample_stats["n_steps"].mean())
        print(f"PYDT fit N={n} D={d}: warm-up call {warm:.1f} s (compile + greedy); "
              f"{iters} iterations {total:.1f} s = {total / iters:.2f} s each "
              f"(tree sweeps {spent['s'] / iters:.2f} s incl. the greedy start, NUTS the rest, "
              f"{leapfrogs:.0f} leapfrog steps per draw) -> {100 * total / iters / 60:.1f} min "
              f"per 100 iterations")
        from pp_models import dpm

        def dpm_model(X):
            return dpm.model(X, likelihood="diag_gaussian")

        warm, total, idata = fit_timing(dpm_model, X, args.dpm_draws, 1)
        iters = args.dpm_draws + 1
        print(f"DPM (diag Gaussian, collapsed Gibbs) fit N={n} D={d}: warm-up call "
              f"{warm:.1f} s; {iters} iterations {total:.1f} s = {total / iters:.2f} s each "
              f"-> {100 * total / iters / 60:.1f} min per 100 iterations")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")


if __name__ == "__main__":
    main()
