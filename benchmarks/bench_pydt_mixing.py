"""Mixing of the PYDT sampler at N = 200 (D = 5, data from the DDT prior with c = 1,
sigma2 = 1; Knowles 2012 §7.7.2): chains from three starts (the true tree, the greedy tree
built at the initial theta and alpha, the binary greedy tree), R-hat across the starts
and ESS per chain of alpha, c, theta, sigma2 and the number of branch points; with
``--branch-moves 0 200`` the same chains (same starts and seeds) without and with the
branch-point moves of :mod:`custom_ops.pydt.branch`, side by side (ESS per 1000 sweeps
and per second of the chain's own run time).

The factory's steps (``PYDTTreeStep`` with 2n - 2 moves and the non-centred updates,
NUTS for the hyperparameters) run in a plain loop so that each chain's start is set
exactly (``fit`` would replace it by the step's greedy start while tuning).

    PYTHONPATH=$PWD python benchmarks/bench_pydt_mixing.py --sweeps 2000
    PYTHONPATH=$PWD python benchmarks/bench_pydt_mixing.py --noncentred c theta alpha
    PYTHONPATH=$PWD python benchmarks/bench_pydt_mixing.py --branch-moves 0 200
    PYTHONPATH=$PWD python benchmarks/bench_pydt_mixing.py --kernel  # cost of the moves
    PYTHONPATH=$PWD python benchmarks/bench_pydt_mixing.py --iris --ridge-rounds 0 3

``--iris``: the command line's model (iris, distinct rows standardised) and the factory's
step with ``ridge_rounds`` set to each value given, one chain of ``--sweeps`` sweeps per
value after 100 warm-up sweeps (the greedy start), in this process: autocorrelation time
(sweeps per effective draw) and bulk ESS per CPU second (the process's CPU time over
the sweeps) of theta, alpha, c, sigma2, the number of branch points and the root time.

Measured (2000 sweeps, 10-15 ms per sweep): see the docstring of
tests/pp_models/pydt/test_recovery.py::test_hyperparameters_cover_the_truth_on_prior_data.

Branch-point moves off / on (``--branch-moves 0 -1``; on = n = 200 per sweep, the step's
default), measured, 2000 sweeps, statistics over sweeps 1000-2000, chain
seeds 5, 6 and 7 (``--seed``; per chain: true, greedy, binary start), number of branch
points:

========================  ======================  ======================  ======================
off -> on                 seed 5                  seed 6                  seed 7
========================  ======================  ======================  ======================
R-hat                     1.839 -> 1.083          1.376 -> 1.045          1.411 -> 1.119
ESS per 1000 sweeps       [2.8, 10.8, 6.7] ->     [3.8, 3.5, 2.6] ->      [4.5, 12.0, 3.4] ->
                          [27.4, 14.2, 15.3]      [23.5, 16.4, 37.3]      [21.0, 11.7, 6.8]
ESS per second            [0.17, 0.70, 0.43] ->   [0.38, 0.34, 0.25] ->   [0.42, 1.26, 0.31] ->
                          [1.65, 1.06, 1.20]      [2.00, 1.35, 3.55]      [1.76, 0.99, 0.48]
theta R-hat               1.580 -> 1.055          1.194 -> 1.017          1.308 -> 1.067
alpha R-hat               1.108 -> 1.030          1.117 -> 1.014          1.061 -> 1.037
ms per sweep              15-16 -> 13-17          10-11 -> 11-12          10-11 -> 12-14
========================  ======================  ======================  ======================

sigma2 (R-hat 1.003-1.008 either way) and c (1.07-1.16 -> 1.01-1.03) were already
fine. Better, not solved: on seed 7 the branch-point count's R-hat is still 1.12 and
one chain's ESS 7 per 1000 sweeps. With 4 n = 800 moves per sweep (seed 5): branch
points R-hat 1.038, ESS per 1000 sweeps [22.5, 22.9, 19.7], per second 1.1-1.2, 18-20
ms per sweep: no better per second than n.

What is left (one chain, seed 7, binary start, sweeps 100-400, measured with the step's
``branch_accepted`` statistic): 35 % of the branch moves are accepted (~69 per sweep)
and the count moves by ~4.6 per sweep, yet its posterior sd is 17 and its ESS 5 in 300
sweeps, like theta's (ESS 4); corr(branch points, theta) = -0.80. The count now follows
theta, which the tree pins (and the tree pins theta): a joint move of theta with the
structure, not more branch moves, is the next step.

Re-measured (same command, moves on, 2000 sweeps, 8-10 ms per
sweep), seeds 5 / 6 / 7: branch points R-hat 1.119 / 1.106 / 1.048 (ESS per 1000
sweeps 6-21), theta 1.094 / 1.075 / 1.030 (ESS 8-34), alpha 1.033 / 1.058 / 1.014, c
1.037 / 1.032 / 1.020, sigma2 1.002-1.012. The seeds trade places from run to run (the
random streams changed with the kernels): the count's R-hat is 1.05-1.12 on any seed.
Over sweeps 1000-2000 of the binary-start chain (seeds 5, 7): corr(count, theta) -0.81,
-0.67; corr(theta, c) +0.82, +0.80 (c and theta trade off: the gaps' rates are c
H_{m-1}(theta, alpha)); corr(count, c) -0.45, -0.25; the count falls 43-48 per unit of
theta, and its residual given theta has lag-10 autocorrelation 0.30 against 0.58-0.78
for the count itself: the slow direction is the ridge (theta up, c up, fewer branch
points) along which theta's update (structure fixed) and the branch moves (theta fixed)
each take short steps. A joint move along it, not more branch moves, is what is
missing; candidate (not implemented): a non-equilibrium (NCMC, Nilmeier et al. 2011)
move of theta: propose log theta' = log theta + eps, go from theta to theta' in J small
steps, each a deterministic move of the times with the gaps w fixed (the non-centred
map, custom_ops.pydt.noncentred, Jacobian included) followed by a few branch-point
moves at the intermediate theta_j (each a reversible Metropolis-Hastings-Green move
invariant at theta_j), and accept with the accumulated log density increments of the
deterministic steps (plus the symmetric proposal of eps); with the reverse protocol
using the kernels in reverse order, the move is exact. c could ride along (log c' =
log c + b eps, b from the ridge's slope) to follow the theta-c correlation.
A throwaway prototype (not in the step, not checked by getting-it-right;
seed 7, 2000 sweeps, starts true / binary / binary with another seed): J = 20 steps of
20 branch moves, eps ~ N(0, 0.4^2), c moved along with theta on the shear that keeps
c H_1(theta) (the cherries' gap rate) fixed: acceptance 0.19-0.21, R-hat of the count
1.022 and of theta 1.016 (1.036 and 1.045 without it, same starts), ESS per 1000 sweeps
theta 28-44 (19-36), count 21-31 (18-20), at 1.6 times the time per sweep: no clear
gain per second. theta alone (c fixed) was accepted 7-15 % of the time and did not help.

Kernel alone (``--kernel``; median of 5, prior-drawn trees): n = 200, D = 5:
a sweep (2n - 2 detach-reattach moves + every time sliced) 6.2 ms, n branch moves 0.7
ms (acceptance 0.38); n = 1800, D = 171: 336-361 ms and 72-84 ms (acceptance 0.06).
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm
from pymc.step_methods.compound import CompoundStep

from custom_ops.pydt import draws as pydt_draws
from custom_ops.pydt.branch import pydt_branch_moves
from custom_ops.pydt.messages import PYDTParameters
from custom_ops.pydt.sweep import pydt_sweep
from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt
from pp_models.pydt.greedy import greedy
from pp_models.trees import DiffusionTree

HYPER = ("c", "theta", "alpha", "precision")


def run_chain(X, true_tree, start, sweeps, tune, noncentred, seed, branch_moves=None):
    model = pydt.model(X)
    n = X.shape[0]
    tree_step = PYDTTreeStep([model["tree"]], model=model, moves=2 * n - 2,
                             noncentred=noncentred, greedy_start=False,
                             branch_moves=branch_moves)
    step = CompoundStep([tree_step, pm.NUTS([model[h] for h in HYPER], model=model)])
    rng = np.random.default_rng(seed)
    step.setup_chain(rng, tune, sweeps)
    point = dict(model.initial_point())
    _X, c, theta, alpha, sigma2 = tree_step._values(point)
    if start == "true":
        point["tree"] = true_tree.to_packed()
        point.update(c_log__=np.array(0.0), theta_log__=np.array(np.log(0.1)),
                     alpha_logodds__=np.array(np.log(0.01 / 0.99)),
                     precision_log__=np.array(0.0))
    else:
        binary = start == "binary"
        built = greedy(X, c=c, theta=0.0 if binary else theta,
                       alpha=0.0 if binary else alpha, sigma2=sigma2,
                       order=rng.permutation(n))
        point["tree"] = built.tree.to_packed()
    rows = []
    t0 = time.perf_counter()
    for it in range(sweeps):
        if it == tune:
            step.stop_tuning()
        point, _ = step.step(point)
        tree = DiffusionTree.from_packed(point["tree"], validate=False)
        rows.append([float(np.exp(point["c_log__"])), float(np.exp(point["theta_log__"])),
                     float(1 / (1 + np.exp(-point["alpha_logodds__"]))),
                     float(np.exp(-point["precision_log__"])), tree.n_internal])
    return np.array(rows), time.perf_counter() - t0


def kernel_cost(repeats=5):
    """Median time of one sweep and of n branch moves on a prior-drawn tree."""
    for n, d, (c, theta, alpha) in ((200, 5, (1.0, 0.4, 0.08)), (1800, 171, (1.0, 1.0, 0.2))):
        rng = np.random.default_rng(0)
        parent = np.empty(2 * n - 1, dtype=np.int64)
        log1m_t = np.empty(n - 1)
        pydt_draws.pydt_draw_tree(rng, n, c, theta, alpha, parent, log1m_t)
        X = np.empty((n, d))
        pydt_draws.pydt_draw_data(rng, parent, log1m_t, 1.0, d, X)
        args = (parent, log1m_t, X, PYDTParameters(c, theta, alpha, 1.0))
        # warm-up (compiles or loads the Numba cache)
        pydt_sweep(rng, *args, 5, True, False)
        pydt_branch_moves(rng, *args, 5, False)
        sweep_s, branch_s, accepted = [], [], 0
        for _ in range(repeats):
            t0 = time.perf_counter()
            pydt_sweep(rng, *args, -1, True, False)
            sweep_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            accepted += pydt_branch_moves(rng, *args, n, False)[0]
            branch_s.append(time.perf_counter() - t0)
        print(f"n = {n}, D = {d}: sweep {1e3 * np.median(sweep_s):.1f} ms, {n} branch "
              f"moves {1e3 * np.median(branch_s):.1f} ms (acceptance "
              f"{accepted / (repeats * n):.2f})")


def iris_chain(ridge_rounds, sweeps, seed):
    """One chain of the command line's iris model: (draws, CPU seconds)."""
    from pp_models.datasets import load
    from pp_models.zoo_models import get_info

    model = pydt.FAMILY.cli.build(load("iris"), ridge_rounds=ridge_rounds)
    hint = get_info(model).step_hints[0]
    step = PYDTTreeStep([model[v] for v in hint.var_names], model=model, **hint.options)
    step.setup_chain(np.random.default_rng(seed), 100, sweeps)
    point = dict(model.initial_point())
    for _ in range(100):
        point, _ = step.step(point)
    rows = []
    t0 = time.process_time()
    for _ in range(sweeps):
        point, _ = step.step(point)
        tree = DiffusionTree.from_packed(point["tree"], validate=False)
        rows.append([float(np.exp(point["theta_log__"])),
                     float(1 / (1 + np.exp(-point["alpha_logodds__"]))),
                     float(np.exp(point["c_log__"])), float(np.exp(-point["precision_log__"])),
                     tree.n_internal, tree.root_time])
    return np.array(rows), time.process_time() - t0


