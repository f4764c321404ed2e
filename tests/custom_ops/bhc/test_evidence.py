"""BHC evidence Op: Theorem 3.1 / Corollary 3.1 by brute-force enumeration, gradients,
shapes, Numba registration and bad input (Heller 2007 §3.2-3.4; digest §7.2)."""

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
import pytest
from pytensor.compile.mode import Mode
from pytensor.gradient import NullTypeGradError
from scipy import special
from scipy.cluster.hierarchy import linkage

from custom_ops import conjugate as cj
from custom_ops.bhc import evidence as bhc
from custom_ops.trees import validate_merges
from tests.helpers.backends import PYTHON_MODE, assert_numba_matches_python

FAMS = ["bernoulli", "multinomial", "gaussian", "diag_gaussian"]


# ------------------------------------------------------------------ brute-force helpers
def random_merges(n, rng):
    """A uniformly random merge order (random binary tree) in scipy-linkage convention."""
    active = list(range(n))
    rows = []
    for t in range(n - 1):
        i, j = rng.choice(len(active), size=2, replace=False)
        a, b = active[i], active[j]
        rows.append((a, b))
        active = [c for c in active if c not in (a, b)] + [n + t]
    return np.array(rows, dtype=np.int64)


def balanced_merges(n):
    rows, level, nxt = [], list(range(n)), n
    while len(level) > 1:
        new = []
        for k in range(0, len(level) - 1, 2):
            rows.append((level[k], level[k + 1]))
            new.append(nxt)
            nxt += 1
        if len(level) % 2:
            new.append(level[-1])
        level = new
    return np.array(rows, dtype=np.int64)


def caterpillar_merges(n):
    rows = [(0, 1)] + [(n + t - 1, t + 1) for t in range(1, n - 1)]
    return np.array(rows, dtype=np.int64)


def leaves_of(merges, n):
    out = [1 << i for i in range(n)]
    for a, b in merges:
        out.append(out[a] | out[b])
    return out


def tree_consistent_partitions(merges, n):
    """Digest oracle 5: leaf -> {{leaf}}; node -> {{all}} ∪ TCP(L) × TCP(R)."""
    lv = leaves_of(merges, n)
    memo = {i: [(1 << i,)] for i in range(n)}
    for t, (a, b) in enumerate(merges):
        memo[n + t] = [(lv[n + t],)] + [p + q for p in memo[a] for q in memo[b]]
    return memo[2 * n - 2]


def all_partitions(n):
    """All set partitions of range(n) as tuples of bitmasks (Bell(n) of them)."""

    def rec(i, blocks):
        if i == n:
            yield tuple(blocks)
            return
        for k in range(len(blocks)):
            blocks[k] |= 1 << i
            yield from rec(i + 1, blocks)
            blocks[k] &= ~(1 << i)
        blocks.append(1 << i)
        yield from rec(i + 1, blocks)
        blocks.pop()

    yield from rec(0, [])


def block_log_ml(family, X, hyper):
    """log p(D_S | H1) for every subset S (bitmask), family kernels from custom_ops.conjugate;
    bernoulli re-derived from scipy's betaln so that case is independent of the module."""
    n = X.shape[0]
    out = np.zeros(1 << n)
    fam = cj.FAMILIES[family]
    for mask in range(1, 1 << n):
        idx = [i for i in range(n) if mask >> i & 1]
        if family == "bernoulli":
            a, b = hyper
            m, N = X[idx].sum(0), len(idx)
            out[mask] = np.sum(special.betaln(a + m, b + N - m) - special.betaln(a, b))
        else:
            out[mask] = fam.log_marginal(fam.stats(X[idx]), hyper)
    return out


def partition_terms(parts, lml, alpha):
    """m_v log α + Σ log Γ(n_ℓ) + Σ log p(D_ℓ), and the prior-only part."""
    la = math.log(alpha)
    prior = np.array([len(p) * la + sum(math.lgamma(bin(b).count("1")) for b in p) for p in parts])
    like = np.array([sum(lml[b] for b in p) for p in parts])
    return prior, like


def exact_dpm_log_evidence(lml, n, alpha):
    prior, like = partition_terms(list(all_partitions(n)), lml, alpha)
    return special.logsumexp(prior + like) - (math.lgamma(n + alpha) - math.lgamma(alpha))


