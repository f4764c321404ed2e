"""The PYDT tree step at an inverse temperature beta against exact draws of the power
posterior ``p(phi) p(T | c, theta, alpha) p(X | T, sigma2)^beta`` on 4 leaves.

The exact draws (independent of the kernels under test) extend the oracle of
``tests/inference/gibbs/pydt/test_exact_posterior.py``: a labelled shape from its
closed-form probability (Eqs. 4.23-4.25 over ``H``), the standardised gaps
``w_v ~ Exponential(1)`` giving the times, the likelihood a dense Gaussian
``N(X_d; 0, sigma2 C)`` by NumPy; and ``c, theta, alpha`` from their priors when they
are free. Rejection sampling turns these prior draws into exact draws at beta: a draw
is kept with probability
``exp(beta (l - l_max))`` where ``l_max`` bounds the log likelihood over every tree (a
numerical maximum over the 26 shapes and their times plus a margin; a proposal above it
stops the test). With the precision free, it is integrated out of the tempered
likelihood in closed form (``Gamma(a + beta n d / 2, b + beta q / 2)`` is its
conditional, drawn after acceptance), and the bound is on that marginal.

Test (no autocorrelation, as ``test_kernel_exact.py``): R exact draws each pushed
through one call of the step at beta must be draws of the power posterior again:
two-sample tests against R fresh exact draws (chi-square on the number of branch points
and on the labelled shape, Kolmogorov-Smirnov on the root time and on each free
hyperparameter), Bonferroni at family-wise level 0.01. Each move is also run alone
(the step's own options switch the others off), at beta = 0.3, with its planted-bug
twin: the same step ignoring beta (``IgnoresBeta``, a subclass here; the shipped step
has no such flag), which must be caught. The ridge rounds (item 6 of
``inference/gibbs/pydt.py``) are tested the same way at family-wise level 1e-4, with
their own twin (``CentredLikelihoodDroppedTreeStep``).
"""

from __future__ import annotations

import copy
import functools
import math

import numpy as np
import pymc as pm
import pytest
from scipy import optimize, stats
from scipy.special import expit, gammaln, logit

from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt
from pp_models.distributions import DiffusionTreeGaussian, PYDiffusionTree
from pp_models.trees import UNUSED_SLOT, DiffusionTree
from tests.helpers.backends import PYTHON_MODE
from tests.inference.gibbs.pydt.twins import CentredLikelihoodDroppedTreeStep
from tests.oracles.pydt import all_trees, flatten, log_shape_probability, node_log_times, shape_key

N = 4
#: two pairs: the likelihood prefers two cherries; tempering moves mass off them
X = np.array([[-1.0], [-0.8], [0.9], [1.2]])
FIXED = {"c": 1.0, "theta": 1.0, "alpha": 0.3, "sigma2": 0.5}
#: priors of the free-hyperparameter case (pydt.model's keys): tight enough that the
#: rejection sampler keeps a few percent
PRIORS = {"c": (4.0, 4.0), "theta": (4.0, 4.0), "alpha": (4.0, 6.0),
          "precision": (6.0, 3.0)}
LEVEL = 0.01
N_REP = 1500
SHAPES = [flatten(s, N) for s in all_trees(tuple(range(N)))]
_OFF = ~np.eye(N, dtype=bool)


# ------------------------------------------------------------------ the oracle
def correlations(u, lca):
    """(m, N, N) ``C``: 1 on the diagonal, ``t`` of the pair's common ancestor off it."""
    C = np.ones((u.shape[0], N, N))
    C[:, _OFF] = -np.expm1(-u[:, lca[_OFF]])
    return C


def quadratic_and_logdet(C):
    """``(q, log det C, ok)`` with ``q = sum_d X_d' C^-1 X_d``; ``ok`` false where C is
    not positive definite in floating point."""
    sign, logdet = np.linalg.slogdet(C)
    ok = sign > 0
    q = np.full(C.shape[0], np.inf)
    rhs = np.broadcast_to(X, (int(ok.sum()), *X.shape))
    q[ok] = np.einsum("mid,mid->m", rhs, np.linalg.solve(C[ok], rhs))
    return q, np.where(ok, logdet, 0.0), ok


