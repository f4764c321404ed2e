"""``ppzoo fit iomm``: the default data set (Reuters word presence), a CSV of reals
(the Gaussian experts), the family's picture and its options."""

import numpy as np
import pandas as pd
import xarray as xr

from inference.cli import main
from pp_models import iomm


def test_fit_on_the_default_data_set_writes_the_memberships(tmp_path, capsys):
    out = tmp_path / "out"
    # thin=2: the default's step, a short run
    code = main(["fit", "iomm", "--draws", "15", "--tune", "10", "--chains", "2",
                 "--param", "thin=2", "--seed", "3", "--no-progress", "--out", str(out)])
    assert code in (0, 1)  # 1: the convergence check fails on so short a run
    printed = capsys.readouterr().out
    assert "n_clusters" in printed and "mean_memberships" in printed
    assert sorted(p.name for p in out.iterdir()) == ["memberships.png", "posterior.nc",
                                                      "summary.csv", "trace.png"]
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    Z = dt["posterior"]["Z"]
    assert Z.shape[:3] == (2, 15, 395)
    # the Reuters corpus's CLI_WORDS most common words, by name
    words = list(dt["posterior"]["feature"].values)
    assert len(words) == iomm.CLI_WORDS and all(isinstance(w, str) for w in words)
    assert main(["check", str(out)]) in (0, 1, 3)


def test_fit_on_real_valued_csv_uses_gaussian_experts(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-2, 0.5, (10, 2)), rng.normal(2, 0.5, (10, 2))])
    csv = tmp_path / "pts.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(csv, index=False)
    out = tmp_path / "out"
    code = main(["fit", "iomm", "--data", str(csv), "--draws", "10", "--tune", "10",
                 "--chains", "1", "--param", "thin=2", "--seed", "1", "--no-progress",
                 "--out", str(out)])
    assert code in (0, 1)
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert {"mu", "tau"} <= set(dt["posterior"].data_vars)
    assert (out / "memberships.png").stat().st_size > 0


def test_describe_lists_the_options(capsys):
    assert main(["describe", "iomm"]) == 0
    printed = capsys.readouterr().out
    for option in ("likelihood", "alpha", "capacity", "theta_prior", "omega", "thin"):
        assert option in printed
