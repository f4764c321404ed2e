"""The ``ppzoo`` command line: list models, fit one, check a saved fit, run the demo.

Examples
--------
::

    ppzoo list
    ppzoo describe dpm
    ppzoo fit finite_mixture --dataset iris --method gibbs --draws 1000 --out results/
    ppzoo fit finite_mixture --data my.csv --param n_components=4
    ppzoo fit dpm --tempering 12
    ppzoo evidence dpm --param likelihood=diag_gaussian --method stepping_stone
    ppzoo check results/posterior.nc
    ppzoo demo

A thin layer over the library: a command's arguments become a checked :class:`Request`,
which one path (:func:`_run`) builds and fits (``fit``, ``demo``) or estimates the
evidence of (``evidence``).

Exit status: 0 done; ``ppzoo check``: 1 ``not_converged``, 3 ``multimodal``, 4 an
interrupted run; 2 a problem with the user's arguments or data, printed as one line
``ppzoo: error: ...`` naming the flag given (``--seed``, not ``fit``'s
``random_seed``); 70 (``EX_SOFTWARE``) a bug in pp-models, printed as its traceback and
a line asking for a report; 130 Ctrl-C; 141 the reader of the output went away.

Which errors are the user's: the checks of the arguments here, the model's factory (a
factory validates its options and data and builds a graph, nothing more), and the
errors the library marks as a bad input (:data:`pp_models.validation.USER_INPUT_ERRORS`,
raised by ``fit``'s checks of its arguments and by a tempered run's refusal of a step).
Anything else raised while fitting, estimating or writing is ours.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import logging
import re
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["EXIT_BUG", "EXIT_INTERRUPTED", "EXIT_USAGE", "Request", "RunProgress", "main"]

DEMO = dict(model="finite_mixture", dataset="iris", method="gibbs", draws=1000, tune=1000,
            chains=4, seed=20261126)

#: Exit status of a problem with the user's arguments or data (argparse's own).
EXIT_USAGE = 2
#: Exit status of a bug in pp-models (``EX_SOFTWARE`` of BSD's ``sysexits.h``).
EXIT_BUG = 70
#: Exit status after a Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130

_FIT_DEFAULTS = {"draws": 1000, "tune": 1000, "chains": 4}

#: Seconds ``--scheduler`` waits for the scheduler to answer.
CONNECT_SECONDS = 10

# The library's messages name its arguments; the user typed these flags.
_FIT_FLAGS = {"draws": "--draws", "tune": "--tune", "chains": "--chains", "cores": "--cores",
              "random_seed": "--seed", "method": "--method", "trace": "--trace",
              "tempering": "--tempering", "executor": "--scheduler"}
_EVIDENCE_FLAGS = {"draws": "--draws", "tune": "--tune", "chains": "--chains",
                   "cores": "--cores", "random_seed": "--seed", "method": "--method",
                   "n_temperatures": "--temperatures"}
_CHECK_FLAGS = {"rhat_max": "--rhat-max", "ess_bulk_min": "--ess-min",
                "ess_tail_min": "--ess-min", "chain_groups": "--chain-groups"}

#: ``ppzoo check``'s exit statuses (``inference.convergence.EXIT_CODES``), for its help.
_CHECK_EXIT_STATUS = """exit status:
  0  converged: R-hat <= --rhat-max, bulk and tail ESS >= --ess-min, no divergences
  1  not_converged: a chain drifts or has too few effective draws, or NUTS diverged
     (or too few draws to check)
  2  bad arguments or an unreadable file
  3  multimodal: every chain is stationary on its own but the chains disagree
     (chain stacking weights are printed when the fit has a log_likelihood group)
  4  an interrupted run (whatever its draws say): the verdict is printed, the run is partial
"""

_BUG_REPORT = ("ppzoo: this is a bug in pp-models, not a problem with your input; please "
               "report it to the pp-models developers with the command you ran and the "
               "traceback above")


class UsageError(Exception):
    """A problem with the user's arguments (exit status 2, no traceback)."""


