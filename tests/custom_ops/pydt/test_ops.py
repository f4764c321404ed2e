"""Pitman-Yor diffusion tree Op: the Gaussian likelihood against the dense MVN, the prior
against the thesis's worked example, an independent point-by-point replay of the
generative process (Lemma 1), enumeration of every tree shape, the DDT formulas,
numerical integration over the times, gradients, the Numba backend and bad input
(Knowles 2012 ch. 4; digest knowles-nsfa-pydt.md §3, §7 items 14-22)."""

import math
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from scipy import integrate, special, stats

from custom_ops.pydt import draws as pydt_draws
from custom_ops.pydt import ops as pydt
from custom_ops.trees.diffusion import diffusion_tree_mrca_times
from pp_models.trees import DiffusionTree
from tests.oracles.pydt import all_trees, nested_to_arrays


# ------------------------------------------------------------------ helpers
def draw_tree(rng, n, c=1.0, theta=1.0, alpha=0.3):
    parent = np.empty(2 * n - 1, dtype=np.int64)
    log1m_t = np.empty(n - 1)
    pydt_draws.pydt_draw_tree(rng, n, c, theta, alpha, parent, log1m_t)
    return parent, log1m_t


def fig42_tree(t_a=0.3, t_b=0.6):
    """Knowles Fig 4.2: a -> {b, x2, x4}, b -> {x1, x3}; leaves x1..x4 are 0..3,
    a = 4, b = 5, slot 6 unused."""
    parent = np.array([5, 4, 5, 4, -1, 4, -2])
    log1m_t = np.log1p(-np.array([t_a, t_b, 0.0]))
    return parent, log1m_t


def prior(parent, log1m_t, c, theta, alpha):
    n = (parent.shape[0] + 1) // 2
    return pydt.pydt_forward(parent, log1m_t, np.zeros((n, 0)), c, theta, alpha, 1.0)[0]


# ------------------------------------------------------------------ independent replay
def induced(parent, log1m_t, n, subset):
    """The tree restricted to the leaves in ``subset``: node -> (parent node, time) for
    the nodes with >= 2 children holding subset leaves, plus the subset leaves."""
    # log(1 - t) of every node (-inf at the leaves): A(t) = -c log(1 - t) stays exact
    t = {v: (-math.inf if v < n else log1m_t[v - n]) for v in range(2 * n - 1)}
    keep_count = {}
    for i in subset:
        v = parent[i]
        seen = {i}
        while v >= 0:
            seen.add(v)
            v = parent[v]
        for v in seen:
            keep_count.setdefault(v, set())
        # record which child-branch each ancestor is reached through
        prev = i
        v = parent[i]
        while v >= 0:
            keep_count[v].add(prev)
            prev = v
            v = parent[v]
    nodes = {i for i in subset} | {v for v, ch in keep_count.items() if v >= n and len(ch) >= 2}
    par = {}
    for v in nodes:
        p = parent[v]
        while p >= 0 and p not in nodes:
            p = parent[p]
        par[v] = p
    return nodes, par, t


