"""The mixture-of-trees Gibbs steps at an inverse temperature beta against the enumerated
power posterior (discrete BDeu trees and Gaussian trees).

Target at beta (w integrated out, the CPTs / Gaussian parameters collapsed):

    pi_beta(z, T_1, T_2)  ∝  DirMult(z; alpha) prod_k P(T_k) p(D_k | T_k)^beta,

enumerated over every assignment of n = 5 rows to K = 2 components and every spanning
tree of each component (16 over 4 nodes, 3 over 3): 8192 and 288 states. The marginal
``p(D_k | T_k)`` is computed here independently of the kernels: BDeu by direct counting
with ``gammaln`` (Murphy 2012 Eq. 26.28), Gaussian by the chain rule of Student-t
predictives (``tests.custom_ops.mixture_of_trees.test_gaussian``).

Test (no autocorrelation, as ``tests/inference/gibbs/pydt/test_kernel_exact.py``): R
independent exact draws of ``(z, T)`` from ``pi_beta`` (and ``w`` from its conditional
``Dirichlet(alpha + counts)``) are each pushed through one call of the step at beta; the
end states must be draws of ``pi_beta`` again. Chi-square tests of the marginals of
``z`` (32 cells) and of each tree (16 or 3 cells) against the enumeration, cells with
expected count below 5 pooled, Bonferroni over the statistics at family-wise level 0.01.

Planted bugs (subclasses here, never flags of the shipped step): the one-row sweep, the
tree draw or the split-merge move run at beta = 1 whatever the step's beta. Each is
caught at beta = 0.3 by the same test. The block move alone (one-row sweep off) is
tested the same way at beta = 0.3 and 1, with two twins: the move at beta = 1, and its
conditional without the weights' term ``|S| log w_k`` (a kernel twin).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln

from custom_ops.jit import njit_exact
from custom_ops.mixture_of_trees.discrete import (
    MixtureState,
    assignment_sweep,
    block_log_weights,
    block_reassignments,
    propose_reallocation,
    tree_tables,
)
from custom_ops.mixture_of_trees.gaussian import (
    gaussian_assignment_sweep,
    gaussian_component_stats,
)
from inference.gibbs.mixture_of_trees import GaussianMixtureOfTreesGibbs, MixtureOfTreesGibbs
from pp_models import mixture_of_trees
from pp_models.model_info import get_info
from pp_models.trees import all_spanning_trees, spanning_tree_edges
from tests.helpers.twin_kernels import twin_kernel
from tests.oracles.mixture_of_trees import chain_rule_log_marginal

N_ROWS = 5
K = 2
ALPHA = 1.0
ESS = 0.5
LEVEL = 0.01


# ---------------------------------------------------------------- the oracle
def bdeu_log_marginal(rows, parents, n_categories, ess):
    """log p(D | T) with BDeu CPTs integrated out, by counting (Murphy 2012 Eq. 26.28):
    per node and parent value, log Γ(a_.) - log Γ(a_. + N_j) + sum_c log Γ(a + N_jc) -
    log Γ(a), a = ess / (K_pa K_v)."""
    total = 0.0
    for v, p in enumerate(parents):
        kv = n_categories[v]
        kp = 1 if p < 0 else n_categories[p]
        a = ess / (kp * kv)
        table = np.zeros((kp, kv))
        for row in rows:
            table[0 if p < 0 else row[p], row[v]] += 1
        for counts in table:
            total += (gammaln(kv * a) - gammaln(kv * a + counts.sum())
                      + np.sum(gammaln(a + counts) - gammaln(a)))
    return total


def log_tree_prior(trees, edge_prior):
    """log P(T) ∝ sum of log edge weights, normalised over the enumerated trees."""
    logs = np.array([sum(np.log(edge_prior[u, v]) for u, v in spanning_tree_edges(t))
                     for t in trees])
    return logs - np.logaddexp.reduce(logs)


def log_dirichlet_multinomial(z):
    """log p(z) with w ~ Dirichlet(alpha) integrated out (an ordered sequence)."""
    counts = np.bincount(z, minlength=K)
    return (gammaln(K * ALPHA) - gammaln(K * ALPHA + len(z))
            + np.sum(gammaln(ALPHA + counts) - gammaln(ALPHA)))


class PowerPosterior:
    """``pi_beta`` over (z, T_1, T_2), enumerated; ``log_marginal(rows, tree)`` is the
    component's collapsed marginal."""

    def __init__(self, n_nodes, edge_prior, log_marginal):
        self.trees = all_spanning_trees(n_nodes)
        self.n_trees = len(self.trees)
        self.keys = {tuple(map(tuple, spanning_tree_edges(t))): i
                     for i, t in enumerate(self.trees)}
        self.assignments = np.array(list(itertools.product(range(K), repeat=N_ROWS)))
        log_prior_t = log_tree_prior(self.trees, edge_prior)
        # lik[a, k, t]: log p(rows of component k under assignment a | tree t)
        lik = np.array([[[log_marginal(a == k, t) for t in self.trees] for k in range(K)]
                        for a in self.assignments])
        self.log_prior = (np.array([log_dirichlet_multinomial(a) for a in self.assignments])
                          [:, None, None] + log_prior_t[None, :, None]
                          + log_prior_t[None, None, :])
        self.log_lik = lik[:, 0, :, None] + lik[:, 1, None, :]

    def probabilities(self, beta):
        logp = self.log_prior + beta * self.log_lik
        return np.exp(logp - np.logaddexp.reduce(logp, axis=None))

    def tree_index(self, parents):
        return self.keys[tuple(map(tuple, spanning_tree_edges(parents)))]


