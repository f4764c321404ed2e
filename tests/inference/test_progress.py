"""Progress lines: shown on a terminal, silent with progressbar=False, in CI, in pipes."""

import io
import sys
import time

import pytest

from inference.progress import ChainProgress, compiling, progress_enabled


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def _terminal(monkeypatch):
    # set in the test body: pytest swaps sys.stderr between a fixture's setup and the call
    monkeypatch.delenv("CI", raising=False)
    out = _Terminal()
    monkeypatch.setattr(sys, "stderr", out)
    return out


def test_compiling_line_only_when_the_wait_is_long(monkeypatch):
    terminal = _terminal(monkeypatch)
    with compiling("the kernels", delay=0.05):
        time.sleep(0.3)
    text = terminal.getvalue()
    assert "compiling the kernels" in text and "compiled the kernels in" in text
    terminal.seek(0)
    terminal.truncate()
    with compiling("the kernels", delay=5.0):
        pass  # a warm cache: no line
    assert terminal.getvalue() == ""


@pytest.mark.parametrize("ci,progressbar", [("1", True), ("true", True), ("", False)])
def test_off_in_ci_and_when_asked(monkeypatch, ci, progressbar):
    terminal = _terminal(monkeypatch)
    monkeypatch.setenv("CI", ci)
    assert not progress_enabled(progressbar)
    with compiling("x", enabled=progressbar, delay=0.0):
        time.sleep(0.05)
    with ChainProgress(2, 10, enabled=progressbar, interval=0.01) as bar:
        bar.update([3, 4])
        time.sleep(0.05)
    assert terminal.getvalue() == ""


def test_chain_line_counts_every_chain(monkeypatch):
    terminal = _terminal(monkeypatch)
    with ChainProgress(2, 10, interval=0.01) as bar:
        bar.update([10, 4])
        time.sleep(0.05)
    last = terminal.getvalue().rstrip("\n").split("\r")[-1]
    assert "14/20" in last and "chains: 10 4" in last


def test_silent_in_a_pipe(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a terminal
    assert not progress_enabled(True)
