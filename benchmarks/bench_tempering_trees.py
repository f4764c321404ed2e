"""Parallel tempering on the tree families' ``ppzoo fit`` defaults: mixture_of_trees on
reuters and pydt on iris, with and without ``tempering=N``, through ``inference.fit``.

For each run: wall time (after a warm-up fit of the same model, so compiling is apart),
the worst R-hat and the smallest bulk ESS over the label-invariant quantities
(``inference.convergence.check_convergence``'s defaults: ``n_occupied``,
``weights_sorted``; ``c``, ``theta``, ``alpha``, ``precision``, ``root_time``,
``n_internal``, ``n_multifurcations``), ESS per second, whether ``ppzoo check`` would
pass, and for the tempered run its cost per sweep relative to ``N`` plain sweeps
(issue target: at most 1.2) and the mean swap acceptance. Chains run one after another
(``cores=1``) so the wall time is the sampler's on one core.

Rows are printed as a table; the core's ``bench_tempering.py`` can import
:func:`rows` for its side-by-side page.

Usage::

    python benchmarks/bench_tempering_trees.py [--family mixture_of_trees|pydt]
        [--temperatures 4] [--seed 0] [--draws D --tune T]
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np

from inference import fit
from inference.convergence import check_convergence
from pp_models.datasets.registry import load
from pp_models.registry import get_model

FAMILIES = ("mixture_of_trees", "pydt")


def _model(name):
    entry = get_model(name)
    return entry.build(load(entry.default_dataset), **entry.defaults), entry


def _run(model, sizes, seed, tempering):
    sizes = {"chains": 2, **sizes}
    t0 = time.perf_counter()
    dt = fit(model, **sizes, cores=1, random_seed=seed, progressbar=False,
             tempering=tempering)
    return dt, time.perf_counter() - t0


def _row(name, dt, seconds, sizes, tempering):
    report = check_convergence(dt)
    table = report.table
    ess = float(table["ess_bulk"].min())
    row = {"family": name, "tempering": tempering or "off", "seconds": seconds,
           "rhat_max": float(table["r_hat"].max()),
           "worst": str(table["r_hat"].idxmax()), "ess_bulk_min": ess,
           "ess_per_s": ess / seconds, "check_passed": report.passed}
    if tempering:
        group = dt["tempering"].to_dataset()
        row["swap_acceptance"] = float(group["swap_acceptance"].mean())
        row["round_trips"] = int(group["round_trips"].sum())
    return row


def rows(name, *, temperatures=4, seed=0, draws=None, tune=None):
    """The plain and tempered rows of family ``name`` at its CLI defaults."""
    model, entry = _model(name)
    sizes = dict(entry.fit_defaults)
    if draws is not None:
        sizes["draws"] = draws
    if tune is not None:
        sizes["tune"] = tune
    warm = {"draws": 5, "tune": 5, "chains": 1}
    _run(model, warm, seed, None)
    _run(model, warm, seed, temperatures)
    out = []
    dt, seconds = _run(model, sizes, seed, None)
    out.append(_row(name, dt, seconds, sizes, None))
    dt, seconds = _run(model, sizes, seed, temperatures)
    row = _row(name, dt, seconds, sizes, temperatures)
    row["cost_per_sweep_ratio"] = seconds / (temperatures * out[0]["seconds"])
    out.append(row)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=FAMILIES, action="append")
    parser.add_argument("--temperatures", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=None)
    parser.add_argument("--tune", type=int, default=None)
    args = parser.parse_args(argv)
    import pandas as pd

    table = []
    for name in args.family or FAMILIES:
        table.extend(rows(name, temperatures=args.temperatures, seed=args.seed,
                          draws=args.draws, tune=args.tune))
        print(pd.DataFrame(table).to_string(float_format=lambda v: f"{v:.3g}"), flush=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB")
    return np.array(table)


if __name__ == "__main__":
    main()