def _chi_square_p(observed, expected):
    keep = expected >= 5
    obs = np.r_[observed[keep], observed[~keep].sum()]
    exp = np.r_[expected[keep], expected[~keep].sum()]
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue


def pushed_p_values(step, posterior, beta, n_rep, seed):
    """p-values (z, T_1, T_2 marginals) of ``n_rep`` exact draws of ``pi_beta`` after one
    call of ``step`` at ``beta``."""
    rng = np.random.default_rng(seed)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed + 1)
    p = posterior.probabilities(beta)
    flat = rng.choice(p.size, size=n_rep, p=p.ravel())
    a_idx, t0_idx, t1_idx = np.unravel_index(flat, p.shape)
    point = step.model.initial_point()
    counts_z = np.zeros(len(posterior.assignments))
    counts_t = np.zeros((K, posterior.n_trees))
    powers = K ** np.arange(N_ROWS - 1, -1, -1)
    moved = 0
    for a, t0, t1 in zip(a_idx, t0_idx, t1_idx, strict=True):
        z = posterior.assignments[a]
        w = rng.dirichlet(ALPHA + np.bincount(z, minlength=K))
        start = dict(point)
        start[step._z_name] = z.astype(point[step._z_name].dtype)
        start[step._trees_name] = np.stack([posterior.trees[t0], posterior.trees[t1]]).astype(
            point[step._trees_name].dtype)
        start[step._w_value] = np.asarray(step._w_forward(w), dtype=point[step._w_value].dtype)
        end, _stats = step.step(start)
        z_end = np.asarray(end[step._z_name], dtype=np.int64)
        counts_z[z_end @ powers] += 1
        for k in range(K):
            counts_t[k, posterior.tree_index(end[step._trees_name][k])] += 1
        moved += int(not np.array_equal(z_end, z))
    assert moved > 0.05 * n_rep, f"the step moved z in only {moved} of {n_rep} draws"
    p_z = _chi_square_p(counts_z, n_rep * p.sum(axis=(1, 2)))
    p_t = [_chi_square_p(counts_t[k], n_rep * p.sum(axis=(0, 2 - k)))
           for k in range(K)]
    return (p_z, *p_t)


def rejects(p_values, level=LEVEL):
    return min(p_values) * len(p_values) < level


# ---------------------------------------------------------------- discrete trees
DISCRETE_CATS = np.array([2, 2, 2, 2])


def _discrete_data():
    # two groups of rows with opposite dependences, so z and the trees both matter
    return np.array([[0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 0, 1], [1, 0, 1, 1], [0, 1, 1, 0]])