def replay_log_density(parent, log1m_t, order, c, theta, alpha):
    """log p(structure, times) by adding the points one at a time in ``order`` with the
    sequential process (Eqs. 4.9-4.11 and 4.16), written without the closed form."""
    n = (parent.shape[0] + 1) // 2

    def A(l):
        return -c * l

    def rate(m):
        return math.exp(math.lgamma(m - alpha) - math.lgamma(m + 1 + theta))

    total = 0.0
    for k in range(1, n):
        prev_nodes, prev_par, t = induced(parent, log1m_t, n, order[:k])
        nodes, par, _ = induced(parent, log1m_t, n, order[: k + 1])
        i = order[k]

        def below(v, par=prev_par, nodes=prev_nodes):
            count = 0
            for leaf in nodes:
                if leaf < n:
                    w = leaf
                    while w >= 0 and w != v:
                        w = par[w]
                    count += w == v
            return count

        attach = par[i]  # where point i diverged
        new_node = attach not in prev_nodes
        # the path of point i through the old tree: from the old root down to the node
        # below which (or at which) it diverged
        target = None
        if new_node:
            # the old node just below the new branch point
            kids = [v for v in nodes if par[v] == attach and v != i]
            target = kids[0]
        else:
            target = attach
        path = [target]
        while prev_par[path[-1]] >= 0:
            path.append(prev_par[path[-1]])
        path = path[::-1]
        t_top = 0.0  # log(1 - 0)
        for j, v in enumerate(path):
            m = below(v)
            if new_node and v == target:
                total += -(A(t[attach]) - A(t_top)) * rate(m)
                total += math.log(c * rate(m)) - t[attach]  # a(t) = c / (1 - t)
                break
            total += -(A(t[v]) - A(t_top)) * rate(m)
            kids = [w for w in prev_nodes if prev_par[w] == v]
            if not new_node and v == target:
                total += math.log((theta + alpha * len(kids)) / (m + theta))
                break
            nxt = path[j + 1]
            total += math.log((below(nxt) - alpha) / (m + theta))
            t_top = t[v]
    return total


# ------------------------------------------------------------------ likelihood
@pytest.mark.parametrize(
    ("n", "d", "c", "theta", "alpha", "seed"),
    [(2, 1, 1.0, 1.0, 0.0, 0), (5, 2, 1.3, 0.0, 0.0, 1), (8, 3, 2.0, 2.0, 0.4, 2),
     (12, 1, 20.0, 5.0, 0.6, 3)],
)
def test_likelihood_equals_dense_mvn(n, d, c, theta, alpha, seed):
    rng = np.random.default_rng(seed)
    parent, log1m_t = draw_tree(rng, n, c, theta, alpha)
    X = rng.normal(size=(n, d)) * 1.5
    sigma2 = 0.8
    C = np.eye(n)
    # the covariance built here from the nested definition, not the kernel
    tree = DiffusionTree(parent, log1m_t)
    anc = {}
    for i in range(n):
        chain, v = [], i
        while v >= 0:
            chain.append(v)
            v = parent[v]
        anc[i] = chain
    for i in range(n):
        for j in range(n):
            if i != j:
                common = next(v for v in anc[i] if v in anc[j])
                C[i, j] = tree.time(common)
    np.testing.assert_allclose(diffusion_tree_mrca_times(parent, log1m_t, n), C)
    ref = sum(stats.multivariate_normal(np.zeros(n), sigma2 * C).logpdf(X[:, j])
              for j in range(d))
    ll = pydt.pydt_forward(parent, log1m_t, X, 1.0, theta, alpha, sigma2)[1]
    assert ll == pytest.approx(ref, rel=1e-10, abs=1e-10)


def test_likelihood_is_small_c_safe():
    """Two leaves diverging within 1e-13 of t = 1 (small c) keep their resolution in
    log(1 - t); the reference conditions analytically on the sum and difference."""
    parent = np.array([3, 3, 4, 4, -1])  # leaves 0, 1 under node 3; node 3 and leaf 2 under 4
    log1m_t = np.array([-30.0, -2.0])
    x0, x1, x2 = 0.3, 0.3 + 1e-7, -1.0
    X = np.array([[x0], [x1], [x2]])
    ll = pydt.pydt_forward(parent, log1m_t, X, 1.0, 0.0, 0.0, 1.0)[1]
    e, e2 = math.exp(-30.0), math.exp(-2.0)
    t_root = 1 - e2
    m = t_root * x2  # E[x_root | x2]
    V = t_root * e2 + e2 - e  # Var[x_inner | x2]
    ref = (stats.norm(0, 1).logpdf(x2)
           + stats.norm(m, math.sqrt(V + e / 2)).logpdf((x0 + x1) / 2)
           + stats.norm(0, math.sqrt(2 * e)).logpdf(x1 - x0))
    assert ll == pytest.approx(ref, rel=1e-9)


