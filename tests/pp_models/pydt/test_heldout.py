"""The PYDT's acceptance test on the four-cluster synthetic of Knowles (2012) §4.7.1
(``benchmarks/bench_pydt_heldout.py``): the PYDT's held-out log predictive against the
package-default DP Gaussian mixture, and the learned hyperparameters staying proper.

Held-out, measured (5 data seeds, 100 training / 200 test points each, 4
chains x (500 tuning + 1000 kept) iterations, the predictive with the new point's
position integrated out by quadrature and averaged over 200 draws; 3-8 min on the shared
machine): PYDT - DPM per test point -0.009 +- 0.033 (mean of the per-seed paired
differences, SE over seeds; per seed -0.009 -0.117 +0.063 +0.053 -0.038); over 20
seeds (0-19) -0.004 +- 0.010, 9 of 20 positive. A tie, not a win: the data are a
Gaussian mixture, the DPM's own model class (both are ~0.15 nats below the generating
density, -2.07 to -2.19 per point on seeds 0-4). The requirement "beats" is not met, so
that test is a strict xfail; on data from the PYDT prior (D = 5, 100 training points)
the PYDT wins by +2.39 +- 0.68 nats per point over 5 seeds (docs/families/pydt.md).
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

SEEDS = ["0", "1", "2", "3", "4"]
FIT = ["--draws", "1000", "--tune", "500", "--chains", "4", "--pred-draws", "200"]


def _bench():
    path = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_pydt_heldout.py"
    spec = importlib.util.spec_from_file_location("bench_pydt_heldout", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="acceptance not met: measured PYDT - DPM = -0.009 +- 0.033 nats per "
    "held-out point on the four-cluster synthetic (5 data seeds, SE over seeds; per seed "
    "-0.009 -0.117 +0.063 +0.053 -0.038; -0.004 +- 0.010 over 20 seeds): a tie with "
    "the DP Gaussian mixture, whose "
    "model class generated the data; strict, so a change that makes the PYDT win turns "
    "this red until the marker is removed",
)
def test_pydt_beats_dp_mixture_on_four_clusters():
    results = _bench().main(["--data", "four_clusters", "--models", "pydt", "dpm",
                             "--seeds", *SEEDS, *FIT])
    diff = np.array([(results[("four_clusters", int(s))]["pydt"]
                      - results[("four_clusters", int(s))]["dpm"]).mean() for s in SEEDS])
    se = diff.std(ddof=1) / math.sqrt(diff.size)
    assert diff.mean() > 2 * se, (diff.mean(), se, diff)


@pytest.mark.slow
def test_learned_hyperparameters_stay_proper_on_four_clusters():
    """Knowles' C++ sampler, learning theta, alpha and c, drifts to alpha -> 1, c -> 0 (a
    few huge multifurcations); with the thesis's hyperpriors ours must not. The bounds
    (alpha < 0.5, c > 0.5, more than 20 branch points for 100 points) are far from that
    drift and are applied to the posterior means widened by 3 MCSE. Measured
    on seed 0 (4 chains x 1000 draws, 15 s): alpha 0.218 (MCSE 0.034), c 1.78 (0.064),
    53.8 branch points (2.5); over data seeds 0-19 alpha's posterior mean is 0.17-0.28,
    c's 1.6-1.8."""
    import arviz as az

    from inference import fit
    from pp_models import pydt

    X, _ = _bench().four_clusters(0)
    dt = fit(pydt.model(X), draws=1000, tune=500, chains=4, cores=1, random_seed=0,
             progressbar=False)
    post = dt["posterior"]
    summary = {}
    for name in ("alpha", "c", "n_internal"):
        draws = np.asarray(post[name].values, dtype=float)
        summary[name] = (draws.mean(), float(az.mcse(post[name].astype(float)).values))
    print(summary)
    alpha, c, branch = summary["alpha"], summary["c"], summary["n_internal"]
    assert alpha[0] + 3 * alpha[1] < 0.5, summary
    assert c[0] - 3 * c[1] > 0.5, summary
    assert branch[0] - 3 * branch[1] > 20, summary
