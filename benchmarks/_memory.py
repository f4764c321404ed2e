"""Peak resident memory of a block of code, for the benchmarks.

``ru_maxrss`` is the process's peak since it started, so a benchmark that runs several
samplers in one process cannot read each one's peak from it. :class:`PeakRSS` samples
the resident set (``/proc/self/statm``) from a background thread every few
milliseconds while the block runs and reports the highest value seen (Linux only; on
other systems it falls back to ``ru_maxrss``).
"""

from __future__ import annotations

import os
import resource
import sys
import threading

__all__ = ["PeakRSS", "process_peak_mb"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss_bytes() -> int | None:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * _PAGE
    except OSError:
        return None


def process_peak_mb() -> float:
    """The process's peak resident set since it started (MB)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak / 1e3


class PeakRSS:
    """``with PeakRSS() as m: ...``; then ``m.peak_mb`` and ``m.start_mb``."""

    def __init__(self, interval: float = 0.002):
        self.interval = interval
        self.start_mb = self.peak_mb = float("nan")
        self._stop = threading.Event()

    def _poll(self):
        while not self._stop.wait(self.interval):
            rss = _rss_bytes()
            if rss is not None:
                self._peak = max(self._peak, rss)

    def __enter__(self):
        rss = _rss_bytes()
        if rss is None:
            self._thread = None
            return self
        self._peak = rss
        self.start_mb = rss / 1e6
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._thread is None:
            self.peak_mb = process_peak_mb()
            return False
        self._stop.set()
        self._thread.join()
        rss = _rss_bytes()
        self.peak_mb = max(self._peak, rss or 0) / 1e6
        return False