# ------------------------------------------------------------------ prior
def test_worked_example_eq_4_17_by_hand():
    """Knowles Eq 4.17 (Fig 4.2, a(t) = 1/(1-t), theta = 1, alpha = 0), typed from the
    thesis term by term, with a non-zero alpha too."""
    t_a, t_b = 0.3, 0.6
    parent, log1m_t = fig42_tree(t_a, t_b)
    for theta, alpha in [(1.0, 0.0), (1.5, 0.25)]:
        G = math.gamma

        def A(t):
            return -math.log(1 - t)

        def a(t):
            return 1 / (1 - t)

        point2 = math.exp(-A(t_a) * G(1 - alpha) / G(2 + theta)) * a(t_a) * G(1 - alpha) / G(
            2 + theta
        )
        point3 = (
            math.exp(-A(t_a) * G(2 - alpha) / G(3 + theta))
            * (1 - alpha) / (2 + theta)
            * math.exp((A(t_a) - A(t_b)) * G(1 - alpha) / G(2 + theta))
            * a(t_b) * G(1 - alpha) / G(2 + theta)
        )
        point4 = math.exp(-A(t_a) * G(3 - alpha) / G(4 + theta)) * (theta + 2 * alpha) / (
            3 + theta
        )
        expected = math.log(point2 * point3 * point4)
        assert prior(parent, log1m_t, 1.0, theta, alpha) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_closed_form_equals_sequential_replay_in_any_order(seed):
    """Lemma 1: replaying the points one at a time (Eqs. 4.9-4.11, 4.16) in any order gives
    the closed form (Eqs. 4.23 x 4.25)."""
    rng = np.random.default_rng(10 + seed)
    n = 6
    c, theta, alpha = [(1.0, 1.0, 0.0), (0.4, 2.5, 0.5), (2.0, 0.3, 0.1), (1.0, 4.0, -1.0)][
        seed
    ]
    parent, log1m_t = draw_tree(rng, n, c, theta, alpha)
    closed = prior(parent, log1m_t, c, theta, alpha)
    for _ in range(3):
        order = [int(i) for i in rng.permutation(n)]
        assert replay_log_density(parent, log1m_t, order, c, theta, alpha) == pytest.approx(
            closed, rel=1e-10, abs=1e-10
        )


def test_exchangeable_under_leaf_relabelling():
    rng = np.random.default_rng(5)
    n, d = 9, 2
    parent, log1m_t = draw_tree(rng, n, 1.0, 1.5, 0.2)
    X = rng.normal(size=(n, d))
    base = pydt.pydt_forward(parent, log1m_t, X, 1.0, 1.5, 0.2, 0.6)
    perm = rng.permutation(n)  # leaf i becomes leaf perm[i]
    new_parent = parent.copy()
    new_parent[perm] = parent[:n]
    new_X = np.empty_like(X)
    new_X[perm] = X
    moved = pydt.pydt_forward(new_parent, log1m_t, new_X, 1.0, 1.5, 0.2, 0.6)
    np.testing.assert_allclose(moved, base, rtol=1e-12)
    # relabelling internal slots changes nothing either
    sl = np.array([n + k for k in rng.permutation(n - 1)])  # old slot n+k -> sl[k]
    remap = np.arange(2 * n - 1)
    remap[n:] = sl
    p2 = np.full(2 * n - 1, -2)
    l2 = np.zeros(n - 1)
    for v in range(2 * n - 1):
        if parent[v] != -2:
            p2[remap[v]] = remap[parent[v]] if parent[v] >= 0 else -1
        if v >= n:
            l2[remap[v] - n] = log1m_t[v - n]
    np.testing.assert_allclose(pydt.pydt_forward(p2, l2, X, 1.0, 1.5, 0.2, 0.6), base,
                               rtol=1e-12)


@pytest.mark.parametrize(("theta", "alpha"), [(1.0, 0.0), (0.5, 0.3), (2.0, 0.7), (0.0, 0.0),
                                              (3.0, -1.0), (-0.6, 0.3)])
