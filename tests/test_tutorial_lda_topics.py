"""The LDA tutorial runs top to bottom as a script (< 2 minutes)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_lda_tutorial_runs():
    env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "tutorials" / "lda_topics.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    out = result.stdout
    assert "topic 19:" in out and "LDA K=20  perplexity" in out
    # the collapsed sampler recovers every bar (see the bars test for the bound)
    l1_line = next(line for line in out.splitlines() if line.startswith("L1 error per topic"))
    l1 = [float(v) for v in l1_line.split("[")[1].rstrip("]").split()]
    assert max(l1) < 0.1