@dataclass(frozen=True)
class Request:
    """A ``fit``, ``demo`` or ``evidence`` command, its arguments checked.

    ``entry`` is the family's :class:`~pp_models.registry.Family` record, ``data`` the
    loaded :class:`~pp_models.datasets.Dataset` and ``options`` the factory's keyword
    arguments. ``temperatures`` is ``fit``'s ``tempering`` (``--tempering``) or
    ``evidence``'s ``n_temperatures`` (``--temperatures``); ``out``, ``trace``,
    ``resume``, ``scheduler``, ``fit_extra`` (the family's other ``fit`` keywords, e.g.
    ``var_names``) and ``recipe`` (how to rebuild the model, stored in a trace) are
    ``fit``'s. ``flags`` maps the library's argument names to the flags that gave them
    and ``data_flags`` the factory's data argument to ``--data``/``--dataset``, for the
    messages of bad values (empty for the demo, whose values are fixed).
    """

    command: str
    entry: Any
    data: Any
    options: Mapping[str, Any]
    method: str
    draws: int
    tune: int
    chains: int
    cores: int | None = None
    seed: int | None = None
    progress: bool = True
    temperatures: int | None = None
    out: Path | None = None
    trace: Path | None = None
    resume: bool = False
    scheduler: str | None = None
    fit_extra: Mapping[str, Any] = field(default_factory=dict)
    recipe: Mapping[str, Any] | None = None
    flags: Mapping[str, str] = field(default_factory=dict)
    data_flags: Mapping[str, str] = field(default_factory=dict)


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
        untouched = (f"{out} still holds its previous result" if _has_result(out)
                     else f"nothing was written to {out}")
        if self.flag is None or not self.flag.armed:
            # importing, building the model or compiling: no draw was made
            kept = "interrupted before sampling began; nothing was written"
            if trace is not None and self.resume:
                kept += f" (the trace {trace} is as it was)"
            return kept + (f"; {untouched}" if _has_result(out) else "")
        what = "writing the results" if self.stage == "writing" else "sampling"
        stored = _trace_draws(trace) if trace is not None else []
        if trace is not None and not any(stored):
            return (f"interrupted while {what}, before a draw was stored; the trace "
                    f"{trace} holds none; {untouched}")
        if stored:
            return (f"interrupted while {what}; the trace {trace} keeps "
                    f"{', '.join(map(str, stored))} draws per chain (`ppzoo check {trace}`; "
                    f"add --resume to continue it); {untouched}")
        if self.stage == "writing":
            return f"interrupted twice while writing the results: {untouched}"
        return f"interrupted twice while sampling: the draws were abandoned; {untouched}"


def main(argv: list[str] | None = None) -> int:
    """Run ``ppzoo`` with ``argv`` (default: the command line) and return its exit status
    (module docstring)."""
    parser, commands = _parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if (len(argv) >= 2 and argv[0] == "fit" and not argv[1].startswith("-")
            and ({"-h", "--help"} & set(argv))):
        # `ppzoo fit NAME --help`: the sampling options and NAME's own --param keys
        return _fit_help(commands["fit"], argv[1])
    args = parser.parse_args(argv)
    progress = RunProgress()
    try:
        code = args.run(args, progress)
        sys.stdout.flush()  # here, where a reader gone away (a broken pipe) is caught
        return code
    except UsageError as err:
        print(f"ppzoo: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"ppzoo: {progress.abandoned()}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`ppzoo check DIR | head`): end quietly, as `cat` does;
        # stdout is pointed at /dev/null so the interpreter's last flush cannot fail too
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except Exception as err:
        if isinstance(err, SystemError) and isinstance(err.__cause__ or err.__context__,
                                                       KeyboardInterrupt):
            # a Ctrl-C that landed while a compiled kernel was returning
            print(f"ppzoo: {progress.abandoned()}", file=sys.stderr)
            return EXIT_INTERRUPTED
        from pp_models.validation import USER_INPUT_ERRORS

        if isinstance(err, USER_INPUT_ERRORS):
            # the library's check of an input no flag names (the flags' are renamed)
            print(f"ppzoo: error: {err}", file=sys.stderr)
            return EXIT_USAGE
        import traceback

        traceback.print_exc()
        print(_BUG_REPORT, file=sys.stderr)
        return EXIT_BUG


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


