"""One path for the commands that build a model: :func:`run_request` builds the
request's model and fits it (printing the summary, writing the results, printing the
check's verdict) or estimates its evidence; :class:`RunProgress` says what a Ctrl-C
kept."""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inference.cli.messages import EXIT_INTERRUPTED, UsageError, flags_named
from inference.cli.request import Request

__all__ = ["CONNECT_SECONDS", "RunProgress", "run_request"]

#: Seconds ``--scheduler`` waits for the scheduler to answer.
CONNECT_SECONDS = 10


@dataclass
class RunProgress:
    """How far the command under way got, for the message of a Ctrl-C that ends it:
    its ``out`` folder and ``trace``, whether it resumes one, the run's stop ``flag``
    (:class:`~inference.interrupt.StopFlag`) and ``stage`` (``"sampling"``,
    ``"writing"``)."""

    out: Path | None = None
    trace: Path | None = None
    resume: bool = False
    flag: Any = None
    stage: str = ""

    def abandoned(self) -> str:
        """What a Ctrl-C that ended the command before its results were written kept,
        and where."""
        out, trace = self.out, self.trace
        if out is None:
            return "interrupted; nothing was written"
        untouched = (
            f"{out} still holds its previous result"
            if _has_result(out)
            else f"nothing was written to {out}"
        )
        if self.flag is None or not self.flag.armed:
            # importing, building the model or compiling: no draw was made
            kept = "interrupted before sampling began; nothing was written"
            if trace is not None and self.resume:
                kept += f" (the trace {trace} is as it was)"
            return kept + (f"; {untouched}" if _has_result(out) else "")
        what = "writing the results" if self.stage == "writing" else "sampling"
        stored = _trace_draws(trace) if trace is not None else []
        if trace is not None and not any(stored):
            return (
                f"interrupted while {what}, before a draw was stored; the trace "
                f"{trace} holds none; {untouched}"
            )
        if stored:
            return (
                f"interrupted while {what}; the trace {trace} keeps "
                f"{', '.join(map(str, stored))} draws per chain (`ppzoo check {trace}`; "
                f"add --resume to continue it); {untouched}"
            )
        if self.stage == "writing":
            return f"interrupted twice while writing the results: {untouched}"
        return f"interrupted twice while sampling: the draws were abandoned; {untouched}"


def _has_result(out) -> bool:
    from inference.report import RESULT_FILES

    return out.is_dir() and any((out / name).exists() for name in RESULT_FILES)


def _trace_draws(trace) -> list[int]:
    """Draws stored per chain in ``trace`` (empty when there is no trace there)."""
    from inference.trace_store import TraceStore, is_trace

    try:
        return TraceStore(trace).completed() if is_trace(trace) else []
    except Exception:  # an unreadable trace: say nothing about it
        return []


def run_request(request: Request, progress: RunProgress) -> int:
    """Build the request's model and fit it (printing the summary and writing the
    results) or estimate its evidence; the exit status."""
    from inference.interrupt import stop_requested

    _quiet_library_logs()
    if request.command == "fit":
        from inference.report import check_output_dir

        try:
            # before any sampling: nothing is overwritten or mixed
            out = check_output_dir(request.out)
        except ValueError as err:
            raise UsageError(str(err)) from None
        progress.out, progress.trace, progress.resume = out, request.trace, request.resume
    model = _build(request)
    if request.command == "evidence":
        return _estimate_evidence(request, model)
    with _dask_executor(request.scheduler) as executor, stop_requested() as stop:
        progress.flag = stop
        return _fit_and_write(request, model, out, executor, stop, progress)


def _quiet_library_logs() -> None:
    logging.getLogger("pymc").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", message="sampling was interrupted", category=UserWarning)


def _build(request: Request):
    """The request's model, built and checked before any run: its factory's errors (a
    factory only validates and builds) and the method's fit are the user's."""
    from inference.model_help import model_parameters

    params = [p.name for p in model_parameters(request.entry)]
    with flags_named(request.data_flags, params=params):
        model = request.entry.build(request.data, **request.options)
    if request.command == "fit":
        from inference.draws_memory import check_draws_fit_in_memory
        from inference.fitting import check_method

        with flags_named(request.flags, params=params):
            # a method the model cannot take (fit checks it again), or more draws than
            # the machine can hold: said before the run is announced
            check_method(model, request.method)
            check_draws_fit_in_memory(
                model,
                chains=request.chains,
                draws=request.draws,
                var_names=request.fit_extra.get("var_names"),
            )
        if request.recipe is not None:
            from inference.trace_store import record_build

            # a trace of this run can then be checked on the model's own statistics
            record_build(model, dict(request.recipe))
    return model


