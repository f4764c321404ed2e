"""The HMM's states relabelled by ``fit`` (``inference.relabel`` with the model's
``Relabelling``): planted permutations of paths, initial distribution, both axes of the
transition matrix and the emission parameters recovered; chains started in swapped
labellings agree after relabelling."""

from __future__ import annotations

import warnings

import arviz as az
import numpy as np
import xarray as xr

from inference import fit
from inference.relabelling import relabel
from pp_models import hmm
from pp_models.model_info import get_info


def test_planted_state_permutations_are_undone_on_every_labelled_variable():
    rng = np.random.default_rng(8)
    chains, draws, T, K = 2, 40, 60, 3
    truth = np.repeat(np.arange(K), T // K)  # a path through the states in blocks
    pi0 = np.array([0.6, 0.3, 0.1])
    P = np.array([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.3, 0.1, 0.6]])
    mu = np.array([-4.0, 0.0, 4.0])
    z = np.tile(truth, (chains * draws, 1))
    moved = rng.random(z.shape) < 0.05
    z[moved] = rng.integers(0, K, moved.sum())
    perms = np.array([rng.permutation(K) for _ in range(chains * draws)])
    # draw s calls state k by name perms[s, k]: P'[perms[i], perms[j]] = P[i, j]
    z_named = np.take_along_axis(perms, z, axis=1)
    pi0_named, mu_named = np.empty((chains * draws, K)), np.empty((chains * draws, K))
    P_named = np.empty((chains * draws, K, K))
    for s, p in enumerate(perms):
        pi0_named[s, p] = pi0
        mu_named[s, p] = mu
        P_named[s][np.ix_(p, p)] = P

    def shaped(a):
        return a.reshape(chains, draws, *a.shape[1:])

    posterior = xr.Dataset(
        {
            "z": (("chain", "draw", "time"), shaped(z_named)),
            "pi0": (("chain", "draw", "state"), shaped(pi0_named)),
            "P": (("chain", "draw", "state", "state_to"), shaped(P_named)),
            "mu": (("chain", "draw", "state"), shaped(mu_named)),
        }
    )
    model = hmm.model(rng.normal(size=T), K)
    out = relabel(xr.DataTree.from_dict({"posterior": posterior}), model)
    assert out.attrs["pp_models_relabelled"] == 1
    post = out["posterior"]
    # one naming of the true states in every draw: order[k] is true state k's new label
    # (the true means increase)
    order = np.argsort(post["mu"].values[0, 0])
    np.testing.assert_array_equal(
        post["mu"].values.reshape(-1, K)[:, order], np.broadcast_to(mu, (chains * draws, K))
    )
    np.testing.assert_array_equal(
        post["pi0"].values.reshape(-1, K)[:, order], np.broadcast_to(pi0, (chains * draws, K))
    )
    P_out = post["P"].values.reshape(-1, K, K)[:, order][:, :, order]
    np.testing.assert_array_equal(P_out, np.broadcast_to(P, (chains * draws, K, K)))
    np.testing.assert_array_equal(post["z"].values.reshape(-1, T), order[z])


def test_chains_started_in_swapped_state_labellings_agree_after_relabelling():
    rng = np.random.default_rng(0)
    y = np.r_[np.zeros(30), np.full(30, 5.0), np.zeros(30)] + rng.normal(0, 0.7, 90)
    model = hmm.model(y, 2, stickiness=2.0)
    assert get_info(model).relabelling.also_dims == ("state_to",)
    high = (y > 2.5).astype(np.int64)
    start = [{"mu": np.array([0.0, 5.0]), "z": high}, {"mu": np.array([5.0, 0.0]), "z": 1 - high}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few tuning draws
        dt = fit(
            model,
            draws=1000,
            tune=50,
            chains=2,
            cores=1,
            random_seed=4,
            progressbar=False,
            initvals=start,
        )
    assert dt.attrs["pp_models_relabelled"] == 1
    mu = dt["posterior"]["mu"]
    # split R-hat of one distribution's chains exceeds 1.01 at 1000 draws with
    # probability ~1e-6 (tests/inference/test_relabel.py's finite-mixture twin)
    rhat = az.rhat(dt, var_names=["mu"])["mu"].values
    assert np.all(rhat <= 1.01), rhat
    np.testing.assert_allclose(np.sort(mu.mean(("chain", "draw")).values), [0.0, 5.0], atol=0.5)
    # the sampler stayed in its start: chain 1 un-relabelled is far from chain 0
    raw = dt["posterior"].to_dataset()
    raw["mu"] = xr.concat(
        [mu.isel(chain=[0]), mu.isel(chain=[1], state=[1, 0]).assign_coords(state=[0, 1])], "chain"
    )
    assert np.all(az.rhat(raw, var_names=["mu"])["mu"].values > 1.5)
