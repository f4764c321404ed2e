"""Do the command line's defaults reach their posterior? Every ``ppzoo list`` family at
five seeds, as a user runs it.

For each family ``ppzoo fit NAME --seed S --cores C --no-progress --out DIR`` is run in
a fresh process (after one warm-up run at seed 0, so the Numba and PyTensor caches are
warm, unless ``--no-warmup``), and its result checked as ``ppzoo check DIR`` checks it
(``inference.convergence.check_convergence`` on the saved posterior, in this process;
``--cli-check`` also runs the command, in a fresh process, and records its exit
status: 0 ``converged``, 3 ``multimodal``, 1 ``not_converged``). Per run it records the
verdict, the largest R-hat and the smallest bulk and tail ESS over the checked
quantities that vary, with the quantity they belong to, and the divergent transitions;
the wall time of the ``fit`` command (imports, model build, compile from warm caches,
sampling, post-processing, writing) and its CPU time (user + system of the command and
of every process it started: the chains' workers), the sampling time ``fit`` prints, the
output folder's size and the 1-minute load average before and after. For a
``multimodal`` run the chains' stacking weights (``inference.stacking``, per-chain
PSIS-LOO on the pointwise log-likelihood of the model the command builds).

Runs go seed by seed over the families, the fast ones first in each round, so a run cut
short has every family at the same number of seeds (the fast ones one more). Each run is
appended to a JSON-lines file as it ends; ``--table FILE`` prints the markdown table of
``docs/benchmarks.md``'s "Defaults at five seeds" from it.

No outside tool does this; it is a study of the zoo's own defaults::

    python benchmarks/bench_defaults.py [FAMILY ...] [--seeds 1 2 3 4 5] [--cores 2]
        [--no-warmup] [--results runs.jsonl] [-- --draws 2000]
    python benchmarks/bench_defaults.py --table runs.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: ``ppzoo check``'s exit statuses by verdict (``inference.convergence.EXIT_CODES``).
VERDICT_OF_EXIT = {0: "converged", 1: "not_converged", 3: "multimodal"}

#: Families in the order each round runs them: the fastest default first (earlier
#: measurements of this benchmark); one not named here runs last.
ORDER = (
    "ibp_fa",
    "dpm",
    "mixture_of_trees",
    "lds",
    "hmm",
    "finite_mixture",
    "lda",
    "pydt",
    "iomm",
    "ggm",
    "bhc",
)


def _cpu_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _ppzoo(args: list[str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """Run ``ppzoo ARGS``: (wall s, CPU s of it and every process it waited for, result)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cpu = _cpu_of_children()
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "inference.cli", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return time.perf_counter() - start, _cpu_of_children() - cpu, done


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _families(names: list[str]) -> list[str]:
    from pp_models.registry import list_model_summaries

    listed = [s.name for s in list_model_summaries()]
    unknown = sorted(set(names) - set(listed))
    if unknown:
        raise SystemExit(
            f"not a ppzoo family: {', '.join(unknown)} (ppzoo list: {', '.join(listed)})"
        )
    chosen = names or listed
    rank = {name: k for k, name in enumerate(ORDER)}
    return sorted(chosen, key=lambda name: rank.get(name, len(ORDER)))


def _worst(dt) -> dict:
    """The check of a saved result: verdict, worst R-hat and ESS, divergences."""
    from inference.convergence import check_convergence

    report = check_convergence(dt)
    table = report.table
    varying = table[table["reason"] != "constant"]
    row = dict(
        verdict=report.verdict,
        divergent=report.n_divergent,
        chains=int(dt["posterior"].sizes["chain"]),
        draws=int(dt["posterior"].sizes["draw"]),
    )
    if varying.empty:
        return row | dict(
            rhat=1.0, rhat_q="(all constant)", bulk=None, bulk_q="", tail=None, tail_q=""
        )
    r = varying["r_hat"].astype(float)
    b = varying["ess_bulk"].astype(float)
    t = varying["ess_tail"].astype(float)
    return row | dict(
        rhat=float(r.max()),
        rhat_q=str(r.idxmax()),
        bulk=float(b.min()),
        bulk_q=str(b.idxmin()),
        tail=float(t.min()),
        tail_q=str(t.idxmin()),
    )