def _edge_prior(V):
    beta = np.ones((V, V))
    beta[0, 1] = beta[1, 0] = 3.0
    beta[1, 2] = beta[2, 1] = 0.5
    return beta


@pytest.fixture(scope="module")
def discrete():
    X = _discrete_data()
    V = X.shape[1]
    posterior = PowerPosterior(V, _edge_prior(V), lambda rows, t: bdeu_log_marginal(
        X[rows], t, DISCRETE_CATS, ESS))
    return X, posterior


def _discrete_step(cls, X, split_merge):
    m = mixture_of_trees.model(X, K, alpha=ALPHA, ess=ESS, edge_prior=_edge_prior(X.shape[1]),
                               split_merge=split_merge,
                               block_moves=BLOCK_MOVES if issubclass(cls, BlocksOnly) else 0)
    options = dict(get_info(m).step_hints[0].options)
    return cls(["w", "z", "trees"], model=m, **options)


class SweepIgnoresBeta(MixtureOfTreesGibbs):
    """Planted bug: the one-row sweep uses the untempered predictive."""

    def update_assignments(self, codes, z, trees, log_w):
        tables = tree_tables(codes, z, trees, self.n_categories)
        counts = np.bincount(z, minlength=trees.shape[0]).astype(np.int64)
        return assignment_sweep(self.rng, codes, MixtureState(z, trees, log_w), tables, counts,
                                self.prior, 1.0)


class TreesIgnoreBeta(MixtureOfTreesGibbs):
    """Planted bug: the trees are drawn from the untempered conditional."""

    def tree_log_weights(self, rows):
        saved, self.beta = self.beta, 1.0
        try:
            return super().tree_log_weights(rows)
        finally:
            self.beta = saved


class SplitMergeOnly(MixtureOfTreesGibbs):
    """The correct step with the one-row sweep off: z moves by the split-merge move alone."""

    def update_assignments(self, codes, z, trees, log_w):
        return 0


class SplitMergeOnlyIgnoresBeta(SplitMergeOnly):
    """Planted bug: the split-merge move (scans, tree draws, target) at beta = 1."""

    def update_reallocations(self, codes, z, trees, log_w):
        n_components = trees.shape[0]
        accepted = 0
        pairs = [(i, j) for i in range(n_components) for j in range(i + 1, n_components)]
        for a, b in pairs:
            labels, order, tree_a, tree_b, *terms = propose_reallocation(
                self.rng, codes, MixtureState(z, trees, log_w), a, b, self.prior,
                self.split_merge_launch_scans, 1.0)
            if np.log(self.rng.random()) < self.reallocation_log_ratio(*terms):
                z[order] = labels
                trees[a] = tree_a
                trees[b] = tree_b
                accepted += 1
        return accepted


BLOCK_MOVES = 3


class BlocksOnly(MixtureOfTreesGibbs):
    """The correct step with the one-row sweep off: z moves by the block move alone."""

    def update_assignments(self, codes, z, trees, log_w):
        return 0


class BlocksOnlyIgnoreBeta(BlocksOnly):
    """Planted bug: the block move's conditional at beta = 1."""

    def update_blocks(self, codes, z, trees, log_w):
        moved = block_reassignments(self.rng, codes, MixtureState(z, trees, log_w),
                                    self.neighbours(codes), self.block_moves, self.prior, 1.0)
        if moved:
            self.update_trees(codes, z, trees)
        return moved


@njit_exact
def _block_log_weights_without_w(codes, block, a, stats, log_weights, prior, inv_temp):
    """The block's conditional with the term |S| log w_k left out (planted bug)."""
    out, without_a, joined = block_log_weights(codes, block, a, stats, log_weights, prior,
                                               inv_temp)
    for k in range(out.shape[0]):
        out[k] -= block.shape[0] * log_weights[k]
    return out, without_a, joined


