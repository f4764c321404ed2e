"""``ppzoo check PATH``: the convergence report of a result folder, a trace folder or
any posterior file, on the label-invariant statistics ``fit`` would report."""

from __future__ import annotations

import ast
from pathlib import Path

from inference.cli.execution import RunProgress
from inference.cli.messages import UsageError, flags_named
from inference.cli.request import load_data

__all__ = ["CHECK_EXIT_STATUS", "cmd_check"]

_CHECK_FLAGS = {
    "rhat_max": "--rhat-max",
    "ess_bulk_min": "--ess-min",
    "ess_tail_min": "--ess-min",
    "chain_groups": "--chain-groups",
}


#: ``ppzoo check``'s exit statuses (``inference.convergence.EXIT_CODES``), for its help.
CHECK_EXIT_STATUS = """exit status:
  0  converged: R-hat <= --rhat-max, bulk and tail ESS >= --ess-min, no divergences
  1  not_converged: a chain drifts or has too few effective draws, or NUTS diverged
     (or too few draws to check)
  2  bad arguments or an unreadable file
  3  multimodal: every chain is stationary on its own but the chains disagree
     (chain stacking weights are printed when the fit has a log_likelihood group, or
     ppzoo fit saved them)
  4  an interrupted run (whatever its draws say): the verdict is printed, the run is partial
"""


def cmd_check(args, progress: RunProgress) -> int:
    """``ppzoo check PATH``: the convergence report of a result folder (``--out``), a
    trace folder (``--trace``) or any posterior file, on the same label-invariant
    statistics; the exit status is the verdict's (:data:`CHECK_EXIT_STATUS`), 4 for an
    interrupted run."""
    import xarray as xr

    from inference.trace_store import is_trace

    if is_trace(args.path):
        dt, total = _read_trace_for_check(args.path)
    else:
        path = args.path / "posterior.nc" if args.path.is_dir() else args.path
        if not path.exists():
            raise UsageError(f"no such file: {path}")
        try:
            dt = xr.open_datatree(path, engine="h5netcdf")
        except Exception as err:
            raise UsageError(f"cannot read {path} as a posterior: {err}") from None
        total = dt.attrs.get("pp_models_draws_requested")
    return _report_convergence(args, dt, total)


def _read_trace_for_check(path):
    """The trace's draws laid out as ``fit`` lays out its result (label-invariant
    statistics added, raw labels apart), and the draws per chain the run asked for."""
    import json

    from inference.trace_store import TraceStore, read_trace

    store = TraceStore(path)
    dt = read_trace(path)
    status = dt.attrs["pp_models_trace_status"]
    what = {
        "complete": "complete",
        "interrupted": "partial (interrupted)",
        "running": "partial (still running, or killed before it finished)",
    }[status]
    completed = list(dt.attrs["pp_models_draws_completed"])
    print(
        f"trace {path}: {what}; draws stored per chain: "
        f"{', '.join(map(str, completed))} of {store.draws}"
    )
    recipe = store.attrs.get("build")
    if not dt["posterior"].sizes.get("draw", 0):
        return dt, store.draws  # nothing stored yet: no statistic to compute
    if recipe is None:
        if json.loads(dt.attrs.get("pp_models_label_variables", "[]")):
            print(
                "note: this trace does not say how its model was built, so the model's "
                "label-invariant statistics are not computed here (raw labels are left "
                "out); read it with inference.trace_store.read_trace(path, model=...)"
            )
        return dt, store.draws
    try:
        model = _rebuild(json.loads(recipe))
    except Exception as err:  # e.g. the CSV moved: check what needs no model
        print(
            f"note: could not rebuild the model of this trace ({err}); its label-"
            "invariant statistics are not computed here (raw labels are left out)"
        )
        return dt, store.draws
    return read_trace(path, model=model), store.draws


def _rebuild(recipe: dict):
    """The model ``ppzoo fit`` built, from the recipe it stored in the trace."""
    from pp_models.registry import get_model

    entry = get_model(recipe["model"])
    data = load_data(
        None if recipe.get("data") is None else Path(recipe["data"]),
        recipe.get("dataset") or entry.default_dataset,
    )
    return entry.build(data, **ast.literal_eval(recipe["options"]))


