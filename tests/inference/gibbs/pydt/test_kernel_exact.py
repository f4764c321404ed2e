"""The PYDT tree kernel against the exact tree distribution (digest §7 item 26).

A Markov kernel that leaves ``pi`` invariant maps exact draws from ``pi`` to exact draws
from ``pi``. So: draw ``R`` independent trees from the prior (the sequential generative
process, 4 leaves, no data), apply ``S`` sweeps of the tree step's moves (``2n - 2``
detach-and-reattach moves of uniformly chosen non-root nodes, then slice sampling of
every divergence time) to each, and compare the ``R`` end states with the exact prior:

- the labelled topology (15 binary + 11 multifurcating shapes over 4 leaves) by a
  chi-square test against the closed-form structure probabilities
  (``custom_ops.pydt.density.log_structure_prob``, which sum to one over all shapes);
- the number of branch points (1, 2 or 3: how many multifurcations) by a chi-square
  test against the same closed form summed by shape; the shortcut twin makes too few
  multifurcations (a pilot run, seed 5, found this the most sensitive statistic);
- the root time by a two-sample Kolmogorov-Smirnov test against fresh prior draws.

The end states are independent, so the tests are exact (no autocorrelation, unlike
getting-it-right's chain) and cheap (no data, no NUTS). This catches the two
Metropolis-Hastings twins that the 5-leaf getting-it-right test catches on only 3 seeds
in 10: the thesis's prior-as-proposal shortcut applied to every subtree, and the full
ratio without the proposal densities ``g_R(old) / g_R(new)``. It also found a bug in
``PYDTTreeStep`` (a number of moves per sweep read off the current tree; see
:func:`test_tree_step_move_count_is_fixed`, which fails until it is fixed).
"""

import math

import numpy as np
import pytest
from scipy import stats

from custom_ops.pydt.ops import log_structure_prob
from pp_models import pydt
from tests.inference.gibbs.pydt.python_moves import _n_nonroot, detach_reattach, slice_time
from tests.oracles.pydt import shape_key

N_LEAVES = 4
# many multi-leaf subtrees and multifurcations, so the twins' errors have room to show
PARAMS = {"c": 1.0, "theta": 1.0, "alpha": 0.3}
N_CHAINS = 1500
N_SWEEPS = 3


def exact_topologies(n, theta, alpha, seed=0):
    """Every labelled shape over ``n`` leaves with its closed-form probability (shapes
    collected from prior draws; the probabilities must sum to one, so none is missing)."""
    shapes = {}
    for draw in pydt.sample_prior(n, c=1.0, theta=theta, alpha=alpha, dim=0, size=4000,
                                  random_seed=seed):
        key = shape_key(draw.tree)
        if key not in shapes:
            shapes[key] = math.exp(log_structure_prob(draw.tree.parent, theta, alpha))
    total = sum(shapes.values())
    assert total == pytest.approx(1.0, abs=1e-9), total
    return shapes


def sweep(rng, tree, X, exact_ratio, proposal_ratio, *, c, theta, alpha,
          state_dependent_count=False, slice_times=True):
    """Detach-reattach moves, then every divergence time slice-sampled once.

    The number of moves must not depend on the current tree: ``2 n - 2`` (the non-root
    nodes of a binary tree). ``state_dependent_count=True`` makes one move per non-root
    node of the tree at the start of the sweep, as ``PYDTTreeStep`` did:
    a kernel applied a number of times chosen by the state is not invariant (trees with
    fewer branch points get fewer moves), see :func:`test_tree_step_move_count_is_fixed`.
    """
    current = None
    n_moves = _n_nonroot(tree) if state_dependent_count else 2 * tree.n_leaves - 2
    for _ in range(n_moves):
        candidates = np.flatnonzero(tree.parent >= 0)
        v = int(candidates[rng.integers(candidates.size)])
        _ok, current = detach_reattach(rng, tree, v, X, c, theta, alpha, 1.0, current,
                                       exact_ratio, proposal_ratio)
    if not slice_times:
        return
    for v in tree.internal_nodes[rng.permutation(tree.n_internal)]:
        current = slice_time(rng, tree, int(v), X, c, theta, alpha, 1.0, current)