@contextlib.contextmanager
def _flags_named(flags: Mapping[str, str], params=(), *, marked_only: bool = False):
    """Re-raise a ``ValueError``/``TypeError`` from the library call inside as a
    ``UsageError`` whose message names the flags (``flags``: argument name -> flag text)
    instead of the Python arguments they became; a factory option in ``params`` named at
    the message's start or quoted as ``name=...`` becomes ``--param name``.

    ``marked_only``: only the errors the library marks as a bad input
    (:data:`~pp_models.validation.USER_INPUT_ERRORS`); around a run, any other one is a
    bug and goes on to :func:`main`'s report.
    """
    if marked_only:
        from pp_models.validation import USER_INPUT_ERRORS as errors
    else:
        errors = (ValueError, TypeError)
    try:
        yield
    except errors as err:
        message = _name_flags(str(err), flags)
        if params:
            names = "|".join(map(re.escape, params))
            message = re.sub(rf"^({names})(?=[\s:])", r"--param \1", message)
            message = re.sub(rf"(?<![\w.-])({names})=", r"--param \1=", message)
        raise UsageError(message) from None


def _name_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with the argument names in ``flags`` replaced by their flags.

    The library's messages start with the argument they are about (``draws must be >=
    1``, ``trace: ...``) and quote others as ``name=value`` (``method='nuts' needs ...``,
    ``drop trace=``); these become ``--draws must be >= 1``, ``--trace: ...``,
    ``--method nuts needs ...``, ``drop --trace``. Other words are left alone: an
    argument's name can also be an ordinary word of the message.
    """
    if not flags:
        return message
    names = "|".join(map(re.escape, flags))
    message = re.sub(rf"^({names})(?=[\s:])", lambda m: flags[m[1]], message)

    def flag_value(m: re.Match) -> str:
        value = m[2] if m[2] is not None else m[3]
        return f"{flags[m[1]]} {value}" if value else flags[m[1]]

    return re.sub(rf"(?<![\w.-])({names})=(?:'([^']*)'|([^\s,;)]*))", flag_value, message)


def _parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """``ppzoo``'s parser and its commands' parsers by name (argparse keeps its own
    record of them private)."""
    parser = argparse.ArgumentParser(prog="ppzoo", description="pp-models: the model zoo.")
    sub = parser.add_subparsers(dest="command", required=True)

    p_list = sub.add_parser("list", help="list the models and data sets")
    p_list.set_defaults(run=_cmd_list)

    p_describe = sub.add_parser("describe", help="a model's options (--param keys) and defaults")
    p_describe.add_argument("model", help="model name (see `ppzoo list`)")
    p_describe.set_defaults(run=_cmd_describe)

    p_fit = sub.add_parser("fit", help="fit a model to a data set or a CSV file")
    p_fit.add_argument("model", help="model name (see `ppzoo list`)")
    source = p_fit.add_mutually_exclusive_group()
    source.add_argument("--dataset", help="a shipped data set (see `ppzoo list`)")
    source.add_argument("--data", type=Path, help="a CSV file with a header row, numeric columns")
    _add_sampling_options(p_fit)
    p_fit.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                       help="model option, e.g. n_components=4 (repeatable)")
    p_fit.add_argument("--tempering", type=int, default=None, metavar="N",
                       help="parallel tempering with N temperatures (>= 2): each chain runs "
                            "N replicas from the prior to the posterior that swap states; "
                            "the posterior is the coldest one's")
    p_fit.set_defaults(run=_cmd_fit)

    p_evidence = sub.add_parser("evidence", help="log marginal likelihood of a model on data")
    p_evidence.add_argument("model", help="model name (see `ppzoo list`)")
    source = p_evidence.add_mutually_exclusive_group()
    source.add_argument("--dataset", help="a shipped data set (see `ppzoo list`)")
    source.add_argument("--data", type=Path, help="a CSV file with a header row, numeric columns")
    p_evidence.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                            help="model option, e.g. n_components=4 (repeatable)")
    p_evidence.add_argument("--method", default="stepping_stone",
                            help="stepping_stone | thermodynamic | ais (default stepping_stone)")
    p_evidence.add_argument("--temperatures", type=int, default=None, metavar="N",
                            help="temperatures of the ladder (AIS: annealing steps)")
    p_evidence.add_argument("--draws", type=int, default=1000,
                            help="draws per chain (AIS: particles), default 1000")
    p_evidence.add_argument("--tune", type=int, default=1000, help="default 1000")
    p_evidence.add_argument("--chains", type=int, default=4, help="default 4")
    p_evidence.add_argument("--cores", type=int, default=None)
    p_evidence.add_argument("--seed", type=int, default=None)
    p_evidence.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_evidence.set_defaults(run=_cmd_evidence)

    p_check = sub.add_parser(
        "check", help="convergence report of a saved fit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The convergence verdict of a saved fit (any posterior.nc with a "
                    "posterior group,\na result folder or a --trace folder), pooled "
                    "and per chain.",
        epilog=_CHECK_EXIT_STATUS)
    p_check.add_argument("path", type=Path, help="posterior.nc written by `ppzoo fit`, or its dir")
    p_check.add_argument("--rhat-max", type=float, default=1.01)
    p_check.add_argument("--ess-min", type=float, default=400)
    p_check.add_argument("--chain-groups", default=None, metavar="G,G,...",
                         help="group of each chain (chains started from one point), e.g. "
                              "0,0,1,1: nested R-hat replaces R-hat")
    p_check.set_defaults(run=_cmd_check)

    p_demo = sub.add_parser("demo", help="fit the finite mixture to iris with Gibbs + NUTS")
    p_demo.add_argument("--out", type=Path, default=Path("ppzoo-out/demo"))
    p_demo.add_argument("--no-progress", action="store_true")
    p_demo.set_defaults(run=_cmd_demo)
    commands = {"list": p_list, "describe": p_describe, "fit": p_fit, "evidence": p_evidence,
                "check": p_check, "demo": p_demo}
    return parser, commands


def _add_sampling_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", default="auto", help="auto | nuts | gibbs | advi (default auto)")
    p.add_argument("--draws", type=int, default=None, help="default 1000 (or the model's)")
    p.add_argument("--tune", type=int, default=None, help="default 1000 (or the model's)")
    p.add_argument("--chains", type=int, default=None, help="default 4 (or the model's)")
    p.add_argument("--cores", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--out", type=Path, default=None,
                   help="output directory (default ppzoo-out/MODEL)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--trace", type=Path, default=None, metavar="PATH",
                   help="write the draws to this folder as they are made (a new path; "
                        "`ppzoo check PATH` reads it while it runs or after a crash)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run stored at --trace PATH (same draws/tune/chains)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the chains on the Dask cluster whose scheduler is at ADDRESS "
                        "(e.g. tcp://10.0.0.5:8786), one task per chain; needs the dask "
                        "extra; --trace must then be a folder the workers share")


def _cmd_list(args, progress: RunProgress) -> int:
    import textwrap

    from pp_models.datasets import list_datasets
    from pp_models.registry import list_model_summaries, no_cli_entries

    print("Models:")
    # read from the families' sources: no family (and no PyMC) is imported
    for entry in list_model_summaries():
        print(f"  {entry.name:<22} [{', '.join(entry.methods)}]  {entry.description}")
        if entry.check_note:
            print(textwrap.fill(f"default run does not pass `ppzoo check`: {entry.check_note}",
                                width=78, initial_indent=" " * 25,
                                subsequent_indent=" " * 25))
    if others := no_cli_entries():
        print("Families without a ppzoo entry (use them from Python):")
        for entry in others:
            print(f"  {entry.name:<22} {entry.reason}")
    print("Data sets:")
    for info in list_datasets():
        print(f"  {info.name:<22} {info.kind:<7} {info.description}")
    return 0


def _cmd_describe(args, progress: RunProgress) -> int:
    from inference.model_help import describe_model
    from pp_models.registry import get_model, get_summary

    with _flags_named({}):
        get_summary(args.model)  # an unknown name is refused before a family is imported
    print(describe_model(get_model(args.model)))
    return 0


def _fit_help(fit_parser: argparse.ArgumentParser, name: str) -> int:
    from inference.model_help import describe_model
    from pp_models.registry import get_model, get_summary

    fit_parser.print_help()
    try:
        get_summary(name)  # an unknown name is refused before a family is imported
        print("\n" + describe_model(get_model(name)))
    except ValueError as err:
        print(f"ppzoo: error: {err}", file=sys.stderr)
        return 2
    return 0


def _check_param_keys(entry, options: dict) -> None:
    """A --param key the factory does not take: say which ones it does, before any work."""
    import difflib

    from inference.model_help import model_parameters

    valid = [p.name for p in model_parameters(entry)]
    for key in options:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"--param {key}: {entry.name} has no option {key!r}{hint}; "
                             f"its options are {', '.join(valid)} "
                             f"(see `ppzoo describe {entry.name}`)")


def _cmd_fit(args, progress: RunProgress) -> int:
    with _flags_named({}):  # reading the arguments and the data: all the user's
        request = _request(args, "fit")
    return _run(request, progress)


def _cmd_evidence(args, progress: RunProgress) -> int:
    with _flags_named({}):
        request = _request(args, "evidence")
    return _run(request, progress)


def _cmd_demo(args, progress: RunProgress) -> int:
    from pp_models.registry import get_model

    entry = get_model(DEMO["model"])
    print(f"ppzoo demo: {entry.description}, on {DEMO['dataset']}")
    return _run(Request(command="fit", entry=entry, data=_load_data(None, DEMO["dataset"]),
                        options=dict(entry.defaults), method=DEMO["method"],
                        draws=DEMO["draws"], tune=DEMO["tune"], chains=DEMO["chains"],
                        seed=DEMO["seed"], progress=not args.no_progress, out=args.out),
                progress)


def _request(args, command: str) -> Request:
    """The :class:`Request` of ``ppzoo fit`` or ``ppzoo evidence``: every argument that
    needs no model checked (those that need no family before one is imported, which
    takes seconds), the family's options and data loaded."""
    from pp_models.registry import get_model, get_summary
    from pp_models.validation import check_int, check_random_seed, check_sampling_sizes

    fitting = command == "fit"
    flags = _FIT_FLAGS if fitting else _EVIDENCE_FLAGS
    summary = get_summary(args.model)  # an unknown model is refused before any import
    sizes = dict(_FIT_DEFAULTS)
    if fitting:
        sizes.update({k: v for k, v in summary.fit_defaults.items() if k in sizes})
    sizes.update({k: getattr(args, k) for k in sizes if getattr(args, k) is not None})
    temperatures = args.tempering if fitting else args.temperatures
    with _flags_named(flags):
        # fit checks these again; here a bad one is refused before the model is built and
        # the "sampling 4 chains x 0 draws" line is printed
        check_sampling_sizes(sizes["draws"], sizes["tune"], sizes["chains"], args.cores)
        check_random_seed(args.seed)
        if temperatures is not None:
            check_int(temperatures, "tempering" if fitting else "n_temperatures", minimum=2)
    if fitting:
        out = args.out or Path("ppzoo-out") / summary.name
        if args.resume and args.trace is None:
            raise UsageError("--resume needs --trace PATH (the run to continue)")
        if args.trace is not None and args.trace.resolve().is_relative_to(out.resolve()):
            # the results replace the output folder whole, which would take the trace along
            raise UsageError(f"--trace {args.trace} must not be inside --out {out}")
        _check_method(summary, args.method)
    else:
        out = None
        _check_evidence_method(args.method, sizes["draws"])
    if args.data is not None and not args.data.exists():
        raise UsageError(f"--data: no such file: {args.data}")

    entry = get_model(args.model)
    options = dict(entry.defaults)
    given = _parse_params(args.param)
    _check_param_keys(entry, given)
    options.update(given)
    dataset = None if args.data is not None else (args.dataset or entry.default_dataset)
    data = _load_data(args.data, dataset)
    fitted = dict(command=command, entry=entry, data=data, options=options,
                  method=args.method, **sizes, cores=args.cores, seed=args.seed,
                  progress=not args.no_progress, temperatures=temperatures, flags=flags,
                  data_flags=_data_flag(entry, args))
    if not fitting:
        return Request(**fitted)
    recipe = {"model": entry.name, "options": repr(options), "dataset": dataset,
              "data": None if args.data is None else str(args.data.resolve())}
    return Request(**fitted, out=out, trace=args.trace, resume=args.resume,
                   scheduler=args.scheduler,
                   fit_extra={k: v for k, v in entry.fit_defaults.items()
                              if k not in _FIT_DEFAULTS},
                   recipe=recipe)


