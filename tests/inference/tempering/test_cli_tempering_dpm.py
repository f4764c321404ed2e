"""``ppzoo fit NAME --tempering N`` and ``ppzoo evidence NAME``."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference.cli import main


@pytest.fixture(scope="module")
def csv(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.7, (8, 2)), rng.normal(3, 0.7, (8, 2))])
    path = tmp_path_factory.mktemp("data") / "two.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(path, index=False)
    return path


def test_fit_with_tempering_writes_the_tempering_group(csv, tmp_path, capsys):
    out = tmp_path / "out"
    code = main(["fit", "dpm", "--data", str(csv), "--param", "likelihood='diag_gaussian'",
                 "--tempering", "3", "--draws", "60", "--tune", "20", "--chains", "2",
                 "--cores", "1", "--seed", "1", "--no-progress", "--out", str(out)])
    assert code == 0, capsys.readouterr()
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert dict(dt["tempering"]["log_likelihood"].sizes) == {
        "chain": 2, "draw": 60, "temperature": 3}
    assert {p.name for p in out.iterdir()} >= {"posterior.nc", "summary.csv", "trace.png",
                                               "clustering.png"}


def test_evidence_prints_the_log_evidence(csv, capsys):
    code = main(["evidence", "dpm", "--data", str(csv), "--param",
                 "likelihood='diag_gaussian'", "--temperatures", "4", "--draws", "100",
                 "--tune", "40", "--chains", "2", "--cores", "1", "--seed", "2",
                 "--no-progress"])
    out = capsys.readouterr().out
    assert code == 0
    assert "dpm on two: log evidence -" in out and "stepping_stone, 4 temperatures" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "dpm", "--tempering", "1"], "error: --tempering must be >= 2, got 1"),
        (["evidence", "dpm", "--temperatures", "1"], "error: --temperatures must be >= 2"),
        (["evidence", "dpm", "--draws", "0"], "error: --draws must be >= 1, got 0"),
        (["evidence", "dpm", "--method", "harmonic"], "--method must be one of"),
    ],
)
def test_bad_tempering_flags_exit_2(argv, message, capsys, tmp_path):
    extra = ["--out", str(tmp_path / "o")] if argv[0] == "fit" else []
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ppzoo: error:") and message in err, err
    assert len(err.splitlines()) == 1
