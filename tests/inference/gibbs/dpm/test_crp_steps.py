"""CRP Gibbs steps against the exact posterior over partitions (enumeration, n = 6).

For n <= 6 items every partition can be listed (Bell(6) = 203), so the exact posterior
p(z | X) ∝ CRP(z) p(X | z) is known. A chain's partition frequencies must match it up to
Monte Carlo error: the total-variation distance is compared with its expectation under
the chain's own Monte Carlo standard errors (batch means). Each step also has a planted-
bug twin that the same test catches.
"""

import math

import cloudpickle
import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from pymc.step_methods.compound import BlockedStep
from scipy import integrate, special, stats

from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import crp_logp
from inference.gibbs import (
    CRPAuxiliaryGibbs,
    CRPCollapsedGibbs,
    EscobarWestAlpha,
    get_step,
    step_for,
)
from pp_models.distributions import CRP, CollapsedDiagGaussian, CollapsedGaussian
from tests.helpers.stationary import state_codes, tv_against_mcse
from tests.inference.gibbs.dpm.twins import (
    BrokenAuxiliary,
    ErratumGibbs,
    NoMixtureEscobarWest,
    NoProposalRatioSplitMerge,
)
from tests.oracles.mixtures import partitions

RNG = np.random.default_rng(1)
X6 = np.concatenate([RNG.normal(-1, 0.6, (3, 2)), RNG.normal(1.5, 0.6, (3, 2))])
NIW = [np.zeros(2), 0.5, 4.0, np.eye(2)]
NG = [np.zeros(2), np.full(2, 0.5), np.full(2, 2.0), np.full(2, 1.0)]


def exact_posterior(logp_of):
    parts = partitions(6)
    lp = np.array([logp_of(z) for z in parts])
    p = np.exp(lp - special.logsumexp(lp))
    return {tuple(z): q for z, q in zip(parts, p, strict=True)}


def tv_against_exact(states, exact):
    """:func:`tv_against_mcse` of the chain's partitions against ``exact`` (partition ->
    probability)."""
    keys = list(exact)
    return tv_against_mcse(state_codes(states, keys), np.array([exact[k] for k in keys]))


def run_chain(step, model, n_steps, seed):
    step.setup_chain(np.random.default_rng(seed), 0, n_steps)
    point = model.initial_point()
    name = step.var_names[0]
    out = np.empty((n_steps, 6), dtype=np.int64)
    for t in range(n_steps):
        point, _ = step.step(point)
        out[t] = point[name]
    return out


def collapsed_model(family="gaussian", alpha=1.0, discount=0.0):
    with pm.Model() as m:
        z = CRP("z", alpha=alpha, n=6, discount=discount)
        if family == "gaussian":
            CollapsedGaussian("X", z, *NIW, observed=X6)
        else:
            CollapsedDiagGaussian("X", z, *NG, observed=X6)
    hyper = NIW if family == "gaussian" else NG
    exact = exact_posterior(lambda z: crp_logp(z, alpha, discount)
                            + collapsed_loglik_value(family, z, X6, hyper))
    return m, exact


# ---------------------------------------------------------------------- Algorithm 3
@pytest.mark.parametrize(
    ("label", "options", "family", "discount"),
    [
        ("gibbs", dict(split_merge_every=0), "gaussian", 0.0),
        ("gibbs+split-merge", dict(split_merge_every=1), "gaussian", 0.0),
        ("split-merge only", dict(sweeps=0, split_merge_every=1, split_merge_proposals=2),
         "gaussian", 0.0),
        ("pitman-yor gibbs+split-merge", dict(split_merge_every=2), "diag_gaussian", 0.3),
    ],
)
def test_collapsed_gibbs_matches_exact_partition_posterior(label, options, family, discount):
    m, exact = collapsed_model(family, alpha=1.0, discount=discount)
    with m:
        step = CRPCollapsedGibbs([m["z"]], **options)
    states = run_chain(step, m, 30_000, seed=5)
    tv, expected = tv_against_exact(states, exact)
    print(f"{label}: TV = {tv:.4f}, null expectation {expected:.4f}")
    assert tv < 1.6 * expected, (tv, expected)


