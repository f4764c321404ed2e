"""The ppzoo command line."""

import importlib
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference.cli import EXIT_BUG, main

# The demo is test_fit.py's iris fit (a session-scoped fixture, run on that module's xdist
# worker, "fit" group). The CSV fit shares the finite mixture's kernels too.
ON_THE_FIT_WORKER = pytest.mark.xdist_group("fit")


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "finite_mixture" in out and "iris" in out
    # a family that declines an entry is listed apart, with its reason
    models, rest = out.split("Families without a ppzoo entry")
    assert "bayesian_sets" not in models and "bayesian_sets" in rest.split("Data sets:")[0]


@ON_THE_FIT_WORKER
def test_demo_writes_results(demo_run, capsys):
    # the demo runs once per session (tests/inference/conftest.py): test_fit.py checks the
    # fit it saved
    code, printed, out = demo_run
    assert code == 0
    assert "weights_sorted[0]" in printed and "Convergence:" in printed
    for name in ("posterior.nc", "summary.csv", "trace.png", "mixture.png"):
        assert (out / name).stat().st_size > 0
    # No temporary files are left behind.
    assert sorted(p.name for p in out.iterdir()) == ["mixture.png", "posterior.nc",
                                                      "summary.csv", "trace.png"]
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
    assert dt["posterior"]["z"].shape == (4, 1000, 150)
    table = pd.read_csv(out / "summary.csv", index_col=0)
    assert "log_likelihood" in table.index
    # `check` reads what `fit` wrote.
    assert main(["check", str(out)]) == 0
    assert "PASSED" in capsys.readouterr().out


@ON_THE_FIT_WORKER
def test_fit_from_csv(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-4, 1, (30, 2)), rng.normal(4, 1, (30, 2))])
    csv = tmp_path / "two.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(csv, index=False)
    code = main(["fit", "finite_mixture", "--data", str(csv), "--param", "n_components=2",
                 "--draws", "200", "--tune", "200", "--chains", "2", "--seed", "1",
                 "--no-progress", "--out", str(tmp_path / "out")])
    assert code == 0
    dt = xr.open_datatree(tmp_path / "out" / "posterior.nc", engine="h5netcdf")
    assert list(dt["posterior"]["feature"].values) == ["a", "b"]
    w = dt["posterior"]["weights_sorted"].mean(("chain", "draw")).values
    np.testing.assert_allclose(w, [0.5, 0.5], atol=0.1)
    assert (tmp_path / "out" / "mixture.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "nope"], "unknown model 'nope'"),
        (["fit", "bayesian_sets"], "model 'bayesian_sets' has no ppzoo entry: a retrieval"),
        (["describe", "bayesian_sets"], "has no ppzoo entry"),
        (["fit", "finite_mixture", "--dataset", "nope"], "unknown data set 'nope'"),
        (["fit", "finite_mixture", "--data", "/no/such.csv"], "no such file"),
        (["fit", "finite_mixture", "--param", "n_components=0"], "n_components must be >= 1"),
        (["fit", "finite_mixture", "--param", "oops"], "KEY=VALUE"),
        # a factory's message about its option names the flag that gave it
        (["fit", "dpm", "--param", "alpha=abc"], "error: --param alpha must be a number"),
        # more draws than this machine can hold are refused before sampling, with why
        (["fit", "finite_mixture", "--chains", "100000"],
         "error: --chains 100000 and --draws 2000: 177 recorded values per draw, 8 bytes "
         "each, need 283 GB, more than the"),
        # a bad value for a flag is named by the flag, not by fit's argument
        (["fit", "finite_mixture", "--draws", "0"], "error: --draws must be >= 1, got 0"),
        (["fit", "finite_mixture", "--tune", "-1"], "error: --tune must be >= 0, got -1"),
        (["fit", "finite_mixture", "--chains", "0"], "error: --chains must be >= 1, got 0"),
        (["fit", "finite_mixture", "--cores", "0"], "error: --cores must be >= 1, got 0"),
        (["fit", "finite_mixture", "--seed", "-1"], "error: --seed must be >= 0, got -1"),
        (["fit", "dpm", "--method", "nuts"],
         "error: --method nuts needs an all-continuous model, but these free variables are "
         "discrete: z. Use --method gibbs"),
        (["fit", "finite_mixture", "--method", "advi"], "not available for finite_mixture"),
        # the LDA entry records theta and phi, which this option removes from the model
        (["fit", "lda", "--param", "deterministics=False"], "deterministics=False: the "),
        (["check", "/no/such/posterior.nc"], "no such file"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys, tmp_path):
    assert main([*argv, *(["--out", str(tmp_path)] if argv[0] == "fit" else [])]) == 2
    out, err = capsys.readouterr()
    err = err.strip()
    assert err.startswith("ppzoo: error:") and message in err
    if argv[0] == "fit" and {"--draws", "--tune", "--chains", "--cores", "--seed"} & set(argv):
        assert "sampling" not in out  # refused before the model was built
    assert len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())


