"""A real Ctrl-C in the middle of a run, for the tests of interrupted fits."""

import os
import signal
import threading
import time

from inference.trace_store import TraceStore, is_trace

__all__ = ["sigint_once_stored"]


def sigint_once_stored(path, at_least, every_chain=False, timeout=120):
    """Start a thread that reads the trace at ``path`` as another process would and,
    once one chain (``every_chain``: each chain) stored ``at_least`` draws, sends this
    process a real SIGINT, wherever its main thread then is; it sends one after
    ``timeout`` too, so the run ends. Returns (thread, list that is non-empty if the
    draws were seen)."""
    seen = []
    enough = min if every_chain else max

    def watch():
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if is_trace(path) and enough(TraceStore(path).completed()) >= at_least:
                seen.append(True)
                break
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, seen