def tempered_log_lik(C, beta, free_precision):
    """``beta log N(X; 0, sigma2 C)`` (fixed sigma2), or with the precision free
    ``log int Gamma(tau; a, b) N(X; 0, C / tau)^beta dtau``."""
    n, d = X.shape
    q, logdet, ok = quadratic_and_logdet(C)
    q = np.where(ok, q, 0.0)
    if not free_precision:
        s2 = FIXED["sigma2"]
        out = beta * -0.5 * (n * d * math.log(2 * math.pi * s2) + d * logdet + q / s2)
    else:
        a, b = PRIORS["precision"]
        a1, b1 = a + beta * n * d / 2, b + beta * q / 2
        out = (beta * -0.5 * (n * d * math.log(2 * math.pi) + d * logdet)
               + a * math.log(b) - gammaln(a) + gammaln(a1) - a1 * np.log(b1))
    return np.where(ok, out, -np.inf), q


def log_lik_bound(beta, free_precision, margin=0.05):
    """Numerical maximum of :func:`tempered_log_lik` over every shape and its times
    (Nelder-Mead from two starts in the log gaps), plus ``margin``. Binary shapes
    suffice: a multifurcation is the limit of a binary shape as a gap goes to 0."""
    best = -np.inf
    for parent, _counts, _ms, lca in SHAPES:
        k = len(parent)
        if k < N - 1:
            continue

        def f(y, parent=parent, lca=lca, k=k):
            u = np.zeros((1, k))
            gaps = np.exp(np.clip(y, -30.0, 3.0))
            for j, p in enumerate(parent):
                u[0, j] = (0.0 if p < 0 else u[0, p]) + gaps[j]
            value = tempered_log_lik(correlations(u, lca), beta, free_precision)[0][0]
            return -value if np.isfinite(value) else 1e300

        for s in range(2):
            y0 = np.random.default_rng(s).normal(0.0, 1.5, k)
            r = optimize.minimize(f, y0, method="Nelder-Mead",
                                  options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000})
            best = max(best, -r.fun)
    return best + margin


def shape_template(parent, lca):
    """The package's packed tree of an oracle shape (internal slots in its pre-order),
    times 0."""
    out = np.zeros((2 * N - 1, 2))
    out[:, 0] = UNUSED_SLOT
    for k, p in enumerate(parent):
        out[N + k, 0] = -1 if p < 0 else N + p
    for leaf in range(N):
        out[leaf, 0] = N + max(int(lca[leaf, j]) for j in range(N) if j != leaf)
    return out


TEMPLATES = [shape_template(parent, lca) for parent, _c, _m, lca in SHAPES]


def packed_trees(s, u):
    """(m, 2N - 1, 2) packed trees of shape ``s`` with node times ``u`` (m, k)."""
    out = np.repeat(TEMPLATES[s][None], u.shape[0], axis=0)
    out[:, N:N + u.shape[1], 1] = -u
    return out