def test_bad_trace_flag_is_named(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    out = ["--out", str(tmp_path / "out")]
    assert main(["fit", "finite_mixture", "--trace", str(tmp_path / "folder"), *out]) == 2
    assert capsys.readouterr().err.startswith(
        f"ppzoo: error: --trace: {tmp_path / 'folder'} is an existing folder that is not a "
        "pp-models trace")
    assert main(["fit", "bhc", "--method", "advi", "--trace", str(tmp_path / "new"), *out]) == 2
    assert capsys.readouterr().err.strip() == (
        "ppzoo: error: --trace stores MCMC draws; --method advi makes none (drop --trace)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["folder"]


def test_bad_data_values_are_named_by_the_data_flag(tmp_path, capsys):
    csv = tmp_path / "nan.csv"
    csv.write_text("a,b\n1,2\n3,\n5,6\n")
    assert main(["fit", "finite_mixture", "--data", str(csv), "--out",
                 str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.startswith(
        f"ppzoo: error: --data {csv} has 1 non-finite value(s) (NaN or inf), first at row "
        "1, column 1 (counting from 0)")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--rhat-max", "0.5"], "--rhat-max must be a finite number >= 1, got 0.5"),
     (["--ess-min", "-1"], "--ess-min must be a finite number >= 0, got -1.0")],
)
def test_check_names_its_bad_flag(argv, message, tmp_path, capsys):
    rng = np.random.default_rng(0)
    posterior = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(2, 20)))})
    xr.DataTree.from_dict({"posterior": posterior}).to_netcdf(tmp_path / "posterior.nc",
                                                              engine="h5netcdf")
    assert main(["check", str(tmp_path), *argv]) == 2
    assert capsys.readouterr().err.strip() == f"ppzoo: error: {message}"


def test_non_numeric_csv(tmp_path, capsys):
    csv = tmp_path / "bad.csv"
    csv.write_text("a,b\n1,x\n2,y\n")
    assert main(["fit", "finite_mixture", "--data", str(csv)]) == 2
    assert "non-numeric column(s) b" in capsys.readouterr().err


