"""Baum-Welch: maximum-likelihood HMM parameters by expectation-maximisation.

Ghahramani & Roweis (1999), "HMM pseudocode", Baum-Welch updates: for each sequence run
forward-backward for ``gamma`` and ``xi``, then

    T_hat += xi,   pi_hat += gamma(1),   A_hat_j = sum_t y_t gamma_j(t) / sum_t gamma_j(t)
    T_hat_ij /= sum_k T_hat_ik,   pi_hat /= sum pi_hat

(the emission update per family: weighted mean and variance for the Gaussian, weighted
mean for the Poisson and Bernoulli, weighted category frequencies for the categorical;
:meth:`pp_models.hmm.emissions.Emission.m_step`). Each iteration does not decrease
``log p(y)``; the result records the trace.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from custom_ops.hmm.forward_backward import forward_backward_kernel
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.recursions import as_lengths, offsets_of
from pp_models.validation import check_int, check_positive, rng_from_seed

__all__ = ["EMResult", "em"]


@dataclass(frozen=True)
class EMResult:
    """Baum-Welch's answer: the parameters (``pi0``, ``P``, ``params``: the emission's),
    the log-likelihood at each iteration (``history``, before that iteration's M step;
    the last entry at the returned parameters), ``iterations`` and ``converged``."""

    pi0: np.ndarray
    P: np.ndarray
    params: dict
    log_likelihood: float
    history: np.ndarray
    iterations: int
    converged: bool


def em(
    y,
    n_states: int,
    *,
    emission: str = "gaussian",
    lengths=None,
    init=None,
    max_iter: int = 200,
    tol: float = 1e-8,
    n_categories=None,
    random_seed=None,
) -> EMResult:
    """Baum-Welch estimates of an HMM's parameters.

    Parameters
    ----------
    y : array-like, shape (T,)
        As for :func:`pp_models.hmm.model`.
    n_states : int
    emission : {"gaussian", "poisson", "bernoulli", "categorical"}
    lengths : sequence of int, optional
    init : dict, optional
        Starting ``pi0``, ``P`` and emission parameters (``mu``, ``tau`` | ``rate`` |
        ``p`` | ``phi``); default: uniform ``pi0``, ``P`` with 0.9 on the diagonal and
        emission parameters from a random soft assignment.
    max_iter : int
    tol : float
        Stop when the log-likelihood rises by less than ``tol`` (relative to its size).
    random_seed : int or Generator, optional

    Returns
    -------
    EMResult
    """
    family = get_emission(emission)
    K = check_int(n_states, "n_states", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    y = family.check(y, "y", n_categories=n_categories)
    offsets = offsets_of(as_lengths(lengths, y.shape[0]))
    hyper = family.hyper(y, n_categories=n_categories)
    rng = rng_from_seed(random_seed)
    if init is None:
        pi0 = np.full(K, 1.0 / K)
        P = np.full((K, K), 0.1 / max(K - 1, 1)) + (0.9 - 0.1 / max(K - 1, 1)) * np.eye(K)
        if K == 1:
            P = np.ones((1, 1))
        params = family.m_step(y, rng.dirichlet(np.ones(K), size=y.shape[0]), hyper)
    else:
        if not isinstance(init, dict):
            raise TypeError("init must be a dict of pi0, P and the emission parameters")
        missing = [n for n in ("pi0", "P", *family.parameters) if n not in init]
        if missing:
            raise ValueError(f"init lacks {missing}")
        pi0 = np.asarray(init["pi0"], dtype=float)
        P = np.asarray(init["P"], dtype=float)
        params = {n: np.asarray(init[n], dtype=float) for n in family.parameters}
        if pi0.shape != (K,) or P.shape != (K, K):
            raise ValueError(f"init: pi0 must be ({K},) and P ({K}, {K})")
    history = []
    converged = False
    with np.errstate(divide="ignore"):
        for _ in range(max_iter):
            log_lik = np.ascontiguousarray(family.log_lik(params, y))
            evidence, gamma, xi, initial = forward_backward_kernel(
                np.log(pi0), np.log(P), log_lik, offsets
            )
            value = float(evidence.sum())
            history.append(value)
            if len(history) > 1 and value - history[-2] < tol * max(1.0, abs(value)):
                converged = True
                break
            pi0 = initial / initial.sum()
            P = xi / np.where(xi.sum(axis=1, keepdims=True) > 0, xi.sum(axis=1, keepdims=True), 1.0)
            P[xi.sum(axis=1) == 0] = 1.0 / K  # a state never left keeps a uniform row
            params = family.m_step(y, gamma, hyper)
        else:
            log_lik = np.ascontiguousarray(family.log_lik(params, y))
            value = float(
                forward_backward_kernel(np.log(pi0), np.log(P), log_lik, offsets)[0].sum()
            )
            history.append(value)
    return EMResult(
        pi0=pi0,
        P=P,
        params=params,
        log_likelihood=history[-1],
        history=np.asarray(history),
        iterations=len(history) - 1,
        converged=converged,
    )