@pytest.mark.parametrize("n", [3, 4])
def test_structure_probabilities_sum_to_one(n, theta, alpha):
    trees = all_trees(tuple(range(n)))
    assert len(trees) == {3: 4, 4: 26}[n]
    total = sum(math.exp(pydt.log_structure_prob(nested_to_arrays(t, n)[0], theta, alpha))
                for t in trees)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_trifurcation_probability_at_n3():
    """Digest §7 item 19: P(one 3-way split) = (theta + 2 alpha) / (3 + theta - alpha)."""
    parent, _ = nested_to_arrays((0, 1, 2), 3)
    for theta, alpha in [(1.0, 0.0), (0.5, 0.3), (2.0, 0.5), (3.0, -1.0), (0.0, 0.0)]:
        p = math.exp(pydt.log_structure_prob(parent, theta, alpha))
        assert p == pytest.approx((theta + 2 * alpha) / (3 + theta - alpha), abs=1e-14)


@pytest.mark.parametrize(("shape", "c", "theta", "alpha"), [
    (((0, 1), 2), 1.5, 0.7, 0.2),
    (((0, 2), 1), 0.6, 1.0, 0.0),
    ((0, 1, 2), 1.5, 0.7, 0.2),
    ((0, 1, 2), 2.0, 3.0, -1.0),
])
def test_times_integrate_to_the_structure_probability(shape, c, theta, alpha):
    """The Op's joint density of structure and times (density in t), integrated over the
    ordered times by quadrature, equals the Markov-branching structure probability."""
    n = 3
    parent, log1m_t = nested_to_arrays(shape, n)
    slots = [v - n for v in range(n, 2 * n - 1) if parent[v] != -2]

    def dens(*ts):
        lt = log1m_t.copy()
        for k, t in zip(slots, ts, strict=True):
            lt[k] = math.log1p(-t)
        return math.exp(prior(parent, lt, c, theta, alpha))

    if len(slots) == 1:
        val = integrate.quad(dens, 0, 1, limit=200)[0]
    else:
        # slots[0] is the root (it was created first), slots[1] its child
        val = integrate.dblquad(lambda t2, t1: dens(t1, t2), 0, 1, lambda t1: t1, 1,
                                epsabs=1e-10, epsrel=1e-8)[0]
    expected = math.exp(pydt.log_structure_prob(parent, theta, alpha))
    assert val == pytest.approx(expected, rel=1e-6)


