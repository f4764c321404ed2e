"""A progress line for the zoo's long non-MCMC estimators (BHC, EM, path fits).

It lives here, below :mod:`inference`, because estimators in ``pp_models`` use it and
nothing imports upward; :mod:`inference.progress` (the samplers' lines) builds on it.
Every line is off with ``progressbar=False``, when the ``CI`` environment variable is
set (non-empty, not ``0``/``false``/``no``) and when stderr is neither a terminal nor a
Jupyter kernel's stream.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

import numpy as np

__all__ = ["WorkProgress", "in_ci", "progress_enabled", "terminal_columns"]


def in_ci() -> bool:
    """Whether the ``CI`` environment variable is set (non-empty, not 0/false/no)."""
    ci = os.environ.get("CI", "")
    return bool(ci) and ci.lower() not in ("0", "false", "no")


def progress_enabled(progressbar: bool) -> bool:
    """``progressbar`` unless running in CI or where a redrawn line cannot show (stderr
    neither a terminal nor a Jupyter kernel's stream)."""
    if not progressbar or in_ci():
        return False
    return bool(getattr(sys.stderr, "isatty", lambda: False)()) or "ipykernel" in sys.modules


def terminal_columns() -> int:
    """Width of the terminal in characters (``COLUMNS`` first, 80 when unknown)."""
    return shutil.get_terminal_size((80, 24)).columns


class WorkProgress:
    """``with WorkProgress(what, total, unit=..., enabled=...) as bar``: a redrawn line
    ``what [####....] done/total unit, elapsed, time left``.

    The work reports through ``bar.counter``, a one-element int64 array a Numba kernel
    that runs without the GIL may add to as it goes, or through :meth:`advance`. A
    background thread redraws the line a few times a second, starting only after
    ``delay`` seconds: quick calls print nothing, and the work pays nothing for it.
    """

    def __init__(self, what: str, total: int, *, unit: str = "", enabled: bool = True,
                 delay: float = 1.0, interval: float = 0.25):
        self.what = what
        self.total = max(int(total), 1)
        self.unit = unit
        self.enabled = progress_enabled(enabled)
        self.delay = delay
        self.interval = interval
        self.counter = np.zeros(1, dtype=np.int64)
        self._stop = threading.Event()
        self._thread = None
        self._shown = False
        self._t0 = time.perf_counter()

    def advance(self, amount: int) -> None:
        self.counter[0] += int(amount)

    def line(self) -> str:
        """``\\r`` and the status, padded to one column less than the terminal: a line
        that wrapped could not be redrawn in place. Parts give way in turn when it is
        narrow: the bar shrinks (to 8), the detail takes its short form, the time left
        goes, and last the text is cut."""
        width = max(terminal_columns() - 1, 20)
        done = min(int(self.counter[0]), self.total)
        elapsed = time.perf_counter() - self._t0
        left = elapsed * (self.total - done) / done if done else float("nan")
        unit = f" {self.unit}" if self.unit else ""
        count = f"{done:,}/{self.total:,}{unit}"
        times = [f"{elapsed:.1f} s" + (f", ~{left:.0f} s left" if left == left else ""),
                 f"{elapsed:.1f} s"]
        for detail in (self.detail(), self.detail(short=True)):
            for tail in times:
                room = width - len(f"{self.what} [] {count}{detail} {tail}")
                if room >= 8:
                    bar = min(24, room)
                    filled = int(bar * done / self.total)
                    text = (f"{self.what} [{'#' * filled}{'.' * (bar - filled)}] "
                            f"{count}{detail} {tail}")
                    return "\r" + text.ljust(width)
        return "\r" + f"{self.what} {count} {times[1]}"[:width].ljust(width)

    def detail(self, short: bool = False) -> str:
        """Text after the count (subclasses: e.g. each chain's count); ``short``: the
        form for a narrow terminal."""
        return ""

    def _run(self):
        if self._stop.wait(self.delay):
            return
        self._shown = True
        while True:
            sys.stderr.write(self.line())
            sys.stderr.flush()
            if self._stop.wait(self.interval):
                return

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            if self._shown:
                sys.stderr.write(self.line() + "\n")
                sys.stderr.flush()
        return False
