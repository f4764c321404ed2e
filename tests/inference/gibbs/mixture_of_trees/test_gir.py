"""Getting-it-right (Geweke 2004) for the mixture-of-trees Gibbs step, with planted bugs.

Model: 16 rows of 4 binary variables, K = 2 components, alpha = 3, ess = 0.5 (sharp CPTs,
so the data inform z and the trees), a non-uniform
edge prior. Statistics: the defaults (w and its square, mean labels, mean parent entries,
data moments) plus the label-invariant ones of the factory and three joint statistics of
trees and data: the largest degree of each tree (star vs path), and the agreement of the
data along each component's tree edges on that component's rows. The harness is shared
with the Gaussian family (:mod:`tests.inference.gibbs.mixture_of_trees.twins`).
"""

import numpy as np
import pytest

from inference.gibbs.mixture_of_trees import MixtureOfTreesGibbs
from pp_models import mixture_of_trees
from tests.inference.gibbs.mixture_of_trees import twins as mot_twins

N_SAMPLES = 2000


def make_model():
    X = np.random.default_rng(0).integers(0, 2, size=(16, 4))
    beta = np.ones((4, 4))
    beta[0, 1] = beta[1, 0] = 4.0
    return mixture_of_trees.model(X, 2, alpha=3.0, ess=0.5, edge_prior=beta,
                                  split_merge=True)


def _agreeing_with_majority(rows):
    """Rows agreeing with their component's majority value, summed over variables."""
    ones = rows.sum(axis=0)
    return np.maximum(ones, len(rows) - ones).sum()


def _log_marginal(state):
    """log p(X | z, trees) with the model's CPT prior integrated out."""
    from custom_ops.mixture_of_trees.discrete import tree_mixture_logp

    return tree_mixture_logp(state["X"].astype(np.int64), state["z"].astype(np.int64),
                             state["trees"].astype(np.int64), np.array([2, 2, 2, 2]), 0.5)


def _w_of_z(state):
    """Mean weight of the rows' own components: couples w and z."""
    return float(np.mean(state["w"][state["z"]]))


def statistics(model):
    return mot_twins.statistics(
        16, 2, 4,
        edge_agreement=mot_twins.along_tree_edges(lambda xu, xv: np.sum(xu == xv)),
        edge01=mot_twins.edge01,
        homogeneity=mot_twins.per_component(_agreeing_with_majority),
        log_marginal=_log_marginal, w_of_z=_w_of_z)


class RemovesNothing(MixtureOfTreesGibbs):
    """Bug: x_i's own counts stay in its component's tables when it is reassigned."""

    def update_assignments(self, codes, z, trees, log_w):
        from custom_ops.mixture_of_trees.discrete import tree_tables

        n_changed = 0
        for i in range(codes.shape[0]):
            tables = tree_tables(codes, z, trees, self.n_categories)  # x_i not removed
            logp = log_w.copy()
            for k in range(trees.shape[0]):
                for v in range(codes.shape[1]):
                    p = trees[k, v]
                    j = codes[i, p] if p >= 0 else 0
                    Kp = 1 if p < 0 else self.n_categories[p]
                    a = self.ess / (Kp * self.n_categories[v])
                    row = tables[k, v, j, : self.n_categories[v]]
                    logp[k] += np.log(row[codes[i, v]] + a) - np.log(row.sum() + 2 * a)
            p = np.exp(logp - logp.max())
            new = self.rng.choice(len(p), p=p / p.sum())
            n_changed += int(new != z[i])
            z[i] = new
        return n_changed


class WrongEss(MixtureOfTreesGibbs):
    """Bug: the sampler's CPT prior (ess x 40) disagrees with the model's."""

    def __init__(self, vars, **options):
        super().__init__(vars, **options)
        self.ess *= 40


class IgnoresEdgePrior(mot_twins.IgnoresEdgePrior, MixtureOfTreesGibbs):
    """Bug: trees drawn from the data's Bayes factors alone, without beta."""


