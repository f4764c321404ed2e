"""Issue #13's acceptance: the PYDT's held-out log predictive beats a DP Gaussian mixture
on the four-cluster synthetic of Knowles (2012) §4.7.1 (``bench_pydt_heldout.py``).

FAILS as measured on 2026-11-26 (seed 0, 100 training / 200 test points, 100 draws after
60 tuning, 2 chains), after the fix of the tree step's move count (pydt.model asks for
2n - 2 moves per sweep): PYDT -2.331 +- 0.070, DPM -2.244 +- 0.072 per test point;
paired PYDT - DPM -0.087 +- 0.033 (with the state-dependent move count: PYDT -2.492,
paired -0.249 +- 0.043). The DDT scores -2.291 +- 0.061."""

import importlib.util
import math
from pathlib import Path

import pytest


def _bench():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_pydt_heldout.py"
    spec = importlib.util.spec_from_file_location("bench_pydt_heldout", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="issue #13 acceptance not met: measured PYDT - DPM = -0.09 +- 0.03 nats per "
    "held-out point on the four-cluster synthetic (seed 0); strict, so a fix that makes "
    "it pass turns this red until the marker is removed",
)
def test_pydt_beats_dp_mixture_on_four_clusters():
    results = _bench().main(["--data", "four_clusters", "--models", "pydt", "dpm",
                             "--draws", "100", "--tune", "60"])
    per_model = results[("four_clusters", 0)]
    diff = per_model["pydt"] - per_model["dpm"]
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > -2 * se, (diff.mean(), se)
