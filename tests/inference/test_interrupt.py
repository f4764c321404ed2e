"""Ctrl-C: real SIGINTs to `ppzoo fit` at several moments, and to fit() in-process.

Each subprocess runs the CLI through a small wrapper that only observes (a marker file
once a draw is recorded) or sends the process its own SIGINT at a chosen moment
(writing): the signal itself is real and goes through the real handlers. A SIGINT the
process sends itself at a chosen moment (post-processing, writing once) needs no second
process: those tests call the CLI's main() here, with the same wrapper's patch.
"""

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference import fit
from inference.cli import main
from inference.report import RESULT_FILES
from pp_models import lda
from pp_models.model_info import posterior_with_labels

ROOT = Path(__file__).resolve().parents[2]

# One xdist worker runs this module and test_trace.py (--dist loadgroup): both fit the DP
# mixture through ppzoo and fit(), in subprocesses and here; spread over two workers, a
# cold run compiled its graphs on both.
pytestmark = pytest.mark.xdist_group("sigint")

WRAPPER = """
import os, signal, sys
from pathlib import Path
# as a ppzoo started from a shell: Python's own SIGINT handler, SIGINT not blocked (a
# child inherits an ignored or blocked SIGINT from the test worker that starts it, e.g.
# one left by a multiprocessing helper; the signal would then never arrive)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
signal.signal(signal.SIGINT, signal.default_int_handler)
marker, moment = sys.argv[1], sys.argv[2]
if moment == "import":
    class SignalOnPyMC:
        # a real SIGINT while the family's imports (PyMC) are under way
        def find_spec(self, name, path=None, target=None):
            if name == "pymc":
                sys.meta_path.remove(self)
                Path(marker).touch()
                os.kill(os.getpid(), signal.SIGINT)
            return None
    sys.meta_path.insert(0, SignalOnPyMC())
    from inference.cli import main
    sys.argv = ["ppzoo", *sys.argv[3:]]
    sys.exit(main())
import inference.chains as chains
import inference.report as report

if moment == "compile":
    import contextlib, time
    import inference.mcmc as mcmc  # builds the samplers (inference.fit calls it)
    @contextlib.contextmanager
    def compiling(what, **kwargs):
        # the samplers' compile, made long (a cold cache takes a minute): a real SIGINT
        # arrives in it
        Path(marker).touch()
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(120)
        yield
    mcmc.compiling = compiling
if moment == "sampling":
    record = chains._record
    def _record(*args):
        record(*args)
        # one marker per chain worker process: the parent waits for a kept draw in
        # every chain before its SIGINT
        Path(f"{marker}-{os.getpid()}").touch()
    chains._record = _record
elif moment.startswith("writing"):
    atomic = report._atomic_write
    sent = []
    def _atomic_write(path, write):
        if not sent:  # as the first file is written
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)
            if moment == "writing-twice":
                os.kill(os.getpid(), signal.SIGINT)
        return atomic(path, write)
    report._atomic_write = _atomic_write
from inference.cli import main
sys.argv = ["ppzoo", *sys.argv[3:]]
sys.exit(main())  # as the ppzoo program
"""


def _ppzoo(tmp_path, moment, args):
    marker = tmp_path / "first-draw"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WRAPPER, str(marker), moment, *args],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    ), marker


def _fit_args(out, draws, chains, cores):
    return ["fit", "dpm", "--draws", str(draws), "--tune", "0", "--chains", str(chains),
            "--cores", str(cores), "--seed", "1", "--no-progress", "--out", str(out)]


FIRST_DRAW_WAIT = 240


def _assert_clean_exit(proc, timeout=60):
    stdout, stderr = proc.communicate(timeout=timeout)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert "interrupted" in stderr
    return stdout, stderr


def _only_results(tmp_path, out):
    # no staging or retired folders left beside the output
    # the fits here are DP mixtures, whose answer picture is written beside the results
    # when the post-processing it needs ran (not when sampling was interrupted)
    from pp_models.dpm import FAMILY

    picture = f"{FAMILY.plot_name}.png"
    names = sorted(p.name for p in out.iterdir() if p.name != picture)
    assert names == sorted(RESULT_FILES)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