def exact_draws(beta, size, rng, free, bound, chunk=20_000):
    """``size`` exact draws of the power posterior at ``beta`` (module docstring): dicts
    with the packed tree and, with ``free``, c, theta, alpha and the precision."""
    out = []
    while len(out) < size:
        if free:
            c = rng.gamma(PRIORS["c"][0], 1 / PRIORS["c"][1], chunk)
            theta = rng.gamma(PRIORS["theta"][0], 1 / PRIORS["theta"][1], chunk)
            alpha = rng.beta(*PRIORS["alpha"], chunk)
        else:
            c, theta, alpha = (np.full(chunk, FIXED[k]) for k in ("c", "theta", "alpha"))
        if free:
            log_p = np.stack([log_shape_probability(counts, ms, theta, alpha)
                              for _p, counts, ms, _l in SHAPES])
        else:
            log_p = np.array([[float(log_shape_probability(counts, ms, theta[0], alpha[0]))]
                              for _p, counts, ms, _l in SHAPES])
        cum = np.cumsum(np.exp(log_p - np.logaddexp.reduce(log_p, axis=0)), axis=0)
        shape = np.minimum((rng.random(chunk) > cum).sum(axis=0), len(SHAPES) - 1)
        w = rng.exponential(size=(chunk, N - 1))
        keep_u = rng.random(chunk)
        for s, (parent, _counts, ms, lca) in enumerate(SHAPES):
            sel = np.flatnonzero(shape == s)
            if not sel.size:
                continue
            u = node_log_times(parent, ms, c[sel], theta[sel], alpha[sel],
                               w[sel][:, :len(parent)])
            log_lik, q = tempered_log_lik(correlations(u, lca), beta, free)
            if np.any(log_lik > bound):
                raise AssertionError(f"the likelihood bound {bound} is exceeded "
                                     f"({log_lik.max()}): make the search wider")
            kept = np.flatnonzero(np.log(keep_u[sel]) < log_lik - bound)
            trees = packed_trees(s, u[kept])
            if free:
                a, b = PRIORS["precision"]
                tau = rng.gamma(a + beta * X.size / 2, 1.0 / (b + beta * q[kept] / 2))
            for j, i in enumerate(kept):
                draw = {"tree": trees[j]}
                if free:
                    draw.update(c=c[sel[i]], theta=theta[sel[i]], alpha=alpha[sel[i]],
                                precision=tau[j])
                out.append(draw)
    order = rng.permutation(len(out))[:size]
    return [out[i] for i in order]


# ------------------------------------------------------------------ steps and twins
class IgnoresBeta(PYDTTreeStep):
    """Planted bug: the step accepts an inverse temperature and samples the posterior."""

    name = "test_pydt_tempered_ignores_beta"

    def set_inverse_temperature(self, beta):
        super().set_inverse_temperature(beta)
        self.beta = 1.0


def fixed_model():
    with pm.Model() as m:
        tree = PYDiffusionTree("tree", FIXED["c"], FIXED["theta"], FIXED["alpha"], N)
        DiffusionTreeGaussian("X", tree, FIXED["sigma2"], X.shape[1], observed=X)
    return m


HYPER = ("c", "theta", "alpha", "precision")
_TRANSFORMS = {"c": ("c_log__", np.log), "theta": ("theta_log__", np.log),
               "alpha": ("alpha_logodds__", logit), "precision": ("precision_log__", np.log)}
_BACK = {"c_log__": np.exp, "theta_log__": np.exp, "alpha_logodds__": expit,
         "precision_log__": np.exp}


def free_model():
    return pydt.model(X, priors=PRIORS)


#: the moves: (detach-reattach moves, slice the times, branch-point moves, non-centred,
#: centred)
MOVES = {
    "all": (2 * N - 2, True, N, False, False),
    "detach_reattach": (2 * N - 2, False, 0, False, False),
    "slice_times": (0, True, 0, False, False),
    "branch_points": (0, False, N, False, False),
    "noncentred": (0, False, 0, True, False),
    "centred": (0, False, 0, False, True),
    "all_and_noncentred": (2 * N - 2, True, N, True, True),
    # the centred update, then ridge rounds (branch moves and the centred update of c,
    # theta, alpha given the tree, item 6 of inference/gibbs/pydt.py)
    "ridge": (0, False, N, False, True),
}
#: the moves that need the hyperparameters free
FREE_MOVES = ("noncentred", "centred", "all_and_noncentred", "ridge")
#: ridge rounds per call (the step's ``ridge_rounds``) of the moves that have them
RIDGE_ROUNDS = {"ridge": 2}


