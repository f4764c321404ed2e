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
which one path (:func:`run_request`) builds and fits (``fit``, ``demo``) or estimates the
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

import sys

from inference.cli.commands import DEMO, build_parser, fit_help
from inference.cli.execution import RunProgress
from inference.cli.messages import (
    BUG_REPORT,
    EXIT_BUG,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
)
from inference.cli.request import Request

__all__ = [
    "DEMO",
    "EXIT_BUG",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "Request",
    "RunProgress",
    "UsageError",
    "build_parser",
    "fit_help",
    "main",
]


def main(argv: list[str] | None = None) -> int:
    """Run ``ppzoo`` with ``argv`` (default: the command line) and return its exit status
    (module docstring)."""
    parser, commands = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    if (
        len(argv) >= 2
        and argv[0] == "fit"
        and not argv[1].startswith("-")
        and ({"-h", "--help"} & set(argv))
    ):
        # `ppzoo fit NAME --help`: the sampling options and NAME's own --param keys
        return fit_help(commands["fit"], argv[1])
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
        if isinstance(err, SystemError) and isinstance(
            err.__cause__ or err.__context__, KeyboardInterrupt
        ):
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
        print(BUG_REPORT, file=sys.stderr)
        return EXIT_BUG