def _check_evidence_method(method: str, draws: int) -> None:
    from inference.tempering.evidence import EVIDENCE_METHODS

    if method not in EVIDENCE_METHODS:
        raise UsageError(f"--method must be one of {', '.join(EVIDENCE_METHODS)}; "
                         f"got {method!r}")
    if method != "ais" and draws < 4:
        raise UsageError(f"--draws must be >= 4 for a {method} estimate and its standard "
                         f"error, got {draws}")


def _check_method(entry, method: str) -> None:
    if method not in entry.methods and method != "auto":
        raise UsageError(f"--method {method!r} is not available for {entry.name}; "
                         f"choose from {', '.join(entry.methods)}")


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
        raise UsageError(f"--scheduler {address}: cannot connect to a Dask scheduler there "
                         f"({type(err).__name__}: {err})") from None
    try:
        yield client.get_executor()
    finally:
        client.close()


def _data_flag(entry, args) -> dict[str, str]:
    """The factory's data argument -> the flag that gave the data (none for the
    family's default data set, which the user did not name)."""
    from inference.model_help import data_parameter

    if args.data is not None:
        return {data_parameter(entry): f"--data {args.data}"}
    if args.dataset is not None:
        return {data_parameter(entry): f"--dataset {args.dataset}"}
    return {}


