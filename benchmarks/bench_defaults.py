"""Are the command line's defaults sized by what the posterior needs?

For one family at a time, ``ppzoo fit NAME`` with its defaults (plus ``--seed S
--cores C --out DIR``, and any ``--`` arguments given after the family) is run as a user
runs it, in a fresh process, once to warm the compile caches and then at each seed; after
each run ``ppzoo check DIR`` is run the same way. Per run it records the wall time of the
whole command (imports, model build, compile, sampling, post-processing, writing), the
sampling time ``fit`` prints, the size of the output folder, the wall time of the check,
its verdict, and from the saved posterior the worst R-hat and the smallest bulk and tail
ESS over the checked quantities (``inference.convergence.check_convergence``, as
``ppzoo check`` computes them) with the quantity they belong to. A summary line gives the
table row of ``docs/benchmarks.md``'s "Defaults, measured".

No outside tool does this; it is a study of the zoo's own defaults. Run one family at
a time (the machine is shared): ``python benchmarks/bench_defaults.py finite_mixture
[--seeds 1 2 3 4 5] [--cores 2] [--no-warmup] [-- --draws 2000]``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ppzoo(args: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "inference.cli", *args], env=env,
                          capture_output=True, text=True, cwd=ROOT)
    return time.perf_counter() - start, done


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _worst(out: Path) -> dict:
    import numpy as np
    import xarray as xr

    from inference.convergence import check_convergence

    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    table = check_convergence(dt).table
    varying = table[table["reason"] != "constant"]
    if varying.empty:
        return dict(rhat=1.0, rhat_q="(all constant)", bulk=np.nan, bulk_q="", tail=np.nan,
                    tail_q="", draws=dt["posterior"].sizes["draw"],
                    chains=dt["posterior"].sizes["chain"])
    r = varying["r_hat"].astype(float)
    b = varying["ess_bulk"].astype(float)
    t = varying["ess_tail"].astype(float)
    return dict(rhat=float(r.max()), rhat_q=str(r.idxmax()), bulk=float(b.min()),
                bulk_q=str(b.idxmin()), tail=float(t.min()), tail_q=str(t.idxmin()),
                draws=dt["posterior"].sizes["draw"], chains=dt["posterior"].sizes["chain"])


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser()
    parser.add_argument("family")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--no-warmup", action="store_true")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix=f"bench_defaults_{args.family}_"))
    common = ["--cores", str(args.cores), "--no-progress", *extra]
    try:
        if not args.no_warmup:
            wall, done = _ppzoo(["fit", args.family, "--seed", "0", "--out",
                                 str(work / "warmup"), *common])
            print(f"warm-up run: {wall:.1f} s (exit {done.returncode})", flush=True)
        rows = []
        for seed in args.seeds:
            out = work / f"seed{seed}"
            wall, done = _ppzoo(["fit", args.family, "--seed", str(seed), "--out", str(out),
                                 *common])
            if done.returncode not in (0,) or not (out / "posterior.nc").exists():
                print(f"seed {seed}: fit failed (exit {done.returncode})\n{done.stderr[-2000:]}")
                continue
            sampled = re.search(r"(\d+) chains x (\d+) draws.*?, ([\d.]+) s", done.stdout)
            check_wall, check = _ppzoo(["check", str(out)])
            passed = "Convergence: PASSED" in check.stdout and check.returncode == 0
            worst = _worst(out)
            row = dict(seed=seed, wall=wall, sampling=float(sampled[3]) if sampled else
                       float("nan"), mb=_size_mb(out), check_wall=check_wall, passed=passed,
                       **worst)
            rows.append(row)
            print(f"seed {seed}: {row['chains']} x {row['draws']}, wall {wall:.1f} s "
                  f"(sampling {row['sampling']:.1f} s), {row['mb']:.2f} MB, check "
                  f"{check_wall:.1f} s {'PASSED' if passed else 'FAILED'}; worst R-hat "
                  f"{row['rhat']:.3f} ({row['rhat_q']}), bulk ESS {row['bulk']:.0f} "
                  f"({row['bulk_q']}), tail ESS {row['tail']:.0f} ({row['tail_q']})",
                  flush=True)
            shutil.rmtree(out, ignore_errors=True)
        if rows:
            import numpy as np

            walls = [r["wall"] for r in rows]
            print(f"\n| {args.family} | {rows[0]['chains']} x {rows[0]['draws']} | "
                  f"{np.median(walls):.0f} ({min(walls):.0f}-{max(walls):.0f}) | "
                  f"{np.median([r['mb'] for r in rows]):.1f} | "
                  f"{sum(r['passed'] for r in rows)} of {len(rows)} | "
                  f"R-hat <= {max(r['rhat'] for r in rows):.3f}, bulk ESS >= "
                  f"{min(r['bulk'] for r in rows):.0f}, tail ESS >= "
                  f"{min(r['tail'] for r in rows):.0f} | check "
                  f"{np.median([r['check_wall'] for r in rows]):.0f} s |")
            print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
