"""Exact conditionals and power posteriors of tiny IOMMs, written from Heller (2007)
§7.2-7.3 directly (independently of the sampler's kernels).

- :func:`exact_membership_conditional`: ``p(Z | Theta, X)`` with the likelihood to the
  power beta, by enumerating every ``N x C`` binary matrix (the slot IBP prior of
  :class:`pp_models.distributions.IndianBuffet`, written out here);
- :func:`bernoulli_joint_draws`: exact draws of ``(Z, theta)`` from the power posterior
  ``P(Z) p(theta) L(Z, theta)^beta`` of Bernoulli experts, by rejection;
- :func:`bernoulli_loglik` / :func:`gaussian_loglik`: the product-of-experts likelihood
  (Eqs 7.5, 7.7);
- :func:`joint_cell` and :func:`two_sample_pvalue`: a coarse cell of a draw of ``(Z,
  Theta)`` and the chi-square test of two samples of cells;
- :func:`grid_expectations`: expectations under a density known up to a constant on a
  2-D grid (the power posterior of one slot's, or two slots', parameters given ``Z``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import stats

__all__ = ["bernoulli_joint_draws", "bernoulli_loglik", "exact_membership_conditional",
           "gaussian_loglik", "grid_expectations", "joint_cell", "matrix_states",
           "pooled_chisquare", "slot_ibp_log_prior", "state_index", "two_sample_pvalue"]


def matrix_states(N: int, C: int) -> np.ndarray:
    """Every binary ``N x C`` matrix, (2^(N C), N, C) int8, in binary-counting order."""
    return np.array([np.array(bits, dtype=np.int8).reshape(N, C)
                     for bits in itertools.product([0, 1], repeat=N * C)])


def state_index(Z) -> int:
    """The position of ``Z`` in :func:`matrix_states`."""
    bits = np.asarray(Z, dtype=np.int64).reshape(-1)
    return int(bits @ (1 << np.arange(bits.size))[::-1])


def slot_ibp_log_prior(Z, alpha: float) -> float:
    """``log P(Z)``: ``alpha^K+ exp(-alpha H_N) prod_k (N - m_k)! (m_k - 1)! / N!`` times
    ``(C - K+)! / C!`` (Griffiths & Ghahramani 2011 Eq. 2.12 and the arrangement of the
    used columns in ``C`` slots)."""
    Z = np.asarray(Z)
    N, C = Z.shape
    m = Z.sum(axis=0)
    used = m[m > 0]
    K = used.size
    harmonic = sum(1.0 / j for j in range(1, N + 1))
    value = K * math.log(alpha) - alpha * harmonic
    for mk in used:
        value += math.lgamma(N - mk + 1) + math.lgamma(mk) - math.lgamma(N + 1)
    return value + math.lgamma(C - K + 1) - math.lgamma(C + 1)


def bernoulli_loglik(Z, X, theta) -> float:
    """``log p(X | Z, theta)``: Eq. 7.7, a point in no cluster uniform on {0, 1}^D."""
    total = 0.0
    for i in range(Z.shape[0]):
        z = Z[i][:, None]
        num = np.prod(theta ** z, axis=0)
        p = num / (np.prod((1 - theta) ** z, axis=0) + num)
        total += np.sum(stats.bernoulli.logpmf(X[i], p))
    return total


def gaussian_loglik(Z, X, mu, tau, background) -> float:
    """``log p(X | Z, mu, tau)``: Eq. 7.5 with diagonal experts, a point in no cluster
    ``N(background[:, 0], background[:, 1]^2)``."""
    total = 0.0
    for i in range(Z.shape[0]):
        members = np.flatnonzero(Z[i])
        if members.size == 0:
            total += np.sum(stats.norm.logpdf(X[i], background[:, 0], background[:, 1]))
            continue
        S = 1.0 / tau[members].sum(axis=0)
        mean = S * (tau[members] * mu[members]).sum(axis=0)
        total += np.sum(stats.norm.logpdf(X[i], mean, np.sqrt(S)))
    return total


def exact_membership_conditional(states, alpha: float, loglik, beta: float) -> np.ndarray:
    """``p(Z | Theta, X)`` over ``states`` with the likelihood ``loglik(Z)`` to the power
    ``beta``."""
    logp = np.array([slot_ibp_log_prior(Z, alpha) + beta * loglik(Z) for Z in states])
    p = np.exp(logp - logp.max())
    return p / p.sum()


def pooled_chisquare(counts, probs) -> float:
    """Chi-square p-value of ``counts`` against ``probs``, the rarest states pooled into
    cells of expected count >= 5."""
    order = np.argsort(probs)
    expected = probs[order] * counts.sum()
    observed = counts[order]
    cells_obs, cells_exp, acc_o, acc_e = [], [], 0.0, 0.0
    for o, e in zip(observed, expected, strict=True):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            cells_obs.append(acc_o)
            cells_exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        cells_obs[-1] += acc_o
        cells_exp[-1] += acc_e
    return float(stats.chisquare(cells_obs, cells_exp).pvalue)


def grid_expectations(log_density, u, v, functions: dict) -> tuple[dict, dict]:
    """Means and standard deviations of ``functions`` (name -> f(U, V)) under the density
    ``exp(log_density(U, V))`` (up to a constant) on the product grid ``u x v`` (uniform
    spacings, the density negligible at the edges)."""
    U, V = np.meshgrid(u, v, indexing="ij")
    logp = log_density(U, V)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    means, sds = {}, {}
    for name, f in functions.items():
        values = f(U, V)
        means[name] = float(np.sum(w * values))
        sds[name] = float(np.sqrt(max(np.sum(w * values**2) - means[name] ** 2, 0.0)))
    return means, sds


def bernoulli_joint_draws(n, states, state_probs, X, theta_prior, beta, rng):
    """``n`` exact draws of ``(Z, theta)`` from ``P(Z) prod Beta(theta; a, b)
    L(Z, theta)^beta`` (Bernoulli experts, Eq. 7.7): ``Z`` from ``state_probs`` (the slot
    IBP prior over ``states``) and ``theta`` (C, D) from its prior, kept with probability
    ``L^beta`` (at most 1: ``L`` is a probability). Returns ``(Z (n, N, C), theta (n,
    C, D))``."""
    C, D = states.shape[2], X.shape[1]
    Zs, thetas, have = [], [], 0
    while have < n:
        M = 4 * (n - have) + 1000
        Z = states[rng.choice(len(states), size=M, p=state_probs)].astype(np.float64)
        theta = rng.beta(*theta_prior, size=(M, C, D))
        # theta~ of each point: prod theta^z / (prod theta^z + prod (1 - theta)^z)
        log_on = Z @ np.log(theta)
        log_off = Z @ np.log1p(-theta)
        log_p = np.where(X == 1, log_on, log_off) - np.logaddexp(log_on, log_off)
        keep = np.log(rng.random(M)) < beta * log_p.sum(axis=(1, 2))
        Zs.append(Z[keep].astype(np.int8))
        thetas.append(theta[keep])
        have += int(keep.sum())
    return np.concatenate(Zs)[:n], np.concatenate(thetas)[:n]


def joint_cell(Z, first, median) -> int:
    """The cell of a draw: (clusters used, memberships, used clusters whose first
    parameter exceeds ``median``)."""
    used = Z.any(axis=0)
    return (int(used.sum()) * (Z.size + 1) + int(Z.sum())) * (Z.shape[1] + 1) + int(
        np.sum(first[used] > median))


def two_sample_pvalue(a, b):
    """Chi-square test that two samples of cell labels share a distribution (cells
    pooled, rarest first, until each sample's expected count is at least 5)."""
    share = len(a) / (len(a) + len(b))
    cells = np.union1d(a, b)
    ca = np.array([np.sum(a == c) for c in cells], dtype=float)
    cb = np.array([np.sum(b == c) for c in cells], dtype=float)
    order = np.argsort(ca + cb)
    rows, acc = [], np.zeros(2)
    for t in order:
        acc += (ca[t], cb[t])
        if acc.sum() * min(share, 1 - share) >= 5:
            rows.append(acc.copy())
            acc[:] = 0
    if acc.sum() > 0:
        rows[-1] += acc
    return float(stats.chi2_contingency(np.array(rows).T, correction=False).pvalue)
