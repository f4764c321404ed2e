"""The ECR relabelling (``inference.relabel``): planted permutations recovered, and a
finite mixture whose chains start in swapped labellings agrees after relabelling."""

from __future__ import annotations

import json
import warnings

import arviz as az
import numpy as np
import pytest
import xarray as xr

from inference.fitting import fit
from inference.relabelling import find_permutations, relabel
from pp_models import finite_mixture
from pp_models.model_info import Relabelling


def _planted(rng, draws, n, K):
    """Allocations near one truth ``z*`` (5% of units moved at random), each draw's
    labels renamed by a known random permutation."""
    truth = rng.integers(0, K, size=n)
    noisy = np.tile(truth, (draws, 1))
    moved = rng.random((draws, n)) < 0.05
    noisy[moved] = rng.integers(0, K, size=moved.sum())
    perms = np.array([rng.permutation(K) for _ in range(draws)])
    # draw s calls label k by name perms[s, k]
    return np.take_along_axis(perms, noisy, axis=1), perms


def _same_up_to_one_relabelling(found, planted):
    # relabelling recovers the permutations up to one global renaming: found[s] =
    # g o planted[s]^{-1} for one g
    composed = np.take_along_axis(found, planted, axis=1)  # found o planted
    return np.all(composed == composed[0])


@pytest.mark.parametrize("K", [2, 4])
def test_ecr_recovers_planted_permutations_of_labels(K):
    rng = np.random.default_rng(11)
    z, perms = _planted(rng, draws=200, n=120, K=K)
    found = find_permutations(z, K, kind="labels")
    assert found.shape == (200, K)
    assert _same_up_to_one_relabelling(found, perms)


@pytest.mark.parametrize("kind", ["memberships", "proportions"])
def test_ecr_recovers_planted_permutations_of_memberships_and_proportions(kind):
    rng = np.random.default_rng(5)
    K, n, draws = 4, 60, 150
    if kind == "memberships":
        truth = (rng.random((n, K)) < 0.4).astype(float)
        noisy = np.where(rng.random((draws, n, K)) < 0.05, 1.0 - truth, truth)
    else:
        truth = rng.dirichlet(np.full(K, 0.3), size=n)
        noisy = np.array([[rng.dirichlet(50 * row + 0.1) for row in truth] for _ in range(draws)])
    perms = np.array([rng.permutation(K) for _ in range(draws)])
    # column k of draw s is the truth's column inverse: label k is renamed perms[s, k]
    renamed = np.empty_like(noisy)
    for s in range(draws):
        renamed[s][:, perms[s]] = noisy[s]
    found = find_permutations(renamed, K, kind=kind)
    assert _same_up_to_one_relabelling(found, perms)


def test_relabel_permutes_every_labelled_variable_and_maps_the_assignments():
    rng = np.random.default_rng(2)
    chains, draws, n, K = 2, 30, 50, 3
    z, perms = _planted(rng, chains * draws, n, K)
    mu_true = np.array([-5.0, 0.0, 5.0])
    mu = np.empty((chains * draws, K))
    for s in range(chains * draws):
        mu[s, perms[s]] = mu_true + 0.01 * rng.normal(size=K)
    posterior = xr.Dataset(
        {
            "z": (("chain", "draw", "obs"), z.reshape(chains, draws, n)),
            "mu": (("chain", "draw", "component"), mu.reshape(chains, draws, K)),
            "alpha": (("chain", "draw"), rng.random((chains, draws))),
        }
    )
    dt = xr.DataTree.from_dict({"posterior": posterior})
    spec = Relabelling("component", allocations="z", label_valued=("z",))
    out = relabel(dt, relabelling=spec)
    mu_out = out["posterior"]["mu"].values.reshape(-1, K)
    # one labelling everywhere: each label's mean is one of the true means, to 0.05
    order = np.argsort(mu_out[0])
    assert np.allclose(mu_out[:, order], mu_true, atol=0.05)
    # the assignments follow their components: z_i names the component of its mean
    z_out = out["posterior"]["z"].values.reshape(-1, n)
    truth_of = np.take_along_axis(np.argsort(perms, axis=1), z, axis=1)  # pre-renaming
    rows = np.arange(len(z_out))[:, None]
    np.testing.assert_allclose(mu_out[rows, z_out], mu_true[truth_of], atol=0.05)
    np.testing.assert_array_equal(out["posterior"]["alpha"], posterior["alpha"])
    assert out.attrs["pp_models_relabelled"] == 1
    # recorded: relabel(dt) again needs no spec, and changes nothing
    again = relabel(out)
    np.testing.assert_array_equal(again["posterior"]["mu"], out["posterior"]["mu"])


