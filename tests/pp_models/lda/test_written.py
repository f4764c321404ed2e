"""What ``ppzoo fit lda`` writes: theta and phi as each chain's mean and sd, read back by
the topics picture as the per-draw values were."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import xarray as xr

from pp_models import lda
from pp_models.model_info import per_chain_moments


def _fit_like(chains=2, draws=30, docs=7, topics=3, words=11, seed=0):
    """A DataTree laid out as ``fit(lda.model(...), var_names=("theta", "phi"))``'s."""
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.ones(topics), size=(chains, draws, docs))
    phi = rng.dirichlet(np.ones(words), size=(chains, draws, topics))
    labels = xr.Dataset(
        {"theta": (("chain", "draw", "doc", "topic"), theta),
         "phi": (("chain", "draw", "topic", "word"), phi)},
        coords={"word": [f"w{j}" for j in range(words)], "topic": np.arange(topics)})
    posterior = xr.Dataset({"theta_concentration": (("chain", "draw"),
                                                    rng.normal(size=(chains, draws)))})
    return xr.DataTree.from_dict({"posterior": posterior, "posterior_labels": labels})


def test_the_cli_writes_per_chain_means_and_the_picture_reads_them(tmp_path):
    full = _fit_like()
    written = lda.FAMILY.cli.written(full)
    assert "posterior_labels" not in written.children
    labels = full["posterior_labels"]
    for name in ("theta", "phi"):
        xr.testing.assert_allclose(written["posterior_mean"][name],
                                   labels[name].mean("draw"))
        xr.testing.assert_allclose(written["posterior_sd"][name], labels[name].std("draw"))
    # the written result no longer grows with the draws
    longer = lda.FAMILY.cli.written(_fit_like(draws=300))
    assert longer["posterior_mean"].nbytes == written["posterior_mean"].nbytes
    for chain in (0, 1):
        xr.testing.assert_allclose(lda.posterior_topics(written, chain=chain),
                                   lda.posterior_topics(full, chain=chain))
        xr.testing.assert_allclose(lda.posterior_topics(written["posterior"], chain=chain),
                                   lda.posterior_topics(full, chain=chain))
    # the picture (topic order by mean share, bars, words) is the same from either
    for dt, name in ((full, "full.png"), (written, "written.png")):
        fig = lda.plot_top_words(dt, tmp_path / name)
        plt.close(fig)
    assert (tmp_path / "full.png").read_bytes() == (tmp_path / "written.png").read_bytes()


def test_per_chain_moments_names_what_is_missing():
    with pytest.raises(ValueError, match=r"no variable\(s\) \['psi'\]"):
        per_chain_moments(_fit_like(), ("phi", "psi"))
    with pytest.raises(ValueError, match=r"'posterior' has no variable\(s\) \['phi'\]"):
        per_chain_moments(xr.DataTree.from_dict({"posterior": xr.Dataset()}), ("phi",))
    kept = per_chain_moments(_fit_like(), ("phi",))
    assert set(kept["posterior_labels"].data_vars) == {"theta"}
    # a result that recorded neither (e.g. an interrupted run) is written as it is
    bare = xr.DataTree.from_dict({"posterior": xr.Dataset()})
    assert lda.FAMILY.cli.written(bare) is bare
