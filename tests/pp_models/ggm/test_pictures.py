"""graph.png: edges by posterior inclusion probability, with a legend and the user's names."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from pp_models import ggm
from pp_models.ggm.outputs import graph_summary


def _fit_like(probabilities, names):
    """A DataTree shaped like a spike-and-slab fit's, with these inclusion probabilities
    (dict pair -> P) and a precision whose partial correlations have both signs."""
    p = len(names)
    omega = np.eye(p) * 2.0
    for k, (i, j) in enumerate(probabilities):
        omega[i, j] = omega[j, i] = 0.3 if k % 2 else -0.3
    draws = np.broadcast_to(omega, (2, 3, p, p)).copy()
    coords = {"node": names, "node_other": names}
    posterior = xr.Dataset({"Omega": (("chain", "draw", "node", "node_other"), draws)},
                           coords=coords)
    dt = graph_summary(xr.DataTree.from_dict({"posterior": posterior}))
    inclusion = np.zeros((p, p))
    for (i, j), prob in probabilities.items():
        inclusion[i, j] = inclusion[j, i] = prob
    dt["graph"] = xr.DataTree(dt["graph"].to_dataset().assign(
        edge_inclusion=(("node", "node_other"), inclusion)))
    return dt


def test_edges_drawn_by_inclusion_probability_with_a_legend():
    # on main: every edge the same width relative to the largest, no legend, no scale
    names = ["praf", "pmek", "plcg", "PIP2", "PIP3"]
    probs = {(0, 1): 0.99, (1, 2): 0.6, (2, 3): 0.3, (3, 4): 0.8, (0, 4): 0.51, (1, 3): 0.1}
    fig = ggm.plot_results(_fit_like(probs, names))
    ax = fig.axes[0]
    assert len(ax.lines) == sum(prob > 0.5 for prob in probs.values())  # 4
    widths = sorted(line.get_linewidth() for line in ax.lines)
    assert widths[0] < 1.0 and widths[-1] > 5.0  # 0.51 thin, 0.99 near the top
    alphas = sorted(line.get_alpha() for line in ax.lines)
    assert alphas[0] < 0.4 and alphas[-1] > 0.9
    legend = ax.get_legend()
    assert legend is not None and legend.get_title().get_text() == "P(edge | data)"
    entries = [t.get_text() for t in legend.get_texts()]
    assert entries[:3] == ["0.5", "0.75", "1"] and "negative partial correlation" in entries
    assert "4 of 10 pairs" in ax.get_title()
    assert {t.get_text() for t in ax.texts} == set(names)
    plt.close(fig)


def test_dataframe_columns_name_the_nodes():
    # on main a DataFrame fitted from Python got x0 ... x4
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["raf", "mek", "erk"])
    model = ggm.model(frame)
    assert list(model.coords["node"]) == ["raf", "mek", "erk"]
    assert list(ggm.model(frame, feature_names=["a", "b", "c"]).coords["node"]) == list("abc")