def test_relabel_names_what_is_missing():
    dt = xr.DataTree.from_dict(
        {"posterior": xr.Dataset({"mu": (("chain", "draw", "component"), np.zeros((1, 2, 2)))})}
    )
    with pytest.raises(ValueError, match="relabelling"):
        relabel(dt)
    with pytest.raises(TypeError, match="dt"):
        relabel(dt["posterior"].to_dataset())
    with pytest.raises(ValueError, match="kind"):
        Relabelling("component", "z", kind="soft")
    with pytest.raises(ValueError, match="allocations"):
        find_permutations(np.array([[0, 3]]), 2)
    # allocations not recorded: returned as they are, and said so
    out = relabel(dt, relabelling=Relabelling("component", "z"))
    assert out.attrs["pp_models_relabelled"] == 0


def test_finite_mixture_chains_started_in_swapped_labellings_agree_after_relabelling():
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(-5.0, 1.0, 40), rng.normal(5.0, 1.0, 40)])[:, None]
    model = finite_mixture.model(X, n_components=2)
    first = X[:, 0] > 0
    start = [
        {"mu": np.array([[-5.0], [5.0]]), "z": first.astype(np.int64)},
        {"mu": np.array([[5.0], [-5.0]]), "z": (~first).astype(np.int64)},
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few draws
        dt = fit(
            model,
            draws=1000,
            tune=50,
            chains=2,
            cores=1,
            random_seed=4,
            progressbar=False,
            initvals=start,
            postprocess=False,
        )
    assert dt.attrs["pp_models_relabelled"] == 1
    mu = dt["posterior"]["mu"]
    # chains of one distribution: split R-hat - 1 is about (chi2_3 / 3 - 1) / (2 ESS) for
    # 4 half-chains of effective size ESS; at 1000 draws per chain (ESS ~ 500 per half)
    # R-hat > 1.01 needs chi2_3 > 33, probability ~ 1e-6 (at 200 draws it was 1.011 on
    # one seed: too few draws for this threshold)
    rhat = az.rhat(dt, var_names=["mu"])["mu"].values
    assert np.all(rhat <= 1.01), rhat
    means = mu.mean(("chain", "draw")).values.ravel()
    assert np.allclose(np.sort(means), [-5.0, 5.0], atol=0.6)
    # the raw draws were in swapped labellings: undo the relabelling of chain 1 and the
    # R-hat is far from 1 (the relabelling did the work, not the sampler)
    swapped = dt["posterior"].to_dataset()
    swapped["mu"] = xr.concat(
        [mu.isel(chain=[0]), mu.isel(chain=[1], component=[1, 0]).assign_coords(component=[0, 1])],
        "chain",
    )
    assert np.all(az.rhat(swapped, var_names=["mu"])["mu"].values > 1.5)


def test_complete_lays_out_a_finite_mixture_pm_sample_result_as_fit_does():
    import pymc as pm

    from inference import complete, summary
    from inference.convergence import check_convergence

    rng = np.random.default_rng(1)
    X = np.concatenate([rng.normal(-5.0, 1.0, 30), rng.normal(5.0, 1.0, 30)])[:, None]
    model = finite_mixture.model(X, n_components=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # few draws
        raw = pm.sample(
            model=model,
            draws=30,
            tune=30,
            chains=2,
            cores=1,
            random_seed=2,
            progressbar=False,
            compute_convergence_checks=False,
        )
    # before, summary and check found no label-invariant statistic in such a result
    assert "pp_models_label_invariant" not in raw.attrs
    dt = complete(raw, model)
    assert "pp_models_label_invariant" not in raw.attrs  # a copy
    invariant = json.loads(dt.attrs["pp_models_label_invariant"])
    assert {"n_occupied", "weights_sorted", "log_likelihood"} <= set(invariant)
    assert dt.attrs["pp_models_family"] == "finite_mixture"
    assert dt.attrs["pp_models_relabelled"] == 1
    table = summary(dt)
    assert table["label_invariant"].any()
    report = check_convergence(dt, ess_bulk_min=0, ess_tail_min=0, rhat_max=10.0)
    assert {"n_occupied", "log_likelihood"} <= {q.split("[")[0] for q in report.table.index}
    with pytest.raises(TypeError, match="model"):
        complete(raw, "finite_mixture")