def make_case(family, n, d, rng):
    if family == "bernoulli":
        X = (rng.random((n, d)) < 0.4).astype(float)
        hyper = cj.bernoulli_hyper(d, rng.uniform(0.3, 2, d), rng.uniform(0.3, 2, d))
    elif family == "multinomial":
        X = rng.poisson(1.5, size=(n, d)).astype(float)
        hyper = cj.multinomial_hyper(d, rng.uniform(0.3, 2, d))
    elif family == "gaussian":
        X = rng.normal(size=(n, d)) + np.repeat([[0.0], [2.5]], [n // 2, n - n // 2], axis=0)
        A = rng.normal(size=(d, d))
        hyper = cj.gaussian_hyper(d, rng.normal(size=d), 0.5, d + 1.0, A @ A.T + np.eye(d))
    else:
        X = rng.normal(size=(n, d))
        hyper = cj.diag_gaussian_hyper(
            d,
            rng.normal(size=d),
            rng.uniform(0.3, 2, d),
            rng.uniform(1, 3, d),
            rng.uniform(1, 3, d),
        )
    return X, hyper


def forward(family, X, merges, alpha, hyper):
    fam = cj.FAMILY_CODES[family]
    H = cj.pack_hyper(family, hyper)
    return bhc.tree_forward(fam, cj.point_stats(fam, X), merges, alpha, H)


def op_eval(family, X, merges, alpha, hyper):
    names = cj.FAMILIES[family].hyper_names
    lp, lr = bhc.bhc_log_evidence(
        X, merges, alpha, likelihood=family, **dict(zip(names, hyper, strict=True))
    )
    # every input is a constant: the rewrites fold the Op through its perform on any
    # backend; the Python linker then returns the folded values without compiling a Numba
    # graph per case (30 in the tests below)
    f = pytensor.function([], [lp, lr], mode=PYTHON_MODE)
    return f()


# ------------------------------------------------------------------ Theorem 3.1 etc.
def test_enumerator_counts_match_proposition_3_1():
    for n, expected in [(1, 1), (2, 2), (4, 5), (8, 26)]:
        if n == 1:
            continue
        assert len(tree_consistent_partitions(balanced_merges(n), n)) == expected
    for n in (3, 5, 7):
        assert len(tree_consistent_partitions(caterpillar_merges(n), n)) == n
    assert sum(1 for _ in all_partitions(7)) == 877


@pytest.mark.parametrize("family", FAMS)
def test_theorem_3_1_brute_force(family):
    rng = np.random.default_rng(31 + cj.FAMILY_CODES[family])
    for n in (3, 5, 8):
        X, hyper = make_case(family, n, 2, rng)
        lml = block_log_ml(family, X, hyper)
        for alpha in (0.3, 2.0):
            merges = random_merges(n, rng)
            parts = tree_consistent_partitions(merges, n)
            prior, like = partition_terms(parts, lml, alpha)
            log_d_ref = special.logsumexp(prior)  # the d identity
            ref = special.logsumexp(prior + like) - log_d_ref
            lp, lr = op_eval(family, X, merges, alpha, hyper)
            assert float(lp) == pytest.approx(ref, rel=1e-10, abs=1e-10)
            _log_p, log_r, log_q, log_d, _lml_nodes, _ = forward(family, X, merges, alpha, hyper)
            assert log_d[-1] == pytest.approx(log_d_ref, rel=1e-12)
            np.testing.assert_allclose(lr, log_r[n:], rtol=1e-12)
            # bookkeeping (oracle 15)
            assert np.all(lr <= 1e-12) and np.all(np.isfinite(lr))
            np.testing.assert_allclose(np.exp(log_r[n:]) + np.exp(log_q[n:]), 1.0, rtol=1e-12)
            assert np.all(log_r[:n] == 0.0)


@pytest.mark.parametrize("family", ["bernoulli", "gaussian"])
def test_n2_equals_exact_dpm(family):
    rng = np.random.default_rng(2)
    X, hyper = make_case(family, 2, 3, rng)
    lml = block_log_ml(family, X, hyper)
    for alpha in (0.1, 1.0, 7.0):
        lp, lr = op_eval(family, X, np.array([[0, 1]]), alpha, hyper)
        assert float(lp) == pytest.approx(exact_dpm_log_evidence(lml, 2, alpha), rel=1e-12)
        # r_root = exact posterior probability that the two share a cluster
        same = -math.log1p(alpha) + lml[3]
        apart = math.log(alpha) - math.log1p(alpha) + lml[1] + lml[2]
        assert float(np.exp(lr[0])) == pytest.approx(
            math.exp(same - np.logaddexp(same, apart)), rel=1e-12
        )


@pytest.mark.parametrize("family", ["bernoulli", "gaussian", "multinomial"])
def test_corollary_3_1_lower_bound_n9(family):
    rng = np.random.default_rng(9)
    n = 9
    X, hyper = make_case(family, n, 2, rng)
    lml = block_log_ml(family, X, hyper)
    parts = list(all_partitions(n))
    assert len(parts) == 21147
    base, like = partition_terms(parts, lml, 1.0)  # at α = 1 the prior is Σ log Γ(n_ℓ)
    m_v = np.array([len(p) for p in parts])
    trees = [random_merges(n, rng) for _ in range(3)] + [
        balanced_merges(n),
        caterpillar_merges(n),
        linkage(X, "average")[:, :2].astype(np.int64),
    ]
    for alpha in (0.05, 1.0, 20.0):
        # exact DPM evidence (Lemma 3.1): the α-dependent prior is m_v log α + Σ log Γ(n_ℓ)
        log_dpm = special.logsumexp(base + m_v * math.log(alpha) + like) - (
            math.lgamma(n + alpha) - math.lgamma(alpha)
        )
        for merges in trees:
            log_p, _r, _q, log_d, _ml, _s = forward(family, X, merges, alpha, hyper)
            lb = log_d[-1] + math.lgamma(alpha) - math.lgamma(n + alpha) + log_p[-1]
            assert lb <= log_dpm + 1e-9
            assert lb <= log_p[-1] + 1e-12  # the prior-mass factor is <= 1


def test_closed_form_small_cases():
    # oracle 10: n = 3, tree ((0,1),2): d = α³ + α² + 2α and π = 2 / (2 + α + α²)
    X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 0.0]])
    hyper = cj.bernoulli_hyper(2)
    for alpha in (0.5, 1.0, 3.0):
        _p, log_r, _q, log_d, lml, _ = forward(
            "bernoulli", X, np.array([[0, 1], [3, 2]]), alpha, hyper
        )
        assert math.exp(log_d[3]) == pytest.approx(alpha + alpha**2, rel=1e-12)
        assert math.exp(log_d[4]) == pytest.approx(alpha**3 + alpha**2 + 2 * alpha, rel=1e-12)
        pi = 2 / (2 + alpha + alpha**2)
        ref_r = pi * math.exp(lml[4]) / (pi * math.exp(lml[4]) + (1 - pi) * math.exp(_p[3] + _p[2]))
        assert math.exp(log_r[4]) == pytest.approx(ref_r, rel=1e-12)


