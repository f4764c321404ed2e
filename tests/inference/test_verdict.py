"""The convergence verdict on planted chains: separate modes, drift, mixing, and a
sampler with a planted bug.

Chains come from a random-walk Metropolis sampler written here (vectorised over chains)
or are independent draws; every threshold-based assertion is sized for a negligible
false-failure rate (said at each).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from inference.convergence import EXIT_CODES, check_convergence, split_rhat


def _tree(**variables) -> xr.DataTree:
    ds = xr.Dataset(
        {k: (("chain", "draw"), np.asarray(v, dtype=float)) for k, v in variables.items()}
    )
    return xr.DataTree.from_dict({"posterior": ds})


def _bimodal_logp(x):
    """log of N(-15, 1) + N(15, 1), up to a constant: the barrier at 0 is 112 nats deep."""
    return np.logaddexp(-0.5 * (x + 15.0) ** 2, -0.5 * (x - 15.0) ** 2)


def _normal_logp(x):
    return -0.5 * x**2


def _metropolis(logp, starts, n_draws, rng, *, step=2.4, tune=500, flip_sign=False):
    """Random-walk Metropolis chains from ``starts``; ``flip_sign`` is the planted bug:
    the acceptance ratio taken the wrong way round (it targets 1 / p, improper here)."""
    x = np.asarray(starts, dtype=float).copy()
    lp = logp(x)
    out = np.empty((x.size, n_draws))
    for t in range(tune + n_draws):
        proposal = x + step * rng.normal(size=x.size)
        lp_new = logp(proposal)
        ratio = (lp - lp_new) if flip_sign else (lp_new - lp)
        accept = np.log(rng.uniform(size=x.size)) < ratio
        x = np.where(accept, proposal, x)
        lp = np.where(accept, lp_new, lp)
        if t >= tune:
            out[:, t - tune] = x
    return out


def test_chains_trapped_in_two_modes_are_multimodal():
    # Metropolis with step 2.4 from -15, -15, 15, 15: a crossing needs one jump of
    # more than 24 = 10 proposal sd from within 3 of a mode (probability < 1e-22 per
    # step) or a walk onto the 112-nat barrier: none in 4 x 4500 steps, whatever the seed. Each
    # chain's ESS is ~ 1000 (step 2.4 on a unit-normal mode), far above the per-chain
    # 100; its split R-hat exceeds 1.05 with probability far below 1e-6 (R-hat^2 - 1
    # ~ (chi2_1 - 1) / 500 needs chi2_1 > 50).
    rng = np.random.default_rng(11)
    x = _metropolis(_bimodal_logp, [-15, -15, 15, 15], 4000, rng)
    report = check_convergence(_tree(x=x))
    assert report.verdict == "multimodal" and not report.passed
    assert report.exit_code == EXIT_CODES["multimodal"] == 3
    assert report.chains["stationary"].all()
    means = report.chains.loc["x", "mean"].to_numpy()
    np.testing.assert_allclose(means, [-15, -15, 15, 15], atol=0.5)  # mean's sd ~ 0.03
    assert "separate modes" in report.advice() and "stack" in report.advice()
    assert "multimodal" in str(report).splitlines()[0]


def test_chains_stuck_at_different_constants_are_multimodal():
    # e.g. a number of clusters each chain holds: each chain stationary, chains apart
    k = np.repeat(np.array([[2.0], [3.0], [3.0], [3.0]]), 500, axis=1)
    report = check_convergence(_tree(k=k, w=np.random.default_rng(1).normal(size=(4, 500))))
    assert report.verdict == "multimodal"


def test_chains_with_a_trend_are_not_converged():
    # a drift of 3 sd over the run: split R-hat of a chain's halves ~ 1.5, against a
    # stationary chain's 1.05 exceeded with probability < 1e-6
    rng = np.random.default_rng(12)
    x = rng.normal(size=(4, 1000)) + np.linspace(0, 3, 1000)
    report = check_convergence(_tree(x=x))
    assert report.verdict == "not_converged" and report.exit_code == 1
    assert (report.chains.loc["x", "split_r_hat"] > 1.3).all()
    assert "drift within a chain" in report.advice() and "--draws" in report.advice()


def test_well_mixed_chains_converge():
    # independent draws, 4 x 1000: pooled R-hat > 1.01 needs chi2_7 > 77 (p < 1e-12);
    # bulk and tail ESS ~ 4000 (sd ~ 200) against 400
    rng = np.random.default_rng(13)
    report = check_convergence(
        _tree(a=rng.normal(size=(4, 1000)), b=rng.exponential(size=(4, 1000)))
    )
    assert report.verdict == "converged" and report.passed and report.exit_code == 0
    assert report.advice() == ""


def test_few_effective_draws_within_chains_are_not_converged():
    # AR(1), phi = 0.99: a chain's ESS ~ 1000 * 0.01 / 1.99 = 5, far below 100
    rng = np.random.default_rng(14)
    x = np.zeros((4, 1000))
    for t in range(1, 1000):
        x[:, t] = 0.99 * x[:, t - 1] + rng.normal(size=4)
    report = check_convergence(_tree(x=x))
    assert report.verdict == "not_converged"
    assert (
        "too few effective draws within a chain" in report.advice()
        or "drift within a chain" in report.advice()
    )


def test_divergences_make_a_run_not_converged():
    rng = np.random.default_rng(15)
    dt = _tree(x=rng.normal(size=(4, 1000)))
    dt["sample_stats"] = xr.DataTree(
        xr.Dataset({"diverging": (("chain", "draw"), np.eye(4, 1000, dtype=bool))})
    )
    report = check_convergence(dt)
    assert report.verdict == "not_converged" and "4 divergent" in report.advice()


@pytest.mark.parametrize("seed", range(5))
def test_a_metropolis_twin_with_a_planted_bug_is_never_converged(seed):
    # the same sampler on a unit normal converges: over 40 other seeds, bulk and tail
    # ESS >= 3767 against 400, R-hat 1.0010 on average (its excess ~ 0.001 chi2_7 / 7),
    # at most 1.0023; above 1.01 needs chi2_7 > 63 (p < 1e-10)...
    rng = np.random.default_rng(100 + seed)
    starts = [-3.0, -1.0, 1.0, 3.0]
    right = _metropolis(_normal_logp, starts, 5000, rng)
    assert check_convergence(_tree(x=right)).verdict == "converged"
    # ...the twin, accepting by p(x) / p(x') (it targets 1 / p), wanders off: never
    # stationary, whatever the seed
    wrong = _metropolis(_normal_logp, starts, 5000, rng, flip_sign=True)
    assert check_convergence(_tree(x=wrong)).verdict == "not_converged"


def test_nested_rhat_over_chain_groups():
    rng = np.random.default_rng(16)
    x = rng.normal(size=(4, 1000))
    dt = _tree(x=x)
    report = check_convergence(dt, chain_groups=[0, 0, 1, 1])
    assert "r_hat_nested" in report.table and report.chain_groups == (0, 0, 1, 1)
    assert report.verdict == "converged"
    import arviz_stats

    assert report.table.loc["x", "r_hat_nested"] == pytest.approx(
        float(arviz_stats.rhat_nested(x, superchain_ids=[0, 0, 1, 1], chain_axis=0, draw_axis=1))
    )
    # the groups from the root attribute; two groups apart fail on nested R-hat
    x[2:] += 3.0
    dt = _tree(x=x)
    dt.attrs["pp_models_chain_groups"] = json.dumps([0, 0, 1, 1])
    report = check_convergence(dt)
    assert "nested R-hat" in report.table.loc["x", "reason"]
    assert report.verdict == "multimodal"
    with pytest.raises(ValueError, match="chain_groups must form at least 2 groups"):
        check_convergence(_tree(x=x), chain_groups=[0, 0, 0, 1])
    with pytest.raises(ValueError, match="chain_groups must give an integer group"):
        check_convergence(_tree(x=x), chain_groups=[0, 1])


def test_split_rhat_against_its_formula():
    # independent reference: rank-normalise the halves by hand (Vehtari et al. 2021)
    from scipy import stats

    rng = np.random.default_rng(17)
    chain = rng.normal(size=101) + np.linspace(0, 1, 101)
    halves = np.stack([chain[:50], chain[-50:]])

    def rhat(ary):
        r = stats.rankdata(ary).reshape(ary.shape)
        z = stats.norm.ppf((r - 3 / 8) / (ary.size + 1 / 4))
        n = z.shape[1]
        w = z.var(axis=1, ddof=1).mean()
        b = n * z.mean(axis=1).var(ddof=1)
        return np.sqrt(((n - 1) / n * w + b / n) / w)

    expected = max(rhat(halves), rhat(np.abs(halves - np.median(halves))))
    assert split_rhat(chain) == pytest.approx(expected, rel=1e-12)
    assert np.isnan(split_rhat(np.ones(10)))


def test_a_pm_sample_style_tree_without_zoo_attributes_checks_every_variable():
    rng = np.random.default_rng(18)
    ds = xr.Dataset(
        {
            "mu": (("chain", "draw"), rng.normal(size=(2, 800))),
            "sigma": (("chain", "draw", "k"), rng.gamma(3.0, size=(2, 800, 2))),
        },
        coords={"chain": [0, 1], "draw": np.arange(800), "k": ["a", "b"]},
    )
    report = check_convergence(xr.DataTree.from_dict({"posterior": ds}))
    assert list(report.table.index) == ["mu", "sigma[a]", "sigma[b]"]
    assert set(report.chains.index.get_level_values("chain")) == {0, 1}
    assert "Per chain" in report.chains_text() and "mean[1]" in report.chains_text()


def _packed(parent, times):
    """A PYDT tree packed as the posterior stores it (parent, log(1 - t) per slot)."""
    from pp_models.trees import DiffusionTree

    return DiffusionTree(np.asarray(parent), np.log1p(-np.asarray(times))).to_packed()


# two topologies over 4 leaves (internal slots 4, 5; root 6): ((0,1),(2,3)), ((0,2),(1,3))
_T1 = _packed([4, 4, 5, 5, 6, 6, -1], [0.5, 0.6, 0.2])
_T2 = _packed([4, 5, 4, 5, 6, 6, -1], [0.5, 0.6, 0.2])


def _pydt_tree(trees):
    ds = xr.Dataset(
        {
            "tree": (("chain", "draw", "slot", "part"), np.asarray(trees)),
            "c": (
                ("chain", "draw"),
                np.random.default_rng(0).normal(size=np.asarray(trees).shape[:2]),
            ),
        }
    )
    dt = xr.DataTree.from_dict({"posterior": ds})
    dt.attrs.update(pp_models_family="pydt", pp_models_label_variables='["tree"]')
    return dt


def test_split_frequencies_of_tree_chains_that_agree_and_that_do_not():
    from inference.convergence import split_frequencies

    # each chain draws T1 or T2 with probability 1/2: a clade's frequency in 400 draws
    # has sd 0.025, so the sd over 2 chains exceeds 0.2 only if they differ by > 0.28
    # (8 sd: p < 1e-14); chains stuck in T1 and in T2 give sd 0.707 for every clade
    rng = np.random.default_rng(19)
    mixed = np.where(rng.uniform(size=(2, 400))[..., None, None] < 0.5, _T1, _T2)
    report = check_convergence(_pydt_tree(mixed), ess_bulk_min=0, ess_tail_min=0)
    assert report.splits is not None and report.splits.asdsf < 0.2
    assert len(report.splits.frequencies) == 4  # {0,1} {2,3} {0,2} {1,3}
    stuck = np.stack(
        [np.broadcast_to(_T1, (400, *_T1.shape)), np.broadcast_to(_T2, (400, *_T2.shape))]
    )
    apart = check_convergence(_pydt_tree(stuck), ess_bulk_min=0, ess_tail_min=0).splits
    assert apart.asdsf == pytest.approx(np.sqrt(0.5), rel=1e-12)
    assert "ASDSF 0.7071" in str(apart) and "{0,1} (2)" in str(apart)
    # the frequencies by hand: T1's clades in 3 of 4 draws of chain 0, 1 of 4 of chain 1
    direct = split_frequencies(
        [[[[1, 1, 0, 0]]] * 3 + [[[0, 1, 1, 0]]], [[[1, 1, 0, 0]]] + [[[0, 1, 1, 0]]] * 3]
    )
    np.testing.assert_allclose(direct.frequencies.loc["{0,1} (2)"], [0.75, 0.25])
    assert direct.asdsf == pytest.approx(np.std([0.75, 0.25], ddof=1))


def test_edge_frequencies_of_mixture_of_trees_chains_count_occupied_components_only():
    # 3 nodes, 2 components; component 1 is empty in every draw, so its tree (which
    # differs between the chains) must not count; component 0's chain path 0-1-2 in
    # chain 0 and star 1-0-2 in chain 1: edge {0,1} in both, {1,2} and {0,2} in one each
    n = 50
    chain0 = np.broadcast_to([[-1, 0, 1], [-1, 0, 0]], (n, 2, 3))
    chain1 = np.broadcast_to([[-1, 0, 0], [-1, 0, 1]], (n, 2, 3))
    ds = xr.Dataset(
        {
            "trees": (("chain", "draw", "component", "node"), np.stack([chain0, chain1])),
            "z": (("chain", "draw", "obs"), np.zeros((2, n, 4), dtype=int)),
            "n_occupied": (("chain", "draw"), np.ones((2, n))),
        }
    )
    dt = xr.DataTree.from_dict({"posterior": ds})
    dt.attrs.update(pp_models_family="mixture_of_trees", pp_models_label_variables='["trees", "z"]')
    splits = check_convergence(dt, ess_bulk_min=0, ess_tail_min=0).splits
    freq = splits.frequencies
    assert freq.loc["{0,1} (2)"].tolist() == [1.0, 1.0]
    assert freq.loc["{1,2} (2)"].tolist() == [1.0, 0.0]
    assert freq.loc["{0,2} (2)"].tolist() == [0.0, 1.0]
    assert splits.asdsf == pytest.approx(2 * np.sqrt(0.5) / 3)
