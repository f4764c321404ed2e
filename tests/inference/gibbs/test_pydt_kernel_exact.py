"""The PYDT tree kernel against the exact tree distribution (digest §7 item 26).

A Markov kernel that leaves ``pi`` invariant maps exact draws from ``pi`` to exact draws
from ``pi``. So: draw ``R`` independent trees from the prior (the sequential generative
process, 4 leaves, no data), apply ``S`` sweeps of the tree step (detach-and-reattach
of every non-root node in random order, then slice sampling of every divergence time)
to each, and compare the ``R`` end states with the exact prior:

- the labelled topology (15 binary + 11 multifurcating shapes over 4 leaves) by a
  chi-square test against the closed-form structure probabilities
  (``custom_ops.pydt.log_structure_prob``, which sum to one over all shapes);
- the number of branch points (1, 2 or 3: how many multifurcations) by a chi-square
  test against the same closed form summed by shape; the shortcut twin makes too few
  multifurcations (a pilot run, seed 5, found this the most sensitive statistic);
- the root time by a two-sample Kolmogorov-Smirnov test against fresh prior draws.

The end states are independent, so the tests are exact (no autocorrelation, unlike
getting-it-right's chain) and cheap (no data, no NUTS). This catches the two
Metropolis-Hastings twins that the 5-leaf getting-it-right test catches on only 3 seeds
in 10: the thesis's prior-as-proposal shortcut applied to every subtree, and the full
ratio without the proposal densities ``g_R(old) / g_R(new)``.
"""

import math

import numpy as np
import pytest
from scipy import stats

from custom_ops.pydt import log_structure_prob
from inference.gibbs.pydt import _n_nonroot, detach_reattach, slice_time
from pp_models import pydt

N_LEAVES = 4
# many multi-leaf subtrees and multifurcations, so the twins' errors have room to show
PARAMS = {"c": 1.0, "theta": 1.0, "alpha": 0.3}
N_CHAINS = 1500
N_SWEEPS = 3


def topology(tree):
    """The labelled shape: the set of clades (leaf sets) under the internal nodes."""
    n = tree.n_leaves
    counts = {}
    for leaf in range(n):
        v = int(tree.parent[leaf])
        while v >= 0:
            counts.setdefault(v, set()).add(leaf)
            v = int(tree.parent[v])
    return frozenset(frozenset(s) for s in counts.values())


def exact_topologies(n, theta, alpha, seed=0):
    """Every labelled shape over ``n`` leaves with its closed-form probability (shapes
    collected from prior draws; the probabilities must sum to one, so none is missing)."""
    shapes = {}
    for draw in pydt.sample_prior(n, c=1.0, theta=theta, alpha=alpha, dim=0, size=4000,
                                  random_seed=seed):
        key = topology(draw.tree)
        if key not in shapes:
            shapes[key] = math.exp(log_structure_prob(draw.tree.parent, theta, alpha))
    total = sum(shapes.values())
    assert total == pytest.approx(1.0, abs=1e-9), total
    return shapes


def sweep(rng, tree, X, exact_ratio, proposal_ratio, *, c, theta, alpha):
    current = None
    for _ in range(_n_nonroot(tree)):
        candidates = np.flatnonzero(tree.parent >= 0)
        v = int(candidates[rng.integers(candidates.size)])
        _ok, current = detach_reattach(rng, tree, v, X, c, theta, alpha, 1.0, current,
                                       exact_ratio, proposal_ratio)
    for v in tree.internal_nodes[rng.permutation(tree.n_internal)]:
        current = slice_time(rng, tree, int(v), X, c, theta, alpha, 1.0, current)


