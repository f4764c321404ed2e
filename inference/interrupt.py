"""Ctrl-C as a request to stop, honoured between units of work.

Python's default SIGINT handler raises ``KeyboardInterrupt`` wherever the interpreter is,
including on the way out of a Numba kernel (``SystemError: CPUDispatcher(...) returned a
result with an exception set``) or half-way through writing a file. :func:`stop_requested`
replaces it for the duration of a block: once there is work to keep (the flag is
*armed*: the samplers arm it when their first draw is made, ``fit`` before its
post-processing, the CLI before writing), the first Ctrl-C only sets a flag that the
sampling loop checks between draws and ``fit`` / the CLI check between stages, and a
second Ctrl-C raises ``KeyboardInterrupt`` at once (the user insists). Before that --
importing, building the model, compiling -- there is nothing to keep, and the first
Ctrl-C raises at once (a compile can take a minute on a cold cache).

A "second" Ctrl-C is the second SIGINT this process received, not the flag being set
already: a terminal's Ctrl-C reaches the chain workers too, which set the flag (through
their event) at the same moment, and the parent must still take it as the first.

Blocks nest: an inner ``stop_requested()`` shares the outer flag, so one Ctrl-C is seen
by every level. Worker processes get a ``multiprocessing.Event`` through
:meth:`StopFlag.link`, set by the first Ctrl-C.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["StopFlag", "raising_sigint", "stop_requested"]


class StopFlag:
    """Whether a stop was requested (first Ctrl-C, or :meth:`set`)."""

    def __init__(self):
        self._set = False
        self._events: list = []
        self.armed = False
        self.signals = 0  # SIGINTs this process received while the flag was installed

    def arm(self) -> None:
        """There is work to keep from now on: the first Ctrl-C only sets the flag."""
        self.armed = True

    def is_set(self) -> bool:
        return self._set or any(e.is_set() for e in self._events)

    def set(self) -> None:
        self._set = True
        for e in self._events:
            e.set()

    def link(self, event) -> None:
        """Also set ``event`` (e.g. a ``multiprocessing.Event`` workers poll) on a stop."""
        self._events.append(event)
        if self._set:
            event.set()

    def unlink(self, event) -> None:
        if event in self._events:
            self._events.remove(event)
        if event.is_set():
            self._set = True


_CURRENT: list[StopFlag] = []


@contextlib.contextmanager
def stop_requested():
    """``with stop_requested() as flag``: Ctrl-C sets ``flag`` instead of raising.

    Outside the main thread (where signal handlers cannot be installed) the flag is
    returned but only :meth:`StopFlag.set` sets it.
    """
    if _CURRENT:
        yield _CURRENT[-1]
        return
    flag = StopFlag()
    if threading.current_thread() is not threading.main_thread():
        yield flag
        return

    def handler(signum, frame):
        flag.signals += 1
        if flag.signals > 1 or not flag.armed:
            # the second Ctrl-C (stop waiting), or one before there is anything to keep
            signal.signal(signal.SIGINT, signal.default_int_handler)
            flag.set()
            raise KeyboardInterrupt
        flag.set()

    previous = signal.signal(signal.SIGINT, handler)
    _CURRENT.append(flag)
    try:
        yield flag
    finally:
        _CURRENT.pop()
        signal.signal(signal.SIGINT, previous)


@contextlib.contextmanager
def raising_sigint(flag: StopFlag):
    """Inside :func:`stop_requested`, hand Ctrl-C back to code that handles
    ``KeyboardInterrupt`` itself (PyMC's sampler, nutpie, ADVI): each SIGINT sets ``flag``
    (so the caller knows the result is partial) and raises as Python's default does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        flag.signals += 1
        flag.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
