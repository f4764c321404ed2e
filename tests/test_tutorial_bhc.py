"""The BHC tutorial runs top to bottom (as CI's users would run it)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bhc_tutorial_runs():
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tutorials" / "bayesian_hierarchical_clustering.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Corollary 3.1 lower bound" in proc.stdout