def test_two_leaves_divergence_time_is_beta():
    """Digest §7 item 18: for n = 2, t ~ Beta(1, c kappa_1), kappa_1 = Gamma(1 - alpha) /
    Gamma(2 + theta)."""
    parent = np.array([2, 2, -1])
    for c, theta, alpha in [(1.0, 0.0, 0.0), (0.3, 2.0, 0.5), (4.0, 1.0, -0.5)]:
        kappa = math.gamma(1 - alpha) / math.gamma(2 + theta)
        for t in [0.01, 0.5, 0.999]:
            got = prior(parent, np.array([math.log1p(-t)]), c, theta, alpha)
            assert got == pytest.approx(stats.beta(1, c * kappa).logpdf(t), rel=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_theta_alpha_zero_is_the_ddt(seed):
    """Lemma 2 / Eqs. 4.29-4.31: at theta = alpha = 0 the closed form is Neal's DDT,
    prod over nodes a(t) exp[A(t)(H_{l-1} + H_{r-1} - H_{m-1})] (l-1)!(r-1)!/(m-1)!
    (Eqs. 4.5-4.6) with ordinary harmonic numbers."""
    rng = np.random.default_rng(seed)
    n, c = 7, [0.5, 1.0, 2.5][seed]
    parent, log1m_t = draw_tree(rng, n, c, 0.0, 0.0)
    tree = DiffusionTree(parent, log1m_t)
    assert tree.is_binary
    counts = tree.leaf_counts()

    def harmonic(k):
        return sum(1.0 / i for i in range(1, k + 1))

    ref = 0.0
    for v in tree.internal_nodes:
        left, right = (int(counts[w]) for w in tree.children(v))
        m = left + right
        t = tree.time(v)
        J = harmonic(m - 1) - harmonic(left - 1) - harmonic(right - 1)
        ref += math.log(c) + (c * J - 1) * math.log1p(-t)
        ref += math.lgamma(left) + math.lgamma(right) - math.lgamma(m)
    assert prior(parent, log1m_t, c, 0.0, 0.0) == pytest.approx(ref, rel=1e-12)
    # and the H table reduces to harmonic numbers (Eq. 4.31)
    H = pydt.h_table(6, 0.0, 0.0)[0]
    np.testing.assert_allclose(H, [harmonic(k) for k in range(7)], rtol=1e-14)


def test_bounded_degree_and_binary_families():
    parent, log1m_t = fig42_tree()  # has a 3-way node
    assert prior(parent, log1m_t, 1.0, 0.0, 0.0) == -np.inf  # DDT: binary only
    assert prior(parent, log1m_t, 1.0, 0.6, -0.3) == -np.inf  # theta = -2 alpha: binary
    assert np.isfinite(prior(parent, log1m_t, 1.0, 0.9, -0.3))  # kappa = 3
    assert prior(parent, log1m_t, 1.0, -0.4, 0.2) == -np.inf  # theta = -2 alpha: binary
    assert np.isfinite(prior(parent, log1m_t, 1.0, -0.3, 0.2))  # theta > -2 alpha


# ------------------------------------------------------------------ gradients
def _symbolic(parent, n, d):
    l = pt.dvector("log1m_t")
    X = pt.dmatrix("X")
    c, th, al, s2 = (pt.dscalar(k) for k in ("c", "theta", "alpha", "sigma2"))
    lp, ll = pydt.PYDTLogProb()(pt.constant(parent), l, X, c, th, al, s2)
    return (l, X, c, th, al, s2), lp, ll


@pytest.mark.parametrize("which", ["fig42", "random_binary", "random_multi"])
def test_verify_grad_every_continuous_input(which):
    rng = np.random.default_rng(7)
    mode = Mode(linker="py", optimizer="fast_compile")  # the kernels, without a compile
    if which == "fig42":
        parent, log1m_t = fig42_tree()
        theta, alpha = 1.2, 0.3
    elif which == "random_binary":
        parent, log1m_t = draw_tree(rng, 6, 1.0, 0.0, 0.0)
        theta, alpha = 0.5, 0.1
    else:
        parent, log1m_t = draw_tree(rng, 9, 4.0, 3.0, 0.4)
        theta, alpha = 2.0, 0.35
    n = (parent.shape[0] + 1) // 2
    X = rng.normal(size=(n, 2))
    point = [log1m_t, X, np.array(1.3), np.array(theta), np.array(alpha), np.array(0.7)]
    for k in range(6):

        def fn(x, k=k):
            args = [pt.as_tensor_variable(p) for p in point]
            args[k] = x
            lp, ll = pydt.PYDTLogProb()(parent, *args)
            return 0.7 * lp + 1.3 * ll

        pytensor.gradient.verify_grad(fn, [point[k]], rng=rng, abs_tol=1e-6, rel_tol=1e-5,
                                      mode=mode)


def test_grad_of_each_output_separately_and_parent_is_discrete():
    parent, log1m_t = fig42_tree()
    X = np.random.default_rng(0).normal(size=(4, 3))
    (l, Xs, c, th, al, s2), lp, ll = _symbolic(parent, 4, 3)
    g_lp = pytensor.grad(lp, [c, s2, l])
    g_ll = pytensor.grad(ll, [c, s2, l])
    f = pytensor.function([l, Xs, c, th, al, s2], [*g_lp, *g_ll])
    out = f(log1m_t, X, 1.3, 1.0, 0.2, 0.7)
    assert out[1] == 0.0  # prior does not involve sigma2
    assert out[3] == 0.0  # likelihood does not involve c
    eps = 1e-6
    fd = (pydt.pydt_forward(parent, log1m_t, X, 1.3, 1.0, 0.2, 0.7 + eps)[1]
          - pydt.pydt_forward(parent, log1m_t, X, 1.3, 1.0, 0.2, 0.7 - eps)[1]) / (2 * eps)
    assert out[4] == pytest.approx(fd, rel=1e-6)
    pv = pt.lvector("parent")
    lp2, _ = pydt.PYDTLogProb()(pv, l, Xs, c, th, al, s2)
    with pytest.raises(pytensor.gradient.NullTypeGradError):
        pytensor.grad(lp2, pv)


def test_constant_data_gradient_skips_the_leaves_and_agrees():
    """With X a constant (observed data in PyMC) the gradient Op is built without the
    data adjoints; its gradients equal those of the graph with X an input, on both
    backends."""
    rng = np.random.default_rng(4)
    parent, log1m_t = draw_tree(rng, 30)
    X = rng.normal(size=(30, 5))
    (l, Xs, c, th, al, s2), lp, ll = _symbolic(parent, 30, 5)
    wrt = [l, c, th, al, s2]
    g_var = pytensor.grad(lp + ll, wrt)
    lp_c, ll_c = pydt.PYDTLogProb()(parent, l, pt.constant(X), c, th, al, s2)
    g_const = pytensor.grad(lp_c + ll_c, wrt)
    point = (log1m_t, 1.3, 1.0, 0.2, 0.7)
    for mode in (Mode(linker="py", optimizer="fast_run"), "NUMBA"):
        f_var = pytensor.function([l, Xs, c, th, al, s2], g_var, mode=mode)
        f_const = pytensor.function(wrt, g_const, mode=mode)
        ops = [node.op for node in f_const.maker.fgraph.apply_nodes
               if isinstance(node.op, pydt.PYDTLogProbGrad)]
        assert ops and all(not op.wrt_data for op in ops)
        expected = f_var(log1m_t, X, *point[1:])
        for got, want in zip(f_const(*point), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-12)


# ------------------------------------------------------------------ backends, shapes
def test_numba_backend_no_object_mode_and_matches_python():
    rng = np.random.default_rng(3)
    parent, log1m_t = draw_tree(rng, 30, 1.0, 1.0, 0.3)
    X = rng.normal(size=(30, 4))
    (l, Xs, c, th, al, s2), lp, ll = _symbolic(parent, 30, 4)
    total = lp + ll
    grads = pytensor.grad(total, [l, Xs, c, th, al, s2])
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        f_nb = pytensor.function([l, Xs, c, th, al, s2], [lp, ll, *grads], mode="NUMBA")
    f_py = pytensor.function([l, Xs, c, th, al, s2], [lp, ll, *grads],
                             mode=Mode(linker="py"))
    args = (log1m_t, X, 1.1, 1.0, 0.3, 0.9)
    for a, b in zip(f_nb(*args), f_py(*args), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12)
    shapes = [np.shape(v) for v in f_nb(*args)]
    assert shapes == [(), (), (29,), (30, 4), (), (), (), ()]


def test_infer_shape_and_prior_only_with_zero_columns():
    parent, log1m_t = fig42_tree()
    out = pydt.pydt_logp_terms(parent, log1m_t, np.zeros((4, 0)), 1.0, 1.0, 0.0, 1.0)
    assert out[1].eval() == 0.0
    assert out[0].eval() == pytest.approx(prior(parent, log1m_t, 1.0, 1.0, 0.0))
    total = pydt.pydt_logp(parent, log1m_t, np.ones((4, 2)), 1.0, 1.0, 0.0, 1.0)
    assert total.type.shape == ()
    l = pt.dvector("l")
    (g,) = pytensor.grad(pydt.pydt_logp(parent, l, np.ones((4, 2)), 1.0, 1.0, 0.0, 1.0), [l])
    fg = pytensor.function([l], g.shape)
    assert tuple(fg(log1m_t)) == (3,)


def test_unused_slot_has_zero_gradient_and_no_effect():
    parent, log1m_t = fig42_tree()
    X = np.random.default_rng(1).normal(size=(4, 2))
    out = pydt.pydt_value_and_grad(
        parent, log1m_t, X, pydt.PYDTParameters(1.0, 1.0, 0.2, 0.5), pydt.Cotangents(1.0, 1.0))
    assert out[2][2] == 0.0
    moved = log1m_t.copy()
    moved[2] = -5.0
    assert pydt.pydt_forward(parent, moved, X, 1.0, 1.0, 0.2, 0.5) == pydt.pydt_forward(
        parent, log1m_t, X, 1.0, 1.0, 0.2, 0.5)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("kwargs", "match"), [
    ({"alpha": 1.0}, "alpha"),
    ({"alpha": 1.5}, "alpha"),
    ({"theta": -0.5, "alpha": 0.2}, "theta"),
    ({"theta": 0.5, "alpha": -0.3}, "theta"),  # alpha < 0 needs theta = -kappa alpha
    ({"c": 0.0}, "c:"),
    ({"c": -1.0}, "c:"),
    ({"sigma2": 0.0}, "sigma2"),
    ({"sigma2": np.nan}, "sigma2"),
    ({"theta": np.inf}, "theta"),
])
def test_bad_parameters_raise(kwargs, match):
    parent, log1m_t = fig42_tree()
    args = {"c": 1.0, "theta": 1.0, "alpha": 0.1, "sigma2": 1.0, **kwargs}
    with pytest.raises(ValueError, match=match):
        pydt.pydt_logp(parent, log1m_t, np.zeros((4, 1)), **args)
    # symbolic parameters out of range give -inf at run time
    c = pt.dscalar("c")
    f = pytensor.function([c], pydt.pydt_logp(parent, log1m_t, np.zeros((4, 1)), c, 1.0,
                                               0.1, 1.0))
    assert f(-1.0) == -np.inf


