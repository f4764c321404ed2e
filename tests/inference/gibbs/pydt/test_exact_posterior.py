"""The PYDT model's posterior on 4 points in 1 dimension, computed without the sampler,
against ``fit`` (Knowles 2012 §4.5 with the thesis's priors: theta ~ G(2, .5), alpha ~
Beta(1, 1), c ~ G(1, 1), 1/sigma2 ~ G(1, 1)).

The exact posterior (an independent oracle, from the thesis's formulas, not from the
package's kernels):

- every labelled shape over the 4 leaves (26) enumerated; ``P(shape | theta, alpha)`` is
  the product over internal nodes ``v`` of Eq. 4.23 without ``a(t)`` divided by
  ``H_{m(v)-1}`` (Eq. 4.24): given the shape, Eqs. 4.23 and 4.25 make the gaps
  ``A(t_v) - A(t_parent)`` (``A(t) = -c log(1 - t)``) independent exponentials of rate
  ``H_{m(v)-1}``, whose normalisers are those ``H``. So a shape's probability does not
  depend on ``c``, and ``c`` only scales the times: ``u_v = -log(1 - t_v) = u_parent +
  w_v / (c H_{m(v)-1})`` with ``w_v ~ Exponential(1)``;
- the data given the tree are ``N(0, sigma2 C)`` per column with ``C_ij`` the divergence
  time of the pair's most recent common ancestor (``C_ii = 1``; digest §3.9), and the
  precision's Gamma prior integrates out in closed form (a multivariate Student t);
- ``(c, theta, alpha, w)`` drawn from the prior and weighted by the likelihood summed
  over the 26 shapes: a self-normalised importance sample of the posterior of ``c``,
  ``theta``, ``alpha`` and the root time, and (the shape sum split by its number of
  internal nodes) of the number of branch points. The importance sample's standard
  errors come from its effective size.

The oracle's shape probabilities sum to one and its joint density (shape, gaps, dense
Gaussian) equals the Op's ``pydt_forward`` on every shape (a default test). The slow
test compares the sampler (the factory's steps, branch-point moves on and off) with the
oracle by z scores from the MCSE and the importance sample's error; the branch-point
moves without the time proposal's density (a planted-bug twin) are caught.

Why: the recovery test's posterior of ``c`` (N = 200, tests/pp_models/
pydt/test_recovery.py) doubled its sd when the branch-point moves came in; this checks
that sampler, with those moves, against a posterior computed without it, where the
structure (1, 2 or 3 branch points) is uncertain and c, theta, alpha are not pinned.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln

from custom_ops.pydt.ops import pydt_forward
from inference import fit
from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt
from tests.inference.gibbs.pydt.twins import BranchNoTimeDensityTreeStep
from tests.oracles.pydt import H, all_trees, flatten, log_shape_probability, node_log_times

#: two pairs: shapes with 1, 2 and 3 internal nodes all have posterior mass (0.48,
#: 0.34, 0.18) and c's posterior (mean 1.43) moves off its prior's (1)
X4 = np.array([[-1.0], [-0.95], [1.0], [1.1]])
PRIORS = {"theta": (2.0, 0.5), "alpha": (1.0, 1.0), "c": (1.0, 1.0),
          "precision": (1.0, 1.0)}
HYPER = ("c", "theta", "alpha", "precision")


# ------------------------------------------------------------------ the oracle
def _student_log_likelihood(X, C, priors):
    """log of N(X_d; 0, C / tau) over the columns d, tau ~ Gamma(a, b) integrated out;
    -inf where C is not positive definite in floating point."""
    n, d = X.shape
    a, b = priors["precision"]
    sign, logdet = np.linalg.slogdet(C)
    ok = sign > 0
    q = np.full(C.shape[0], np.inf)
    rhs = np.broadcast_to(X, (int(ok.sum()), n, d))
    q[ok] = np.einsum("mid,mid->m", rhs, np.linalg.solve(C[ok], rhs))
    a_post = a + n * d / 2
    out = (-n * d / 2 * math.log(2 * math.pi) - d / 2 * np.where(ok, logdet, 0.0)
           + a * math.log(b) - gammaln(a) + gammaln(a_post) - a_post * np.log(b + q / 2))
    return np.where(ok & (q > 0), out, -np.inf)


def exact_posterior(X, priors, n_draws, seed, chunk=100_000):
    """Self-normalised importance sample of the posterior (module docstring): the
    weighted mean and standard error of c, theta, alpha and the root time, and the
    posterior probabilities of 1 .. n - 1 internal nodes with their standard errors."""
    rng = np.random.default_rng(seed)
    n, _ = X.shape
    shapes = [flatten(s, n) for s in all_trees(tuple(range(n)))]
    n_internal = np.array([len(s[0]) for s in shapes])
    parts = {k: [] for k in ("c", "theta", "alpha", "root_time", "log_w", "p_k")}
    for start in range(0, n_draws, chunk):
        m = min(chunk, n_draws - start)
        c = rng.gamma(priors["c"][0], 1 / priors["c"][1], m)
        theta = rng.gamma(priors["theta"][0], 1 / priors["theta"][1], m)
        alpha = rng.beta(*priors["alpha"], m)
        w = rng.exponential(size=(m, n - 1))
        log_terms = np.empty((len(shapes), m))
        for s, (parent, counts, ms, lca) in enumerate(shapes):
            u = node_log_times(parent, ms, c, theta, alpha, w[:, :len(parent)])
            C = np.ones((m, n, n))
            off = ~np.eye(n, dtype=bool)
            C[:, off] = -np.expm1(-u[:, lca[off]])
            log_terms[s] = (log_shape_probability(counts, ms, theta, alpha)
                            + _student_log_likelihood(X, C, priors))
        top = log_terms.max(axis=0)
        alive = np.isfinite(top)
        top = np.where(alive, top, 0.0)
        share = np.exp(log_terms - top)
        total = share.sum(axis=0)
        parts["log_w"].append(np.where(alive, top + np.log(np.where(alive, total, 1.0)),
                                       -np.inf))
        p_k = np.stack([share[n_internal == k].sum(axis=0) for k in range(1, n)], axis=1)
        parts["p_k"].append(p_k / np.where(alive, total, 1.0)[:, None])
        parts["c"].append(c)
        parts["theta"].append(theta)
        parts["alpha"].append(alpha)
        # the root holds all n leaves in every shape
        parts["root_time"].append(-np.expm1(-w[:, 0] / (c * H(n - 1, theta, alpha))))
    draws = {k: np.concatenate(v) for k, v in parts.items()}
    weights = np.exp(draws["log_w"] - draws["log_w"].max())
    weights /= weights.sum()
    ess = 1.0 / np.sum(weights ** 2)
    out = {}
    for name in ("c", "theta", "alpha", "root_time"):
        x = draws[name]
        mean = float(np.sum(weights * x))
        sd = math.sqrt(float(np.sum(weights * (x - mean) ** 2)))
        out[name] = (mean, sd / math.sqrt(ess))
    for k in range(1, n):
        x = draws["p_k"][:, k - 1]
        mean = float(np.sum(weights * x))
        # the weighted draws' spread of the per-draw probability
        sd = math.sqrt(float(np.sum(weights * (x - mean) ** 2)))
        out[f"P(k={k})"] = (mean, sd / math.sqrt(ess))
    return out


def test_oracle_agrees_with_the_op_and_sums_to_one():
    """The oracle's shape probabilities sum to one (3 and 4 leaves), and its joint
    density of a tree (shape probability x exponential gap densities in ``u`` with
    ``du/dt = 1 / (1 - t)``) and dense-Gaussian likelihood equal ``pydt_forward``."""
    rng = np.random.default_rng(0)
    for n in (3, 4):
        shapes = all_trees(tuple(range(n)))
        assert len(shapes) == {3: 4, 4: 26}[n]
        for theta, alpha in ((1.3, 0.2), (4.0, 0.7), (0.1, 0.0)):
            total = sum(math.exp(float(log_shape_probability(*flatten(s, n)[1:3], theta,
                                                             alpha))) for s in shapes)
            assert abs(total - 1.0) < 1e-12
    n, d = 4, 2
    X = rng.normal(size=(n, d))
    c, theta, alpha, sigma2 = 0.7, 1.3, 0.2, 1.7
    for shape in all_trees(tuple(range(n))):
        parent, counts, ms, lca = flatten(shape, n)
        # moderate gaps: a time within ~e^-30 of 1 leaves the dense solve no digits
        w = rng.uniform(0.1, 0.6, size=len(parent))
        u = node_log_times(parent, ms, c, theta, alpha, w)
        log_prior = float(log_shape_probability(counts, ms, theta, alpha))
        for k, (p, m) in enumerate(zip(parent, ms, strict=True)):
            rate = c * float(H(m - 1, theta, alpha))
            gap = u[k] - (0.0 if p < 0 else u[p])
            log_prior += math.log(rate) - rate * gap + u[k]
        C = np.eye(n)
        off = ~np.eye(n, dtype=bool)
        C[off] = -np.expm1(-u[lca[off]])
        _sign, logdet = np.linalg.slogdet(sigma2 * C)
        log_lik = sum(-0.5 * (n * math.log(2 * math.pi) + logdet
                              + X[:, j] @ np.linalg.solve(sigma2 * C, X[:, j]))
                      for j in range(d))
        # the package's layout: internal slots n.. in the oracle's pre-order
        packed_parent = np.full(2 * n - 1, -2, dtype=np.int64)
        log1m_t = np.zeros(n - 1)
        for k, p in enumerate(parent):
            packed_parent[n + k] = -1 if p < 0 else n + p
            log1m_t[k] = -u[k]
        for leaf in range(n):
            packed_parent[leaf] = n + max(int(lca[leaf, j]) for j in range(n) if j != leaf)
        ref_prior, ref_lik = pydt_forward(packed_parent, log1m_t, X, c, theta, alpha,
                                          sigma2)
        assert abs(log_prior - ref_prior) < 1e-9 * (1 + abs(ref_prior))
        assert abs(log_lik - ref_lik) < 1e-8 * (1 + abs(ref_lik))


# ------------------------------------------------------------------ the sampler
#: importance draws: effective size ~1.7e5 (c's standard error 0.003, 35 s)
N_EXACT = 1_000_000
N_DRAWS = 10_000


@pytest.fixture(scope="module")
def exact():
    return exact_posterior(X4, PRIORS, N_EXACT, seed=0)


def _posterior(draws, step_cls=None, branch_moves=None, seed=1):
    """``fit``'s posterior: the factory's own steps (``step_cls=None``), or those with
    the tree step replaced by ``step_cls`` with ``branch_moves``."""
    model = pydt.model(X4, priors=PRIORS)
    step = None
    if step_cls is not None:
        step = [step_cls([model["tree"], *(model[h] for h in HYPER)], model=model,
                         moves=2 * X4.shape[0] - 2, noncentred=HYPER,
                         branch_moves=branch_moves)]
    result = fit(model, step=step, draws=draws, tune=300, chains=4, cores=1,
                 random_seed=seed, progressbar=False, postprocess=False)
    return result["posterior"].to_dataset()


def _z_scores(posterior, exact):
    """(sampler mean - exact mean) / sqrt(MCSE^2 + importance standard error^2)."""
    import arviz as az

    draws = {name: posterior[name].values.astype(float)
             for name in ("c", "theta", "alpha", "root_time")}
    n_internal = posterior["n_internal"].values
    for k in range(1, X4.shape[0]):
        draws[f"P(k={k})"] = (n_internal == k).astype(float)
    z = {}
    for name, values in draws.items():
        mean, se = exact[name]
        mcse = float(az.mcse(values))
        z[name] = (float(values.mean()) - mean) / math.hypot(mcse, se)
        print(f"{name:9s} sampler {values.mean():.4f} (MCSE {mcse:.4f}) exact {mean:.4f} "
              f"(se {se:.4f}) z {z[name]:+.2f}")
    return z


@pytest.mark.slow
@pytest.mark.parametrize("branch_moves", [None, 0], ids=["factory", "no_branch_moves"])
def test_sampler_matches_the_exact_posterior(exact, branch_moves):
    """The factory's sampler (branch-point moves on) and the same without them, 4 x
    10000 draws each, against the oracle: |z| <= 4 for the means of c, theta, alpha, the
    root time and the probabilities of 1, 2, 3 branch points. Measured
    (3.5 min for the three slow tests): the oracle (1e6 draws) c 1.431
    (se 0.003), theta 1.573, alpha 0.579, root time 0.289, P(1, 2, 3 internal nodes)
    0.480, 0.338, 0.181; the sampler |z| <= 1.97 with and without the branch-point
    moves (theta's z -1.9 on both; a run of 4 x 40000 draws against three oracles of
    2e6 draws: theta 1.5723 (MCSE 0.0030) against 1.5697-1.5718, every |z| <= 1.0).
    """
    if branch_moves is None:
        posterior = _posterior(N_DRAWS)
    else:
        posterior = _posterior(N_DRAWS, PYDTTreeStep, branch_moves)
    z = _z_scores(posterior, exact)
    assert all(abs(v) <= 4.0 for v in z.values()), z


@pytest.mark.slow
def test_branch_moves_without_time_density_are_caught(exact):
    """The twin pushes the number of branch points up (measured at 4 x 10000 draws:
    P(1 internal node) 0.291 against 0.480, z -44; c z +3.3)."""
    z = _z_scores(_posterior(2000, BranchNoTimeDensityTreeStep), exact)
    assert max(abs(v) for v in z.values()) > 6.0, z
