"""Benchmark: do the failing command-line defaults pass ``ppzoo check`` with tempering?

For each family named, the model ``ppzoo fit NAME`` builds on its default data set at
its ``fit_defaults`` sizes (or ``--draws/--tune/--chains``), through ``fit`` (the CLI's
path), plain and with each tempering setting given, at each seed (``cores=2``: the
chains run side by side, as the CLI runs them). Each row: the worst R-hat and the
smallest bulk and tail ESS over the label-invariant statistics
(``inference.convergence.check_convergence``, what ``ppzoo check`` reports), whether
the check passes, the wall time and its ratio to the plain run of the same seed, and
for a tempered run the barrier Lambda (mean over chains), the temperatures it calls for
(about 2 Lambda), the round trips per chain and the pairs no state crossed
(``inference.tempering.driver.describe_tempering``). One warm-up call of each setting
first (its time, the compiling, reported apart).

A tempering setting is ``N`` (N temperatures from the prior, ``fit(tempering=N)``) or
``N@B`` (N temperatures from ``beta = B`` up, ``fit(tempering={"n_temperatures": N,
"beta_min": B})``).

Run: ``python benchmarks/bench_tempering_defaults.py --families ibp_fa --settings
16,8@0.6 --seeds 1,2,3``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from bench_tempering_families import cli_model


def setting(text: str):
    if text in ("-", "0", "plain"):
        return None
    if "@" in text:
        n, beta_min = text.split("@")
        return {"n_temperatures": int(n), "beta_min": float(beta_min)}
    return int(text)


def label(tempering) -> str:
    if tempering is None:
        return "-"
    if isinstance(tempering, dict):
        return f"{tempering['n_temperatures']}@{tempering['beta_min']:g}"
    return str(tempering)


def run(model, sizes, seed, tempering, cores):
    from inference import fit
    from inference.convergence import check_convergence
    from inference.tempering.driver import describe_tempering

    start = time.perf_counter()
    dt = fit(model, random_seed=seed, progressbar=False, cores=cores, tempering=tempering,
             **sizes)
    wall = time.perf_counter() - start
    report = check_convergence(dt)
    table = report.table
    row = {"rhat": float(np.nanmax(table["r_hat"].values)),
           "ess": float(np.nanmin(table["ess_bulk"].values)),
           "ess_tail": float(np.nanmin(table["ess_tail"].values)),
           "passed": bool(report.passed), "wall": wall,
           "worst": str(table.sort_values("r_hat").index[-1])}
    if tempering is not None:
        g = dt["tempering"]
        row["barrier"] = float(g["barrier"].mean())
        row["trips"] = g["round_trips"].values.tolist()
        row["notes"] = describe_tempering(dt)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default="ibp_fa")
    parser.add_argument("--settings", default="16", help="comma-separated N or N@beta_min")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--draws", type=int)
    parser.add_argument("--tune", type=int)
    parser.add_argument("--chains", type=int)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--no-plain", action="store_true")
    args = parser.parse_args(argv)
    from inference import fit

    seeds = [int(s) for s in args.seeds.split(",")]
    settings = ([] if args.no_plain else [None]) + [setting(s) for s in
                                                     args.settings.split(",") if s]
    print(f"{'model':18} {'seed':>4} {'tempering':>9} {'R-hat':>6} {'ESS':>6} {'tail':>6} "
          f"{'check':>5} {'wall s':>7} {'x plain':>7} {'Lambda':>6} {'~2L':>4}  trips / worst")
    for name in args.families.split(","):
        model, sizes = cli_model(name)
        sizes.update({k: getattr(args, k) for k in ("draws", "tune", "chains")
                      if getattr(args, k) is not None})
        print(f"{name}: sizes {sizes}", flush=True)
        warm = {**sizes, "draws": 4, "tune": 4, "chains": 1}
        for tempering in settings:
            start = time.perf_counter()
            fit(model, random_seed=0, progressbar=False, cores=1, tempering=tempering, **warm)
            print(f"{name}: warm-up {label(tempering)} {time.perf_counter() - start:.1f} s",
                  flush=True)
        for seed in seeds:
            plain_wall = None
            for tempering in settings:
                row = run(model, sizes, seed, tempering, args.cores)
                if tempering is None:
                    plain_wall = row["wall"]
                ratio = row["wall"] / plain_wall if plain_wall else float("nan")
                lam = row.get("barrier", float("nan"))
                need = f"{int(np.ceil(2 * lam)):4d}" if np.isfinite(lam) else "   -"
                print(f"{name:18} {seed:4d} {label(tempering):>9} {row['rhat']:6.3f} "
                      f"{row['ess']:6.0f} {row['ess_tail']:6.0f} "
                      f"{'pass' if row['passed'] else 'FAIL':>5} {row['wall']:7.1f} "
                      f"{ratio:7.1f} {lam:6.2f} {need}  {row.get('trips', '')} "
                      f"{row['worst']}", flush=True)
                for note in row.get("notes", [])[1:]:
                    print(f"{'':18} {note[:400]}", flush=True)


if __name__ == "__main__":
    main()