def make_step(cls, moves, model):
    n_moves, slice_times, branch, noncentred, centred = MOVES[moves]
    rounds = RIDGE_ROUNDS.get(moves, 0)
    return cls([model["tree"], *((model[h] for h in HYPER) if centred else ())],
               model=model, moves=n_moves, slice_times=slice_times,
               branch_moves=0 if rounds else branch, greedy_start=False,
               noncentred=HYPER if noncentred else (), ridge_rounds=rounds,
               ridge_branch_moves=branch)


# ------------------------------------------------------------------ the test
def _summaries(states, free):
    trees = [DiffusionTree.from_packed(s["tree"], validate=False) for s in states]
    out = {"n_internal": np.array([t.n_internal for t in trees]),
           "shape": [shape_key(t) for t in trees],
           "root_time": np.array([t.root_time for t in trees])}
    if free:
        for name in HYPER:
            out[name] = np.array([float(s[name]) for s in states])
    return out


def _contingency_p(a, b):
    keys = sorted(set(a) | set(b), key=repr)
    table = np.array([[sum(x == k for x in a) for k in keys],
                      [sum(x == k for x in b) for k in keys]], dtype=float)
    # pool the rarest cells (expected < 5 in a row) into one
    expected = table.sum(axis=0) / 2
    rare = expected < 5
    if rare.any():
        table = np.c_[table[:, ~rare], table[:, rare].sum(axis=1)]
    table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return 1.0
    return stats.chi2_contingency(table)[1]


@functools.cache
def draw_pairs(beta, free, bound, seed, n_rep=N_REP):
    """Two independent sets of ``n_rep`` exact draws at ``beta``: starts and fresh
    (cached: the moves of one test share them; nothing mutates them)."""
    rng = np.random.default_rng(seed)
    return exact_draws(beta, n_rep, rng, free, bound), exact_draws(beta, n_rep, rng, free,
                                                                    bound)


def pushed_p_values(step, beta, free, draws, seed):
    """p-values of the exact draws ``starts`` after one call of ``step`` at ``beta``
    against the ``fresh`` exact draws (``draws = (starts, fresh)``, module docstring)."""
    starts, fresh = draws
    n_rep = len(starts)
    step.set_inverse_temperature(beta)
    step.rng = np.random.default_rng(seed)
    base = step.model.initial_point()
    ends = []
    moved = 0
    for s in starts:
        point = dict(base)
        point["tree"] = s["tree"].astype(base["tree"].dtype)
        if free:
            for name in HYPER:
                key, forward = _TRANSFORMS[name]
                point[key] = np.asarray(forward(s[name]), dtype=base[key].dtype)
        end, _ = step.step(point)
        state = {"tree": end["tree"]}
        if free:
            state.update({name: _BACK[_TRANSFORMS[name][0]](end[_TRANSFORMS[name][0]])
                          for name in HYPER})
        # the tree, or (the centred update) the hyperparameters
        moved += int(any(not np.array_equal(end[k], point[k]) for k in point))
        ends.append(state)
    assert moved > 0.05 * n_rep, f"the step moved the state in only {moved} of {n_rep} draws"
    a, b = _summaries(ends, free), _summaries(fresh, free)
    p = {"n_internal": _contingency_p(list(a["n_internal"]), list(b["n_internal"])),
         "shape": _contingency_p(a["shape"], b["shape"])}
    for name in ("root_time", *(HYPER if free else ())):
        p[name] = stats.ks_2samp(a[name], b[name]).pvalue
    return p


def rejects(p_values, level=LEVEL):
    return min(p_values.values()) * len(p_values) < level


@pytest.fixture(scope="module")
def bounds():
    cache = {}

    def get(beta, free):
        if (beta, free) not in cache:
            cache[(beta, free)] = log_lik_bound(beta, free)
        return cache[(beta, free)]

    return get


@pytest.fixture(scope="module")
def models():
    return {False: fixed_model(), True: free_model()}


@pytest.fixture(scope="module")
def steps(models):
    """Steps built once per (class, moves) for the module (each compiles functions)."""
    built = {}

    def get(cls, moves):
        if (cls, moves) not in built:
            built[(cls, moves)] = make_step(cls, moves, models[moves in FREE_MOVES])
        return built[(cls, moves)]

    return get


