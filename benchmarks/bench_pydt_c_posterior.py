"""Posterior of the PYDT's smoothness c with the branch-point moves off and on (the data
of tests/pp_models/pydt/test_recovery.py::test_pydt_hyperparameters_cover_the_truth_on_prior_data:
N = 200, D = 5 from the DDT prior with c = 1, sigma2 = 1, seed 7).

``fit`` with the factory's steps (PYDTTreeStep with 2n - 2 moves and the non-centred
updates of c, theta, alpha and the precision, NUTS for them), the tree step's
``branch_moves`` set to 0 (off) or left at its default n (on); several fit seeds, each
with ``--chains`` chains. Per (setting, seed): mean, sd, 2.5/50/97.5 % quantiles, MCSE of
the mean, bulk ESS and R-hat of c, sigma2, theta, alpha and the number of branch points,
and each chain's mean of c (chains that disagree with each other explore less than the
posterior).

    PYTHONPATH=$PWD nice -n 5 python benchmarks/bench_pydt_c_posterior.py \
        --draws 1500 --chains 4 --seeds 11 12 --branch-moves 0 -1

Measured (``--draws 3000 --tune 200 --chains 4 --seeds 11 12 13``, 2-4 min
per fit; the 12 chains of each setting pooled, the range over the three seeds in
brackets):

==============  ===============================  ===============================
                branch-point moves off           on (the step's default, n)
==============  ===============================  ===============================
c mean          1.152 (1.146-1.158)              1.168 (1.141-1.186)
c sd            0.336 (0.309-0.361)              0.364 (0.351-0.379)
c 95 %          [0.733, 2.055]                   [0.720, 2.138]
c MCSE          0.020 (0.034-0.039)              0.013 (0.016-0.027)
c ESS, R-hat    404, 1.030 (91-152, 1.03-1.06)   1395, 1.010 (397-625, 1.003-1.017)
sigma2 mean/sd  1.022 / 0.301                    1.035 / 0.335
theta           0.491, R-hat 1.076 (ESS 136)     0.516, R-hat 1.020 (ESS 625)
alpha           0.085, R-hat 1.030               0.091, R-hat 1.006
branch points   142.9 sd 18.0, R-hat 1.125       141.0 sd 20.1, R-hat 1.022
                (ESS 82)                         (ESS 485)
==============  ===============================  ===============================

The same posterior either way; the moves give 3-5 times the ESS. With 2 chains x 500
draws (the recovery test's run) c's sd is 0.22-0.36 off and 0.32-0.47 on over the three
seeds: the 0.16 once measured without the moves was a short chain that had not reached
c's right tail (tests/pp_models/pydt/test_recovery.py, second test's docstring).
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pymc as pm

from inference import fit
from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt

HYPER = ("c", "theta", "alpha", "precision")
NAMES = ("c", "sigma2", "theta", "alpha", "n_internal")


def prior_data(seed=7, n=200, d=5):
    """The recovery test's data (tests/pp_models/pydt/test_recovery.py::prior_data)."""
    return pydt.sample_prior(n, c=1.0, theta=0.0, alpha=0.0, dim=d, sigma2=1.0,
                             random_seed=seed)[0].X


def run(X, branch_moves, draws, tune, chains, seed):
    """One ``fit`` with the factory's steps, the branch-point moves set to
    ``branch_moves`` (``None``: the step's default, n). Returns draws (chain, draw) per
    name and the seconds it took."""
    model = pydt.model(X)
    n = X.shape[0]
    tree_step = PYDTTreeStep([model["tree"]], model=model, moves=2 * n - 2,
                             noncentred=HYPER, branch_moves=branch_moves)
    steps = [tree_step, pm.NUTS([model[h] for h in HYPER], model=model)]
    t0 = time.perf_counter()
    result = fit(model, step=steps, draws=draws, tune=tune, chains=chains, cores=1,
                 random_seed=seed, progressbar=False, postprocess=False)
    seconds = time.perf_counter() - t0
    post = result["posterior"].to_dataset()
    # n_internal: the factory's derived statistic (the number of branch points)
    return {name: post[name].values.astype(float) for name in NAMES}, seconds


def summarise(values):
    """mean, sd, quantiles, MCSE of the mean, bulk ESS, R-hat of (chain, draw) draws."""
    flat = values.reshape(-1)
    q = np.quantile(flat, [0.025, 0.5, 0.975])
    return {"mean": flat.mean(), "sd": flat.std(ddof=1), "q025": q[0], "q50": q[1],
            "q975": q[2], "mcse": float(az.mcse(values)), "ess": float(az.ess(values)),
            "rhat": float(az.rhat(values)), "chain_means": values.mean(axis=1)}


def print_row(label, name, s):
    means = " ".join(f"{m:.3f}" for m in s["chain_means"])
    print(f"{label:14s} {name:10s} mean {s['mean']:8.3f} sd {s['sd']:7.3f} "
          f"[{s['q025']:.3f}, {s['q50']:.3f}, {s['q975']:.3f}] mcse {s['mcse']:.3f} "
          f"ess {s['ess']:6.0f} rhat {s['rhat']:.3f}  chain means {means}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1500)
    parser.add_argument("--tune", type=int, default=200)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[11])
    parser.add_argument("--branch-moves", type=int, nargs="+", default=[0, -1],
                        help="branch-point moves per sweep, one run per value "
                             "(-1: the step's default, n; 0: off)")
    parser.add_argument("--save", default=None,
                        help="write every run's draws to this .npz file")
    args, _ = parser.parse_known_args()
    X = prior_data()
    saved = {}
    pooled = {}
    for branch in args.branch_moves:
        for seed in args.seeds:
            draws, seconds = run(X, None if branch < 0 else branch, args.draws, args.tune,
                                 args.chains, seed)
            label = f"branch {'n' if branch < 0 else branch} s{seed}"
            print(f"{label}: {args.chains} x {args.draws} draws (+{args.tune} tuning) in "
                  f"{seconds:.0f} s", flush=True)
            for name in NAMES:
                print_row(label, name, summarise(draws[name]))
                saved[f"{name}_b{branch}_s{seed}"] = draws[name]
                pooled.setdefault((branch, name), []).append(draws[name])
    if len(args.seeds) > 1:
        print("pooled over the seeds (every chain one chain):")
        for (branch, name), parts in pooled.items():
            print_row(f"branch {'n' if branch < 0 else branch} all", name,
                      summarise(np.concatenate(parts, axis=0)))
    if args.save:
        np.savez_compressed(args.save, **saved)


if __name__ == "__main__":
    main()