@pytest.mark.parametrize(("parent", "log1m_t", "match"), [
    ([5, 6, 4, 4, -1, 6, 5], [-0.3, -0.9, -0.5], "reachable"),  # cycle 5 <-> 6
    ([5, 4, 5, 4, -1, 4, -2], [-0.9, -0.3, 0.0], "increase away from the root"),
    ([5, 4, 5, 4, -1, 4, -2], [0.0, -0.3, 0.0], "0 < t < 1"),
    ([5, 4, 5, 6, -1, 4, -2], [-0.3, -0.9, 0.0], "unused"),
    ([5, 4, 5, 4, -1, -1, -2], [-0.3, -0.9, 0.0], "exactly one root"),
    ([5, 5, 5, 5, -1, 4, -2], [-0.3, -0.9, 0.0], "at least 2 children"),
    ([5, 4, 5, 9, -1, 4, -2], [-0.3, -0.9, 0.0], "out of range"),
    ([5, 4, 5, 4, -1, 4], [-0.3, -0.9], "length 2 n - 1"),
])
def test_invalid_trees_raise(parent, log1m_t, match):
    with pytest.raises(ValueError, match=match):
        pydt.pydt_logp(np.array(parent), np.array(log1m_t), np.zeros((4, 1)), 1.0, 1.0,
                       0.1, 1.0)
    # symbolic: -inf at run time, not an exception inside a sampler
    if len(parent) == 7:
        pv = pt.lvector("parent")
        f = pytensor.function([pv], pydt.pydt_logp(pv, np.array(log1m_t), np.zeros((4, 1)),
                                                   1.0, 1.0, 0.1, 1.0))
        assert f(np.array(parent)) == -np.inf


