"""``ppzoo check``: an interrupted run says so and has its own exit status, the verdict
is the exit status otherwise (0 / 1 / 3), a multimodal run's chain stacking weights are
printed, and a reader that goes away (``| head``) ends it quietly; a partial result is written
beside a complete one, never over it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference import report
from inference.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _result(folder: Path, *, interrupted: bool, shift: float = 0.0, size: int = 1) -> Path:
    """A result folder whose posterior has ``size`` scalar quantities (a chain of draws
    each), its second chain shifted by ``shift``."""
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(2, 1000, size))
    draws[1] += shift
    posterior = xr.Dataset({"theta": (("chain", "draw", "i"), draws)},
                           coords={"chain": [0, 1], "draw": np.arange(1000),
                                   "i": np.arange(size)})
    dt = xr.DataTree.from_dict({"posterior": posterior})
    if interrupted:
        dt.attrs.update(pp_models_interrupted=1, pp_models_draws_requested=40_000,
                        pp_models_draws_completed=[1000, 1000])
    folder.mkdir(parents=True, exist_ok=True)
    dt.to_netcdf(folder / "posterior.nc", engine="h5netcdf")
    return folder


@pytest.mark.parametrize("interrupted", [False, True])
@pytest.mark.parametrize("shift", [0.0, 3.0])
def test_the_headline_says_interrupted_and_is_the_exit_status(tmp_path, capsys, interrupted,
                                                              shift):
    folder = _result(tmp_path / "out", interrupted=interrupted, shift=shift)
    code = main(["check", str(folder)])
    printed = capsys.readouterr().out
    headline = next(line for line in printed.splitlines() if line.startswith("Convergence:"))
    passed = shift == 0.0
    # an interrupted run has its own status, whatever its draws say (a script must not
    # take a partial run for a result); else the verdict's: a chain shifted by 3 sd is
    # stationary in its own place, so the chains disagree as separate modes do
    assert code == (4 if interrupted else 0 if passed else 3)
    assert headline.startswith("Convergence: PASSED" if passed else "Convergence: FAILED")
    assert ("on an interrupted run (1000 of 40000 draws per chain kept)" in headline) \
        == interrupted
    assert ("exit status 4: an interrupted run" in printed) == interrupted


@pytest.mark.parametrize("command", ["list", pytest.param("check", marks=pytest.mark.slow)])
def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path, command):
    # `ppzoo check DIR | head`: the reader closes the pipe before the command has written
    # all it prints (here, before anything: the reader is gone when it flushes); `list`
    # is the same path at a fraction of the imports
    args = ["check", str(_result(tmp_path / "out", interrupted=False))] \
        if command == "check" else ["list"]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "inference.cli", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    proc.stdout.close()
    _, stderr = proc.communicate(timeout=120)
    assert "Traceback" not in stderr.decode() and "BrokenPipeError" not in stderr.decode()
    assert stderr == b""
    assert proc.returncode == 141  # as a program killed by SIGPIPE


def test_a_partial_result_goes_beside_a_complete_one(tmp_path):
    table = pd.DataFrame({"a": [1.0]})
    out = _result(tmp_path / "out", interrupted=False)
    partial = xr.open_datatree(_result(tmp_path / "p", interrupted=True) / "posterior.nc",
                               engine="h5netcdf").load()
    complete = xr.open_datatree(out / "posterior.nc", engine="h5netcdf").load()
    assert report.holds_complete_result(out)
    assert report.result_folder(complete, out) == out  # a complete run replaces one
    assert report.result_folder(partial, out) == tmp_path / "out.interrupted"
    beside = report.write_results(partial, table, out)["posterior"].parent
    assert beside == tmp_path / "out.interrupted" and report.holds_complete_result(out)
    # a partial result replaces a partial one
    assert report.result_folder(partial, beside) == beside
    # a name beside that holds something else is skipped
    (beside / "notes.md").write_text("mine")
    assert report.result_folder(partial, out) == tmp_path / "out.interrupted-2"


def _write(folder: Path, dt: xr.DataTree) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dt.to_netcdf(folder / "posterior.nc", engine="h5netcdf")
    return folder


def test_exit_status_per_verdict_and_stacking_weights(tmp_path, capsys):
    rng = np.random.default_rng(3)
    # separate modes: theta near -3 in chains 0-1, near 3 in chains 2-3; the data are
    # 30 points around -3 and 10 around 3, so the modes' stacking shares are 3/4 and 1/4
    y = np.concatenate([-3 + 0.3 * rng.normal(size=30), 3 + 0.3 * rng.normal(size=10)])
    theta = np.concatenate([rng.normal(-3, 0.05, size=(2, 500)),
                            rng.normal(3, 0.05, size=(2, 500))])
    log_lik = -0.5 * (y[None, None, :] - theta[..., None]) ** 2 - 0.5 * np.log(2 * np.pi)
    posterior = xr.Dataset({"theta": (("chain", "draw"), theta)})
    modes = _write(tmp_path / "modes", xr.DataTree.from_dict({"posterior": posterior}))
    assert main(["check", str(modes)]) == 3
    out = capsys.readouterr().out
    assert "multimodal" in out.splitlines()[0] and "Per chain" in out
    assert "log_likelihood=True" in out  # how to get the weights
    stacked = _write(tmp_path / "stacked", xr.DataTree.from_dict({
        "posterior": posterior,
        "log_likelihood": xr.Dataset({"y": (("chain", "draw", "obs"), log_lik)})}))
    assert main(["check", str(stacked)]) == 3
    out = capsys.readouterr().out
    weights = [float(line.split("weight ")[1].split(",")[0])
               for line in out.splitlines() if line.strip().startswith("chain ")]
    assert len(weights) == 4 and sum(weights[:2]) == pytest.approx(0.75, abs=2e-3)
    # the pointwise log-likelihood's PSIS-LOO and its Pareto k count are reported
    loo_line = next(line for line in out.splitlines() if line.startswith("LOO (PSIS)"))
    assert "Pareto k > 0.7 for" in loo_line and "of 40 observations" in loo_line

    drift = rng.normal(size=(2, 1000)) + np.linspace(0, 3, 1000)
    drifting = _write(tmp_path / "drift", xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"theta": (("chain", "draw"), drift)})}))
    assert main(["check", str(drifting)]) == 1
    assert "drift within a chain" in capsys.readouterr().out
    assert main(["check", str(drifting), "--chain-groups", "0,x"]) == 2
    assert "--chain-groups expects integers" in capsys.readouterr().err
    assert main(["check", str(drifting), "--chain-groups", "0,0"]) == 2
    assert "--chain-groups must form at least 2 groups" in capsys.readouterr().err


def test_the_help_lists_the_exit_statuses(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = capsys.readouterr().out
    for line in ("0  converged", "1  not_converged", "3  multimodal", "4  an interrupted run"):
        assert line in out


def test_an_interrupted_run_too_short_to_check_has_the_interrupted_status(tmp_path, capsys):
    # a killed run whose second chain stored nothing: one chain is read, nothing checked
    posterior = xr.Dataset({"theta": (("chain", "draw"), np.zeros((1, 20)))})
    dt = xr.DataTree.from_dict({"posterior": posterior})
    dt.attrs.update(pp_models_interrupted=1, pp_models_draws_requested=1000)
    assert main(["check", str(_write(tmp_path / "p", dt))]) == 4
    assert "NOT CHECKED on an interrupted run" in capsys.readouterr().out
    dt.attrs.update(pp_models_interrupted=0)
    assert main(["check", str(_write(tmp_path / "c", dt))]) == 1