def test_erratum_twin_is_caught():
    m, exact = collapsed_model()
    with m:
        step = ErratumGibbs([m["z"]], split_merge_every=0)
    states = run_chain(step, m, 10_000, seed=5)
    tv, expected = tv_against_exact(states, exact)
    assert tv > 5 * expected and tv > 0.2, (tv, expected)


def test_split_merge_without_proposal_ratio_is_caught():
    m, exact = collapsed_model()
    with m:
        step = NoProposalRatioSplitMerge([m["z"]], sweeps=0, split_merge_every=1,
                                         split_merge_proposals=2)
    states = run_chain(step, m, 30_000, seed=5)
    tv, expected = tv_against_exact(states, exact)
    assert tv > 3 * expected, (tv, expected)


# ---------------------------------------------------------------------- Algorithm 8
A_RATE, B_RATE = 2.0, 0.5
COUNTS = np.array([[0, 1], [1, 0], [0, 0], [6, 4], [5, 7], [8, 5]], dtype=float)


def poisson_gamma_log_marginal(z):
    out = -special.gammaln(COUNTS + 1).sum()
    for k in np.unique(z):
        Xk = COUNTS[z == k]
        s, nk = Xk.sum(0), Xk.shape[0]
        out += np.sum(A_RATE * np.log(B_RATE) - special.gammaln(A_RATE)
                      + special.gammaln(A_RATE + s) - (A_RATE + s) * np.log(B_RATE + nk))
    return out


class ExactGammaRates(BlockedStep):
    """Test helper: exact conjugate draw of every rate slot given z (Gamma posterior for
    occupied slots, the Gamma prior for the others)."""

    stats_dtypes_shapes = {}

    def __init__(self, *, model, rng=None):
        self.vars = [model.rvs_to_values[model["rate"]]]
        self.rng = np.random.default_rng(rng)

    def step(self, point):
        z = point["z"]
        rate = self.rng.gamma(A_RATE, 1 / B_RATE, size=(6, 2))
        for k in np.unique(z):
            Xk = COUNTS[z == k]
            rate[k] = self.rng.gamma(A_RATE + Xk.sum(0), 1 / (B_RATE + Xk.shape[0]))
        new = dict(point)
        new["rate_log__"] = np.log(rate)
        return new, [{}]


def auxiliary_model():
    with pm.Model() as m:
        z = CRP("z", alpha=1.2, n=6)
        rate = pm.Gamma("rate", alpha=A_RATE, beta=B_RATE, shape=(6, 2))
        pm.Poisson("X", mu=rate[z], observed=COUNTS)
    exact = exact_posterior(lambda z: crp_logp(z, 1.2, 0.0) + poisson_gamma_log_marginal(z))
    return m, exact


def _run_auxiliary(step_cls, n_steps, seed):
    m, exact = auxiliary_model()
    with m:
        step = step_cls([m["z"]], component="poisson", params=("rate",), data="X", m=2)
    rates = ExactGammaRates(model=m, rng=seed + 1)
    step.setup_chain(np.random.default_rng(seed), 0, n_steps)
    point = m.initial_point()
    out = np.empty((n_steps, 6), dtype=np.int64)
    for t in range(n_steps):
        point, _ = step.step(point)
        point, _ = rates.step(point)
        out[t] = point["z"]
    return tv_against_exact(out, exact)


def test_algorithm8_matches_exact_partition_posterior():
    tv, expected = _run_auxiliary(CRPAuxiliaryGibbs, 20_000, seed=3)
    print(f"algorithm 8: TV = {tv:.4f}, null expectation {expected:.4f}")
    assert tv < 1.6 * expected, (tv, expected)


def test_algorithm8_broken_twin_is_caught():
    tv, expected = _run_auxiliary(BrokenAuxiliary, 5_000, seed=3)
    assert tv > 5 * expected and tv > 0.2, (tv, expected)


