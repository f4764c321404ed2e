"""The tempered run's diagnostics and picture on an index process whose swaps are known:
a 4-temperature ladder where pairs 0 and 2 always swap and pair 1 never does (a wall),
next to one where every pair swaps (round trips at the rate 1/2)."""

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from inference import report
from inference.tempering.driver import (
    describe_tempering,
    swaps_accepted,
    tempering_group,
)
from inference.tempering.plots import plot_tempering, tempering_figure
from inference.tempering.swaps import RoundTrips, deo_swap

LADDER = np.array([0.0, 0.2, 0.5, 1.0])
DRAWS = 40


def chain_stats(wall: bool):
    """Stats of one chain: all swaps accepted, except pair 1 never when ``wall``."""
    rng = np.random.default_rng(0)
    n = LADDER.size
    trips = RoundTrips(n)
    # swap log-acceptance (b_hi - b_lo)(l_lo - l_hi): -inf below pair 1 blocks it only
    logliks = np.array([0.0, -np.inf, 0.0, 0.0]) if wall else np.zeros(n)
    out = {k: [] for k in ("beta", "ll", "prob", "index", "trips")}
    for t in range(DRAWS):
        perm, probs = deo_swap(LADDER, logliks, t % 2, rng)
        trips.apply(perm)
        out["beta"].append(LADDER)
        out["ll"].append(-10.0 * (1.0 - LADDER) - (100.0 * (LADDER > 0.3) if wall else 0))
        out["prob"].append(probs)
        out["index"].append(trips.index.copy())
        out["trips"].append(trips.count)
    return {k: np.array(v) for k, v in out.items()}


def tempered_tree(wall: bool, chains: int = 2) -> xr.DataTree:
    runs = [chain_stats(wall) for _ in range(chains)]
    stack = {k: np.stack([r[k] for r in runs]) for k in runs[0]}
    stats = xr.Dataset({
        "tempering_beta": (("chain", "draw", "t"), stack["beta"]),
        "tempering_log_likelihood": (("chain", "draw", "t"), stack["ll"]),
        "tempering_swap_prob": (("chain", "draw", "p"), stack["prob"]),
        "tempering_index": (("chain", "draw", "t"), stack["index"]),
        "tempering_round_trips": (("chain", "draw"), stack["trips"]),
    })
    posterior = xr.Dataset({"a": (("chain", "draw"),
                                  np.random.default_rng(1).normal(size=(chains, DRAWS)))})
    dt = xr.DataTree.from_dict({"posterior": posterior, "sample_stats": stats})
    return tempering_group(dt, tune=0)


@pytest.fixture(scope="module")
def open_ladder():
    return tempered_tree(wall=False)


@pytest.fixture(scope="module")
def walled_ladder():
    return tempered_tree(wall=True)


def test_swaps_accepted_counts_the_swaps_made(open_ladder, walled_ladder):
    g = open_ladder["tempering"]
    # every tried pair swaps; the first draw has no previous one: 20 tries of pairs 0, 2
    # (even draws) minus the first, 20 of pair 1 (odd draws)
    np.testing.assert_array_equal(g["swaps_accepted"].values, [[19, 20, 19]] * 2)
    # all swaps made: 40 / 2 - (4 - 1) round trips (test_swaps), none by the first draw
    assert g["round_trips"].values.tolist() == [17, 17]
    walled = walled_ladder["tempering"]
    np.testing.assert_array_equal(walled["swaps_accepted"].values, [[19, 0, 19]] * 2)
    assert walled["round_trips"].values.tolist() == [0, 0]
    # straight from the index process: a pair whose states came from the same side
    index = np.array([[0, 1], [1, 0], [1, 0], [0, 1]])
    probs = np.array([[np.nan], [1.0], [1.0], [1.0]])
    assert swaps_accepted(index, probs).tolist() == [2]


def test_describe_tempering_names_the_pair_no_state_crossed(open_ladder, walled_ladder):
    lines = describe_tempering(walled_ladder)
    assert lines[0].startswith("tempering: 4 temperatures") and "round trips per chain 0, 0" \
        in lines[0]
    assert "no state crossed chain 0: beta 0.2 to 0.5" in lines[1]
    assert "median log-likelihood -8 to -105" in lines[1]
    open_lines = describe_tempering(open_ladder)
    assert len(open_lines) == 1 and "Lambda 0.0" in open_lines[0]
    assert describe_tempering(xr.DataTree()) == []


def test_tempering_figure_draws_the_group(walled_ladder):
    import matplotlib.pyplot as plt

    fig = tempering_figure(walled_ladder)
    try:
        acceptance, barrier, loglik, index = fig.axes
        g = walled_ladder["tempering"]
        # chain 0's acceptance probabilities and swaps made / tried along the ladder
        np.testing.assert_allclose(acceptance.lines[0].get_ydata(),
                                   g["swap_acceptance"].values[0])
        np.testing.assert_allclose(acceptance.lines[1].get_ydata(), [19 / 20, 0, 19 / 20])
        np.testing.assert_allclose(barrier.lines[0].get_ydata(),
                                   g["cumulative_barrier"].values[0])
        np.testing.assert_allclose(loglik.lines[0].get_ydata(),
                                   g["log_likelihood"].values[0].mean(axis=0))
        # the index panel follows states 0, 1, 2, 3 of chain 0: none passes the wall
        positions = np.array([line.get_ydata() for line in index.lines])
        assert positions.shape == (4, DRAWS)
        assert set(np.unique(positions[0])) <= {0, 1} and set(np.unique(positions[3])) <= {2, 3}
        assert index.get_title() == "round trips per chain: 0, 0"
    finally:
        plt.close(fig)


def test_write_results_draws_tempering_png(walled_ladder, tmp_path):
    paths = report.write_results(walled_ladder, pd.DataFrame({"a": [1.0]}), tmp_path / "t")
    png = paths["tempering"]
    assert png.name == "tempering.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plain = xr.DataTree.from_dict({"posterior": walled_ladder["posterior"].to_dataset()})
    assert "tempering" not in report.write_results(plain, pd.DataFrame({"a": [1.0]}),
                                                   tmp_path / "p")
    with pytest.raises(ValueError, match="no 'tempering' group"):
        plot_tempering(plain, tmp_path / "x.png")


def test_tempering_png_is_a_result_file_no_family_picture_takes():
    from pp_models.registry import list_family_summaries

    family_pictures = {f"{s.plot_name}.png" for s in list_family_summaries() if s.plot_name}
    assert report.TEMPERING_PLOT not in family_pictures | set(report.RESULT_FILES)
    # a folder holding a previous tempered result may be replaced by the next run
    assert report.TEMPERING_PLOT in report._result_names()