class SplitMergeWithoutReverse(MixtureOfTreesGibbs):
    """Bug: the split-merge acceptance ratio leaves out the reverse proposal
    probability q(z | T') (treats the sequential allocation as symmetric)."""

    def reallocation_log_ratio(self, log_target_new, log_target_old, log_q_forward,
                               log_q_reverse):
        return log_target_new - log_target_old - log_q_forward


class SplitMergeOnly(MixtureOfTreesGibbs):
    """Correct step with the one-row sweep of z switched off: only the split-merge move
    changes z, so the test sees that move alone (with a buggy twin below)."""

    def update_assignments(self, codes, z, trees, log_w):
        return 0


class SplitMergeOnlyWithoutReverse(SplitMergeOnly, SplitMergeWithoutReverse):
    """The planted bug of :class:`SplitMergeWithoutReverse` with the sweep off."""


class SplitMergeOnlyUniformWeights(SplitMergeOnly):
    """Bug: the split-merge move reads uniform mixture weights (a stale w) in its
    proposal and target."""

    def update_reallocations(self, codes, z, trees, log_w):
        uniform = np.full_like(log_w, -np.log(len(log_w)))
        return super().update_reallocations(codes, z, trees, uniform)


def _gir(step, seed, n_samples=N_SAMPLES):
    return mot_twins.run(make_model, statistics, step, seed, n_samples)


def test_correct_step_passes():
    result = _gir(None, seed=11)
    print(result)
    assert result.step_description == {"mixture_of_trees_gibbs": ["w", "z", "trees"]}
    result.assert_passed(0.01)


@pytest.mark.slow  # planted-bug power check (docs/architecture.md, "What runs where")
def test_planted_bug_is_caught():
    """Caught at 1000 draws on seeds 11, 12, 13 (measured)."""
    result = _gir(mot_twins.steps(IgnoresEdgePrior), seed=11, n_samples=1000)
    print(result.failures(0.01))
    assert not result.passed(0.01), str(result)


def test_split_merge_alone_passes_and_its_planted_bug_is_caught():
    """The split-merge move is the only update of z here (trees and w still Gibbs).
    Measured at 1000 draws: the correct move passed on seeds 12, 13 (and at 2000 on 12);
    the uniform-weights twin was caught on seeds 12, 13, 14; the twin without the
    reverse proposal probability passed at 2000 on seed 12 (too weak a bug here)."""
    result = _gir(mot_twins.steps(SplitMergeOnly), seed=12, n_samples=1000)
    print(result)
    result.assert_passed(0.01)
    broken = _gir(mot_twins.steps(SplitMergeOnlyUniformWeights), seed=12, n_samples=1000)
    print(broken.failures(0.01))
    assert not broken.passed(0.01), str(broken)


@pytest.mark.slow
def test_false_alarm_and_power():
    """10 seeds each at 4000 draws. Measured: correct 0/10 rejected; IgnoresEdgePrior
    10/10, WrongEss 10/10 (at 2000 draws it slips through); RemovesNothing (x_i left in
    its own component's counts: a little stickiness of z) 0/10, too weak a bug for these
    statistics at this size (the exact-enumeration sweep test in
    tests/custom_ops/mixture_of_trees/test_discrete.py is the check for that kind of error)."""
    seeds = range(100, 110)
    correct = sum(not _gir(None, seed=s, n_samples=4000).passed(0.01) for s in seeds)
    twins = {t.__name__: sum(not _gir(mot_twins.steps(t), seed=s, n_samples=4000).passed(0.01)
                             for s in seeds)
             for t in (IgnoresEdgePrior, WrongEss, RemovesNothing)}
    print("rejections out of 10: correct", correct, "twins", twins)
    assert correct <= 1, correct
    assert twins["IgnoresEdgePrior"] >= 9 and twins["WrongEss"] >= 9, twins
