"""Progress lines for the waits ``fit`` makes a user sit through.

- :class:`ChainProgress`: one line, redrawn in place, with each chain's iterations for
  :func:`inference.chains.sample_gibbs` (PyMC's own bar covers ``pm.sample``);
- :func:`compiling`: a "compiling ..." line while a first call compiles (Numba and
  PyTensor are silent for tens of seconds on a cold cache).

Both are off when the caller passes ``progressbar=False``, when the ``CI`` environment
variable is set (non-empty, not ``0``/``false``) and when stderr is not a terminal.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

from pp_models.progress import WorkProgress, in_ci, progress_enabled, terminal_columns

__all__ = ["PYMC_TABLE_COLUMNS", "ChainProgress", "DrawCounter", "ElapsedProgress",
           "compiling", "in_ci", "progress_enabled", "pymc_table_fits"]

#: The terminal width PyMC's progress table (one row per chain: draws, divergences, step
#: size, gradient evaluations, speed, elapsed, remaining) needs before rich cuts its
#: columns ("Dive…", "0:00…" at 80 columns).
PYMC_TABLE_COLUMNS = 100


def pymc_table_fits() -> bool:
    """Whether PyMC's progress table fits the terminal uncut; where it does not, ``fit``
    shows a :class:`ChainProgress` line instead (fed by :class:`DrawCounter`)."""
    return terminal_columns() >= PYMC_TABLE_COLUMNS


class ChainProgress(WorkProgress):
    """``with ChainProgress(chains, total, enabled=...) as bar``: a redrawn status line.

    The sampler keeps a list of per-chain iteration counts and hands it over with
    :meth:`attach` (or :meth:`update` with a fresh copy); the background thread of
    :class:`pp_models.progress.WorkProgress` redraws the line a few times a second, so
    the sampling loop pays nothing for it.
    """

    def __init__(self, chains: int, total: int, *, enabled: bool = True, interval: float = 0.25):
        super().__init__("sampling", chains * total, enabled=enabled, delay=0.0,
                         interval=interval)
        self._counts: list[int] = [0] * chains
        self._per_chain = max(int(total), 1)
        self.divergent = 0

    def attach(self, counts) -> None:
        self._counts = counts

    update = attach

    def line(self) -> str:
        self.counter[0] = sum(self._counts)
        return super().line()

    def detail(self, short: bool = False) -> str:
        counts = list(self._counts)
        bad = f", {self.divergent} divergent" if self.divergent else ""
        if short:
            return f" (slowest chain {min(counts) / self._per_chain:.0%}{bad})"
        return f" (chains: {' '.join(str(c) for c in counts)}{bad})"


class ElapsedProgress(WorkProgress):
    """A redrawn ``<what>, 12.3 s`` line, for a wait whose progress cannot be read (nutpie
    reports its draws to PyMC's table only)."""

    def __init__(self, what: str, *, enabled: bool = True, interval: float = 0.5):
        super().__init__(what, 1, enabled=enabled, delay=0.0, interval=interval)

    def line(self) -> str:
        width = max(terminal_columns() - 1, 20)
        tail = f", {time.perf_counter() - self._t0:.1f} s"
        return "\r" + (self.what[: width - len(tail)] + tail).ljust(width)


class DrawCounter:
    """``pm.sample`` callback counting each chain's iterations (and NUTS's divergent
    transitions) into a :class:`ChainProgress`; ``then``: a callback called after it."""

    def __init__(self, bar: ChainProgress, chains: int, then=None):
        self.counts = [0] * chains
        self.bar = bar
        self.then = then
        bar.attach(self.counts)

    def __call__(self, trace, draw):
        self.counts[draw.chain] += 1
        for stats in draw.stats if isinstance(draw.stats, list) else [draw.stats]:
            if stats.get("diverging", False) and not draw.tuning:
                self.bar.divergent += 1
        if self.then is not None:
            self.then(trace=trace, draw=draw)


@contextlib.contextmanager
def compiling(what: str, *, enabled: bool = True, delay: float = 1.0):
    """Print ``compiling <what> ...`` if the block takes longer than ``delay`` seconds.

    A warm cache makes the block fast and the line never appears; a cold one gets a
    line saying why nothing else is happening, and the time it took.
    """
    if not progress_enabled(enabled):
        yield
        return
    done = threading.Event()
    shown = []

    def announce():
        if not done.wait(delay):
            shown.append(time.perf_counter())
            sys.stderr.write(f"compiling {what} (first run; cached afterwards) ...\n")
            sys.stderr.flush()

    t0 = time.perf_counter()
    thread = threading.Thread(target=announce, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
        if shown:
            sys.stderr.write(f"compiled {what} in {time.perf_counter() - t0:.1f} s\n")
            sys.stderr.flush()