class BlocksOnlyWithoutWeights(BlocksOnly):
    """Planted bug (kernel twin): the block's conditional leaves out the weights."""

    kernel = None

    def update_blocks(self, codes, z, trees, log_w):
        if BlocksOnlyWithoutWeights.kernel is None:
            BlocksOnlyWithoutWeights.kernel = twin_kernel(
                block_reassignments, block_log_weights=_block_log_weights_without_w)
        moved = BlocksOnlyWithoutWeights.kernel(
            self.rng, codes, MixtureState(z, trees, log_w), self.neighbours(codes),
            self.block_moves, self.prior, float(self.beta))
        if moved:
            self.update_trees(codes, z, trees)
        return moved


# ---------------------------------------------------------------- Gaussian trees
GAUSS_HYPER = {"m0": np.zeros(3), "kappa0": 0.5, "delta": 2.0, "S0": np.eye(3)}


def _gaussian_data():
    # rows 0-2: x0 ~ x1 (edge 0-1); rows 3-4: x1 ~ -x2 (edge 1-2)
    return np.array([[1.2, 1.1, -0.3], [-0.9, -1.0, 0.4], [0.3, 0.35, 1.0],
                     [0.2, 1.4, -1.5], [-0.5, -1.2, 1.1]])


@pytest.fixture(scope="module")
def gaussian():
    X = _gaussian_data()
    h = GAUSS_HYPER
    posterior = PowerPosterior(3, _edge_prior(3), lambda rows, t: chain_rule_log_marginal(
        X[rows], t, h["m0"], h["kappa0"], h["delta"], h["S0"]))
    return X, posterior


def _gaussian_step(cls, X):
    m = mixture_of_trees.model(X, K, kind="gaussian", alpha=ALPHA, edge_prior=_edge_prior(3),
                               **GAUSS_HYPER)
    return cls(["w", "z", "trees"], model=m, **dict(get_info(m).step_hints[0].options))


class GaussianSweepIgnoresBeta(GaussianMixtureOfTreesGibbs):
    """Planted bug: the one-row sweep uses the untempered Student-t predictive."""

    def update_assignments(self, X, z, trees, log_w):
        stats_ = gaussian_component_stats(X, z, trees.shape[0])
        return gaussian_assignment_sweep(self.rng, X, MixtureState(z, trees, log_w), stats_,
                                         self.niw_prior, 1.0)


class GaussianTreesIgnoreBeta(GaussianMixtureOfTreesGibbs):
    """Planted bug: the trees are drawn from the untempered conditional."""

    def tree_log_weights(self, rows):
        saved, self.beta = self.beta, 1.0
        try:
            return super().tree_log_weights(rows)
        finally:
            self.beta = saved


# ---------------------------------------------------------------- the tests
N_REP = 2000
BETAS = (0.0, 0.3, 1.0)


@pytest.fixture(scope="module")
def steps():
    """Steps built once per (class, split_merge) for the module."""
    built = {}

    def get(cls, split_merge=False):
        key = (cls, split_merge)
        if key not in built:
            if issubclass(cls, GaussianMixtureOfTreesGibbs):
                built[key] = _gaussian_step(cls, _gaussian_data())
            else:
                built[key] = _discrete_step(cls, _discrete_data(), split_merge)
        return built[key]

    return get


def test_the_steps_can_temper():
    assert MixtureOfTreesGibbs.can_temper and GaussianMixtureOfTreesGibbs.can_temper
    assert MixtureOfTreesGibbs.tempering_error({"split_merge": True}) is None


@pytest.mark.parametrize("beta", BETAS)
def test_discrete_step_keeps_the_power_posterior(discrete, steps, beta):
    """The whole step (one-row sweep, exact trees, split-merge, weights)."""
    _X, posterior = discrete
    p = pushed_p_values(steps(MixtureOfTreesGibbs, True), posterior, beta, N_REP, seed=10)
    print(f"beta {beta}: p-values (z, T_1, T_2)", p)
    assert not rejects(p)


@pytest.mark.parametrize("twin", [SweepIgnoresBeta, TreesIgnoreBeta])
def test_discrete_step_ignoring_beta_is_caught(discrete, steps, twin):
    _X, posterior = discrete
    p = pushed_p_values(steps(twin), posterior, 0.3, N_REP, seed=10)
    print(f"{twin.__name__}: p-values (z, T_1, T_2)", p)
    assert rejects(p)