def test_alpha_limits():
    rng = np.random.default_rng(12)
    X, hyper = make_case("bernoulli", 6, 4, rng)
    merges = random_merges(6, rng)
    fam = cj.FAMILIES["bernoulli"]
    one = fam.log_marginal(fam.stats(X), hyper)
    single = sum(fam.log_marginal(fam.stats(X[i : i + 1]), hyper) for i in range(6))
    lp0, _ = op_eval("bernoulli", X, merges, 1e-8, hyper)
    lpinf, _ = op_eval("bernoulli", X, merges, 1e8, hyper)
    assert float(lp0) == pytest.approx(one, abs=1e-6)
    assert float(lpinf) == pytest.approx(single, abs=1e-6)


def test_large_n_no_overflow():
    rng = np.random.default_rng(3)
    n = 400  # Γ(n) overflows float64 beyond n ≈ 171
    X = (rng.random((n, 8)) < 0.3).astype(float)
    lp, lr = op_eval("bernoulli", X, linkage(X, "average"), 1.0, cj.bernoulli_hyper(8))
    assert np.isfinite(lp) and np.all(np.isfinite(lr)) and lr.shape == (n - 1,)


# ------------------------------------------------------------------ gradients
def _sym_input(family, hyper, rng):
    """Free inputs for verify_grad: S0 enters as A Aᵀ + I so it stays SPD and symmetric."""
    vals = list(hyper)
    if family == "gaussian":
        d = vals[0].shape[0]
        S0 = vals[3]
        A = np.linalg.cholesky(S0 - 0.5 * np.eye(d))
        vals[3] = A
    return [np.asarray(v, dtype=float) for v in vals]


