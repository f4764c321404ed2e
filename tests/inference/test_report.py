"""``inference.report.write_results``: a picture that cannot be drawn never loses a fit."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference import report


def _dt(c_values):
    c = np.asarray(c_values, dtype=float)
    ds = xr.Dataset(
        {"c": (("chain", "draw"), c),
         "x": (("chain", "draw"), np.random.default_rng(0).normal(size=c.shape))},
        coords={"chain": np.arange(c.shape[0]), "draw": np.arange(c.shape[1])},
    )
    return xr.DataTree.from_dict({"posterior": ds})


def test_a_chain_stuck_up_to_rounding_is_drawn_and_the_fit_kept(tmp_path):
    # The PYDT default fit's case: NUTS stuck, c moving by ~1e-16 within each chain;
    # ArviZ's histogram raised "Too many bins for data range" and the fit was lost. The
    # picture now draws it (its chains apart: the check's worst quantity) on its own bins.
    stuck = np.array([0.13 + 1e-16 * (np.arange(50) % 2), 0.87 + 1e-16 * (np.arange(50) % 2)])
    assert report.plot_trace(_dt(stuck), tmp_path / "t.png") == ["c", "x"]
    paths = report.write_results(_dt(stuck), pd.DataFrame({"a": [1.0]}), tmp_path / "out")
    assert {"posterior", "summary", "trace"} <= set(paths)
    assert all(p.stat().st_size > 0 for p in paths.values())


def test_the_trace_picture_draws_every_checked_quantity_worst_first(tmp_path):
    # before: a statistic constant within each chain (IBP-FA's feature sizes, the worst
    # one) was dropped, and no log density was drawn
    rng = np.random.default_rng(4)
    n = 400
    posterior = xr.Dataset({
        "mixed": (("chain", "draw"), rng.normal(size=(2, n))),
        "apart": (("chain", "draw"), rng.normal(size=(2, n)) + np.array([[0.0], [0.5]])),
        "sizes": (("chain", "draw", "k"), np.stack([np.full((n, 2), 3.0),
                                                   np.full((n, 2), 4.0)])),
        "z": (("chain", "draw"), rng.normal(size=(2, n)) + np.array([[0.0], [9.0]])),
    })
    posterior["log_likelihood"] = (("chain", "draw"), rng.normal(size=(2, n)))
    stats = xr.Dataset({"log_joint": (("chain", "draw"),
                                      np.cumsum(rng.normal(size=(2, n)), axis=1))})
    dt = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})
    dt.attrs["pp_models_label_variables"] = '["z"]'
    rows = report.plot_trace(dt, tmp_path / "trace.png")
    # the log density first, then by R-hat: stuck chains (inf), the shifted one, mixed;
    # raw labels (z) left out
    assert rows == ["log_likelihood", "log_joint (sample_stats)", "sizes[0]", "sizes[1]",
                    "apart", "mixed"]
    assert (tmp_path / "trace.png").stat().st_size > 0


def _small_picture(calls):
    """A family picture that records the chains and mean of ``c`` it was given."""
    import matplotlib.pyplot as plt

    def picture(dt, path):
        posterior = dt["posterior"]
        calls.append((posterior.sizes["chain"],
                      float(posterior["c"].mean()) if "c" in posterior else np.nan))
        fig = plt.figure(figsize=(3, 2), dpi=100)
        fig.savefig(path, format="png", dpi=100)
        plt.close(fig)

    return picture


def _keep_figures(monkeypatch) -> list:
    """The per-chain figures ``report.plot_family`` composes, kept for their axes."""
    figures = []
    compose = report._compose

    def keep(*args):
        figures.append(compose(*args))
        return figures[-1]

    monkeypatch.setattr(report, "_compose", keep)
    return figures


def test_a_family_picture_is_pooled_only_when_the_chains_converged(tmp_path, monkeypatch):
    figures = _keep_figures(monkeypatch)
    rng = np.random.default_rng(5)
    calls = []
    picture = _small_picture(calls)
    mixed = _dt(rng.normal(size=(4, 1000)))
    assert report._check_quietly(mixed).verdict == "converged"
    assert report.plot_family(mixed, tmp_path / "m.png", picture,
                              report=report._check_quietly(mixed)) == []
    assert [n for n, _ in calls] == [4] and not figures
    # every chain stationary, chain 1 five sd away: one panel per chain, chain 1 (the
    # better predictions in the planted pointwise log-likelihood) first, with its weight
    apart = _dt(rng.normal(size=(2, 1000)) + np.array([[0.0], [5.0]]))
    apart["log_likelihood"] = xr.DataTree(xr.Dataset({"y": (
        ("chain", "draw", "obs"),
        np.stack([rng.normal(-2.0, 0.1, (1000, 20)), rng.normal(-1.0, 0.1, (1000, 20))]))}))
    check = report._check_quietly(apart)
    assert check.verdict == "multimodal"
    calls.clear()
    titles = report.plot_family(apart, tmp_path / "a.png", picture, report=check)
    assert titles == ["chain 1: stacking weight 1.000", "chain 0: stacking weight 0.000"]
    assert [n for n, _ in calls] == [1, 1] and calls[0][1] > 4 > 1 > calls[1][1]
    fig = figures[-1]
    assert [ax.get_title() for ax in fig.axes] == titles
    assert "multimodal" in fig.get_suptitle() and "stacking weight" in fig.get_suptitle()
    # without the pointwise log-likelihood (and no model to compute it): chain order
    del apart["log_likelihood"]
    assert report.plot_family(apart, tmp_path / "b.png", picture, report=check) \
        == ["chain 0", "chain 1"]
    assert "no stacking weights" in figures[-1].get_suptitle()
    # a trend within each chain
    drifting = _dt(rng.normal(size=(3, 400)) + np.linspace(0.0, 5.0, 400))
    check = report._check_quietly(drifting)
    assert check.verdict == "not_converged"
    titles = report.plot_family(drifting, tmp_path / "d.png", picture, report=check)
    assert titles == ["chain 0", "chain 1", "chain 2"] and len(figures[-1].axes) == 3
    assert "not_converged" in figures[-1].get_suptitle()


def test_one_chain_s_selection_remakes_the_summaries_of_all_chains(tmp_path, monkeypatch):
    # a summary without a chain dim (the DP mixture's clustering, the GGM's graph) is
    # made again from the chain's own draws, else the chain cannot be drawn alone
    rng = np.random.default_rng(6)
    dt = _dt(rng.normal(size=(2, 300)) + np.array([[0.0], [5.0]]))
    dt["observed_data"] = xr.DataTree(xr.Dataset({"y": ("obs", np.arange(3.0))}))

    def summarise(dt):
        out = dt.copy()
        out["summary"] = xr.DataTree(xr.Dataset({"c_mean": dt["posterior"]["c"].mean()}))
        return out

    dt = summarise(dt)
    one = report.chain_selection(dt, 1, postprocess=summarise)
    assert one["posterior"]["c"].shape == (1, 300)
    assert float(one["summary"]["c_mean"]) == pytest.approx(
        float(dt["posterior"]["c"].isel(chain=1).mean()))
    assert one["observed_data"]["y"].shape == (3,)
    assert report.chain_selection(dt, 1) is None
    # no post-processing to remake it: the pooled picture, with the note above it
    calls = []
    check = report._check_quietly(dt)
    assert check.verdict == "multimodal"
    assert report.plot_family(dt, tmp_path / "p.png", _small_picture(calls), report=check) == []
    assert [n for n, _ in calls] == [2]
    import matplotlib.pyplot as plt

    assert plt.imread(tmp_path / "p.png").shape[:2] == (240, 300)  # the note's band
    assert "separate modes" in report.pooled_picture_note(check)
    assert report.pooled_picture_note(None) == ""


@pytest.mark.xdist_group("fit")  # the demo's fit is made once, on that worker
def test_the_demo_mixture_picture_pools_and_a_planted_drift_is_drawn_per_chain(
        demo_run, tmp_path, monkeypatch):
    from inference.convergence import check_convergence
    from pp_models.registry import get_family

    code, _, out = demo_run
    assert code == 0
    dt = xr.open_datatree(out / "posterior.nc", engine="h5netcdf").load()
    check = check_convergence(dt)
    assert check.verdict == "converged"
    calls = []
    assert report.plot_family(dt, tmp_path / "pooled.png", _small_picture(calls),
                              report=check) == []
    assert [n for n, _ in calls] == [4]
    # two of its chains, their sorted weights drifting by 0.3 over the run (their sd is
    # ~0.03): the family's own picture of each chain, one panel each
    planted = dt.isel(chain=[0, 1])
    planted["posterior"]["weights_sorted"] = (
        planted["posterior"]["weights_sorted"]
        + xr.DataArray(np.linspace(0.0, 0.3, planted["posterior"].sizes["draw"]), dims="draw"))
    check = check_convergence(planted)
    assert check.verdict == "not_converged"
    figures = _keep_figures(monkeypatch)
    titles = report.plot_family(planted, tmp_path / "apart.png",
                                get_family("finite_mixture").plot, report=check)
    assert titles == ["chain 0", "chain 1"]
    assert [ax.get_title() for ax in figures[-1].axes] == titles
    assert "not_converged" in figures[-1].get_suptitle()


def test_a_failing_family_picture_warns_and_keeps_the_result(tmp_path, monkeypatch):
    def broken(dt, path):
        raise RuntimeError("cannot draw this")

    monkeypatch.setattr(report, "_family_plot", lambda dt: ("broken", broken))
    dt = _dt(np.random.default_rng(2).normal(size=(2, 30)))
    with pytest.warns(UserWarning, match="could not draw broken.png.*cannot draw this"):
        paths = report.write_results(dt, pd.DataFrame({"a": [1.0]}), tmp_path / "out")
    assert "broken" not in paths
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["posterior.nc",
                                                                    "summary.csv", "trace.png"]
    assert xr.open_datatree(paths["posterior"], engine="h5netcdf")["posterior"]["c"].shape \
        == (2, 30)


def test_large_variables_are_written_compressed_small_ones_contiguous(tmp_path):
    import h5py

    dt = _dt(np.random.default_rng(2).normal(size=(2, 50)))
    # 4 MB of mostly zeros (as IBP-FA's unused slots are written): gzipped to a few kB
    sparse = np.zeros((2, 50, 40, 125))
    sparse[..., :2, :] = np.random.default_rng(3).normal(size=(2, 50, 2, 125))
    dt["posterior_labels"] = xr.DataTree(xr.Dataset(
        {"X": (("chain", "draw", "feature", "obs"), sparse)}))
    paths = report.write_results(dt, pd.DataFrame({"a": [1.0]}), tmp_path / "out")
    assert paths["posterior"].stat().st_size < 0.5e6  # 4 MB uncompressed (on main)
    with h5py.File(paths["posterior"]) as f:
        assert f["posterior_labels/X"].compression == "gzip"
        assert f["posterior/c"].compression is None
    back = xr.open_datatree(paths["posterior"], engine="h5netcdf")
    np.testing.assert_array_equal(back["posterior_labels"]["X"].values, sparse)


def test_the_finite_mixture_picture_colours_points_by_their_component(tmp_path):
    # two groups; in chain 0's second half every point is in its group's component
    # except point 4, in component 0 in 3 of 4 draws; chain 1 uses the other labelling
    # and the first half of chain 0 is noise, neither of which the picture may read
    from pp_models.finite_mixture_outputs import component_assignments

    rng = np.random.default_rng(0)
    X = np.vstack([rng.normal(-3, 0.3, (5, 2)), rng.normal(3, 0.3, (5, 2))])
    truth = np.repeat([0, 1], 5)
    z = np.empty((2, 8, 10), dtype=np.int64)
    z[0, :4] = rng.integers(0, 2, (4, 10))
    z[0, 4:] = truth
    z[0, 5, 4] = 1
    z[1] = 1 - truth
    mu = np.zeros((2, 8, 2, 2))
    mu[0, 4:, 0], mu[0, 4:, 1] = -3.0, 3.0
    mu[0, 4:, 1, 0] = [2.0, 3.0, 4.0, 3.0]  # mean 3
    mu[1] = 99.0
    coords = {"chain": [0, 1], "draw": np.arange(8), "component": [0, 1],
              "feature": ["a", "b"], "obs": np.arange(10)}
    dt = xr.DataTree.from_dict({
        "posterior": xr.Dataset({"weights_sorted": (("chain", "draw", "component"),
                                                    np.full((2, 8, 2), 0.5))},
                                coords=coords),
        "posterior_labels": xr.Dataset(
            {"z": (("chain", "draw", "obs"), z),
             "mu": (("chain", "draw", "component", "feature"), mu)}, coords=coords),
        "observed_data": xr.Dataset({"X": (("obs", "feature"), X)},
                                    coords={"obs": np.arange(10), "feature": ["a", "b"]}),
    })
    dt.attrs["pp_models_family"] = "finite_mixture"
    component, share, means = component_assignments(dt)
    np.testing.assert_array_equal(component, truth)
    np.testing.assert_array_equal(share, np.where(np.arange(10) == 4, 0.75, 1.0))
    np.testing.assert_array_equal(means, [[-3.0, -3.0], [3.0, 3.0]])
    paths = report.write_results(dt, pd.DataFrame({"a": [1.0]}), tmp_path / "out")
    assert paths["mixture"].name == "mixture.png" and paths["mixture"].stat().st_size > 0


def test_a_multimodal_fit_is_saved_with_its_stacking_weights_for_the_check(tmp_path, capsys):
    # theta near -3 in chains 0-1 and near 3 in chains 2-3; 30 points around -3 and 10
    # around 3, so the modes' stacking shares are 3/4 and 1/4. No log_likelihood group:
    # the weights come from the model's pointwise log-likelihood, once, at writing.
    import pymc as pm

    from inference.cli import main

    rng = np.random.default_rng(3)
    y = np.concatenate([-3 + 0.3 * rng.normal(size=30), 3 + 0.3 * rng.normal(size=10)])
    with pm.Model() as model:
        theta = pm.Normal("theta", 0.0, 10.0)
        pm.Normal("y", theta, 1.0, observed=y)
    draws = np.concatenate([rng.normal(-3, 0.05, size=(2, 500)),
                            rng.normal(3, 0.05, size=(2, 500))])
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(
        {"theta": (("chain", "draw"), draws)},
        coords={"chain": np.arange(4), "draw": np.arange(500)})})
    paths = report.write_results(dt, pd.DataFrame({"a": [1.0]}), tmp_path / "out",
                                 model=model)
    assert "pp_models_chain_stacking_weights" not in dt.attrs  # the caller's dt unchanged
    saved = xr.open_datatree(paths["posterior"], engine="h5netcdf")
    weights = np.asarray(saved.attrs["pp_models_chain_stacking_weights"])
    assert weights[:2].sum() == pytest.approx(0.75, abs=2e-3)
    assert main(["check", str(tmp_path / "out")]) == 3
    out = capsys.readouterr().out
    printed = [float(line.split("weight ")[1].split(",")[0])
               for line in out.splitlines() if line.strip().startswith("chain ")
               and "weight" in line]
    np.testing.assert_allclose(printed, weights, atol=5e-4)
    assert "computed by ppzoo fit" in out and "log_likelihood=True" not in out
