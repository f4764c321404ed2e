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

from pp_models.progress import in_ci, progress_enabled

__all__ = ["ChainProgress", "compiling", "in_ci", "progress_enabled"]


class ChainProgress:
    """``with ChainProgress(chains, total, enabled=...) as bar``: a redrawn status line.

    The sampler keeps a list of per-chain iteration counts and hands it over with
    :meth:`attach` (or :meth:`update` with a fresh copy); a background thread redraws
    the line a few times a second, so the sampling loop pays nothing for it.
    """

    def __init__(self, chains: int, total: int, *, enabled: bool = True, interval: float = 0.25):
        self.chains = chains
        self.total = total
        self.enabled = progress_enabled(enabled)
        self.interval = interval
        self._counts: list[int] = [0] * chains
        self._stop = threading.Event()
        self._thread = None
        self._t0 = time.perf_counter()

    def attach(self, counts) -> None:
        self._counts = counts

    def update(self, counts) -> None:
        self._counts = counts

    def _line(self) -> str:
        counts = list(self._counts)
        done = sum(counts)
        total = self.chains * self.total
        width = 24
        filled = int(width * done / total) if total else width
        elapsed = time.perf_counter() - self._t0
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = (total - done) / rate if rate > 0 else float("nan")
        per_chain = " ".join(f"{c}" for c in counts)
        return (f"\rsampling [{'#' * filled}{'.' * (width - filled)}] {done}/{total} "
                f"(chains: {per_chain}) {elapsed:5.1f} s"
                + (f", ~{eta:.0f} s left" if eta == eta else ""))

    def _run(self):
        while not self._stop.wait(self.interval):
            sys.stderr.write(self._line())
            sys.stderr.flush()

    def __enter__(self):
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            sys.stderr.write(self._line() + "\n")
            sys.stderr.flush()
        return False


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