def _stacking_weights(family: str, dt) -> list[float] | str:
    """The chains' stacking weights: as ``ppzoo fit`` saved them, else on the pointwise
    log-likelihood of the model ``ppzoo fit FAMILY`` builds with its defaults; why not,
    when they cannot be computed."""
    import numpy as np

    saved = dt.attrs.get("pp_models_chain_stacking_weights")
    if saved is not None:
        return [float(w) for w in np.atleast_1d(saved)]
    from inference.cli.request import load_data
    from inference.log_likelihood import compute_log_likelihood
    from inference.stacking import chain_loo, stacking_weights
    from pp_models.registry import get_model

    try:
        entry = get_model(family)
        model = entry.build(load_data(None, entry.default_dataset), **entry.defaults)
        if "log_likelihood" not in dt.children:
            compute_log_likelihood(dt, model)
        return [float(w) for w in stacking_weights(chain_loo(dt)[0])]
    except Exception as err:  # reported in the table: the run's other figures stand
        return f"{type(err).__name__}: {err}"[:200]


def _run(family: str, seed: int, work: Path, common: list[str], cli_check: bool) -> dict:
    """One ``ppzoo fit`` and its check; seed 0 is the warm-up: the fit alone."""
    import xarray as xr

    out = work / f"{family}-seed{seed}"
    load_before = os.getloadavg()[0]
    wall, cpu, done = _ppzoo(["fit", family, "--seed", str(seed), "--out", str(out), *common])
    row = dict(
        family=family,
        seed=seed,
        wall=wall,
        cpu=cpu,
        load_before=load_before,
        fit_exit=done.returncode,
    )
    if done.returncode != 0 or not (out / "posterior.nc").exists():
        row["error"] = done.stderr[-2000:]
        return row
    if seed == 0:
        shutil.rmtree(out, ignore_errors=True)
        return row
    sampled = re.search(r"(\d+) chains x (\d+) draws.*?, ([\d.]+) s", done.stdout)
    tuning = re.search(r"draws \(\+(\d+) tuning\)", done.stdout)
    check_wall, check_exit = None, None
    if cli_check:
        check_wall, _, check = _ppzoo(["check", str(out)])
        check_exit = check.returncode
    row.update(
        sampling=float(sampled[3]) if sampled else None,
        tune=int(tuning[1]) if tuning else None,
        mb=_size_mb(out),
        check_wall=check_wall,
        check_exit=check_exit,
        check_verdict=None if check_exit is None else VERDICT_OF_EXIT.get(check_exit, "other"),
        pictures=sorted(p.name for p in out.glob("*.png")),
    )
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    dt.load()
    row.update(_worst(dt))
    if row["verdict"] == "multimodal":
        row["stacking"] = _stacking_weights(family, dt)
    row["load_after"] = os.getloadavg()[0]
    shutil.rmtree(out, ignore_errors=True)
    return row


def _say(row: dict) -> str:
    if row["seed"] == 0 and "error" not in row:
        return f"{row['family']}: {row['wall']:.1f} s, CPU {row['cpu']:.1f} s"
    if "error" in row:
        return (
            f"{row['family']} seed {row['seed']}: fit failed (exit {row['fit_exit']}) "
            f"after {row['wall']:.1f} s\n{row['error']}"
        )
    stacking = row.get("stacking")
    weights = (
        ""
        if stacking is None
        else f"; stacking {', '.join(f'{w:.2f}' for w in stacking)}"
        if isinstance(stacking, list)
        else f"; stacking not computed ({stacking})"
    )
    return (
        f"{row['family']} seed {row['seed']}: {row['chains']} x {row['draws']}, "
        f"{row['verdict']} (ppzoo check exit {row['check_exit']}), R-hat {row['rhat']:.3f} "
        f"({row['rhat_q']}), bulk ESS {_num(row['bulk'])} ({row['bulk_q']}), tail ESS "
        f"{_num(row['tail'])}, divergent {row['divergent']}; wall {row['wall']:.1f} s, "
        f"CPU {row['cpu']:.1f} s (sampling {_num(row['sampling'], '.1f')} s), "
        f"{row['mb']:.1f} MB, load {row['load_before']:.1f}-{row['load_after']:.1f}"
        f"{weights}"
    )