def test_split_merge_alone_keeps_the_power_posterior_and_its_twin_is_caught(discrete, steps):
    """z moved by the split-merge move alone (the one-row sweep off)."""
    _X, posterior = discrete
    p = pushed_p_values(steps(SplitMergeOnly, True), posterior, 0.3, N_REP, seed=11)
    print("split-merge alone: p-values (z, T_1, T_2)", p)
    assert not rejects(p)
    p = pushed_p_values(steps(SplitMergeOnlyIgnoresBeta, True), posterior, 0.3, N_REP,
                        seed=11)
    print("split-merge alone at beta = 1: p-values (z, T_1, T_2)", p)
    assert rejects(p)


@pytest.mark.parametrize("beta", (0.3, pytest.param(1.0, marks=pytest.mark.slow)))
def test_block_move_alone_keeps_the_power_posterior(discrete, steps, beta):
    """z moved by the block move alone (blocks of 2-5 of the 5 rows)."""
    _X, posterior = discrete
    p = pushed_p_values(steps(BlocksOnly), posterior, beta, N_REP, seed=12)
    print(f"block move alone, beta {beta}: p-values (z, T_1, T_2)", p)
    assert not rejects(p)


# slow: the default run's budget holds the correct move's test only (the kernel twin
# also compiles the move a second time)
@pytest.mark.slow
@pytest.mark.parametrize("twin, beta", [(BlocksOnlyIgnoreBeta, 0.3),
                                        (BlocksOnlyWithoutWeights, 1.0)])
def test_block_move_twins_are_caught(discrete, steps, twin, beta):
    _X, posterior = discrete
    p = pushed_p_values(steps(twin), posterior, beta, N_REP, seed=12)
    print(f"{twin.__name__}, beta {beta}: p-values (z, T_1, T_2)", p)
    assert rejects(p)


@pytest.mark.parametrize("beta", BETAS)
def test_gaussian_step_keeps_the_power_posterior(gaussian, steps, beta):
    _X, posterior = gaussian
    p = pushed_p_values(steps(GaussianMixtureOfTreesGibbs), posterior, beta, N_REP, seed=20)
    print(f"beta {beta}: p-values (z, T_1, T_2)", p)
    assert not rejects(p)


@pytest.mark.parametrize("twin", [GaussianSweepIgnoresBeta, GaussianTreesIgnoreBeta])
def test_gaussian_step_ignoring_beta_is_caught(gaussian, steps, twin):
    _X, posterior = gaussian
    p = pushed_p_values(steps(twin), posterior, 0.3, N_REP, seed=20)
    print(f"{twin.__name__}: p-values (z, T_1, T_2)", p)
    assert rejects(p)


@pytest.mark.slow
def test_false_alarm_and_power_over_ten_seeds(discrete, gaussian, steps):
    """Rejections out of 10 seeds at each beta (correct) and at beta = 0.3 (twins)."""
    seeds = range(100, 110)
    cases = {"discrete": (discrete[1], MixtureOfTreesGibbs, True,
                          [(SweepIgnoresBeta, False), (TreesIgnoreBeta, False)]),
             "split-merge alone": (discrete[1], SplitMergeOnly, True,
                                   [(SplitMergeOnlyIgnoresBeta, True)]),
             "gaussian": (gaussian[1], GaussianMixtureOfTreesGibbs, False,
                          [(GaussianSweepIgnoresBeta, False),
                           (GaussianTreesIgnoreBeta, False)])}
    report = {}
    for name, (posterior, cls, sm, twins) in cases.items():
        for beta in BETAS:
            report[(name, beta)] = sum(rejects(pushed_p_values(
                steps(cls, sm), posterior, beta, N_REP, seed=s)) for s in seeds)
        for twin, twin_sm in twins:
            report[(twin.__name__, 0.3)] = sum(rejects(pushed_p_values(
                steps(twin, twin_sm), posterior, 0.3, N_REP, seed=s)) for s in seeds)
    print("rejections out of 10:", report)
    for (name, _beta), count in report.items():
        if name in cases:
            assert count <= 2, (name, count)
        else:
            assert count >= 9, (name, count)