def test_step_can_temper_and_the_oracle_is_the_model():
    """The oracle's tempered log likelihood equals the model's ``datalogp`` times beta
    (fixed sigma2), at a tree drawn from it."""
    assert PYDTTreeStep.can_temper
    from inference.tempering import log_likelihood_function

    model = fixed_model()
    loglik = log_likelihood_function(model)
    parent, _c, ms, lca = SHAPES[5]
    u = node_log_times(parent, ms, 1.0, 1.0, 0.3, np.array([[0.4, 0.9, 0.2][:len(parent)]]))
    point = model.initial_point() | {"tree": packed_trees(5, u)[0]}
    ours = tempered_log_lik(correlations(u, lca), 0.3, False)[0][0]
    assert ours == pytest.approx(0.3 * loglik(point), rel=1e-10)


@pytest.mark.parametrize("beta", [0.0, 0.3, 1.0])
def test_tree_step_keeps_the_power_posterior(steps, bounds, beta):
    """Every move of the tree step (detach-reattach, slice-sampled times, branch points),
    c, theta, alpha and sigma2 fixed."""
    draws = draw_pairs(beta, False, bounds(beta, False), seed=30)
    p = pushed_p_values(steps(PYDTTreeStep, "all"), beta, False, draws,
                        seed=31)
    print(f"beta {beta}:", p)
    assert not rejects(p)


@pytest.mark.parametrize("moves", ["detach_reattach", "slice_times", "branch_points",
                                   "noncentred",
                                   # slow (its twin's power): the default run checks the
                                   # centred move at beta = 0.3 inside the whole step
                                   # (test_whole_step_with_free_hyperparameters_...)
                                   pytest.param("centred", marks=pytest.mark.slow)])
def test_each_move_is_tempered_and_its_twin_is_caught(steps, bounds, moves):
    """One kind of move alone at beta = 0.3 (hyperparameters free for their non-centred
    and centred updates), then the same move ignoring beta on the same draws."""
    free = moves in FREE_MOVES
    draws = draw_pairs(0.3, free, bounds(0.3, free), seed=40)
    p = pushed_p_values(steps(PYDTTreeStep, moves), 0.3, free, draws,
                        seed=41)
    print(f"{moves}:", p)
    assert not rejects(p)
    p = pushed_p_values(steps(IgnoresBeta, moves), 0.3, free, draws,
                        seed=41)
    print(f"{moves} ignoring beta:", p)
    assert rejects(p)


#: the ridge rounds' tests reject at family-wise level 1e-4 (Bonferroni over the
#: statistics): the chance that the correct step fails them
RIDGE_LEVEL = 1e-4
#: the default run's guard pushes the first 200 of the 1500 shared draws (a seventh of the
#: cost; the twin's power is measured by the slow test)
N_REP_RIDGE_DEFAULT = 200


def _ridge_draws(bounds, n_rep):
    starts, fresh = draw_pairs(0.3, True, bounds(0.3, True), seed=40)
    return starts[:n_rep], fresh[:n_rep]


def test_ridge_rounds_keep_the_power_posterior(steps, bounds):
    """The ridge rounds (branch-point moves alternating with the centred update of c,
    theta, alpha given the tree, whose target leaves the likelihood out; item 6 of
    inference/gibbs/pydt.py) after the centred update, at beta = 0.3."""
    draws = _ridge_draws(bounds, N_REP_RIDGE_DEFAULT)
    p = pushed_p_values(steps(PYDTTreeStep, "ridge"), 0.3, True, draws, seed=42)
    print("ridge:", p)
    assert not rejects(p, RIDGE_LEVEL)