def _report_convergence(args, dt, total) -> int:
    from inference.convergence import EXIT_CODES, check_convergence

    posterior = dt["posterior"] if "posterior" in dt.children else None
    kept = posterior.sizes.get("draw", 0) if posterior is not None else 0
    n_chains = posterior.sizes.get("chain", 0) if posterior is not None else 0
    interrupted = bool(dt.attrs.get("pp_models_interrupted", 0))
    run = ""
    if interrupted:
        of = f" of {int(total)}" if total else ""
        run = f" on an interrupted run ({kept}{of} draws per chain kept)"
    if kept < 4 or n_chains < 2:
        print(
            f"Convergence: NOT CHECKED{run}: needs >= 2 chains with >= 4 draws, "
            f"has {n_chains} x {kept}"
        )
        return EXIT_CODES["interrupted"] if interrupted else EXIT_CODES["not_converged"]
    groups = None
    if args.chain_groups is not None:
        try:
            groups = [int(g) for g in args.chain_groups.split(",")]
        except ValueError:
            raise UsageError(
                f"--chain-groups expects integers separated by commas, got {args.chain_groups!r}"
            ) from None
    with flags_named(_CHECK_FLAGS):
        report = check_convergence(
            dt,
            rhat_max=args.rhat_max,
            ess_bulk_min=args.ess_min,
            ess_tail_min=args.ess_min,
            chain_groups=groups,
        )
    headline, _, body = str(report).partition("\n")
    print(headline + run)
    print(body)
    print("\n" + report.chains_text())
    if report.splits is not None:
        print("\n" + str(report.splits))
    if not report.passed:
        print("\n" + report.advice())
    if "log_likelihood" in dt.children:
        _print_loo(dt)
    if report.verdict == "multimodal":
        _print_stacking(dt)
    if interrupted:
        print(
            f"\nexit status {EXIT_CODES['interrupted']}: an interrupted run (the verdict is "
            "of the draws kept)"
        )
        return EXIT_CODES["interrupted"]
    return report.exit_code


def _print_loo(dt) -> None:
    """PSIS-LOO of a result with a pointwise log-likelihood, with its Pareto k count
    (Vehtari, Gelman & Gabry 2017: above 0.7 an observation's estimate is unreliable)."""
    import warnings

    import arviz as az
    import numpy as np

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the count below says what ArviZ warns of
            loo = az.loo(dt, pointwise=True)
    except ValueError as err:
        print(f"\nLOO (PSIS): not computed ({err})")
        return
    k = np.asarray(loo.pareto_k).ravel()
    print(
        f"\nLOO (PSIS): elpd_loo {float(loo.elpd):.1f} (SE {float(loo.se):.1f}); "
        f"Pareto k > 0.7 for {int(np.sum(k > 0.7))} of {k.size} observations "
        f"(max {np.nanmax(k):.2f})"
    )


def _print_stacking(dt) -> None:
    """The chain stacking weights of a multimodal run (from its pointwise
    log-likelihood, else as ``ppzoo fit`` saved them), or how to get them."""
    from inference.stacking import saved_stacking_text

    saved = saved_stacking_text(dt)
    if "log_likelihood" not in dt.children and saved is not None:
        print(
            "\n" + saved + "\n  (computed by ppzoo fit from the model's pointwise log-likelihood)"
        )
        return
    if "log_likelihood" not in dt.children:
        print(
            "\nChain stacking weights need the pointwise log-likelihood: fit with "
            "fit(..., log_likelihood=True) (or add it with "
            "inference.compute_log_likelihood(dt, model)) and check again."
        )
        return
    from inference.stacking import stack_chains

    try:
        stacking = stack_chains(dt, random_seed=0)
    except ValueError as err:
        print(f"\nChain stacking: not computed ({err})")
        return
    print("\n" + str(stacking))