def _run(request: Request, progress: RunProgress) -> int:
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
    with _flags_named(request.data_flags, params=params):
        model = request.entry.build(request.data, **request.options)
    if request.command == "fit":
        from inference.draws_memory import check_draws_fit_in_memory
        from inference.fit import check_method

        with _flags_named(request.flags, params=params):
            # a method the model cannot take (fit checks it again), or more draws than
            # the machine can hold: said before the run is announced
            check_method(model, request.method)
            check_draws_fit_in_memory(model, chains=request.chains, draws=request.draws,
                                      var_names=request.fit_extra.get("var_names"))
        if request.recipe is not None:
            from inference.trace_store import record_build

            # a trace of this run can then be checked on the model's own statistics
            record_build(model, dict(request.recipe))
    return model


def _estimate_evidence(request: Request, model) -> int:
    from inference.tempering.evidence import evidence

    start = time.perf_counter()
    with _flags_named(request.flags, marked_only=True):
        result = evidence(model, method=request.method, n_temperatures=request.temperatures,
                          draws=request.draws, tune=request.tune, chains=request.chains,
                          cores=request.cores, random_seed=request.seed,
                          progressbar=request.progress)
    print(f"{request.entry.name} on {request.data.name}: {result} "
          f"[{time.perf_counter() - start:.1f} s]")
    return 0