def _estimate_evidence(request: Request, model) -> int:
    from inference.tempering.evidence import evidence

    start = time.perf_counter()
    with flags_named(request.flags, marked_only=True):
        result = evidence(model, n_temperatures=request.temperatures, **request.sampling_options())
    print(
        f"{request.entry.name} on {request.data.name}: {result} "
        f"[{time.perf_counter() - start:.1f} s]"
    )
    return 0


def _fit_and_write(
    request: Request, model, out: Path, executor, stop, progress: RunProgress
) -> int:
    """Fit, print the summary, write the results, print the check's verdict; 130 after a
    Ctrl-C (what was sampled before it is still written, marked interrupted; a second
    Ctrl-C abandons it)."""
    import pandas as pd

    from inference.convergence import check_convergence
    from inference.fitting import fit
    from inference.report import write_results
    from inference.summary_table import summary

    entry = request.entry
    fit_kwargs = dict(request.fit_extra)
    if request.trace is not None:
        fit_kwargs.update(trace=request.trace, resume=request.resume)
    if request.temperatures is not None:
        fit_kwargs["tempering"] = request.temperatures
    if executor is not None:
        fit_kwargs["executor"] = executor
    progress.stage = "sampling"
    print(
        f"{entry.name}: sampling {request.chains} chains x {request.draws} draws "
        f"(+{request.tune} tuning); Ctrl-C stops and keeps the draws made",
        flush=True,
    )
    start = time.perf_counter()
    with flags_named(request.flags, marked_only=True):
        dt = fit(model, **request.sampling_options(), **fit_kwargs)
    elapsed = time.perf_counter() - start
    interrupted = bool(dt.attrs.get("pp_models_interrupted", 0)) or stop.is_set()
    kept_chains = dt["posterior"].sizes.get("chain", 0)
    kept_draws = dt["posterior"].sizes.get("draw", 0)
    table = summary(dt)
    note = " (interrupted)" if interrupted else ""
    print(
        f"\n{entry.name}: {dt.attrs['pp_models_method']} "
        f"({dt.attrs['pp_models_steps']}), {kept_chains} chains x {kept_draws} draws"
        f"{note}, {elapsed:.1f} s"
    )
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        print(table.drop(columns=["label_invariant"]).round(3).to_string())
    report = check_convergence(dt) if kept_chains >= 2 and not interrupted else None
    if "tempering" in dt.children and not interrupted:
        from inference.tempering.driver import describe_tempering

        print("\n" + "\n".join(describe_tempering(dt)))
    stop.arm()  # a result to write: the first Ctrl-C now lets the writing finish
    progress.stage = "writing"
    if entry.written is not None:
        dt = entry.written(dt)
    paths = write_results(dt, table, out, model=model)
    print("\nwrote " + ", ".join(str(p) for p in paths.values()), flush=True)
    if interrupted or stop.is_set():
        folder = paths["posterior"].parent
        where = f"written to {folder}"
        if folder != out:
            where += f"; {out} keeps the complete run it held"
        if request.trace is not None:
            where += f"; the trace {request.trace} holds them too (add --resume to continue it)"
        if interrupted:
            print(
                f"ppzoo: interrupted; kept {kept_draws} of {request.draws} draws in "
                f"{kept_chains} of {request.chains} chains (marked pp_models_interrupted "
                f"= 1), {where}",
                file=sys.stderr,
            )
        else:
            print(
                f"ppzoo: interrupted while writing; the complete run was {where}", file=sys.stderr
            )
        return EXIT_INTERRUPTED
    if report is not None:
        # last, where a user looks: the verdict and, when it fails, what to do about it
        print("\n" + str(report).splitlines()[0])
        if not report.passed:
            print(report.advice())
            if entry.cli.check_note:
                print(f"{entry.name}'s default run does not pass either: {entry.cli.check_note}")
    return 0


@contextlib.contextmanager
def _dask_executor(address: str | None):
    """The executor of a Dask client connected to ``address`` (closed afterwards), or
    ``None`` without an address; Dask is imported only here."""
    if address is None:
        yield None
        return
    try:
        import distributed
    except ImportError:
        raise UsageError("--scheduler needs Dask: pip install 'pp-models[dask]'") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # version-mismatch notices name their fix
            client = distributed.Client(address, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as err:
        raise UsageError(
            f"--scheduler {address}: cannot connect to a Dask scheduler there "
            f"({type(err).__name__}: {err})"
        ) from None
    try:
        yield client.get_executor()
    finally:
        client.close()