@pytest.mark.parametrize("family", FAMS)
def test_verify_grad_alpha_and_every_hyperparameter(family):
    rng = np.random.default_rng(100 + cj.FAMILY_CODES[family])
    n, d = 7, 2
    X, hyper = make_case(family, n, d, rng)
    merges = random_merges(n, rng)
    names = cj.FAMILIES[family].hyper_names
    weights = rng.normal(size=n - 1)

    def fn(alpha, *h):
        h = list(h)
        if family == "gaussian":
            h[3] = h[3] @ h[3].T + 0.5 * pt.eye(d)
        lp, lr = bhc.bhc_log_evidence(
            X, merges, alpha, likelihood=family, **dict(zip(names, h, strict=True))
        )
        # both outputs: the log r_k path has its own reverse-mode terms
        return lp + pt.sum(weights * lr)

    point = [np.asarray(1.3), *_sym_input(family, hyper, rng)]
    # Python backend (short compiles); test_numba_backend_... compares Numba with it
    pytensor.gradient.verify_grad(
        fn, point, rng=rng, abs_tol=1e-6, rel_tol=1e-5, mode=PYTHON_MODE
    )


def test_grad_wrt_log_alpha_matches_finite_difference_recursion():
    # oracle 17 on the log scale: d log p / d log α by central differences
    rng = np.random.default_rng(17)
    X, hyper = make_case("bernoulli", 8, 3, rng)
    merges = random_merges(8, rng)
    la = pt.dscalar("la")
    lp, _ = bhc.bhc_log_evidence(
        X, merges, pt.exp(la), likelihood="bernoulli", a=hyper[0], b=hyper[1]
    )
    f = pytensor.function([la], [lp, pytensor.grad(lp, la)])
    h = 1e-5
    fd = (f(0.2 + h)[0] - f(0.2 - h)[0]) / (2 * h)
    assert float(f(0.2)[1]) == pytest.approx(float(fd), rel=1e-6)


def test_data_gradient_not_silently_zero():
    data = pt.dmatrix("data")
    lp, _ = bhc.bhc_log_evidence(data, np.array([[0, 1], [2, 3], [4, 5]]), 1.0)
    with pytest.raises(NullTypeGradError, match="not differentiated in the data"):
        pytensor.grad(lp, data)


# ------------------------------------------------------------------ shapes, numba
def test_infer_shape_without_computing():
    X = (np.random.default_rng(1).random((10, 3)) < 0.5).astype(float)
    data = pt.dmatrix("data")
    m = pt.lmatrix("m")
    lp, lr = bhc.bhc_log_evidence(data, m, 1.0, likelihood="bernoulli", a=np.ones(3), b=np.ones(3))
    f = pytensor.function([data, m], lr.shape, on_unused_input="ignore")
    assert not any(isinstance(node.op, bhc.BHCEvidence) for node in f.maker.fgraph.apply_nodes)
    # a deliberately invalid tree: the shape never runs the Op
    assert tuple(f(X, np.zeros((9, 2), dtype=np.int64))) == (9,)
    assert lp.ndim == 0 and lr.ndim == 1


def _symbolic_case(family):
    """A 6-point case with alpha and the hyperparameters symbolic: (inputs, [log p, log r,
    gradients of log p + Σ log r], the case's hyperparameter values)."""
    rng = np.random.default_rng(5)
    X, hyper = make_case(family, 6, 2, rng)
    merges = random_merges(6, rng)
    alpha = pt.dscalar("alpha")
    names = cj.FAMILIES[family].hyper_names
    hv = [
        pt.as_tensor_variable(np.asarray(h, dtype=float)).type(nm)
        for h, nm in zip(hyper, names, strict=True)
    ]
    lp, lr = bhc.bhc_log_evidence(
        X, merges, alpha, likelihood=family, **dict(zip(names, hv, strict=True))
    )
    grads = pytensor.grad(lp + lr.sum(), [alpha, *hv])
    return [alpha, *hv], [lp, lr, *grads], [np.asarray(h, dtype=float) for h in hyper]


@pytest.mark.parametrize("family", FAMS)
def test_numba_backend_no_object_mode_and_matches_python(family):
    inputs, outputs, hyper = _symbolic_case(family)
    assert_numba_matches_python(inputs, outputs, [1.7, *hyper], op=bhc.BHCEvidence)