def _fit_and_write(request: Request, model, out: Path, executor, stop,
                   progress: RunProgress) -> int:
    """Fit, print the summary, write the results, print the check's verdict; 130 after a
    Ctrl-C (what was sampled before it is still written, marked interrupted; a second
    Ctrl-C abandons it)."""
    import pandas as pd

    from inference.convergence import check_convergence
    from inference.fit import fit
    from inference.report import write_results
    from inference.summary import summary

    entry = request.entry
    fit_kwargs = dict(request.fit_extra)
    if request.trace is not None:
        fit_kwargs.update(trace=request.trace, resume=request.resume)
    if request.temperatures is not None:
        fit_kwargs["tempering"] = request.temperatures
    if executor is not None:
        fit_kwargs["executor"] = executor
    progress.stage = "sampling"
    print(f"{entry.name}: sampling {request.chains} chains x {request.draws} draws "
          f"(+{request.tune} tuning); Ctrl-C stops and keeps the draws made", flush=True)
    start = time.perf_counter()
    with _flags_named(request.flags, marked_only=True):
        dt = fit(model, method=request.method, draws=request.draws, tune=request.tune,
                 chains=request.chains, cores=request.cores, random_seed=request.seed,
                 progressbar=request.progress, **fit_kwargs)
    elapsed = time.perf_counter() - start
    interrupted = bool(dt.attrs.get("pp_models_interrupted", 0)) or stop.is_set()
    kept_chains = dt["posterior"].sizes.get("chain", 0)
    kept_draws = dt["posterior"].sizes.get("draw", 0)
    table = summary(dt)
    note = " (interrupted)" if interrupted else ""
    print(f"\n{entry.name}: {dt.attrs['pp_models_method']} "
          f"({dt.attrs['pp_models_steps']}), {kept_chains} chains x {kept_draws} draws"
          f"{note}, {elapsed:.1f} s")
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
    paths = write_results(dt, table, out)
    print("\nwrote " + ", ".join(str(p) for p in paths.values()), flush=True)
    if interrupted or stop.is_set():
        folder = paths["posterior"].parent
        where = f"written to {folder}"
        if folder != out:
            where += f"; {out} keeps the complete run it held"
        if request.trace is not None:
            where += (f"; the trace {request.trace} holds them too (add --resume to "
                      "continue it)")
        if interrupted:
            print(f"ppzoo: interrupted; kept {kept_draws} of {request.draws} draws in "
                  f"{kept_chains} of {request.chains} chains (marked pp_models_interrupted "
                  f"= 1), {where}", file=sys.stderr)
        else:
            print(f"ppzoo: interrupted while writing; the complete run was {where}",
                  file=sys.stderr)
        return EXIT_INTERRUPTED
    if report is not None:
        # last, where a user looks: the verdict and, when it fails, what to do about it
        print("\n" + str(report).splitlines()[0])
        if not report.passed:
            print(report.advice())
            if entry.cli.check_note:
                print(f"{entry.name}'s default run does not pass either: "
                      f"{entry.cli.check_note}")
    return 0