@pytest.mark.slow
def test_ridge_rounds_twin_is_caught(steps, bounds):
    """The same test on all 1500 draws, and its twin, which leaves the likelihood out of
    the precision's centred update too (measured: p ~ 1e-16 on the precision against
    0.06-0.9 for the correct step)."""
    draws = _ridge_draws(bounds, N_REP)
    p = pushed_p_values(steps(PYDTTreeStep, "ridge"), 0.3, True, draws, seed=42)
    print("ridge:", p)
    assert not rejects(p, RIDGE_LEVEL)
    p = pushed_p_values(steps(CentredLikelihoodDroppedTreeStep, "ridge"), 0.3, True,
                        draws, seed=42)
    print("ridge, likelihood dropped for the precision:", p)
    assert rejects(p, RIDGE_LEVEL)


def test_whole_step_with_free_hyperparameters_keeps_the_power_posterior(steps, bounds):
    """The factory's tree step (every move, the non-centred and the centred updates of
    c, theta, alpha and the precision) at beta = 0.3."""
    draws = draw_pairs(0.3, True, bounds(0.3, True), seed=50)
    p = pushed_p_values(steps(PYDTTreeStep, "all_and_noncentred"), 0.3,
                        True, draws, seed=51)
    print("all moves, hyperparameters free:", p)
    assert not rejects(p)


def test_noncentred_fast_path_equals_the_whole_tempered_joint(models, steps):
    """The non-centred target at beta from the fast path (hyperpriors by PyTensor, the
    tree by Numba) and from the model's own varlogp + beta datalogp agree."""
    model = models[True]
    fast = steps(PYDTTreeStep, "noncentred")
    whole = copy.copy(fast)
    assert fast._noncentred_fast
    whole._noncentred_fast = False
    whole._logp_fn = model.compile_fn([model.varlogp, model.datalogp],
                                      inputs=model.value_vars, on_unused_input="ignore",
                                      mode=PYTHON_MODE)
    draw = exact_draws(0.0, 1, np.random.default_rng(3), True, 0.0)[0]
    point = model.initial_point() | {"tree": draw["tree"]}
    for name in HYPER:
        key, forward = _TRANSFORMS[name]
        point[key] = np.asarray(forward(draw[name]))
    for step in (fast, whole):
        step.set_inverse_temperature(0.3)
    for key in ("c_log__", "theta_log__", "alpha_logodds__", "precision_log__"):
        f, g = fast.noncentred_log_density(point, key), whole.noncentred_log_density(
            point, key)
        x0 = float(point[key])
        for x in (x0 - 0.6, x0 + 0.5):
            assert f(x)[0] - f(x0)[0] == pytest.approx(g(x)[0] - g(x0)[0], abs=1e-9)


@pytest.mark.slow
def test_false_alarm_and_power_over_ten_seeds(steps, bounds):
    """Rejections out of 10 seeds: the correct step at each beta (fixed and free
    hyperparameters), each move alone and its twin at 0.3."""
    report = {}
    seeds = range(200, 210)
    for beta in (0.0, 0.3, 1.0):
        for free, moves in ((False, "all"), (True, "all_and_noncentred")):
            report[(moves, beta)] = sum(rejects(pushed_p_values(
                steps(PYDTTreeStep, moves), beta, free,
                draw_pairs(beta, free, bounds(beta, free), seed=s), seed=s + 1000))
                for s in seeds)
    for moves in ("detach_reattach", "slice_times", "branch_points", "noncentred"):
        free = moves == "noncentred"
        correct = twin = 0
        for s in seeds:
            draws = draw_pairs(0.3, free, bounds(0.3, free), seed=s)
            correct += rejects(pushed_p_values(steps(PYDTTreeStep, moves),
                                               0.3, free, draws, seed=s + 1000))
            twin += rejects(pushed_p_values(steps(IgnoresBeta, moves),
                                            0.3, free, draws, seed=s + 1000))
        report[(moves, 0.3)] = correct
        report[(moves + " ignoring beta", 0.3)] = twin
    print("rejections out of 10:", report)
    for (name, _beta), count in report.items():
        if name.endswith("ignoring beta"):
            assert count >= 9, (name, count)
        else:
            assert count <= 2, (name, count)