def _num(value, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def _span(values, spec: str = ".0f") -> str:
    """``median (min-max)`` of ``values``."""
    import numpy as np

    values = sorted(values)
    if len(values) == 1:
        return format(values[0], spec)
    return (
        f"{format(float(np.median(values)), spec)} "
        f"({format(values[0], spec)}-{format(values[-1], spec)})"
    )


def table(rows: list[dict]) -> str:
    """The markdown table of the runs: one row per family."""
    families = []
    for row in rows:
        if row["family"] not in families:
            families.append(row["family"])
    lines = [
        "| family | chains x draws (+ tune) | seeds | verdicts | worst R-hat | "
        "min bulk / tail ESS | divergent | stacking weights (multimodal seeds) | "
        "wall s | CPU s | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for family in families:
        # one run per seed: the first recorded, when runs of one seed were repeated
        by_seed = {}
        for r in rows:
            if r["family"] == family and r.get("seed", 0) > 0:
                by_seed.setdefault(r["seed"], r)
        runs = [by_seed[seed] for seed in sorted(by_seed)]
        done = [r for r in runs if "error" not in r]
        failed = [r for r in runs if "error" in r]
        if not done:
            lines.append(f"| {family} | | {len(runs)} | fit failed at every seed | | | | | | | |")
            continue
        counts = {
            v: sum(r["verdict"] == v for r in done)
            for v in ("converged", "multimodal", "not_converged")
        }
        verdicts = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        if failed:
            verdicts += f", {len(failed)} fit failed"
        mismatch = [r["seed"] for r in done if r["check_verdict"] not in (None, r["verdict"])]
        if mismatch:
            verdicts += f" (`ppzoo check` said otherwise at seed {mismatch})"
        worst = max(done, key=lambda r: r["rhat"])
        bulk = min(done, key=lambda r: r["bulk"] if r["bulk"] is not None else float("inf"))
        tail = (
            min(r["tail"] for r in done if r["tail"] is not None)
            if any(r["tail"] is not None for r in done)
            else None
        )
        divergent = [r["divergent"] for r in done]
        divergences = (
            "n/a (no NUTS)"
            if all(d is None for d in divergent)
            else str(sum(d or 0 for d in divergent))
        )
        stacked = []
        for r in done:
            if r["verdict"] != "multimodal":
                continue
            w = r.get("stacking")
            stacked.append(
                f"seed {r['seed']}: "
                + ("/".join(f"{x:.2f}" for x in w) if isinstance(w, list) else "not computed")
            )
        first = done[0]
        size = f"{first['chains']} x {first['draws']}" + (
            f" (+{first['tune']})" if first.get("tune") is not None else ""
        )
        loads = [r["load_before"] for r in done] + [r["load_after"] for r in done]
        lines.append(
            f"| {family} | {size} | {', '.join(str(r['seed']) for r in runs)} | {verdicts} | "
            f"{worst['rhat']:.3f} (`{worst['rhat_q']}`) | {_num(bulk['bulk'])} "
            f"(`{bulk['bulk_q']}`) / {_num(tail)} | {divergences} | "
            f"{'; '.join(stacked) or '-'} | {_span([r['wall'] for r in done])} | "
            f"{_span([r['cpu'] for r in done])} | {min(loads):.1f}-{max(loads):.1f} |"
        )
    return "\n".join(lines)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []
    argv = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser()
    parser.add_argument("families", nargs="*", help="default: every `ppzoo list` family")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--no-warmup", action="store_true")
    parser.add_argument(
        "--cli-check",
        action="store_true",
        help="also run `ppzoo check DIR` in a fresh process (the verdict is computed in "
        "this one either way, by the function it calls)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        default=Path("bench_defaults.jsonl"),
        help="JSON-lines file each run is appended to",
    )
    parser.add_argument(
        "--table",
        type=Path,
        metavar="RESULTS",
        help="print the markdown table of a results file and stop",
    )
    args = parser.parse_args(argv)
    if args.table is not None:
        print(table(_read(args.table)))
        return
    families = _families(args.families)
    work = Path(tempfile.mkdtemp(prefix="bench_defaults_"))
    common = ["--cores", str(args.cores), "--no-progress", *extra]
    rounds = ([] if args.no_warmup else [0]) + list(args.seeds)
    print(
        f"families: {', '.join(families)}; seeds {args.seeds}; load "
        f"{os.getloadavg()[0]:.1f}; writing {args.results}",
        flush=True,
    )
    try:
        for seed in rounds:
            for family in families:
                row = _run(family, seed, work, common, args.cli_check)
                with args.results.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(("warm-up " if seed == 0 else "") + _say(row), flush=True)
        print("\n" + table(_read(args.results)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
