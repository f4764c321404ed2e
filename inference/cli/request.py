"""The checked :class:`Request` of a ``ppzoo fit``, ``evidence`` or ``demo`` command:
its arguments read and checked (those that need no model before a family is imported),
the family's options parsed and its data loaded."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inference.cli.messages import UsageError, flags_named

__all__ = [
    "EVIDENCE_FLAGS",
    "FIT_DEFAULTS",
    "FIT_FLAGS",
    "Request",
    "load_data",
    "parse_params",
    "request_from_args",
]

FIT_DEFAULTS = {"draws": 1000, "tune": 1000, "chains": 4}


# The library's messages name its arguments; the user typed these flags.
FIT_FLAGS = {
    "draws": "--draws",
    "tune": "--tune",
    "chains": "--chains",
    "cores": "--cores",
    "random_seed": "--seed",
    "method": "--method",
    "trace": "--trace",
    "tempering": "--tempering",
    "executor": "--scheduler",
}

EVIDENCE_FLAGS = {
    "draws": "--draws",
    "tune": "--tune",
    "chains": "--chains",
    "cores": "--cores",
    "random_seed": "--seed",
    "method": "--method",
    "n_temperatures": "--temperatures",
}


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

    def sampling_options(self) -> dict[str, Any]:
        """The keywords ``fit`` and ``evidence`` both take from the command line."""
        return {
            "method": self.method,
            "draws": self.draws,
            "tune": self.tune,
            "chains": self.chains,
            "cores": self.cores,
            "random_seed": self.seed,
            "progressbar": self.progress,
        }


def request_from_args(args, command: str) -> Request:
    """The :class:`Request` of ``ppzoo fit`` or ``ppzoo evidence``: every argument that
    needs no model checked (those that need no family before one is imported, which
    takes seconds), the family's options and data loaded."""
    from pp_models.registry import get_model, get_summary
    from pp_models.validation import check_int, check_random_seed, check_sampling_sizes

    fitting = command == "fit"
    flags = FIT_FLAGS if fitting else EVIDENCE_FLAGS
    summary = get_summary(args.model)  # an unknown model is refused before any import
    sizes = dict(FIT_DEFAULTS)
    if fitting:
        sizes.update({k: v for k, v in summary.fit_defaults.items() if k in sizes})
    sizes.update({k: getattr(args, k) for k in sizes if getattr(args, k) is not None})
    temperatures = args.tempering if fitting else args.temperatures
    with flags_named(flags):
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
    given = parse_params(args.param)
    _check_param_keys(entry, given)
    options.update(given)
    dataset = None if args.data is not None else (args.dataset or entry.default_dataset)
    data = load_data(args.data, dataset)
    fitted = dict(
        command=command,
        entry=entry,
        data=data,
        options=options,
        method=args.method,
        **sizes,
        cores=args.cores,
        seed=args.seed,
        progress=not args.no_progress,
        temperatures=temperatures,
        flags=flags,
        data_flags=_data_flag(entry, args),
    )
    if not fitting:
        return Request(**fitted)
    recipe = {
        "model": entry.name,
        "options": repr(options),
        "dataset": dataset,
        "data": None if args.data is None else str(args.data.resolve()),
    }
    return Request(
        **fitted,
        out=out,
        trace=args.trace,
        resume=args.resume,
        scheduler=args.scheduler,
        fit_extra={k: v for k, v in entry.fit_defaults.items() if k not in FIT_DEFAULTS},
        recipe=recipe,
    )


def _check_param_keys(entry, options: dict) -> None:
    """A --param key the factory does not take: say which ones it does, before any work."""
    import difflib

    from inference.model_help import model_parameters

    valid = [p.name for p in model_parameters(entry)]
    for key in options:
        if key not in valid:
            close = difflib.get_close_matches(key, valid, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(
                f"--param {key}: {entry.name} has no option {key!r}{hint}; "
                f"its options are {', '.join(valid)} "
                f"(see `ppzoo describe {entry.name}`)"
            )


def _check_evidence_method(method: str, draws: int) -> None:
    from inference.tempering.evidence import EVIDENCE_METHODS

    if method not in EVIDENCE_METHODS:
        raise UsageError(f"--method must be one of {', '.join(EVIDENCE_METHODS)}; got {method!r}")
    if method != "ais" and draws < 4:
        raise UsageError(
            f"--draws must be >= 4 for a {method} estimate and its standard error, got {draws}"
        )


def _check_method(entry, method: str) -> None:
    if method not in entry.methods and method != "auto":
        raise UsageError(
            f"--method {method!r} is not available for {entry.name}; "
            f"choose from {', '.join(entry.methods)}"
        )


def _data_flag(entry, args) -> dict[str, str]:
    """The factory's data argument -> the flag that gave the data (none for the
    family's default data set, which the user did not name)."""
    from inference.model_help import data_parameter

    if args.data is not None:
        return {data_parameter(entry): f"--data {args.data}"}
    if args.dataset is not None:
        return {data_parameter(entry): f"--dataset {args.dataset}"}
    return {}


def parse_params(items: list[str]) -> dict:
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


def load_data(csv: Path | None, dataset: str):
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
        raise UsageError(
            f"--data: the first row of {csv} ({', '.join(map(str, frame.columns))}) "
            "is numbers, not column names; add a header row naming the columns"
        )
    non_numeric = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    if non_numeric:
        raise UsageError(f"--data: non-numeric column(s) {', '.join(map(str, non_numeric))}")
    from pp_models.datasets import Dataset

    return Dataset(
        name=csv.stem,
        data=frame.astype(np.float64),
        feature_names=tuple(map(str, frame.columns)),
        provenance=str(csv),
    )


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True
