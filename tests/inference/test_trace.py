"""fit(..., trace=path): draws on disk as they are made, read while partial, resumed.

The kills are real: SIGKILL to a subprocess, SIGINTs sent to this process by a thread
reading the trace as another process would (a ppzoo process gets its SIGINT in
test_interrupt.py). The continuation is checked against the same run made without
interruption (zoo Gibbs steps store their random generators, so a resumed chain is the
very chain the uninterrupted run makes).
"""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from inference import fit
from inference.cli import main
from inference.trace_store import TraceStore, is_trace, read_trace
from pp_models import dpm
from pp_models.model_info import posterior_with_labels
from tests.helpers.interrupts import sigint_once_stored

ROOT = Path(__file__).resolve().parents[2]

# One xdist worker runs this module and test_interrupt.py (--dist loadgroup): both fit the DP
# mixture through ppzoo and fit(), in subprocesses and here; spread over two workers, a
# cold run compiled its graphs on both.
pytestmark = pytest.mark.xdist_group("sigint")

SIZES = dict(draws=150, tune=10, chains=2, cores=1, random_seed=5)

SCRIPT = """
import sys
import numpy as np
from inference import fit
from pp_models import dpm
rng = np.random.default_rng(0)
X = np.concatenate([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])
fit(dpm.model(X), progressbar=False, trace=sys.argv[1], trace_flush=0.0, {sizes})
"""


def _data():
    rng = np.random.default_rng(0)
    return np.concatenate([rng.normal(-3, 1, (50, 2)), rng.normal(3, 1, (50, 2))])


@pytest.fixture(scope="module")
def dpm_model():
    # one model object for the in-process fits of _data(): fit builds its zoo steps once
    # per model (each chain re-seeds and resets them), so later tests reuse them
    return dpm.model(_data())


def _start(args, cwd, code=None):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", code, *args] if code else [
        sys.executable, "-m", "inference.cli", *args]
    return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_draws(proc, path, at_least, timeout=120, every_chain=False):
    """Poll the trace until one chain (``every_chain``: each chain) stored ``at_least``
    draws."""
    deadline = time.monotonic() + timeout
    enough = min if every_chain else max
    while True:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"fewer than {at_least} draws in {timeout} s"
        if is_trace(path) and enough(TraceStore(path).completed()) >= at_least:
            return
        time.sleep(0.05)


def test_a_killed_run_is_readable_and_its_resumption_is_the_uninterrupted_run(tmp_path,
                                                                              capsys,
                                                                              dpm_model):
    path = tmp_path / "run"
    sizes = ", ".join(f"{k}={v}" for k, v in SIZES.items())
    proc = _start([str(path)], tmp_path, SCRIPT.format(sizes=sizes))
    _wait_for_draws(proc, path, 20)
    m = dpm_model
    with pytest.raises(ValueError, match=f"still being written by process {proc.pid}"):
        fit(m, progressbar=False, trace=path, resume=True, **SIZES)
    proc.send_signal(signal.SIGKILL)  # no handler, no cleanup: what a crash leaves
    proc.communicate(timeout=30)  # (also closes the pipes)

    partial = read_trace(path)
    completed = partial.attrs["pp_models_draws_completed"]
    assert partial.attrs["pp_models_trace_status"] == "running"
    assert partial.attrs["pp_models_interrupted"] == 1
    assert 20 <= completed[0] < SIZES["draws"] and completed[1] == 0
    assert partial["posterior"].sizes["draw"] == completed[0]
    assert (partial["posterior"]["z"].values >= 0).all()  # only committed draws
    assert main(["check", str(path)]) == 4  # an interrupted run's own status
    out = capsys.readouterr().out
    assert "partial" in out and f"{completed[0]}, 0 of {SIZES['draws']}" in out

    resumed = fit(m, progressbar=False, trace=path, resume=True, **SIZES)
    whole = fit(m, progressbar=False, **SIZES)
    assert resumed.attrs.get("pp_models_interrupted", 0) == 0
    assert read_trace(path).attrs["pp_models_trace_status"] == "complete"
    z_resumed = posterior_with_labels(resumed)["z"].values
    z_whole = posterior_with_labels(whole)["z"].values
    assert z_resumed.shape == (2, SIZES["draws"], 100)
    # the stored draws are kept as they were and the continuation is the same chain
    np.testing.assert_array_equal(z_resumed[0, : completed[0]],
                                  partial["posterior"]["z"].values[0])
    np.testing.assert_array_equal(z_resumed, z_whole)
    np.testing.assert_array_equal(resumed["sample_stats"]["n_changed"].values,
                                  whole["sample_stats"]["n_changed"].values)
    # nothing left to do: a second resume samples nothing and returns the same draws
    again = fit(m, progressbar=False, trace=path, resume=True, **SIZES)
    np.testing.assert_array_equal(posterior_with_labels(again)["z"].values, z_resumed)