def test_posterior_scale_not_pd_gives_nan_not_an_error():
    """At kappa0 = e^100 (legal; a NUTS trajectory of `ppzoo fit bhc` reached it) the NIW
    posterior scale S_n cancels to a matrix that is not positive definite: the evidence
    and its gradient are NaN, the same on both backends, where the Op raised before
    (LinAlgError from perform, "BHCEvidenceGrad: the Numba kernel raised an exception"
    from the Numba graph) and stopped PyMC's NUTS. The graph is the one of
    test_numba_backend_no_object_mode_and_matches_python[gaussian], so no new compile."""
    inputs, outputs, (m0, _kappa0, nu0, S0) = _symbolic_case("gaussian")
    args = [1.7, m0, np.asarray(math.exp(100.0)), nu0, S0]
    f = assert_numba_matches_python(inputs, outputs, args, op=bhc.BHCEvidence)
    lp, _lr, *grads = f(*args)
    assert np.isnan(lp)
    assert all(np.all(np.isnan(g)) for g in grads)


# ------------------------------------------------------------------ bad input
GOOD_X = np.array([[0, 1], [1, 1], [0, 0]], dtype=float)
GOOD_M = np.array([[0, 1], [3, 2]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"merges": np.array([[0, 1]])}, "merges"),
        ({"merges": np.array([[0, 1], [0, 2]])}, "merges.*twice"),
        ({"merges": np.array([[0, 0], [3, 2]])}, "merges.*itself"),
        ({"merges": np.array([[0, 4], [3, 2]])}, "merges"),
        ({"merges": np.array([[0.5, 1], [3, 2]])}, "merges"),
        ({"alpha": 0.0}, "alpha"),
        ({"alpha": -1.0}, "alpha"),
        ({"data": np.array([[0, 2], [1, 1], [0, 0]], dtype=float)}, "binary"),
        ({"data": np.array([[0, np.nan], [1, 1], [0, 0]])}, "NaN"),
        ({"data": np.array([[0, 1]], dtype=float), "merges": np.zeros((0, 2), int)}, "at least 2"),
        ({"likelihood": "poisson"}, "likelihood"),
        ({"hyper": {"a": -1.0}}, "a:"),
        ({"hyper": {"kappa": 1.0}}, "hyper"),
        (
            {"likelihood": "multinomial", "data": np.array([[1, -1], [0, 1], [2, 2]])},
            "non-negative",
        ),
        ({"likelihood": "multinomial", "data": np.array([[1, 0.5], [0, 1], [2, 2]])}, "integer"),
        ({"likelihood": "gaussian", "hyper": {"nu0": 0.5}}, "nu0"),
    ],
)
def test_bad_input_raises_value_error(kwargs, match):
    args = {"data": GOOD_X, "merges": GOOD_M, "alpha": 1.0, "likelihood": "bernoulli", "hyper": {}}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        bhc.bhc_log_evidence(
            args["data"],
            args["merges"],
            args["alpha"],
            likelihood=args["likelihood"],
            **args["hyper"],
        )


def test_bad_input_at_runtime_with_symbolic_inputs():
    data = pt.dmatrix("data")
    merges = pt.lmatrix("merges")
    alpha = pt.dscalar("alpha")
    lp, _ = bhc.bhc_log_evidence(
        data, merges, alpha, likelihood="bernoulli", a=np.ones(2), b=np.ones(2)
    )
    f = pytensor.function([data, merges, alpha], lp)
    assert np.isfinite(f(GOOD_X, GOOD_M, 1.0))
    with pytest.raises(ValueError, match="merges"):
        f(GOOD_X, np.array([[0, 1], [0, 2]]), 1.0)
    with pytest.raises(ValueError, match="data"):
        f(np.array([[0, 2], [1, 1], [0, 0]], dtype=float), GOOD_M, 1.0)


@pytest.mark.parametrize("mode", ["NUMBA", "py"])
def test_alpha_or_hyper_out_of_range_is_minus_infinity_not_an_error(mode):
    """alpha and the hyperparameters are what samplers move; PyMC's NUTS needs -inf (a
    rejected point) where an exp() in a long trajectory leaves the range, not an error
    (an error stopped `fit(bhc.model(...), nuts_sampler="pymc")`)."""
    mode = Mode(linker="py") if mode == "py" else mode
    data = pt.dmatrix("data")
    merges = pt.lmatrix("merges")
    alpha = pt.dscalar("alpha")
    a = pt.dvector("a")
    lp, log_r = bhc.bhc_log_evidence(data, merges, alpha, likelihood="bernoulli", a=a,
                                     b=np.ones(2))
    f = pytensor.function([data, merges, alpha, a],
                          [lp, log_r, *pytensor.grad(lp, [alpha, a])], mode=mode)
    value, r, g_alpha, g_a = f(GOOD_X, GOOD_M, 1.0, np.ones(2))
    assert np.isfinite(value) and np.all(np.isfinite(r)) and g_alpha != 0
    for bad_alpha, bad_a in ((-1.0, np.ones(2)), (0.0, np.ones(2)), (1.0, np.array([1, -2.0]))):
        value, r, g_alpha, g_a = f(GOOD_X, GOOD_M, bad_alpha, bad_a)
        assert value == -np.inf and np.all(np.isnan(r))
        assert g_alpha == 0 and np.all(g_a == 0)