def test_algorithm8_relabels_parameters_with_blocks():
    """The slot of each block holds that block's parameter after relabelling: with one
    item per distinct huge count, the rate of the item's block stays near its count."""
    m, _ = auxiliary_model()
    with m:
        step = CRPAuxiliaryGibbs([m["z"]], component="poisson", params=("rate",), data="X")
    point = m.initial_point()
    step.setup_chain(np.random.default_rng(0), 0, 10)
    new, stats_ = step.step(point)
    z = new["z"]
    assert np.all(z[: np.argmax(z)] <= np.arange(6)[: np.argmax(z)])
    assert stats_[0]["n_clusters"] == z.max() + 1
    assert new["rate_log__"].shape == (6, 2) and np.all(np.isfinite(new["rate_log__"]))


# ---------------------------------------------------------------------- Escobar-West
def _ew_model(a=2.0, b=1.5):
    with pm.Model() as m:
        alpha = pm.Gamma("alpha", alpha=a, beta=b)
        CRP("z", alpha=alpha, n=20)
    return m


def _alpha_posterior_cdf(K, n, a, b):
    """p(alpha | K) ∝ Gamma(alpha | a, b) alpha^K Gamma(alpha) / Gamma(alpha + n)."""
    def logdens(x):
        return ((a - 1 + K) * np.log(x) - b * x + special.gammaln(x) - special.gammaln(x + n))

    grid = np.linspace(1e-6, 30, 20001)
    dens = np.exp(logdens(grid) - logdens(grid).max())
    cdf = integrate.cumulative_trapezoid(dens, grid, initial=0.0)
    cdf /= cdf[-1]
    return grid, cdf


@pytest.mark.parametrize("step_cls", [EscobarWestAlpha, NoMixtureEscobarWest])
def test_escobar_west_matches_alpha_conditional(step_cls):
    m = _ew_model()
    z = np.repeat(np.arange(4), 5)  # K = 4 blocks of n = 20
    with m:
        step = step_cls([m["alpha"]])
    step.setup_chain(np.random.default_rng(9), 0, 0)
    point = m.initial_point() | {"z": z}
    draws = np.empty(8000)
    for t in range(draws.size):
        point, st = step.step(point)
        draws[t] = st[0]["alpha"]
        assert point["alpha_log__"] == pytest.approx(math.log(draws[t]))
    grid, cdf = _alpha_posterior_cdf(4, 20, 2.0, 1.5)
    pvalue = stats.kstest(draws[::4], lambda x: np.interp(x, grid, cdf)).pvalue
    if step_cls is EscobarWestAlpha:
        assert pvalue > 1e-3, pvalue
    else:
        assert pvalue < 1e-6, pvalue


def test_escobar_west_refuses_other_structures():
    with pm.Model() as m:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        CRP("z", alpha=alpha, n=5, discount=0.2)
    with m, pytest.raises(ValueError, match="discount 0"):
        EscobarWestAlpha([m["alpha"]])
    with pm.Model() as m2:
        alpha = pm.Gamma("alpha", 1.0, 1.0)
        CRP("z", alpha=alpha, n=5)
        pm.Normal("y", alpha, 1.0, observed=1.0)
    with m2, pytest.raises(ValueError, match="enter nothing else"):
        EscobarWestAlpha([m2["alpha"]])
    with pm.Model() as m3:
        alpha = pm.HalfNormal("alpha", 1.0)
        CRP("z", alpha=alpha, n=5)
    with m3, pytest.raises(ValueError, match=r"pm\.Gamma"):
        EscobarWestAlpha([m3["alpha"]])


# ---------------------------------------------------------------------- plumbing
def test_registry_competence_pickling_and_no_mutation():
    m, _ = collapsed_model()
    assert get_step("crp_collapsed_gibbs") is CRPCollapsedGibbs
    assert get_step("crp_auxiliary_gibbs") is CRPAuxiliaryGibbs
    assert get_step("escobar_west") is EscobarWestAlpha
    assert step_for(m["z"]) is CRPCollapsedGibbs
    with m:
        step = CRPCollapsedGibbs([m["z"]])
    point = m.initial_point()
    before = point["z"].copy()
    new, stats_ = step.step(point)
    np.testing.assert_array_equal(point["z"], before)
    assert set(stats_[0]) == set(CRPCollapsedGibbs.stats_dtypes_shapes)
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    assert clone.step(point)[0]["z"].shape == (6,)
    # state rebuilt from whatever labels come in (any labelling, any partition)
    new, _ = step.step(point | {"z": np.array([3, 3, 9, 0, 9, 3])})
    assert new["z"][0] == 0


