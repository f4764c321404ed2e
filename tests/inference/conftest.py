"""Fixtures shared by the inference tests."""

import contextlib
import io

import pytest


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """``ppzoo demo`` run once: (exit code, what it printed, its output folder).

    The demo fits the finite mixture to all of iris with Gibbs + NUTS, 4 x 1000 draws
    after 1000 tuning: test_cli.py checks what it prints and writes, test_fit.py checks
    the fit it saved, the very fit it would otherwise make itself (one run of 8000 sweeps
    instead of two; both modules run on the 'fit' xdist worker).
    """
    from inference.cli import main

    out = tmp_path_factory.mktemp("demo") / "demo"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(["demo", "--out", str(out), "--no-progress"])
    return code, printed.getvalue(), out