@pytest.mark.parametrize(("X", "match"), [
    (np.zeros(4), "2-D"),
    (np.array([[0.0], [np.nan], [1.0], [2.0]]), "NaN"),
    (np.zeros((1, 2)), "n >= 2"),
    (np.zeros((3, 1)), "2 n - 1|length"),
])
def test_bad_data_raise(X, match):
    parent, log1m_t = fig42_tree()
    with pytest.raises(ValueError, match=match):
        pydt.pydt_logp(parent, log1m_t, X, 1.0, 1.0, 0.1, 1.0)


# ------------------------------------------------------------------ the tree class
def test_diffusion_tree_conversions_and_statistics():
    from scipy.cluster.hierarchy import cophenet, is_valid_linkage

    parent, log1m_t = fig42_tree(0.3, 0.6)
    tree = DiffusionTree(parent, log1m_t)
    assert (tree.n_leaves, tree.n_internal, tree.root, tree.n_multifurcations) == (4, 2, 4, 1)
    assert tree.root_time == pytest.approx(0.3)
    assert tree.to_newick() == "(1:0.7,3:0.7,(0:0.4,2:0.4):0.3):0.3;"
    with pytest.raises(ValueError, match="binary"):
        tree.to_linkage()
    back = DiffusionTree.from_packed(tree.to_packed())
    np.testing.assert_array_equal(back.parent, tree.parent)
    np.testing.assert_allclose(back.log1m_t[:2], tree.log1m_t[:2])
    copy = tree.copy()
    copy.parent[0] = 4
    assert tree.parent[0] == 5
    rng = np.random.default_rng(4)
    binary = DiffusionTree(*draw_tree(rng, 8, 1.0, 0.0, 0.0))
    Z = binary.to_linkage()
    assert is_valid_linkage(Z)
    C = binary.mrca_times()
    iu = np.triu_indices(8, 1)
    np.testing.assert_allclose(cophenet(Z), 1.0 - C[iu], atol=1e-12)