def test_collapsed_step_refuses_z_in_other_terms():
    with pm.Model() as m:
        z = CRP("z", alpha=1.0, n=6)
        CollapsedGaussian("X", z, *NIW, observed=X6)
        pm.Normal("y", mu=z.sum(), sigma=1.0, observed=0.0)
    with m, pytest.raises(ValueError, match="crp_auxiliary_gibbs"):
        CRPCollapsedGibbs([m["z"]])
    with m, pytest.raises(ValueError, match="sweeps=0 needs split-merge"):
        CRPCollapsedGibbs([m["z"]], sweeps=0, split_merge_every=0)


def test_prior_only_partition_samples_the_crp():
    with pm.Model() as m:
        CRP("z", alpha=0.8, n=6)
    with m:
        step = CRPCollapsedGibbs([m["z"]])
    states = run_chain(step, m, 20_000, seed=2)
    exact = exact_posterior(lambda z: crp_logp(z, 0.8, 0.0))
    tv, expected = tv_against_exact(states, exact)
    assert tv < 1.6 * expected, (tv, expected)


@pytest.mark.parametrize(
    ("alpha", "options"),
    [
        (30.0, dict(split_merge_every=1)),  # ~25 blocks: the slot arrays grow past 18
        (2.0, dict(sweeps=0, split_merge_every=1, split_merge_proposals=3)),
    ],
)
def test_prior_chain_number_of_blocks_at_n40(alpha, options):
    """Without data the chain samples the CRP prior: E[K] = sum_i alpha / (alpha + i - 1)."""
    n = 40
    with pm.Model() as m:
        CRP("z", alpha=alpha, n=n)
    with m:
        step = CRPCollapsedGibbs([m["z"]], **options)
    step.setup_chain(np.random.default_rng(8), 0, 0)
    point = m.initial_point()
    K = np.empty(6000)
    for t in range(K.size):
        point, st = step.step(point)
        K[t] = st[0]["n_clusters"]
    K = K[500:]
    batches = K[: K.size // 50 * 50].reshape(50, -1).mean(1)
    mcse = batches.std(ddof=1) / np.sqrt(50)
    expected = sum(alpha / (alpha + i) for i in range(n))
    assert abs(K.mean() - expected) < 4 * mcse + 0.02, (K.mean(), expected, mcse)


def test_auxiliary_and_escobar_west_steps_pickle():
    m, _ = auxiliary_model()
    with m:
        step = CRPAuxiliaryGibbs([m["z"]], component="poisson", params=("rate",), data="X")
    clone = cloudpickle.loads(cloudpickle.dumps(step))
    clone.setup_chain(np.random.default_rng(0), 0, 1)
    new, _ = clone.step(m.initial_point())
    assert new["z"].shape == (6,) and new["rate_log__"].shape == (6, 2)
    ew_model = _ew_model()
    with ew_model:
        ew = EscobarWestAlpha([ew_model["alpha"]])
    clone = cloudpickle.loads(cloudpickle.dumps(ew))
    new, stats_ = clone.step(ew_model.initial_point())
    assert stats_[0]["alpha"] > 0 and np.isfinite(new["alpha_log__"])


def test_auxiliary_step_validates_its_options():
    m, _ = auxiliary_model()
    with m, pytest.raises(ValueError, match="component: unknown"):
        CRPAuxiliaryGibbs([m["z"]], component="gamma", params=("rate",), data="X")
    with m, pytest.raises(ValueError, match="params: component='normal' needs 2"):
        CRPAuxiliaryGibbs([m["z"]], component="normal", params=("rate",), data="X")
    with m, pytest.raises(ValueError, match="m must be >= 1"):
        CRPAuxiliaryGibbs([m["z"]], component="poisson", params=("rate",), data="X", m=0)
    with m, pytest.raises(ValueError, match="data: 'Y' is not a variable"):
        CRPAuxiliaryGibbs([m["z"]], component="poisson", params=("rate",), data="Y")


def test_collapsed_step_refuses_a_transformed_partition():
    """sign(z) groups every nonzero label together: not the partition z defines."""
    with pm.Model() as m:
        z = CRP("z", alpha=1.0, n=6)
        CollapsedGaussian("X", pt.sign(z), *NIW, observed=X6)
    with m, pytest.raises(ValueError, match="also enters X"):
        CRPCollapsedGibbs([m["z"]])


def test_auxiliary_step_needs_one_slot_per_item():
    with pm.Model() as m:
        z = CRP("z", alpha=1.0, n=6)
        rate = pm.Gamma("rate", alpha=2.0, beta=1.0, shape=(3, 2))
        pm.Poisson("X", mu=rate[z], observed=COUNTS)
    with m, pytest.raises(ValueError, match="one row per item"):
        CRPAuxiliaryGibbs([m["z"]], component="poisson", params=("rate",), data="X")


def test_start_search_only_while_tuning_and_returns_the_best_scored_candidate():
    X = np.concatenate([RNG.normal(-3, 0.5, (20, 2)), RNG.normal(3, 0.5, (20, 2))])
    with pm.Model() as m:
        z = CRP("z", alpha=1.0, n=40)
        CollapsedGaussian("X", z, *NIW, observed=X)
    with m:
        step = CRPCollapsedGibbs([m["z"]], sweeps=0, split_merge_proposals=1,
                                 start_kmeans=(2, 3, 50))
    truth = np.repeat([0, 1], 20)
    step.setup_chain(np.random.default_rng(0), 0, 10)  # no tuning (e.g. getting it right)
    assert not step._start_pending
    step.step(m.initial_point())
    assert step.start_scores == []  # the start search did not run
    step.setup_chain(np.random.default_rng(0), 10, 10)  # tuning: the start search applies
    new, _ = step.step(m.initial_point())
    np.testing.assert_array_equal(new["z"], truth)
    # every candidate was scored (k >= n skipped), best first
    names = [name for name, _ in step.start_scores]
    assert sorted(names) == ["greedy", "incoming", "kmeans2", "kmeans3"]
    scores = [score for _, score in step.start_scores]
    assert scores == sorted(scores, reverse=True)

    from custom_ops.conjugate import pack_hyper

    hyper = tuple(np.asarray(h, dtype=float) for h in NIW)
    hp = pack_hyper("gaussian", hyper)

    def log_joint(labels):
        return crp_logp(labels, 1.0, 0.0) + collapsed_loglik_value("gaussian", labels, X, hyper)

    # the start is a canonical partition of the n items whose log joint is the best score,
    # computed independently here; without pilots an incoming optimum is kept
    step.start_pilot = 3
    start = step._choose_start(X, np.zeros(40, dtype=np.int64), 1.0, 0.0, "gaussian",
                               hyper, 2, hp)
    assert start.shape == (40,) and start[0] == 0
    assert set(np.unique(start)) == set(range(start.max() + 1))
    np.testing.assert_allclose(log_joint(start), step.start_scores[0][1])
    assert step.start_scores[0][1] >= max(log_joint(np.zeros(40, dtype=np.int64)),
                                          log_joint(truth)) - 1e-9
    step.start_pilot = 0
    kept = step._choose_start(X, truth, 1.0, 0.0, "gaussian", hyper, 2, hp)
    np.testing.assert_array_equal(kept, truth)


def test_kmeans_partition_recovers_separated_blocks_and_handles_ties():
    from custom_ops.dpm.gibbs import kmeans_partition

    X = np.repeat([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]], 20, axis=0) + RNG.normal(0, 0.3, (60, 2))
    z = kmeans_partition(X, 3, np.random.default_rng(1))
    np.testing.assert_array_equal(z, np.repeat([0, 1, 2], 20))
    # columns are standardised: rescaling one does not change the partition
    for seed in range(5):
        np.testing.assert_array_equal(
            kmeans_partition(X, 4, np.random.default_rng(seed)),
            kmeans_partition(X * np.array([1000.0, 0.001]), 4, np.random.default_rng(seed)))
    # fewer distinct rows than k: at most that many blocks, canonical labels
    tied = np.repeat([[0.0, 1.0], [5.0, 5.0]], 10, axis=0)
    z = kmeans_partition(tied, 6, np.random.default_rng(2))
    np.testing.assert_array_equal(z, np.repeat([0, 1], 10))
