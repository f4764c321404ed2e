"""``ppzoo``'s parser and its commands: ``list``, ``describe``, ``fit`` (and
``fit NAME --help``), ``evidence``, ``check`` (:mod:`inference.cli.check`) and ``demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from inference.cli.check import CHECK_EXIT_STATUS, cmd_check
from inference.cli.execution import RunProgress, run_request
from inference.cli.messages import flags_named
from inference.cli.request import Request, load_data, request_from_args

__all__ = ["DEMO", "build_parser", "fit_help"]

DEMO = dict(
    model="finite_mixture",
    dataset="iris",
    method="gibbs",
    draws=1000,
    tune=1000,
    chains=4,
    seed=20261126,
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
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
    p_fit.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="model option, e.g. n_components=4 (repeatable)",
    )
    p_fit.add_argument(
        "--tempering",
        type=int,
        default=None,
        metavar="N",
        help="parallel tempering with N temperatures (>= 2): each chain runs "
        "N replicas from the prior to the posterior that swap states; "
        "the posterior is the coldest one's",
    )
    p_fit.set_defaults(run=_cmd_fit)

    p_evidence = sub.add_parser("evidence", help="log marginal likelihood of a model on data")
    p_evidence.add_argument("model", help="model name (see `ppzoo list`)")
    source = p_evidence.add_mutually_exclusive_group()
    source.add_argument("--dataset", help="a shipped data set (see `ppzoo list`)")
    source.add_argument("--data", type=Path, help="a CSV file with a header row, numeric columns")
    p_evidence.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="model option, e.g. n_components=4 (repeatable)",
    )
    p_evidence.add_argument(
        "--method",
        default="stepping_stone",
        help="stepping_stone | thermodynamic | ais (default stepping_stone)",
    )
    p_evidence.add_argument(
        "--temperatures",
        type=int,
        default=None,
        metavar="N",
        help="temperatures of the ladder (AIS: annealing steps)",
    )
    p_evidence.add_argument(
        "--draws", type=int, default=1000, help="draws per chain (AIS: particles), default 1000"
    )
    p_evidence.add_argument("--tune", type=int, default=1000, help="default 1000")
    p_evidence.add_argument("--chains", type=int, default=4, help="default 4")
    p_evidence.add_argument("--cores", type=int, default=None)
    p_evidence.add_argument("--seed", type=int, default=None)
    p_evidence.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p_evidence.set_defaults(run=_cmd_evidence)

    p_check = sub.add_parser(
        "check",
        help="convergence report of a saved fit",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="The convergence verdict of a saved fit (any posterior.nc with a "
        "posterior group,\na result folder or a --trace folder), pooled "
        "and per chain.",
        epilog=CHECK_EXIT_STATUS,
    )
    p_check.add_argument("path", type=Path, help="posterior.nc written by `ppzoo fit`, or its dir")
    p_check.add_argument("--rhat-max", type=float, default=1.01)
    p_check.add_argument("--ess-min", type=float, default=400)
    p_check.add_argument(
        "--chain-groups",
        default=None,
        metavar="G,G,...",
        help="group of each chain (chains started from one point), e.g. "
        "0,0,1,1: nested R-hat replaces R-hat",
    )
    p_check.set_defaults(run=cmd_check)

    p_demo = sub.add_parser("demo", help="fit the finite mixture to iris with Gibbs + NUTS")
    p_demo.add_argument("--out", type=Path, default=Path("ppzoo-out/demo"))
    p_demo.add_argument("--no-progress", action="store_true")
    p_demo.set_defaults(run=_cmd_demo)
    commands = {
        "list": p_list,
        "describe": p_describe,
        "fit": p_fit,
        "evidence": p_evidence,
        "check": p_check,
        "demo": p_demo,
    }
    return parser, commands


def _add_sampling_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--method", default="auto", help="auto | nuts | gibbs | advi (default auto)")
    p.add_argument("--draws", type=int, default=None, help="default 1000 (or the model's)")
    p.add_argument("--tune", type=int, default=None, help="default 1000 (or the model's)")
    p.add_argument("--chains", type=int, default=None, help="default 4 (or the model's)")
    p.add_argument("--cores", type=int, default=None)
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--out", type=Path, default=None, help="output directory (default ppzoo-out/MODEL)"
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument(
        "--trace",
        type=Path,
        default=None,
        metavar="PATH",
        help="write the draws to this folder as they are made (a new path; "
        "`ppzoo check PATH` reads it while it runs or after a crash)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue the run stored at --trace PATH (same draws/tune/chains)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the chains on the Dask cluster whose scheduler is at ADDRESS "
        "(e.g. tcp://10.0.0.5:8786), one task per chain; needs the dask "
        "extra; --trace must then be a folder the workers share",
    )


def _cmd_list(args, progress: RunProgress) -> int:
    import textwrap

    from pp_models.datasets import list_datasets
    from pp_models.registry import list_model_summaries, no_cli_entries

    print("Models:")
    # read from the families' sources: no family (and no PyMC) is imported
    for entry in list_model_summaries():
        print(f"  {entry.name:<22} [{', '.join(entry.methods)}]  {entry.description}")
        if entry.check_note:
            print(
                textwrap.fill(
                    f"default run does not pass `ppzoo check`: {entry.check_note}",
                    width=78,
                    initial_indent=" " * 25,
                    subsequent_indent=" " * 25,
                )
            )
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

    with flags_named({}):
        get_summary(args.model)  # an unknown name is refused before a family is imported
    print(describe_model(get_model(args.model)))
    return 0


def fit_help(fit_parser: argparse.ArgumentParser, name: str) -> int:
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


def _cmd_fit(args, progress: RunProgress) -> int:
    with flags_named({}):  # reading the arguments and the data: all the user's
        request = request_from_args(args, "fit")
    return run_request(request, progress)


def _cmd_evidence(args, progress: RunProgress) -> int:
    with flags_named({}):
        request = request_from_args(args, "evidence")
    return run_request(request, progress)


def _cmd_demo(args, progress: RunProgress) -> int:
    from pp_models.registry import get_model

    entry = get_model(DEMO["model"])
    print(f"ppzoo demo: {entry.description}, on {DEMO['dataset']}")
    return run_request(
        Request(
            command="fit",
            entry=entry,
            data=load_data(None, DEMO["dataset"]),
            options=dict(entry.defaults),
            method=DEMO["method"],
            draws=DEMO["draws"],
            tune=DEMO["tune"],
            chains=DEMO["chains"],
            seed=DEMO["seed"],
            progress=not args.no_progress,
            out=args.out,
        ),
        progress,
    )
