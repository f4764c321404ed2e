"""Exact power posteriors and evidences by enumeration, written apart from the code under
test: SciPy's distributions and special functions only, never ``custom_ops``.

- partitions: every set partition of n items (restricted growth strings);
- the Pitman-Yor EPPF (Pitman 2006 Eq. 3.6) with ``scipy.special.gammaln``;
- each conjugate family's block marginal ``log p(X_block)``: Beta-Bernoulli and
  Dirichlet-multinomial in closed form (``betaln``, ``gammaln``), the two Gaussian
  families by the chain rule ``p(x_1) p(x_2 | x_1) ...`` of Student-t predictives
  (``scipy.stats.t`` / ``scipy.stats.multivariate_t``), a different route from the
  closed forms the kernels use;
- the exact log evidence of a DP mixture ``log sum_z p(z) p(X | z)`` and of a finite
  mixture with explicit weights and component parameters ``log sum_z p(z) prod_k
  p(X_k)`` (z labelled, w ~ Dirichlet(gamma) integrated out: Dirichlet-multinomial);
- the power posterior ``p_beta(z) ∝ p(z) p(X | z)^beta`` over partitions.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import special, stats


def partitions(n: int) -> list[np.ndarray]:
    """Every partition of ``n`` items once, as canonical labels (restricted growth)."""
    out = []

    def rec(prefix, top):
        if len(prefix) == n:
            out.append(np.array(prefix, dtype=np.int64))
            return
        for v in range(top + 2):
            rec([*prefix, v], max(top, v))

    rec([0], 0)
    return out


def block_partitions(items):
    """Every set partition of the non-empty list ``items``, as lists of blocks (the same
    partitions as :func:`partitions`, another representation)."""
    if len(items) == 1:
        yield [items]
        return
    first, rest = items[0], items[1:]
    for part in block_partitions(rest):
        for k in range(len(part)):
            yield [*part[:k], [first, *part[k]], *part[k + 1 :]]
        yield [[first], *part]


def log_eppf(z, alpha: float, discount: float = 0.0) -> float:
    """Pitman (2006) Eq. 3.6: prod_{k<K} (alpha + k d) / (alpha + 1)_{n-1} prod (1-d)_{n_k-1}."""
    counts = np.bincount(z)
    counts = counts[counts > 0]
    K, n = counts.size, int(counts.sum())
    out = sum(math.log(alpha + k * discount) for k in range(1, K))
    out -= special.gammaln(alpha + n) - special.gammaln(alpha + 1)
    out += float(np.sum(special.gammaln(counts - discount) - special.gammaln(1 - discount)))
    return float(out)


# ----------------------------------------------------------------------- block marginals
def bernoulli_block(X, a, b) -> float:
    n = X.shape[0]
    m = X.sum(0)
    return float(np.sum(special.betaln(a + m, b + n - m) - special.betaln(a, b)))


def multinomial_block(X, conc) -> float:
    """Dirichlet-multinomial with the multinomial coefficients of the rows."""
    counts = X.sum(0)
    coef = np.sum(special.gammaln(X.sum(1) + 1) - special.gammaln(X + 1).sum(1))
    return float(coef + special.gammaln(conc.sum()) - special.gammaln(conc.sum() + counts.sum())
                 + np.sum(special.gammaln(conc + counts) - special.gammaln(conc)))


def diag_gaussian_block(X, m0, kappa0, a0, b0) -> float:
    """Normal-Gamma per column, by the chain rule of Student-t predictives."""
    out = 0.0
    for j in range(X.shape[1]):
        m, k, a, b = float(m0[j]), float(kappa0[j]), float(a0[j]), float(b0[j])
        for x in X[:, j]:
            scale = math.sqrt(b * (k + 1) / (a * k))
            out += stats.t.logpdf(x, df=2 * a, loc=m, scale=scale)
            # posterior after x
            b += k * (x - m) ** 2 / (2 * (k + 1))
            m = (k * m + x) / (k + 1)
            k += 1
            a += 0.5
    return out


def gaussian_block(X, m0, kappa0, nu0, S0) -> float:
    """Normal-Inverse-Wishart (Sigma ~ IW(nu0, S0), mu | Sigma ~ N(m0, Sigma / kappa0)),
    by the chain rule of multivariate Student-t predictives."""
    d = X.shape[1]
    m, k, nu, S = np.array(m0, float), float(kappa0), float(nu0), np.array(S0, float)
    out = 0.0
    for x in X:
        df = nu - d + 1
        shape = S * (k + 1) / (k * df)
        out += stats.multivariate_t.logpdf(x, loc=m, shape=shape, df=df)
        r = x - m
        S = S + k / (k + 1) * np.outer(r, r)
        m = (k * m + x) / (k + 1)
        k += 1
        nu += 1
    return float(out)


def block_function(family: str, hyper):
    """``X_block -> log p(X_block)`` for one of the zoo's conjugate families."""
    if family == "bernoulli":
        return lambda X: bernoulli_block(X, *hyper)
    if family in ("multinomial", "categorical"):
        return lambda X: multinomial_block(X, *hyper)
    if family == "diag_gaussian":
        return lambda X: diag_gaussian_block(X, *hyper)
    if family == "gaussian":
        return lambda X: gaussian_block(X, *hyper)
    raise ValueError(family)