def _cmd_check(args, progress: RunProgress) -> int:
    """``ppzoo check PATH``: the convergence report of a result folder (``--out``), a
    trace folder (``--trace``) or any posterior file, on the same label-invariant
    statistics; the exit status is the verdict's (:data:`_CHECK_EXIT_STATUS`), 4 for an
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
    what = {"complete": "complete",
            "interrupted": "partial (interrupted)",
            "running": "partial (still running, or killed before it finished)"}[status]
    completed = list(dt.attrs["pp_models_draws_completed"])
    print(f"trace {path}: {what}; draws stored per chain: "
          f"{', '.join(map(str, completed))} of {store.draws}")
    recipe = store.attrs.get("build")
    if not dt["posterior"].sizes.get("draw", 0):
        return dt, store.draws  # nothing stored yet: no statistic to compute
    if recipe is None:
        if json.loads(dt.attrs.get("pp_models_label_variables", "[]")):
            print("note: this trace does not say how its model was built, so the model's "
                  "label-invariant statistics are not computed here (raw labels are left "
                  "out); read it with inference.trace_store.read_trace(path, model=...)")
        return dt, store.draws
    try:
        model = _rebuild(json.loads(recipe))
    except Exception as err:  # e.g. the CSV moved: check what needs no model
        print(f"note: could not rebuild the model of this trace ({err}); its label-"
              "invariant statistics are not computed here (raw labels are left out)")
        return dt, store.draws
    return read_trace(path, model=model), store.draws


def _rebuild(recipe: dict):
    """The model ``ppzoo fit`` built, from the recipe it stored in the trace."""
    from pp_models.registry import get_model

    entry = get_model(recipe["model"])
    data = _load_data(None if recipe.get("data") is None else Path(recipe["data"]),
                      recipe.get("dataset") or entry.default_dataset)
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
        print(f"Convergence: NOT CHECKED{run}: needs >= 2 chains with >= 4 draws, "
              f"has {n_chains} x {kept}")
        return EXIT_CODES["interrupted"] if interrupted else EXIT_CODES["not_converged"]
    groups = None
    if args.chain_groups is not None:
        try:
            groups = [int(g) for g in args.chain_groups.split(",")]
        except ValueError:
            raise UsageError("--chain-groups expects integers separated by commas, got "
                             f"{args.chain_groups!r}") from None
    with _flags_named(_CHECK_FLAGS):
        report = check_convergence(dt, rhat_max=args.rhat_max, ess_bulk_min=args.ess_min,
                                   ess_tail_min=args.ess_min, chain_groups=groups)
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
        print(f"\nexit status {EXIT_CODES['interrupted']}: an interrupted run (the verdict is "
              "of the draws kept)")
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
    print(f"\nLOO (PSIS): elpd_loo {float(loo.elpd):.1f} (SE {float(loo.se):.1f}); "
          f"Pareto k > 0.7 for {int(np.sum(k > 0.7))} of {k.size} observations "
          f"(max {np.nanmax(k):.2f})")


def _print_stacking(dt) -> None:
    """The chain stacking weights of a multimodal run, or how to get them."""
    if "log_likelihood" not in dt.children:
        print("\nChain stacking weights need the pointwise log-likelihood: fit with "
              "fit(..., log_likelihood=True) (or add it with "
              "inference.compute_log_likelihood(dt, model)) and check again.")
        return
    from inference.stacking import stack_chains

    try:
        stacking = stack_chains(dt, random_seed=0)
    except ValueError as err:
        print(f"\nChain stacking: not computed ({err})")
        return
    print("\n" + str(stacking))


def _parse_params(items: list[str]) -> dict:
    options = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            options[key] = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            options[key] = raw
    return options


def _load_data(csv: Path | None, dataset: str):
    import numpy as np
    import pandas as pd

    if csv is None:
        from pp_models.datasets import load

        return load(dataset)
    if not csv.exists():
        raise UsageError(f"--data: no such file: {csv}")
    try:
        frame = pd.read_csv(csv)
    except Exception as err:
        raise UsageError(f"--data: cannot read {csv} as CSV: {err}") from None
    if frame.empty:
        raise UsageError(f"--data: {csv} has no rows")
    if all(_is_number(c) for c in frame.columns):
        # pandas took the first row as the header: without this, it would be lost as data
        raise UsageError(f"--data: the first row of {csv} ({', '.join(map(str, frame.columns))}) "
                         "is numbers, not column names; add a header row naming the columns")
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise UsageError(f"--data: non-numeric column(s) {', '.join(map(str, non_numeric))}")
    from pp_models.datasets import Dataset

    return Dataset(name=csv.stem, data=frame.astype(np.float64),
                   feature_names=tuple(map(str, frame.columns)), provenance=str(csv))


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
