"""What ``ppzoo fit ibp_fa`` writes: the prior draws in unused slots zeroed, so they
compress away, and every output read off the result unchanged."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import xarray as xr

from inference.report import write_results
from pp_models import ibp_fa
from pp_models.ibp_fa.outputs import plot_results, reconstruction, zero_unused_slots


def _nsfa_like(chains=2, draws=40, D=4, K=40, N=150, active=2, seed=0):
    """A DataTree laid out as an NSFA fit's: ``K`` slots of which ``active`` are used."""
    rng = np.random.default_rng(seed)
    Z = np.zeros((chains, draws, D, K), dtype=np.int8)
    Z[..., :active] = rng.random((chains, draws, D, active)) < 0.7
    labels = xr.Dataset(
        {"Z": (("chain", "draw", "dim", "feature"), Z),
         "V": (("chain", "draw", "dim", "feature"), rng.normal(size=Z.shape)),
         "X": (("chain", "draw", "feature", "obs"), rng.normal(size=(chains, draws, K, N))),
         "lambda": (("chain", "draw", "feature"), rng.gamma(1.0, size=(chains, draws, K)))},
        coords={"dim": ["a", "b", "c", "d"][:D], "feature": np.arange(K)})
    posterior = xr.Dataset({"n_features": (("chain", "draw"),
                                           (Z != 0).any(axis=2).sum(axis=-1))})
    return xr.DataTree.from_dict({"posterior": posterior, "posterior_labels": labels})


def test_unused_slots_are_zeroed_and_outputs_unchanged(tmp_path):
    full = _nsfa_like()
    written = ibp_fa.FAMILY.cli.written(full)
    labels, kept = full["posterior_labels"], written["posterior_labels"]
    on = labels["Z"].values != 0
    active = on.any(axis=2)  # (chain, draw, feature)
    X, Xw = labels["X"].values, kept["X"].values
    assert np.all(Xw[~active] == 0) and np.array_equal(Xw[active], X[active])
    V, Vw = labels["V"].values, kept["V"].values
    assert np.all(Vw[~on] == 0) and np.array_equal(Vw[on], V[on])
    assert kept["Z"].dtype == np.int8 and np.array_equal(kept["Z"].values, labels["Z"].values)
    xr.testing.assert_identical(kept["lambda"], labels["lambda"])
    xr.testing.assert_allclose(reconstruction(written), reconstruction(full))
    for dt, name in ((full, "full.png"), (written, "written.png")):
        plt.close(plot_results(dt, tmp_path / name))
    assert (tmp_path / "full.png").read_bytes() == (tmp_path / "written.png").read_bytes()
    # written: X (40 slots x 150 samples per draw, 3.8 MB) shrinks to its used slots
    paths = write_results(written, pd.DataFrame({"a": [1.0]}), tmp_path / "out")
    assert paths["posterior"].stat().st_size < 0.5e6
    # a finite-approximation result (no Z) is left alone
    finite = xr.DataTree.from_dict({"posterior": xr.Dataset(),
                                    "posterior_labels": xr.Dataset({"G": labels["V"]})})
    assert zero_unused_slots(finite) is finite