def test_ppzoo_fit_with_trace_stops_every_chain_on_sigint_leaving_a_partial_trace(tmp_path, capsys):
    # ppzoo's main() here (its exit code and stderr as a process would give them): the
    # parallel chains are forked from this process; test_interrupt.py signals a real
    # ppzoo process
    trace, out = tmp_path / "trace", tmp_path / "out"
    args = ["fit", "dpm", "--draws", "1000000", "--tune", "0", "--chains", "2",
            "--cores", "2", "--seed", "1", "--no-progress", "--out", str(out),
            "--trace", str(trace)]
    # both chains have stored draws before the signal (the test asserts each stopped
    # with some): wait for that, not for a fixed time
    watcher, seen = sigint_once_stored(trace, 5, every_chain=True)
    code = main(args)
    watcher.join()
    stderr = capsys.readouterr().err
    assert seen, "a chain stored fewer than 5 draws in 120 s"
    assert code == 130, stderr
    assert "Traceback" not in stderr
    dt = read_trace(trace)
    assert dt.attrs["pp_models_trace_status"] == "interrupted"
    completed = dt.attrs["pp_models_draws_completed"]
    assert all(0 < c < 1_000_000 for c in completed)
    written = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert written["posterior"].sizes["draw"] == min(completed)
    # the verdict depends on how many draws were stored before the signal; whichever
    # it is, the interruption is named and is the exit status
    code = main(["check", str(trace)])
    printed = capsys.readouterr().out
    assert "partial (interrupted)" in printed
    assert "on an interrupted run" in printed
    assert code == 4


def test_trace_and_resume_refuse_bad_paths_before_sampling(tmp_path, dpm_model):
    m = dpm_model
    kwargs = dict(draws=5, tune=0, chains=1, progressbar=False)
    afile = tmp_path / "draws.nc"
    afile.write_text("keep me")
    with pytest.raises(ValueError, match="existing file that is not a pp-models trace"):
        fit(m, trace=afile, **kwargs)
    assert afile.read_text() == "keep me"
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.md").write_text("keep me")
    with pytest.raises(ValueError, match="existing folder that is not a pp-models trace"):
        fit(m, trace=folder, **kwargs)
    with pytest.raises(ValueError, match="not a pp-models trace, cannot resume"):
        fit(m, trace=folder, resume=True, **kwargs)
    assert [p.name for p in folder.iterdir()] == ["notes.md"]
    with pytest.raises(ValueError, match="is not a folder"):
        fit(m, trace=afile / "run", **kwargs)
    with pytest.raises(ValueError, match="nothing to resume"):
        fit(m, trace=tmp_path / "none", resume=True, **kwargs)
    with pytest.raises(ValueError, match="resume=True needs trace"):
        fit(m, resume=True, **kwargs)
    with pytest.raises(ValueError, match="trace_flush"):
        fit(m, trace=tmp_path / "new", trace_flush=-1, **kwargs)
    with pytest.raises(ValueError, match="advi"):
        fit(m, method="advi", trace=tmp_path / "new", **kwargs)
    with pytest.raises(TypeError, match="trace must be a path"):
        fit(m, trace=3, **kwargs)
    assert not (tmp_path / "new").exists()

    done = tmp_path / "done"
    fit(m, trace=done, random_seed=1, **kwargs)
    stamp = {p: p.stat().st_mtime_ns for p in done.rglob("*")}
    with pytest.raises(ValueError, match="already holds a trace; pass resume=True"):
        fit(m, trace=done, **kwargs)
    with pytest.raises(ValueError, match="draws=6 \\(the trace has draws=5\\)"):
        fit(m, trace=done, resume=True, **{**kwargs, "draws": 6})
    other = dpm.model(_data()[:60])
    with pytest.raises(ValueError, match="written by another model"):
        fit(other, trace=done, resume=True, **kwargs)
    assert {p: p.stat().st_mtime_ns for p in done.rglob("*")} == stamp


