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


@pytest.mark.parametrize("columns", [80, 60])
def test_lines_fit_the_terminal(monkeypatch, columns):
    # a line longer than the terminal wraps and can no longer be redrawn in place: 4
    # chains of 20,000 draws made a 95-character line
    monkeypatch.setenv("COLUMNS", str(columns))
    for chains in (4, 8):
        bar = ChainProgress(chains, 110_000, enabled=False)
        bar.update([104_321] * chains)
        bar.divergent = 12
        bar._t0 -= 1234.5
        line = bar.line()
        assert line.startswith("\r") and len(line) - 1 <= columns - 1, line
        assert f"{104_321 * chains:,}/{110_000 * chains:,}" in line
    wide = ChainProgress(4, 1000, enabled=False)
    wide.update([500, 500, 400, 300])
    monkeypatch.setenv("COLUMNS", "200")
    assert "chains: 500 500 400 300" in wide.line()


def test_pymc_table_only_where_it_fits(monkeypatch):
    from inference.progress import PYMC_TABLE_COLUMNS, pymc_table_fits

    monkeypatch.setenv("COLUMNS", "80")
    assert not pymc_table_fits()
    monkeypatch.setenv("COLUMNS", str(PYMC_TABLE_COLUMNS))
    assert pymc_table_fits()


def test_draw_counter_counts_draws_and_divergences():
    from collections import namedtuple

    from inference.progress import DrawCounter

    Draw = namedtuple("Draw", "chain is_last draw_idx tuning stats point")
    seen = []
    bar = ChainProgress(2, 10, enabled=False)
    counter = DrawCounter(bar, 2, then=lambda trace, draw: seen.append(draw.chain))
    for chain, tuning, diverging in ((0, True, True), (0, False, True), (1, False, False)):
        counter(None, Draw(chain, False, 0, tuning, [{"diverging": diverging}, {}], {}))
    assert counter.counts == [2, 1] and bar.divergent == 1 and seen == [0, 0, 1]


@pytest.mark.xdist_group("family-finite_mixture")  # the mixture's compiled graphs
def test_fit_in_a_narrow_terminal_shows_one_line_not_pymcs_table(monkeypatch):
    # PyMC's rich table cut its columns at 80 ("Dive…", "0:00…"); fit shows the zoo's line
    import numpy as np

    from inference import fit
    from pp_models import finite_mixture

    terminal = _terminal(monkeypatch)
    monkeypatch.setenv("COLUMNS", "80")
    model = finite_mixture.model(np.array([[-1.0], [0.2], [1.5], [2.0]]), 2)
    fit(model, draws=30, tune=20, chains=2, cores=1, random_seed=0)
    frames = [f for f in terminal.getvalue().replace("\n", "\r").split("\r") if f.strip()]
    bars = [f for f in frames if f.startswith("sampling [")]
    assert bars and all(len(f) <= 79 for f in bars)
    assert "100/100" in bars[-1]
