"""Every tutorial runs top to bottom (they are jupytext percent-format scripts).

The default test run passes each tutorial the arguments in ``FAST_ARGS`` (its ``--fast``
flag shrinks draws and data so it takes about a minute); run a tutorial without them for
the full teaching run. A tutorial that is not in the table fails ``test_tutorial_runs``:
add one row when you add a tutorial.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TUTORIALS = sorted((Path(__file__).parents[1] / "tutorials").glob("*.py"))

# tutorial stem -> command-line arguments for the test run (one row per tutorial)
FAST_ARGS = {
    "bayesian_hierarchical_clustering": ["--fast"],
    "dirichlet_process_mixture": ["--fast"],
    "lda_topics": ["--fast"],
    "gaussian_graphical_models": ["--fast"],
    "ibp_factor_analysis": ["--fast"],
    "mixtures_of_trees": ["--fast"],
    "pitman_yor_diffusion_tree": ["--fast"],
    "testing_your_sampler": ["--fast"],
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
def test_tutorial_runs(path, tmp_path):
    if path.stem not in FAST_ARGS:
        pytest.fail(
            f"tutorials/{path.name} has no row in FAST_ARGS (tests/test_tutorials.py): give it "
            "a --fast flag read with argparse's parse_known_args and add the row"
        )
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(Path(__file__).parents[1])}
    # "-f <file>" is what Jupyter passes to a kernel: the tutorial must ignore unknown
    # arguments (parse_known_args), or it would not run as a notebook
    jupyter_args = ["-f", str(tmp_path / "kernel.json")]
    proc = subprocess.run(
        [sys.executable, str(path), *FAST_ARGS[path.stem], *jupyter_args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # every figure the tutorial's code names ("name.png", e.g. in savefig) was written
    code = "\n".join(line for line in path.read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    saved = re.findall(r"[\"']([\w./-]+\.png)[\"']", code)
    assert saved, f"{path.name} saves no figure"
    missing = [name for name in saved if not (tmp_path / name).is_file()]
    assert not missing, f"{path.name} did not write {missing}"