def test_trace_in_a_folder_we_may_not_write_is_refused(tmp_path, monkeypatch, dpm_model):
    # tests may run as root, for whom every folder is writable: ask access() to say no
    import inference.trace_store as store

    monkeypatch.setattr(store.os, "access", lambda path, mode: False)
    m = dpm_model
    with pytest.raises(ValueError, match="is not writable"):
        fit(m, trace=tmp_path / "run", draws=5, tune=0, chains=1, progressbar=False)
    assert not (tmp_path / "run").exists()


def test_sigint_stops_every_sequential_pymc_chain_leaving_a_partial_trace(tmp_path):
    """pm.sample with cores=1 runs chains one after another and, left alone, starts the
    next chain after a Ctrl-C: here the run ends (1,000,000 draws per chain would not).

    The SIGINT is real and comes whenever another thread, reading the trace on disk as
    ``ppzoo check`` would, sees 30 stored draws: at whatever point sampling then is, as
    from a terminal, without a second interpreter's imports and compile-cache loads."""
    path = tmp_path / "run"
    watcher, seen = sigint_once_stored(path, 30)
    with pytest.warns(UserWarning, match="interrupted"):
        dt = fit(_normal_model(), method="nuts", draws=1_000_000, tune=20, chains=3,
                 cores=1, random_seed=2, progressbar=False, trace=path, trace_flush=0.1)
    watcher.join()
    assert seen, "fewer than 30 draws stored in 120 s"
    assert dt.attrs["pp_models_interrupted"] == 1
    sizes = dict(dt["posterior"].sizes)
    assert sizes["chain"] == 1 and 30 <= sizes["draw"] < 1_000_000
    stored = read_trace(path)
    assert stored.attrs["pp_models_trace_status"] == "interrupted"
    completed = stored.attrs["pp_models_draws_completed"]
    assert completed[0] >= 30 and completed[1:] == [0, 0]


def _normal_model():
    import pymc as pm

    with pm.Model() as m:
        mu = pm.Normal("mu", 0, 1, shape=2)
        s = pm.HalfNormal("s", 1)
        pm.Normal("y", mu[0], s, observed=np.random.default_rng(0).normal(size=20))
    return m


def test_a_pymc_run_stopped_by_ctrl_c_resumes_from_its_stored_points(tmp_path):
    from inference.pymc_callback import resume_initvals

    m = _normal_model()
    path = tmp_path / "run"
    sizes = dict(draws=60, tune=20, chains=2, cores=1, random_seed=4, progressbar=False)

    def ctrl_c_at_draw_50(trace, draw):  # a real SIGINT, in chain 0's 30th kept draw
        if draw.chain == 0 and draw.draw_idx == 49:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.warns(UserWarning, match="interrupted"):
        first = fit(m, method="nuts", trace=path, trace_flush=0.0,
                    callback=ctrl_c_at_draw_50, **sizes)
    assert first["posterior"].sizes["chain"] == 1
    partial = read_trace(path)
    assert partial.attrs["pp_models_draws_completed"] == [30, 0]
    # the stored point is the last stored draw, on the variables' own scale
    state = TraceStore(path).chain_state(0)
    start = resume_initvals(m, [state])[0]
    np.testing.assert_allclose(start["mu"], partial["posterior"]["mu"].values[0, -1])
    np.testing.assert_allclose(start["s"], partial["posterior"]["s"].values[0, -1])

    resumed = fit(m, method="nuts", trace=path, resume=True, **sizes)
    assert resumed.attrs.get("pp_models_interrupted", 0) == 0
    assert dict(resumed["posterior"].sizes) == {"chain": 2, "draw": 60, "mu_dim_0": 2}
    np.testing.assert_array_equal(resumed["posterior"]["mu"].values[0, :30],
                                  partial["posterior"]["mu"].values[0])
    assert np.isfinite(resumed["posterior"]["mu"].values).all()
    assert read_trace(path).attrs["pp_models_trace_status"] == "complete"


def test_ppzoo_trace_options_are_checked_before_sampling(tmp_path, capsys):
    base = ["fit", "dpm", "--draws", "5", "--tune", "0", "--chains", "1", "--no-progress"]
    assert main([*base, "--resume", "--out", str(tmp_path / "a")]) == 2
    assert "--resume needs --trace PATH" in capsys.readouterr().err
    out = tmp_path / "out"
    assert main([*base, "--out", str(out), "--trace", str(out / "run")]) == 2
    assert "must not be inside --out" in capsys.readouterr().err
    assert main([*base, "--out", str(out), "--trace", str(tmp_path / "none"), "--resume"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    assert not out.exists()
