"""How ``ppzoo`` tells its user what went wrong: the exit statuses, the one-line error
of a bad argument (:class:`UsageError`) and the library's argument names turned into the
flags the user typed (:func:`flags_named`)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping

__all__ = [
    "BUG_REPORT",
    "EXIT_BUG",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "UsageError",
    "flags_named",
    "name_flags",
]

#: Exit status of a problem with the user's arguments or data (argparse's own).
EXIT_USAGE = 2

#: Exit status of a bug in pp-models (``EX_SOFTWARE`` of BSD's ``sysexits.h``).
EXIT_BUG = 70

#: Exit status after a Ctrl-C (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


BUG_REPORT = (
    "ppzoo: this is a bug in pp-models, not a problem with your input; please "
    "report it to the pp-models developers with the command you ran and the "
    "traceback above"
)


class UsageError(Exception):
    """A problem with the user's arguments (exit status 2, no traceback)."""


@contextlib.contextmanager
def flags_named(flags: Mapping[str, str], params=(), *, marked_only: bool = False):
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
        message = name_flags(str(err), flags)
        if params:
            names = "|".join(map(re.escape, params))
            message = re.sub(rf"^({names})(?=[\s:])", r"--param \1", message)
            message = re.sub(rf"(?<![\w.-])({names})=", r"--param \1=", message)
        raise UsageError(message) from None


def name_flags(message: str, flags: dict[str, str]) -> str:
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