def test_plot_draws_every_edge():
    import matplotlib.pyplot as plt

    rng = np.random.default_rng(2)
    tree = DiffusionTree(*draw_tree(rng, 12, 1.0, 2.0, 0.3))
    for time_axis, label in (("log", "divergence time t\n(spaced as -log(1 - t))"),
                             ("linear", "divergence time t")):
        ax = tree.plot(time_axis=time_axis)
        segments = ax.collections[0].get_segments()
        assert len(segments) == (tree.n_leaves + tree.n_internal) + tree.n_internal
        assert ax.get_ylabel() == label
        plt.close(ax.figure)


def test_prior_draws_two_leaf_and_trifurcation_frequencies():
    """The sampler against digest §7 items 18-19 (Monte Carlo, 4 sd bands)."""
    rng = np.random.default_rng(11)
    reps = 4000
    ts = np.array([DiffusionTree(*draw_tree(rng, 2, 0.5, 0.0, 0.0)).root_time
                   for _ in range(reps)])
    # Beta(1, 0.5): mean 2/3, var = ab/((a+b)^2(a+b+1)) = 0.5/(2.25*2.5)
    assert abs(ts.mean() - 2 / 3) < 4 * math.sqrt(0.5 / (2.25 * 2.5) / reps)
    for theta, alpha in [(0.5, 0.3), (3.0, -1.0)]:
        p = (theta + 2 * alpha) / (3 + theta - alpha)
        hits = sum(DiffusionTree(*draw_tree(rng, 3, 1.0, theta, alpha)).n_internal == 1
                   for _ in range(reps))
        assert abs(hits / reps - p) < 4 * math.sqrt(p * (1 - p) / reps)


def test_h_table_matches_direct_sum_and_derivatives():
    theta, alpha = 1.7, 0.35
    H, Ht, Ha = pydt.h_table(12, theta, alpha)

    def direct(th, al):
        return np.cumsum([0.0] + [math.exp(math.lgamma(i - al) - math.lgamma(i + 1 + th))
                                  for i in range(1, 13)])

    np.testing.assert_allclose(H, direct(theta, alpha), rtol=1e-13)
    eps = 1e-6
    np.testing.assert_allclose(Ht, (direct(theta + eps, alpha) - direct(theta - eps, alpha))
                               / (2 * eps), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(Ha, (direct(theta, alpha + eps) - direct(theta, alpha - eps))
                               / (2 * eps), rtol=1e-6, atol=1e-12)
    assert special.gamma(1 - alpha) > 0  # scipy used as the reference library here