def iris_report(values, sweeps, seed):
    names = ("theta", "alpha", "c", "sigma2", "n_internal", "root_time")
    for rounds in values:
        draws, cpu = iris_chain(rounds, sweeps, seed)
        print(f"ridge_rounds {rounds}, seed {seed}: {sweeps} sweeps, {cpu:.1f} CPU s "
              f"({1e3 * cpu / sweeps:.1f} ms per sweep)")
        for j, name in enumerate(names):
            ess = float(az.ess(draws[None, :, j]))
            print(f"  {name:10s} mean {draws[:, j].mean():.3g}  autocorrelation time "
                  f"{sweeps / ess:.1f} sweeps  ESS per CPU s {ess / cpu:.2f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=2000)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--noncentred", nargs="*", default=list(HYPER))
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--branch-moves", type=int, nargs="*", default=[-1],
                        help="branch-point moves per sweep, one run per value "
                             "(-1: the step's default, n; 0: off)")
    parser.add_argument("--kernel", action="store_true",
                        help="time the sweep and the branch moves alone, then stop")
    parser.add_argument("--iris", action="store_true",
                        help="one chain per --ridge-rounds value on the command line's "
                             "iris model, then stop")
    parser.add_argument("--ridge-rounds", type=int, nargs="*", default=[0, 3])
    args, _ = parser.parse_known_args()
    if args.kernel:
        kernel_cost()
        return
    if args.iris:
        iris_report(args.ridge_rounds, args.sweeps, args.seed)
        return
    draw = pydt.sample_prior(200, c=1.0, theta=0.0, alpha=0.0, dim=5, sigma2=1.0,
                             random_seed=7)[0]
    starts = ("true", "greedy", "binary")
    for branch in args.branch_moves:
        branch_moves = None if branch < 0 else branch
        # warm-up: compiles (Numba from cache, PyTensor) outside the timed chains
        run_chain(draw.X, draw.tree, "true", 3, 1, tuple(args.noncentred), args.seed,
                  branch_moves)
        chains = {}
        seconds = {}
        for start in starts:
            chains[start], seconds[start] = run_chain(
                draw.X, draw.tree, start, args.sweeps, args.tune, tuple(args.noncentred),
                args.seed, branch_moves)
            print(f"branch moves {branch}, {start}: {args.sweeps} sweeps in "
                  f"{seconds[start]:.1f} s "
                  f"({1e3 * seconds[start] / args.sweeps:.1f} ms per sweep)", flush=True)
        report(chains, seconds, starts, args, branch)


def report(chains, seconds, starts, args, branch):
    names = ("alpha", "c", "theta", "sigma2", "n_internal")
    cols = {"c": 0, "theta": 1, "alpha": 2, "sigma2": 3, "n_internal": 4}
    half = args.sweeps // 2
    kept = args.sweeps - half
    print(f"branch moves {branch}; noncentred {args.noncentred}; sweeps "
          f"{half}-{args.sweeps} (ESS per 1000 sweeps; per second of run time):")
    for name in names:
        arr = np.array([chains[s][half:, cols[name]] for s in starts])
        ess = [float(az.ess(arr[i:i + 1])) for i in range(len(starts))]
        per_k = [round(1000 * e / kept, 1) for e in ess]
        per_s = [round(e / (seconds[s] * kept / args.sweeps), 2)
                 for e, s in zip(ess, starts, strict=True)]
        means = ", ".join(f"{s} {arr[i].mean():.3g}" for i, s in enumerate(starts))
        print(f"  {name:10s} R-hat {float(az.rhat(arr)):.3f}  ESS/1000 {per_k}  "
              f"ESS/s {per_s}  means: {means}", flush=True)


if __name__ == "__main__":
    main()