def test_csv_without_header_row(tmp_path, capsys):
    # pandas would read the first data row as column names, and the fit would lose it
    csv = tmp_path / "noheader.csv"
    csv.write_text("1,2\n3,4\n5,6.5\n")
    assert main(["fit", "finite_mixture", "--data", str(csv), "--out",
                 str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "the first row of" in err and "(1, 2) is numbers, not column names" in err
    assert not (tmp_path / "out").exists()


def test_a_bug_in_the_run_is_reported_with_its_traceback(tmp_path, capsys, monkeypatch):
    """A ValueError raised by the library's work (not by a check of the user's input) is
    ours: its traceback, a line asking for a report and a status of its own, never the
    one-line usage error."""
    def planted(*args, **kwargs):
        raise ValueError("planted bug")

    # the module (the package's attribute of that name is the function)
    monkeypatch.setattr(importlib.import_module("inference.fitting"), "fit_mcmc", planted)
    out = tmp_path / "out"
    assert main(["fit", "finite_mixture", "--draws", "5", "--tune", "0", "--chains", "1",
                 "--no-progress", "--out", str(out)]) == EXIT_BUG
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "ValueError: planted bug" in err
    assert err.strip().splitlines()[-1].startswith("ppzoo: this is a bug in pp-models")
    assert "please report it" in err and "ppzoo: error" not in err
    assert not out.exists()


def test_a_refusal_raised_during_the_run_is_the_users_error(tmp_path, capsys, monkeypatch):
    # a tempered run refuses a step once it plans the steps, after fit's own checks; the
    # library marks that refusal as the caller's (UserInputError), so it stays one line
    from pp_models.validation import UserInputError

    def refusing(*args, **kwargs):
        raise UserInputError("tempering: step 'x' cannot temper")

    monkeypatch.setattr(importlib.import_module("inference.fitting"), "fit_mcmc", refusing)
    assert main(["fit", "finite_mixture", "--draws", "5", "--tune", "0", "--chains", "1",
                 "--no-progress", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "ppzoo: error: --tempering: step 'x' cannot temper"


def test_console_script_usage_error_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "inference.cli", "frobnicate"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "invalid choice" in proc.stderr


def test_fit_lda_on_reuters_uses_model_defaults(tmp_path, capsys):
    code = main(["fit", "lda", "--param", "n_topics=4", "--draws", "10", "--tune", "10",
                 "--seed", "2", "--no-progress", "--out", str(tmp_path)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "2 chains x 10 draws" in printed  # chains from the LDA entry's defaults
    dt = xr.open_datatree(tmp_path / "posterior.nc", engine="h5netcdf")
    # theta and phi are written as each chain's mean and sd, so the file does not grow
    # with the draws (on main: phi per draw, 300 MB at the default sizes); nothing
    # written per draw holds more than a few numbers
    assert "posterior_labels" not in dt.children  # nor are the token topics z
    for group in ("posterior_mean", "posterior_sd"):
        assert dt[group]["phi"].shape == (2, 4, 4258)
        assert dt[group]["theta"].shape == (2, 395, 4)
    for node in dt.subtree:
        for name, var in node.data_vars.items():
            if "draw" in var.dims:
                assert var.size // (var.sizes["chain"] * var.sizes["draw"]) <= 4, name
    # the answer: top words, as words (the data set's vocabulary labels phi's columns)
    from pp_models.datasets import load

    vocabulary = load("reuters").feature_names
    assert list(dt["posterior_mean"]["word"].values[:5]) == list(vocabulary[:5])
    assert (tmp_path / "topics.png").stat().st_size > 0
    # 2 x 10 draws fail the check: its verdict, its advice and the family's note on its
    # default run come last, where the user looks
    from pp_models.lda import FAMILY

    tail = printed[printed.rindex("\nwrote "):]
    assert "Convergence: FAILED" in tail
    assert tail.rstrip().endswith(FAMILY.cli.check_note)


def test_fit_pydt_saves_a_tree_picture(tmp_path):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.5, (5, 2)), rng.normal(3, 0.5, (5, 2))])
    csv = tmp_path / "pts.csv"
    pd.DataFrame(X, columns=["a", "b"]).to_csv(csv, index=False)
    out = tmp_path / "out"
    code = main(["fit", "pydt", "--data", str(csv), "--draws", "10", "--tune", "5",
                 "--chains", "1", "--seed", "1", "--no-progress", "--out", str(out)])
    assert code == 0
    assert (out / "tree.png").stat().st_size > 0
    assert sorted(p.name for p in out.iterdir()) == ["posterior.nc", "summary.csv",
                                                      "trace.png", "tree.png"]


@pytest.mark.parametrize(("family", "picture"),
                         [("bhc", "tree.png"), ("dpm", "clustering.png"),
                          ("ibp_fa", "features.png")])
def test_fit_saves_the_family_answer_picture(tmp_path, family, picture):
    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.5, (8, 3)), rng.normal(3, 0.5, (8, 3))])
    csv = tmp_path / "pts.csv"
    pd.DataFrame(X, columns=["a", "b", "c"]).to_csv(csv, index=False)
    out = tmp_path / "out"
    code = main(["fit", family, "--data", str(csv), "--draws", "20", "--tune", "20",
                 "--chains", "1", "--seed", "1", "--no-progress", "--out", str(out)])
    assert code == 0
    assert (out / picture).stat().st_size > 0
    assert sorted(p.name for p in out.iterdir()) == sorted(["posterior.nc", "summary.csv",
                                                             "trace.png", picture])
    if family == "bhc":
        # the tree's cut (stored for the picture) separates the two far-apart groups
        dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf")
        cut = dt["bhc_tree"]["cut"].values
        assert len(set(cut[:8])) == 1 and len(set(cut[8:])) == 1 and cut[0] != cut[8]
