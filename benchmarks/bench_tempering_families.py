"""Benchmark: parallel tempering of the IBP factor analysis and LDA defaults.

The rows of ``bench_tempering.py``'s two tables for the families whose Gibbs steps
temper here (NSFA, collapsed LDA), each through the path users take, ``fit(model,
tempering=N)`` against ``fit(model)``, after one warm-up call of each (its time, the
compiling, reported apart):

``--mixing``: ``ibp_fa`` on iris and ``lda`` on Reuters at their command-line defaults
(the model ``ppzoo fit NAME`` builds, its ``fit_defaults`` sizes, one core), for each
seed: the worst R-hat and the smallest bulk ESS over the label-invariant statistics
(``inference.convergence.check_convergence``, what ``ppzoo check`` reports), the smallest
bulk ESS per second of wall time and per CPU second, whether the check passes, and for
the tempered run the swap acceptance of each neighbouring pair, the communication
barrier and the round trips.

``--cost``: seconds of CPU per iteration, tempered against ``N x`` plain, on the same
models and sizes (the goal: ``tempered / (N x plain) <= 1.2``). CPU time (this process
and its children) rather than wall time: the machine is shared.

Run: ``python benchmarks/bench_tempering_families.py [--temperatures 8] [--seeds 1,2,3]
[--families ibp_fa,lda]``.
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
from _memory import PeakRSS

FAMILIES = ("ibp_fa", "lda")


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def cli_model(name: str):
    """The model ``ppzoo fit NAME`` builds on its default data set, and its sizes."""
    from pp_models import datasets
    from pp_models.registry import get_model

    entry = get_model(name)
    model = entry.build(datasets.load(entry.default_dataset), **entry.defaults)
    return model, dict(entry.fit_defaults)


def run(model, sizes, seed, tempering):
    from inference import fit
    from inference.convergence import check_convergence

    with PeakRSS() as mem:
        cpu, wall = _cpu_seconds(), time.perf_counter()
        dt = fit(model, random_seed=seed, progressbar=False, cores=1, tempering=tempering,
                 **sizes)
        wall, cpu = time.perf_counter() - wall, _cpu_seconds() - cpu
    report = check_convergence(dt)
    table = report.table
    ess = float(np.nanmin(table["ess_bulk"].values))
    iterations = sizes["chains"] * (sizes["draws"] + sizes["tune"])
    row = {"rhat_max": float(np.nanmax(table["r_hat"].values)), "ess_min": ess,
           "ess_per_s": ess / wall, "ess_per_cpu_s": ess / cpu, "passed": report.passed,
           "wall": wall, "cpu_per_iteration": cpu / iterations, "peak_mb": mem.peak_mb,
           "worst": str(table.sort_values("r_hat").index[-1])}
    if tempering:
        group = dt["tempering"]
        row["acceptance"] = np.round(group["swap_acceptance"].mean("chain").values, 2).tolist()
        row["barrier"] = float(group["barrier"].mean())
        row["round_trips"] = group["round_trips"].values.tolist()
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--temperatures", type=int, default=8)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--families", default=",".join(FAMILIES))
    args = parser.parse_args(argv)
    from inference import fit

    seeds = [int(s) for s in args.seeds.split(",")]
    n = args.temperatures
    print(f"{'model':22} {'seed':>4} {'N':>3} {'R-hat':>6} {'ESS':>6} {'ESS/s':>6} "
          f"{'ESS/cpu-s':>9} {'check':>5} {'wall s':>7} {'cpu ms/it':>9} {'MB':>6}  "
          "worst / swaps")
    for name in args.families.split(","):
        model, sizes = cli_model(name)
        warm = {**sizes, "draws": 4, "tune": 4, "chains": 1}
        for tempering in (None, n):
            start = time.perf_counter()
            fit(model, random_seed=0, progressbar=False, cores=1, tempering=tempering, **warm)
            print(f"{name}: warm-up {'tempered' if tempering else 'plain'} "
                  f"{time.perf_counter() - start:.1f} s (compiling)")
        costs = {None: [], n: []}
        for seed in seeds:
            for tempering in (None, n):
                row = run(model, sizes, seed, tempering)
                costs[tempering].append(row["cpu_per_iteration"])
                extra = row["worst"]
                if tempering:
                    extra += (f"; acceptance {row['acceptance']}, barrier "
                              f"{row['barrier']:.2f}, round trips {row['round_trips']}")
                print(f"{name:22} {seed:4d} {tempering or 1:3d} {row['rhat_max']:6.3f} "
                      f"{row['ess_min']:6.1f} {row['ess_per_s']:6.2f} "
                      f"{row['ess_per_cpu_s']:9.2f} {'pass' if row['passed'] else 'FAIL':>5} "
                      f"{row['wall']:7.1f} {1e3 * row['cpu_per_iteration']:9.2f} "
                      f"{row['peak_mb']:6.0f}  {extra}", flush=True)
        plain, tempered = np.median(costs[None]), np.median(costs[n])
        print(f"{name}: cost per iteration (median CPU) plain {1e3 * plain:.2f} ms, tempered "
              f"{1e3 * tempered:.2f} ms; tempered / ({n} x plain) = "
              f"{tempered / (n * plain):.2f} (goal <= 1.2)\n", flush=True)


if __name__ == "__main__":
    main()
