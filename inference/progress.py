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

from pp_models.progress import WorkProgress, in_ci, progress_enabled

__all__ = ["ChainProgress", "compiling", "in_ci", "progress_enabled"]


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

    def attach(self, counts) -> None:
        self._counts = counts

    update = attach

    def line(self) -> str:
        self.counter[0] = sum(self._counts)
        return super().line()

    def detail(self) -> str:
        return f" (chains: {' '.join(str(c) for c in list(self._counts))})"


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