def test_validate_merges_accepts_scipy_linkage():
    X = np.random.default_rng(0).normal(size=(6, 2))
    Z = linkage(X, "single")
    m = validate_merges(Z, 6)
    assert m.dtype == np.int64 and m.shape == (5, 2)
    np.testing.assert_array_equal(m, Z[:, :2].astype(int))


@pytest.mark.parametrize("family", ["bernoulli", "gaussian"])
def test_dpm_lower_bound_value_and_gradient(family):
    rng = np.random.default_rng(31)
    n, d = 7, 2
    X, hyper = make_case(family, n, d, rng)
    merges = random_merges(n, rng)
    names = cj.FAMILIES[family].hyper_names
    alpha = 0.8
    log_p, _r, _q, log_d, _ml, _s = forward(family, X, merges, alpha, hyper)
    ref = log_d[-1] + math.lgamma(alpha) - math.lgamma(n + alpha) + log_p[-1]
    lb = bhc.bhc_dpm_lower_bound(
        X, merges, alpha, likelihood=family, **dict(zip(names, hyper, strict=True))
    )
    assert float(lb.eval()) == pytest.approx(ref, rel=1e-12)

    def fn(a, *h):
        h = list(h)
        if family == "gaussian":
            h[3] = h[3] @ h[3].T + 0.5 * pt.eye(d)
        return bhc.bhc_dpm_lower_bound(
            X, merges, a, likelihood=family, **dict(zip(names, h, strict=True))
        )

    point = [np.asarray(alpha), *_sym_input(family, hyper, rng)]
    pytensor.gradient.verify_grad(
        fn, point, rng=rng, abs_tol=1e-6, rel_tol=1e-5, mode=PYTHON_MODE
    )
    # the Numba and Python backends agree on the bound's gradient in alpha
    a = pt.dscalar("a")
    g = pytensor.grad(fn(a, *[pt.as_tensor_variable(v) for v in point[1:]]), a)
    assert_numba_matches_python([a], g, [alpha])


def test_dpm_lower_bound_keeps_its_digits_at_large_alpha():
    """log[Γ(α)/Γ(n + α)] written as gammaln(α) - gammaln(n + α) cancels two numbers
    ~α log α: at α = e^36 the Numba graph gave -32.0 for a bound of -32.697, at e^40 and
    e^100 it gave 0 (fast-math reassociation; PyMC's logp of the BHC model then read 0.0,
    far above the typical set, where NUTS trajectories can reach). Reference: the exact
    identity Γ(n + α)/Γ(α) = Π_{i<n} (α + i), summed in Python with fsum."""
    rng = np.random.default_rng(31)
    n, d = 7, 2
    X, hyper = make_case("gaussian", n, d, rng)
    merges = random_merges(n, rng)
    names = cj.FAMILIES["gaussian"].hyper_names
    a = pt.dscalar("a")
    lb = bhc.bhc_dpm_lower_bound(X, merges, a, likelihood="gaussian",
                                 **dict(zip(names, hyper, strict=True)))
    f = assert_numba_matches_python([a], [lb, pytensor.grad(lb, a)], [math.exp(40.0)],
                                    op=bhc.BHCEvidence, rtol=1e-12, atol=1e-9)
    for log_alpha in (0.5, 20.0, 36.0, 40.0, 100.0):
        alpha = math.exp(log_alpha)
        log_p, _r, _q, log_d, _ml, _s = forward("gaussian", X, merges, alpha, hyper)
        ref = log_d[-1] - math.fsum(math.log(alpha + i) for i in range(n)) + log_p[-1]
        value, grad = f(alpha)
        assert float(value) == pytest.approx(ref, rel=1e-12, abs=1e-9), log_alpha
        assert np.isfinite(grad)