def run_kernel(seed, *, exact_ratio=True, proposal_ratio=True, n_chains=N_CHAINS,
               n_sweeps=N_SWEEPS, params=PARAMS, state_dependent_count=False,
               slice_times=True):
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
            sweep(rng, tree, X, exact_ratio, proposal_ratio,
                  state_dependent_count=state_dependent_count, slice_times=slice_times,
                  **params)
        ends.append(tree)
    shapes = exact_topologies(N_LEAVES, params["theta"], params["alpha"])
    keys = list(shapes)
    index = {k: i for i, k in enumerate(keys)}
    observed = np.bincount([index[shape_key(t)] for t in ends], minlength=len(keys))
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
    # seed 200: the first of the ten seeds of the slow measurement
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
    # measured (seeds 200-209, 1500 chains x 3 sweeps of 2n - 2 moves):
    # correct 0/10 (smallest Bonferroni p 0.055); shortcut 10/10 (largest Bonferroni p
    # 0.001, the branch-point count always the smallest); no proposal ratio 10/10
    # (largest p ~ 1e-82). Under the state-dependent move count the twins were caught
    # 10/10 too, and the "correct" kernel 0/10 at this size (its bias needs ~10x more)
    assert correct <= 2
    assert shortcut >= 9
    assert no_q >= 9


def test_tree_step_move_count_is_fixed():
    """``PYDTTreeStep.step`` asks its sweep for the same number of detach-reattach moves
    from a star and from a binary tree (the sweep's own count, ``2 n - 2`` for ``-1``, is
    tested in tests/custom_ops/pydt/test_sweep.py). Each move leaves the posterior
    invariant, but a state-dependent number of them does not: on 4 leaves the end states
    had too many stars and too few binary trees (test_state_dependent_move_count_is_biased).
    This test failed when the step asked for ``_n_nonroot(tree)`` moves, a number read off
    the current tree; the step now defaults to ``2 n - 2`` (``moves``), a count that
    depends on n only."""
    import pymc as pm

    from custom_ops.pydt.sweep import pydt_sweep
    from inference.gibbs.pydt import PYDTTreeStep
    from pp_models.distributions import PYDiffusionTree
    from pp_models.trees import DiffusionTree

    asked = []

    def counting_sweep(rng, parent, log1m_t, X, params, n_moves, *rest):
        asked.append(2 * X.shape[0] - 2 if n_moves < 0 else n_moves)
        return pydt_sweep(rng, parent, log1m_t, X, params, n_moves, *rest)

    class CountingStep(PYDTTreeStep):
        name = "test_pydt_counting"
        sweep_kernel = staticmethod(counting_sweep)

    with pm.Model() as m:
        PYDiffusionTree("tree", 1.0, 1.0, 0.3, N_LEAVES)
    step = CountingStep([m["tree"]], model=m, rng=0, slice_times=False, greedy_start=False,
                        branch_moves=0)
    star = DiffusionTree(np.array([4, 4, 4, 4, -1, -2, -2]), np.array([-0.5, 0.0, 0.0]))
    binary = DiffusionTree(np.array([5, 5, 6, 6, -1, 4, 4]), np.array([-0.2, -1.0, -1.0]))
    for tree in (star, binary):
        step.step({"tree": tree.to_packed()})
    assert asked == [2 * N_LEAVES - 2] * 2, f"moves per sweep (star, binary): {asked}"


@pytest.mark.slow
def test_state_dependent_move_count_is_biased():
    """The consequence of the count in test_tree_step_move_count_is_fixed: measured
    with the real detach_reattach, 15000 chains x 12 sweeps of moves only
    (seed 62): binary trees 0.2445 of the end states vs the exact 0.2609, stars 0.2033
    vs 0.1901 (chi-square p 4e-7); with slice sampling too it is weaker (seed 51: p 9e-4;
    this test's seed 62: p 0.12-0.34, not detected), so this test moves only. With a fixed
    count (2 n - 2 moves) and everything else unchanged: see
    test_kernel_keeps_the_exact_prior_at_large_sample. This test asserts the bias (it
    documents the bug; it passes while the bug is understood)."""
    p = run_kernel(62, n_chains=15000, n_sweeps=12, state_dependent_count=True,
                   slice_times=False)
    print("state-dependent move count, 15000 chains x 12 sweeps:", p)
    assert rejects(p)


@pytest.mark.slow
def test_kernel_keeps_the_exact_prior_at_large_sample():
    """Measured (the same design through the study script, 15000 chains x 12
    sweeps, seed 51): binary 0.2575 vs 0.2609, stars 0.1918 vs 0.1901, p 0.61 (root-time
    KS 0.17); with the state-dependent count the same seed gave p 9e-4."""
    p = run_kernel(51, n_chains=15000, n_sweeps=12)
    print("fixed move count, 15000 chains x 12 sweeps:", p)
    assert not rejects(p)
