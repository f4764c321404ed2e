"""Exact inference in a hidden Markov model with known parameters: forward-backward,
Viterbi decoding and forward-filtering backward-sampling, batched over sequences.

The arguments are log probabilities: ``log_pi0`` (K,), ``log_P`` (K, K) with
``log_P[i, j] = log p(s_t = j | s_{t-1} = i)`` and ``log_lik`` (T, K) with
``log_lik[t, k] = log p(y_t | s_t = k)``; ``lengths`` splits the ``T`` rows into
sequences (default: one). The recursions are those of Ghahramani & Roweis (1999), "HMM
pseudocode", in Numba (:mod:`custom_ops.hmm.forward_backward`), linear in ``T``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from custom_ops.hmm.forward_backward import (
    ffbs_kernel,
    forward_backward_kernel,
    viterbi_kernel,
)
from pp_models.validation import rng_from_seed

__all__ = [
    "ForwardBackwardResult",
    "as_lengths",
    "ffbs",
    "forward_backward",
    "offsets_of",
    "viterbi",
]


@dataclass(frozen=True)
class ForwardBackwardResult:
    """What :func:`forward_backward` computes.

    Attributes
    ----------
    log_evidence : float
        ``log p(y)``, the paths summed out (summed over sequences).
    sequence_log_evidence : numpy.ndarray
        ``log p(y_s)`` of each sequence.
    marginals : numpy.ndarray
        ``(T, K)`` smoothed state probabilities ``gamma_t(k) = p(s_t = k | y)``.
    expected_transitions : numpy.ndarray
        ``(K, K)``: ``sum_t p(s_{t-1} = i, s_t = j | y)`` over every sequence.
    expected_initial : numpy.ndarray
        ``(K,)``: ``sum_s p(s_first = k | y)``.
    """

    log_evidence: float
    sequence_log_evidence: np.ndarray
    marginals: np.ndarray
    expected_transitions: np.ndarray
    expected_initial: np.ndarray


def as_lengths(lengths, T: int, name: str = "lengths") -> np.ndarray:
    """``lengths`` (positive integers summing to ``T``; None: one sequence) as int64."""
    if lengths is None:
        return np.array([T], dtype=np.int64)
    values = np.asarray(lengths)
    if (
        values.ndim != 1
        or values.size == 0
        or not (
            np.issubdtype(values.dtype, np.integer)
            or (np.issubdtype(values.dtype, np.floating) and np.all(values == np.round(values)))
        )
    ):
        raise ValueError(f"{name} must be a 1-D sequence of positive integers, got {lengths!r}")
    values = values.astype(np.int64)
    if np.any(values < 1):
        raise ValueError(f"{name} must be positive, got {values.tolist()}")
    if values.sum() != T:
        raise ValueError(
            f"{name} must sum to the number of observations T = {T}, got {values.sum()}"
        )
    return values


def offsets_of(lengths) -> np.ndarray:
    """``[0, l_0, l_0 + l_1, ...]``: where each sequence starts, and the end."""
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)


def _arguments(log_pi0, log_P, log_lik, lengths):
    log_pi0 = np.ascontiguousarray(log_pi0, dtype=np.float64)
    log_P = np.ascontiguousarray(log_P, dtype=np.float64)
    log_lik = np.ascontiguousarray(log_lik, dtype=np.float64)
    if log_pi0.ndim != 1:
        raise ValueError(f"log_pi0 must be 1-D (K,), got shape {log_pi0.shape}")
    K = log_pi0.shape[0]
    if K < 1:
        raise ValueError("log_pi0 must have at least one state")
    if log_P.shape != (K, K):
        raise ValueError(f"log_P must be (K, K) = ({K}, {K}), got shape {log_P.shape}")
    if log_lik.ndim != 2 or log_lik.shape[1] != K or log_lik.shape[0] < 1:
        raise ValueError(f"log_lik must be (T, K) with K = {K}, got shape {log_lik.shape}")
    for name, value in (("log_pi0", log_pi0), ("log_P", log_P), ("log_lik", log_lik)):
        if np.any(np.isnan(value)) or np.any(value == np.inf):
            raise ValueError(f"{name} must be log probabilities (no NaN or +inf)")
    offsets = offsets_of(as_lengths(lengths, log_lik.shape[0]))
    return log_pi0, log_P, log_lik, offsets


def forward_backward(log_pi0, log_P, log_lik, lengths=None) -> ForwardBackwardResult:
    """Smoothed marginals, expected transitions and the log evidence (the scaled
    forward-backward recursion; Ghahramani & Roweis 1999, "HMM pseudocode").

    Returns
    -------
    ForwardBackwardResult
    """
    log_pi0, log_P, log_lik, offsets = _arguments(log_pi0, log_P, log_lik, lengths)
    evidence, gamma, xi, initial = forward_backward_kernel(log_pi0, log_P, log_lik, offsets)
    return ForwardBackwardResult(float(evidence.sum()), evidence, gamma, xi, initial)


def viterbi(log_pi0, log_P, log_lik, lengths=None) -> tuple[np.ndarray, float]:
    """The most probable state path and ``log p(path, y)`` (max-product in log space;
    ties to the lowest state)."""
    log_pi0, log_P, log_lik, offsets = _arguments(log_pi0, log_P, log_lik, lengths)
    path, log_prob = viterbi_kernel(log_pi0, log_P, log_lik, offsets)
    return path, float(log_prob)


def ffbs(log_pi0, log_P, log_lik, lengths=None, *, random_seed=None) -> np.ndarray:
    """One exact draw of the whole state path from ``p(s | y)`` by forward filtering,
    backward sampling."""
    log_pi0, log_P, log_lik, offsets = _arguments(log_pi0, log_P, log_lik, lengths)
    rng = rng_from_seed(random_seed)
    path = np.zeros(log_lik.shape[0], dtype=np.int64)
    value = ffbs_kernel(log_pi0, log_P, log_lik, offsets, rng.random(log_lik.shape[0]), path)
    if value == -np.inf:
        raise ValueError("the data are impossible under these parameters (log evidence -inf)")
    return path
