"""check_convergence and summary on synthetic traces with known behaviour."""

import json

import numpy as np
import pytest
import xarray as xr

from inference import summary
from inference.convergence import check_convergence


def _tree(variables, labels=(), invariant=()):
    posterior = xr.Dataset(
        {k: (("chain", "draw", *[f"{k}_dim{i}" for i in range(v.ndim - 2)]), v)
         for k, v in variables.items()}
    )
    dt = xr.DataTree()
    dt["posterior"] = xr.DataTree(posterior)
    dt.attrs["pp_models_label_variables"] = json.dumps(list(labels))
    dt.attrs["pp_models_label_invariant"] = json.dumps(list(invariant))
    return dt


RNG = np.random.default_rng(0)


def test_iid_chains_pass():
    dt = _tree({"a": RNG.normal(size=(4, 1000)), "b": RNG.normal(size=(4, 1000, 2))})
    report = check_convergence(dt)
    assert report.passed and bool(report)
    assert list(report.table.index) == ["a", "b[0]", "b[1]"]
    assert "PASSED" in str(report)


def test_shifted_chain_fails_rhat():
    a = RNG.normal(size=(4, 1000))
    a[0] += 1.0
    report = check_convergence(_tree({"a": a}))
    assert not report.passed
    assert "R-hat" in report.failures().loc["a", "reason"]


def test_sticky_chain_fails_ess():
    # AR(1) with phi = 0.995: ESS far below 400 in 1000 draws.
    a = np.zeros((4, 1000))
    for t in range(1, 1000):
        a[:, t] = 0.995 * a[:, t - 1] + RNG.normal(size=4) * 0.1
    report = check_convergence(_tree({"a": a}))
    assert "ESS" in report.failures().loc["a", "reason"]


def test_constant_statistic_passes_and_stuck_chains_fail():
    const = np.full((4, 100), 3)
    stuck = np.repeat(np.array([[2], [3], [3], [3]]), 100, axis=1)
    report = check_convergence(_tree({"k": const, "j": stuck}), ess_bulk_min=0,
                               ess_tail_min=0)
    assert report.table.loc["k", "ok"]
    assert not report.table.loc["j", "ok"]


def test_label_variables_skipped_by_default():
    labelled = RNG.normal(size=(4, 500))
    labelled[0] += 5  # would fail: chains in different label permutations
    dt = _tree({"mu": labelled, "ll": RNG.normal(size=(4, 500))}, labels=["mu"],
               invariant=["ll"])
    assert check_convergence(dt, ess_bulk_min=100, ess_tail_min=100).passed
    table = summary(dt)
    assert list(table.index) == ["ll"] and table.loc["ll", "label_invariant"]
    with_labels = summary(dt, include_labels=True)
    assert np.isnan(with_labels.loc["mu", "r_hat"]) and np.isfinite(with_labels.loc["mu", "mean"])


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"rhat_max": float("nan")}, ValueError, "rhat_max must be a finite number >= 1"),
    ({"rhat_max": 0.5}, ValueError, "rhat_max must be a finite number >= 1"),
    ({"ess_bulk_min": -5}, ValueError, "ess_bulk_min must be a finite number >= 0"),
    ({"ess_tail_min": float("inf")}, ValueError, "ess_tail_min must be a finite number >= 0"),
    ({"rhat_max": "1.01"}, TypeError, "rhat_max must be a number"),
])
def test_bad_thresholds(kwargs, error, match):
    # before: NaN or rhat_max < 1 failed every quantity without saying why, a negative
    # ESS passed every one, a string gave Python's "'<=' not supported"
    with pytest.raises(error, match=match):
        check_convergence(_tree({"a": RNG.normal(size=(4, 100))}), **kwargs)


def test_errors():
    with pytest.raises(ValueError, match="at least 2 chains"):
        check_convergence(_tree({"a": RNG.normal(size=(1, 100))}))
    with pytest.raises(ValueError, match="not in the posterior: nope"):
        check_convergence(_tree({"a": RNG.normal(size=(2, 100))}), var_names=["nope"])
    with pytest.raises(TypeError, match="DataTree"):
        check_convergence({"a": 1})
    with pytest.raises(ValueError, match="not in the posterior: nope"):
        summary(_tree({"a": RNG.normal(size=(2, 100))}), var_names="nope")


def test_summary_of_a_constant_statistic_has_nan_r_hat_without_warnings():
    # n_occupied that never changes: R-hat and ESS are 0/0. ArviZ computes them with
    # numpy floating-point warnings, which the README's first example printed; the
    # suite's filterwarnings = error turns any of them into a failure here.
    dt = _tree({"n_occupied": np.full((2, 200), 3.0), "w": RNG.normal(size=(2, 200))},
               invariant=["n_occupied"])
    table = summary(dt)
    assert np.isnan(table.loc["n_occupied", "r_hat"])
    assert table.loc["n_occupied", "mean"] == 3.0 and table.loc["n_occupied", "sd"] == 0.0
    assert np.isfinite(table.loc["w", "r_hat"])
    assert check_convergence(dt, ess_bulk_min=0, ess_tail_min=0).table.loc["n_occupied", "ok"]
