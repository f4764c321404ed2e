"""Every tutorial runs top to bottom (they are jupytext percent-format scripts).

The default test run passes each tutorial the arguments in ``FAST_ARGS`` (its ``--fast``
flag shrinks draws and data so it takes about a minute); run a tutorial without them for
the full teaching run. A tutorial that is not in the table fails ``test_tutorial_runs``:
add one row when you add a tutorial.

A tutorial runs inside the test worker (``runpy``), as a notebook kernel would run it, not
in a subprocess of its own: a subprocess imported PyMC and loaded every compiled kernel
again, 3.5-5 s per tutorial on a warm cache (gaussian_graphical_models 6.0 -> 2.6 s,
mixtures_of_trees 11.2 -> 6.4 s), and the worker that ran the family's tests has them
in memory already.
"""

import re
import runpy
import sys
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import pytest

TUTORIALS = sorted((Path(__file__).parents[1] / "tutorials").glob("*.py"))

# tutorial stem -> command-line arguments for the test run (one row per tutorial)
FAST_ARGS = {
    "bayesian_hierarchical_clustering": ["--fast"],
    "bayesian_sets": ["--fast"],
    "dirichlet_process_mixture": ["--fast"],
    "lda_topics": ["--fast"],
    "gaussian_graphical_models": ["--fast"],
    "ibp_factor_analysis": ["--fast"],
    "iomm": ["--fast"],
    "mixtures_of_trees": ["--fast"],
    "model_comparison": ["--fast"],
    "pitman_yor_diffusion_tree": ["--fast"],
    "testing_your_sampler": ["--fast"],
    "time_series": ["--fast"],
    "write_your_own_model": ["--fast"],
}


def test_there_are_tutorials():
    assert TUTORIALS


def test_fast_args_rows_name_existing_tutorials():
    stale = sorted(set(FAST_ARGS) - {p.stem for p in TUTORIALS})
    assert not stale, f"FAST_ARGS rows without a tutorials/<stem>.py: {stale}"


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_leaves_the_backend_to_the_user(path):
    # a notebook user wants inline figures; the test run sets MPLBACKEND=Agg itself
    assert not re.search(r"matplotlib\.use\(|\bmpl\.use\(", path.read_text()), (
        f"{path.name} calls matplotlib.use(...); leave the backend to the environment"
    )


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_runs(path, tmp_path, monkeypatch):
    if path.stem not in FAST_ARGS:
        pytest.fail(
            f"tutorials/{path.name} has no row in FAST_ARGS (tests/test_tutorials.py): give it "
            "a --fast flag read with argparse's parse_known_args and add the row"
        )
    # "-f <file>" is what Jupyter passes to a kernel: the tutorial must ignore unknown
    # arguments (parse_known_args), or it would not run as a notebook
    jupyter_args = ["-f", str(tmp_path / "kernel.json")]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(path), *FAST_ARGS[path.stem], *jupyter_args])
    try:
        with warnings.catch_warnings():
            # a script's warnings are shown, not errors, as when a user runs it (plt.show()
            # on the test run's Agg backend warns, for one)
            warnings.simplefilter("default")
            runpy.run_path(str(path), run_name="__main__")
    finally:
        plt.close("all")
    # every figure the tutorial's code names ("name.png", e.g. in savefig) was written
    code = "\n".join(line for line in path.read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    saved = re.findall(r"[\"']([\w./-]+\.png)[\"']", code)
    assert saved, f"{path.name} saves no figure"
    missing = [name for name in saved if not (tmp_path / "tutorials_output" / name).is_file()]
    assert not missing, f"{path.name} did not write {missing} into tutorials_output/"
    # and nothing into the folder it was run from
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tutorials_output"]


@pytest.mark.parametrize("path", TUTORIALS, ids=[p.stem for p in TUTORIALS])
def test_tutorial_saves_figures_in_its_output_folder(path):
    # run from the repository root as the README says, the tutorials used to write their
    # PNGs there; every savefig now writes under OUT (--out, default tutorials_output/)
    code = path.read_text()
    assert re.search(r'parser\.add_argument\("--out"', code), f"{path.name} has no --out"
    stray = [m.group(0) for m in re.finditer(r"(?<!OUT / )[\"'][\w./-]+\.png[\"']", code)]
    assert not stray, f"{path.name} names figures outside OUT: {stray}"