# the default run signals parallel chains in
# test_terminal_ctrl_c_keeps_the_trace_and_never_replaces_a_complete_result (with a trace)
@pytest.mark.slow
@pytest.mark.parametrize("chains,cores", [(2, 2), (2, 1)])
def test_sigint_while_sampling_keeps_the_completed_draws(tmp_path, chains, cores):
    out = tmp_path / "out"
    draws = 1_000_000
    proc, marker = _ppzoo(tmp_path, "sampling", _fit_args(out, draws, chains, cores))
    # a wait, not a timing check: from a cold compile cache on a loaded 2-core machine the
    # first draw took more than 60 s (measured at load 11)
    deadline = time.monotonic() + FIRST_DRAW_WAIT
    # parallel chains (cores == chains) each record in their own process: wait for all
    # of them; sequential chains: for the first (the next has not started)
    waiting_for = chains if cores == chains else 1
    while len(list(tmp_path.glob(f"{marker.name}-*"))) < waiting_for:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no draw recorded within {FIRST_DRAW_WAIT} s"
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _stdout, stderr = _assert_clean_exit(proc)
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert dt.attrs["pp_models_interrupted"] == 1
    completed = np.atleast_1d(dt.attrs["pp_models_draws_completed"])
    kept = dt["posterior"].sizes["draw"]
    n_kept = dt["posterior"].sizes["chain"]
    # chains with no draw (not started yet) are dropped; the others keep a common length
    assert 0 < kept < draws and completed.size == chains
    assert (np.sort(completed)[-n_kept:] >= kept).all() and (completed > 0).sum() == n_kept
    z = posterior_with_labels(dt)["z"].values
    assert (z >= 0).all()  # every kept draw is a real one (no unfilled rows)
    if cores == 2:  # both chains ran together and both stopped
        assert dt["posterior"].sizes["chain"] == 2 and completed.size == 2
    assert f"of {draws} draws" in stderr
    _only_results(tmp_path, out)
    assert time.monotonic() - start < 30


def _ppzoo_here(args, capsys):
    """``ppzoo`` in this process, for a SIGINT the process sends itself at a chosen moment:
    the same real signal through the same handlers as in a subprocess, without paying for
    another interpreter's imports and compile-cache loads. Checks the exit like
    :func:`_assert_clean_exit` (an exception would escape here instead of a traceback)."""
    handler = signal.getsignal(signal.SIGINT)
    code = main(args)
    stderr = capsys.readouterr().err
    assert code == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert "interrupted" in stderr
    assert signal.getsignal(signal.SIGINT) is handler  # the CLI put the handler back