def log_marginal(z, X, block) -> float:
    """``log p(X | z) = sum_k log p(X_k)``."""
    return float(sum(block(X[z == k]) for k in np.unique(z)))


# ----------------------------------------------------------------------- enumerations
def dp_table(X, block, alpha: float, discount: float = 0.0):
    """(partitions, log p(z), log p(X | z)) for every partition of the rows of ``X``."""
    parts = partitions(X.shape[0])
    prior = np.array([log_eppf(z, alpha, discount) for z in parts])
    lik = np.array([log_marginal(z, X, block) for z in parts])
    return parts, prior, lik


def power_posterior(prior, lik, beta: float) -> np.ndarray:
    """``p_beta(z)`` over the enumerated partitions."""
    lw = prior + (0.0 if beta == 0 else beta * lik)
    return np.exp(lw - special.logsumexp(lw))


def dp_log_evidence(X, block, alpha: float, discount: float = 0.0) -> float:
    """``log sum_z p(z) p(X | z)`` over every partition."""
    _parts, prior, lik = dp_table(X, block, alpha, discount)
    return float(special.logsumexp(prior + lik))


def finite_log_evidence(X, block, K: int, gamma: float) -> float:
    """Finite mixture: ``w ~ Dirichlet(gamma 1_K)``, ``z_i ~ Categorical(w)`` (labelled),
    each component's parameters from the conjugate prior. Sum over every labelled
    assignment of the Dirichlet-multinomial ``p(z)`` times the block marginals."""
    n = X.shape[0]
    cache: dict = {}
    terms = []
    for z in itertools.product(range(K), repeat=n):
        z = np.array(z)
        counts = np.bincount(z, minlength=K)
        log_pz = (special.gammaln(K * gamma) - special.gammaln(n + K * gamma)
                  + np.sum(special.gammaln(counts + gamma) - special.gammaln(gamma)))
        lik = 0.0
        for k in range(K):
            members = tuple(np.flatnonzero(z == k))
            if members:
                if members not in cache:
                    cache[members] = block(X[list(members)])
                lik += cache[members]
        terms.append(log_pz + lik)
    return float(special.logsumexp(terms))


# ----------------------------------------------------------------------- a hand-written mixture
def gaussian_mean_block(x, m0: float, s0: float, sigma: float, beta: float):
    """For ``mu ~ N(m0, s0^2)`` and ``x_j ~ N(mu, sigma^2)`` to the power ``beta``: the log
    of ``∫ N(mu | m0, s0^2) prod_j N(x_j | mu, sigma^2)^beta dmu`` and the power
    posterior's ``E[mu]`` and ``E[mu^2]``, by Simpson's rule on a grid of +-12 prior
    sds."""
    from scipy import integrate

    grid = np.linspace(m0 - 12 * s0, m0 + 12 * s0, 40_001)
    logf = stats.norm.logpdf(grid, m0, s0)
    if len(x) and beta > 0:
        logf = logf + beta * stats.norm.logpdf(np.asarray(x)[:, None], grid, sigma).sum(0)
    top = logf.max()
    f = np.exp(logf - top)
    mass = integrate.simpson(f, x=grid)
    moments = [float(integrate.simpson(grid**j * f, x=grid) / mass) for j in (1, 2)]
    return float(top + math.log(mass)), *moments