def run_kernel(seed, *, exact_ratio=True, proposal_ratio=True, n_chains=N_CHAINS,
               n_sweeps=N_SWEEPS, params=PARAMS):
    """p-values (topology chi-square, number-of-branch-points chi-square, root-time KS)
    of the end states."""
    rng = np.random.default_rng(seed)
    X = np.zeros((N_LEAVES, 0))
    starts = pydt.sample_prior(N_LEAVES, dim=0, size=n_chains, random_seed=rng, **params)
    fresh = pydt.sample_prior(N_LEAVES, dim=0, size=n_chains, random_seed=rng, **params)
    ends = []
    for draw in starts:
        tree = draw.tree.copy()
        for _ in range(n_sweeps):
            sweep(rng, tree, X, exact_ratio, proposal_ratio, **params)
        ends.append(tree)
    shapes = exact_topologies(N_LEAVES, params["theta"], params["alpha"])
    keys = list(shapes)
    index = {k: i for i, k in enumerate(keys)}
    observed = np.bincount([index[topology(t)] for t in ends], minlength=len(keys))
    expected = n_chains * np.array([shapes[k] for k in keys])
    p_topology = stats.chisquare(observed, expected).pvalue
    # a shape with k clades has k branch points: 1, 2 or 3 over 4 leaves
    sizes = np.array([len(k) for k in keys])
    obs_int = np.array([observed[sizes == j].sum() for j in (1, 2, 3)])
    exp_int = np.array([expected[sizes == j].sum() for j in (1, 2, 3)])
    p_internal = stats.chisquare(obs_int, exp_int).pvalue
    p_root = stats.ks_2samp([t.root_time for t in ends],
                            [d.tree.root_time for d in fresh]).pvalue
    return p_topology, p_internal, p_root


def rejects(p_values, level=0.01):
    """Bonferroni over the tests (Holm's first step) at family-wise ``level``."""
    return min(p_values) * len(p_values) < level


def test_exact_topologies_cover_all_26_labelled_shapes():
    shapes = exact_topologies(N_LEAVES, PARAMS["theta"], PARAMS["alpha"])
    assert len(shapes) == 26


def test_kernel_keeps_the_exact_prior():
    # seed 200 is the first of the ten seeds measured in the slow test (0/10 rejected at
    # this size); see test_kernel_bias_at_large_sample for the small bias seen with 10x
    # more chains
    p = run_kernel(seed=200)
    print("correct kernel p-values (topology, branch points, root time):", p)
    assert not rejects(p)


def test_prior_as_proposal_shortcut_is_caught():
    p = run_kernel(seed=1, exact_ratio=False)
    print("shortcut twin p-values (topology, branch points, root time):", p)
    assert rejects(p)


def test_missing_proposal_ratio_is_caught():
    # a gross error (p ~ 1e-60 at 1500 chains): 300 chains suffice
    p = run_kernel(seed=1, proposal_ratio=False, n_chains=300)
    print("no-proposal-ratio twin p-values (topology, branch points, root time):", p)
    assert rejects(p)


@pytest.mark.slow
def test_false_alarm_and_power_over_ten_seeds():
    seeds = range(200, 210)
    correct = sum(rejects(run_kernel(s)) for s in seeds)
    shortcut = sum(rejects(run_kernel(s, exact_ratio=False)) for s in seeds)
    no_q = sum(rejects(run_kernel(s, proposal_ratio=False)) for s in seeds)
    print(f"rejections out of 10: correct {correct}, shortcut {shortcut}, "
          f"no proposal ratio {no_q}")
    # measured 2026-11-26 (seeds 200-209, 1500 chains x 3 sweeps): correct 0/10;
    # shortcut 10/10 (largest Bonferroni p 0.004, the branch-point count always the
    # smallest); no proposal ratio 10/10 (largest p ~ 1e-53)
    assert correct <= 2
    assert shortcut >= 9
    assert no_q >= 9


@pytest.mark.slow
def test_kernel_bias_at_large_sample():
    """FAILS at the time of writing (2026-11-26): a small bias of the correct kernel.

    15000 chains x 12 sweeps from exact prior draws (seed 51): binary trees (3 branch
    points) 0.2481 of the end states vs the exact 0.2609, stars (1 branch point) 0.1967 vs
    0.1901 (chi-square p 9e-4), latest-divergence-time KS p 2e-3. After 3 sweeps the
    binary share was 0.252-0.256 on four seeds of 20000 chains (p 8e-5, 0.11, 0.11,
    0.03): the deficit grows with the sweeps, so it is the kernel's stationary
    distribution, not the start. sample_attach and log_attach_density agree (checked by
    Monte Carlo with and without truncation); the cause was not found in this session.
    """
    p = run_kernel(51, n_chains=15000, n_sweeps=12)
    print("correct kernel, 15000 chains x 12 sweeps:", p)
    assert not rejects(p)