def test_sigint_during_post_processing_keeps_every_draw(tmp_path, capsys, monkeypatch):
    import pp_models.dpm.outputs as dpm_outputs  # whose summarize fit's post-fit hook calls

    summarize = dpm_outputs.summarize

    def _summarize(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        return summarize(*args, **kwargs)

    monkeypatch.setattr(dpm_outputs, "summarize", _summarize)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    _ppzoo_here(_fit_args(out, 30, 1, 1), capsys)
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert dt.attrs["pp_models_interrupted"] == 1
    assert dt["posterior"].sizes["draw"] == 30
    _only_results(tmp_path, out)


def test_sigint_while_writing_never_mixes_two_runs(tmp_path, capsys, monkeypatch):
    import inference.report as report

    atomic, sent = report._atomic_write, []

    def _atomic_write(path, write):
        if not sent:  # as the first file is written
            sent.append(1)
            os.kill(os.getpid(), signal.SIGINT)
        return atomic(path, write)

    monkeypatch.setattr(report, "_atomic_write", _atomic_write)
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    for name in RESULT_FILES:  # a previous run's result
        (out / name).write_text("previous run")
    _ppzoo_here(_fit_args(out, 20, 1, 1), capsys)
    assert sent
    # the first Ctrl-C lets the writing finish: all three files are this run's
    assert all((out / name).read_bytes() != b"previous run" for name in RESULT_FILES)
    assert xr.open_datatree(out / "posterior.nc", engine="h5netcdf")["posterior"].sizes[
        "draw"] == 20
    _only_results(tmp_path, out)


@pytest.mark.slow
def test_a_second_sigint_while_writing_leaves_the_previous_result_whole(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    for name in RESULT_FILES:
        (out / name).write_text("previous run")
    proc, _ = _ppzoo(tmp_path, "writing-twice", _fit_args(out, 20, 1, 1))
    _assert_clean_exit(proc)
    assert all((out / name).read_text() == "previous run" for name in RESULT_FILES)
    _only_results(tmp_path, out)


def test_out_naming_a_file_or_a_foreign_folder_fails_before_sampling(tmp_path, capsys):
    target = tmp_path / "results.txt"
    target.write_text("keep me")
    assert main(_fit_args(target, 10, 1, 1)) == 2
    assert "not a folder" in capsys.readouterr().err and target.read_text() == "keep me"
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.md").write_text("keep me")
    assert main(_fit_args(folder, 10, 1, 1)) == 2
    assert "not a previous result" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.md"]


def test_fit_returns_the_completed_draws_after_a_sigint():
    rng = np.random.default_rng(0)
    m = lda.model([rng.integers(0, 30, 200) for _ in range(40)], n_topics=5, n_words=30)
    fit(m, draws=2, tune=0, chains=1, progressbar=False)  # compile outside the timing
    timer = threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.warns(UserWarning, match="interrupted"):
            dt = fit(m, draws=10_000_000, tune=0, chains=1, random_seed=1, progressbar=False,
                     var_names=["phi"])
    finally:
        timer.cancel()
    kept = dt["posterior"].sizes["draw"]
    assert 0 < kept < 10_000_000 and dt.attrs["pp_models_interrupted"] == 1
    assert dt.attrs["pp_models_draws_completed"] == [kept]
    assert np.all(posterior_with_labels(dt)["phi"].values > 0)  # rows all filled


def test_draws_never_made_are_trimmed_after_an_interrupted_pymc_or_nutpie_run():
    """nutpie leaves the draws it did not make as NaN: they go, the chains keep a common
    length, a chain without any draw is dropped."""
    from inference.posterior_layout import trim_unfinished

    rng = np.random.default_rng(0)
    mu = rng.normal(size=(3, 10, 2))
    mu[1, 6:] = np.nan  # chain 1 stopped after 6 draws
    mu[2] = np.nan  # chain 2 never started
    mu[0, 3, 0] = np.nan  # a NaN inside a real draw does not end it
    ds = xr.Dataset({"mu": (("chain", "draw", "k"), mu)},
                    coords={"chain": np.arange(3), "draw": np.arange(10)})
    stats = xr.Dataset({"diverging": (("chain", "draw"), np.zeros((3, 10), bool))},
                       coords={"chain": np.arange(3), "draw": np.arange(10)})
    dt = xr.DataTree.from_dict({"posterior": ds, "sample_stats": stats})
    out = trim_unfinished(dt)
    assert out["posterior"].sizes == {"chain": 2, "draw": 6, "k": 2}
    assert out["sample_stats"].sizes == {"chain": 2, "draw": 6}
    assert dt.attrs["pp_models_draws_completed"] == [10, 6, 0]
    np.testing.assert_array_equal(out["posterior"]["mu"].values, mu[:2, :6])


@pytest.mark.parametrize("moment", ["import", "compile"])
def test_sigint_before_sampling_ends_the_run_at_once(tmp_path, moment):
    # During imports a KeyboardInterrupt escaped from matplotlib as a traceback; during
    # the compile the first Ctrl-C only set the flag, and the run went on compiling
    # until its first draw. Nothing is drawn yet, so the first Ctrl-C ends it there.
    out = tmp_path / "out"
    proc, marker = _ppzoo(tmp_path, moment, _fit_args(out, 1000, 2, 1))
    stdout, stderr = proc.communicate(timeout=90)  # the compile would sleep 120 s
    assert marker.exists()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "Error" not in stderr, stderr
    assert stderr.strip().splitlines() == [
        "ppzoo: interrupted; nothing was written" if moment == "import" else
        "ppzoo: interrupted before sampling began; nothing was written"]
    assert "sampling 2 chains" in stdout if moment == "compile" else stdout == ""
    assert not out.exists()


def test_terminal_ctrl_c_keeps_the_trace_and_never_replaces_a_complete_result(tmp_path,
                                                                              capsys):
    """A terminal's Ctrl-C reaches the chain workers too. When they set the stop flag
    before the parent's handler ran, the parent took its first Ctrl-C for a second one:
    "nothing was written" while the trace held the draws. Here the workers get their
    SIGINT first. The folder named by --out holds a complete run, which the partial one
    must not replace; ``ppzoo check`` then scores the same statistics on the trace as on
    the written result and says the run was interrupted."""
    import inference.report as report

    out, trace = tmp_path / "out", tmp_path / "trace"
    ds = xr.Dataset({"a": (("chain", "draw"), np.random.default_rng(0).normal(size=(2, 500)))})
    report.write_results(xr.DataTree.from_dict({"posterior": ds}),
                         pd.DataFrame({"a": [0.0]}), out)
    before = {name: (out / name).read_bytes() for name in RESULT_FILES}
    proc, marker = _ppzoo(tmp_path, "sampling",
                          [*_fit_args(out, 1_000_000, 2, 2), "--trace", str(trace)])
    deadline = time.monotonic() + FIRST_DRAW_WAIT
    from inference.trace_store import TraceStore, is_trace

    while not (len(list(tmp_path.glob(f"{marker.name}-*"))) == 2 and is_trace(trace)
               and min(TraceStore(trace).completed()) > 0):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"no stored draw within {FIRST_DRAW_WAIT} s"
        time.sleep(0.05)
    for worker in tmp_path.glob(f"{marker.name}-*"):
        os.kill(int(worker.name.rsplit("-", 1)[1]), signal.SIGINT)
    time.sleep(0.5)  # the workers' handlers have set the stop event
    proc.send_signal(signal.SIGINT)
    _stdout, stderr = _assert_clean_exit(proc)
    partial = tmp_path / "out.interrupted"
    assert {name: (out / name).read_bytes() for name in RESULT_FILES} == before
    dt = xr.open_datatree(partial / "posterior.nc", engine="h5netcdf")
    assert dt.attrs["pp_models_interrupted"] == 1
    kept = dt["posterior"].sizes["draw"]
    completed = np.atleast_1d(dt.attrs["pp_models_draws_completed"])
    # both chains ran together and both stopped, with a common length kept
    assert dt["posterior"].sizes["chain"] == 2 and completed.size == 2
    assert 0 < kept < 1_000_000 and (completed >= kept).all()
    assert (posterior_with_labels(dt)["z"].values >= 0).all()  # every kept draw is real
    assert f"kept {kept} of 1000000 draws in 2 of 2 chains" in stderr
    assert str(partial) in stderr and f"{out} keeps the complete run" in stderr
    assert str(trace) in stderr and "--resume" in stderr
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]

    tables = {}
    for path in (trace, partial):
        code = main(["check", str(path)])
        printed = capsys.readouterr().out
        headline = next(line for line in printed.splitlines()
                        if line.startswith("Convergence:"))
        assert "on an interrupted run" in headline
        assert code == 4  # an interrupted run, whatever the verdict
        tables[path] = {line.split()[0] for line in printed.splitlines()[
            printed.splitlines().index(headline) + 3:] if line and line[0].isalpha()
            and not line.startswith(("What", "  "))}
    assert tables[trace] == tables[partial]
    assert {"n_clusters", "largest_cluster", "alpha"} <= tables[trace]
    assert not any(q.startswith("z[") for q in tables[trace])

    # had a second Ctrl-C abandoned the run, the message would say where the draws are
    from inference import cli

    class Armed:
        armed = True

    message = cli.RunProgress(out=out, trace=trace, flag=Armed(), stage="sampling").abandoned()
    stored = ", ".join(map(str, TraceStore(trace).completed()))
    assert f"the trace {trace} keeps {stored} draws per chain" in message
    assert f"{out} still holds its previous result" in message