def latent_mixture_table(X, weights, m0, s0: float, sigma: float, beta: float):
    """Two-or-more Gaussian components with means ``mu_k ~ N(m0[k], s0^2)``, known
    ``sigma``, labels ``z_i ~ Categorical(weights)``, likelihood to the power ``beta``:
    for every labelling ``z`` (in ``itertools.product`` order) ``p_beta(z)``, ``E_beta[mu
    | z]`` and ``E_beta[mu^2 | z]`` (each ``(states, K)``), and the log normaliser ``log
    sum_z ∫ p(z, mu) p(X | z, mu)^beta dmu`` (at ``beta = 1`` the log evidence)."""
    K, n = len(weights), len(X)
    states = list(itertools.product(range(K), repeat=n))
    logw = np.empty(len(states))
    means = np.empty((len(states), K))
    squares = np.empty((len(states), K))
    for s, z in enumerate(states):
        z = np.array(z)
        logw[s] = float(np.sum(np.log(np.asarray(weights)[z])))
        for k in range(K):
            log_mass, means[s, k], squares[s, k] = gaussian_mean_block(
                X[z == k], m0[k], s0, sigma, beta)
            logw[s] += log_mass
    log_norm = float(special.logsumexp(logw))
    return np.exp(logw - log_norm), means, squares, log_norm


# ----------------------------------------------------------------------- the zoo's finite mixture
def floored_normal_block(x, center: float, mu_sd: float, sigma_scale: float, floor: float,
                         grid: int = 6001) -> float:
    """One column's block marginal under the zoo's finite mixture's component prior
    ``mu ~ N(center, mu_sd^2)``, ``sigma`` with density ``∝ exp(-sigma^2 / (2
    sigma_scale^2) - floor^2 / (2 sigma^2))``: for each ``sigma`` the block is Normal
    with covariance ``sigma^2 I + mu_sd^2 11'`` (its determinant and inverse by the
    matrix determinant lemma and Sherman-Morrison), then ``sigma`` is integrated by
    Simpson's rule on a log grid, the prior's normaliser on the same grid."""
    from scipy import integrate

    x = np.asarray(x, dtype=float)
    n = x.size
    log_s = np.linspace(math.log(1e-4), math.log(100 * sigma_scale), grid)
    s2 = np.exp(2 * log_s)
    log_prior = -s2 / (2 * sigma_scale**2) - floor**2 / (2 * s2) + log_s  # d sigma = sigma dlog
    if n:
        r = x - center
        t2 = mu_sd**2
        quad = (r @ r - t2 * r.sum() ** 2 / (s2 + n * t2)) / s2
        log_det = (n - 1) * np.log(s2) + np.log(s2 + n * t2)
        log_lik = -0.5 * (n * math.log(2 * math.pi) + log_det + quad)
    else:
        log_lik = 0.0
    top = float(np.max(log_prior + log_lik))
    num = integrate.simpson(np.exp(log_prior + log_lik - top), x=log_s)
    top0 = float(np.max(log_prior))
    den = integrate.simpson(np.exp(log_prior - top0), x=log_s)
    return float(top + math.log(num) - top0 - math.log(den))


def finite_mixture_log_evidence(x, n_components: int, weight_concentration: float,
                                resolution: float) -> float:
    """``log p(x)`` of ``pp_models.finite_mixture.model(x, n_components,
    weight_concentration=..., resolution=...)`` for one column ``x``: every labelled
    assignment (:func:`finite_log_evidence`) with the blocks of
    :func:`floored_normal_block` (the factory's prior: ``center`` the data's mean, ``mu``'s
    sd twice the data's sd, ``sigma``'s scale the data's sd)."""
    x = np.asarray(x, dtype=float).reshape(-1, 1)
    center, scale = float(x.mean()), float(x.std())

    def block(X):
        return floored_normal_block(X[:, 0], center, 2 * scale, scale, resolution)

    return finite_log_evidence(x, block, n_components, weight_concentration)
