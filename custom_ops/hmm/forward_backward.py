"""Forward-backward, Viterbi and FFBS for hidden Markov models (Numba kernels).

A model with ``K`` states has initial log probabilities ``log_pi0`` (K,), transition log
probabilities ``log_P`` (K, K), ``log_P[i, j] = log p(s_t = j | s_{t-1} = i)``, and the
observations' log-likelihoods ``log_lik`` (T, K), ``log_lik[t, k] = log p(y_t | s_t = k)``.
Several sequences are stacked along ``T``: ``offsets`` (n_seq + 1,) holds where each
starts, ``offsets[0] = 0`` and ``offsets[-1] = T``; each sequence starts afresh from
``log_pi0``.

The recursion is the scaled one of Ghahramani & Roweis (1999, "HMM pseudocode"), with
``q_j(t) = p(y_t | s_t = j)`` computed as ``exp(log_lik[t, j] - m_t)``, ``m_t = max_j
log_lik[t, j]``, so that no emission underflows::

    alpha(1) = pi . q(1),              rho(1) = sum alpha(1),  alpha(1) /= rho(1)
    alpha(t) = (P' alpha(t-1)) . q(t), rho(t) = sum alpha(t),  alpha(t) /= rho(t)
    beta(tau) = 1,  beta(t) = P (beta(t+1) . q(t+1)) / rho(t+1)
    xi += P . (alpha(t) (beta(t+1) . q(t+1))') / rho(t+1),   gamma = alpha . beta
    log p(y) = sum_t (log rho(t) + m_t)

Time and memory are linear in ``T`` (``O(T K^2)`` work, the ``T x K`` marginals and two
length-``T`` vectors). ``log_P`` and ``log_pi0`` need not be normalised: the recursion
then sums ``exp`` of the path scores, and its derivatives (the gradient of the log
evidence) are the expected counts whatever the normalisation.

FFBS (Chib 1996; Frühwirth-Schnatter 2006 §11.5) draws a whole path from
``p(s_{1:T} | y)``: the forward filter, then ``s_T ~ alpha(T)`` and backwards
``p(s_t = i | s_{t+1} = j, y_{1:t}) ∝ alpha_i(t) P_ij`` (:func:`backward_weights`), by
inverting the cumulative sums at uniforms passed in.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact

__all__ = [
    "backward_weights",
    "check_offsets",
    "ffbs_kernel",
    "forward_backward_kernel",
    "forward_filter",
    "path_log_prob",
    "viterbi_kernel",
]


@njit_exact
def check_offsets(offsets, T):
    """Whether ``offsets`` is ``0 = o_0 < o_1 < ... < o_n = T``."""
    n = offsets.shape[0]
    if n < 2 or offsets[0] != 0 or offsets[n - 1] != T:
        return False
    for s in range(n - 1):
        if offsets[s + 1] <= offsets[s]:
            return False
    return True


@njit_exact
def forward_filter(log_pi0, log_P, log_lik, start, stop, alpha, shift, rho):
    """The scaled forward pass over rows ``start..stop-1``: writes the filtered
    probabilities ``alpha`` (rows ``t``: ``p(s_t | y_{start..t})``), ``shift[t] = m_t``
    and ``rho[t]``; returns the sequence's log evidence (``-inf`` when the data are
    impossible under the parameters)."""
    K = log_pi0.shape[0]
    P = np.exp(log_P)
    log_evidence = 0.0
    for t in range(start, stop):
        m = -np.inf
        for k in range(K):
            if log_lik[t, k] > m:
                m = log_lik[t, k]
        shift[t] = m
        total = 0.0
        for k in range(K):
            q = math.exp(log_lik[t, k] - m) if m > -np.inf else 0.0
            if t == start:
                a = math.exp(log_pi0[k])
            else:
                a = 0.0
                for i in range(K):
                    a += alpha[t - 1, i] * P[i, k]
            alpha[t, k] = a * q
            total += alpha[t, k]
        rho[t] = total
        if not total > 0.0:
            # impossible data: leave the rest of the sequence at zero probability
            for u in range(t, stop):
                for k in range(K):
                    alpha[u, k] = 0.0
                rho[u] = 0.0
            return -np.inf
        for k in range(K):
            alpha[t, k] /= total
        log_evidence += math.log(total) + m
    return log_evidence


@njit_exact
def forward_backward_kernel(log_pi0, log_P, log_lik, offsets):
    """Smoothed marginals, expected transitions and log evidence (module docstring).

    Returns ``(log_evidence, marginals, expected_transitions, expected_initial)``:
    per-sequence log evidence (n_seq,), ``gamma`` (T, K), ``sum_t xi_t`` (K, K) over
    every sequence's transitions and ``sum_s gamma(first row of s)`` (K,). A sequence
    with ``-inf`` evidence contributes zeros.
    """
    T, K = log_lik.shape
    n_seq = offsets.shape[0] - 1
    P = np.exp(log_P)
    gamma = np.zeros((T, K))
    shift = np.zeros(T)
    rho = np.zeros(T)
    xi = np.zeros((K, K))
    initial = np.zeros(K)
    log_evidence = np.empty(n_seq)
    beta = np.empty(K)
    weighted = np.empty(K)
    for s in range(n_seq):
        start, stop = offsets[s], offsets[s + 1]
        value = forward_filter(log_pi0, log_P, log_lik, start, stop, gamma, shift, rho)
        log_evidence[s] = value
        if value == -np.inf:
            for t in range(start, stop):
                for k in range(K):
                    gamma[t, k] = 0.0
            continue
        for k in range(K):
            beta[k] = 1.0
        # gamma holds alpha; row stop-1 is already alpha . beta with beta = 1
        for t in range(stop - 2, start - 1, -1):
            # weighted = beta(t+1) . q(t+1) / rho(t+1)
            for j in range(K):
                weighted[j] = beta[j] * math.exp(log_lik[t + 1, j] - shift[t + 1]) / rho[t + 1]
            for i in range(K):
                a = gamma[t, i]
                b = 0.0
                for j in range(K):
                    term = P[i, j] * weighted[j]
                    b += term
                    xi[i, j] += a * term
                beta[i] = b
            for i in range(K):
                gamma[t, i] *= beta[i]
        for k in range(K):
            initial[k] += gamma[start, k]
    return log_evidence, gamma, xi, initial


@njit_exact
def viterbi_kernel(log_pi0, log_P, log_lik, offsets):
    """The most probable path (int64, T) and ``log p(path, y)`` summed over sequences,
    by max-product in log space with back-pointers; ties go to the lowest state."""
    T, K = log_lik.shape
    n_seq = offsets.shape[0] - 1
    path = np.zeros(T, dtype=np.int64)
    back = np.zeros((T, K), dtype=np.int64)
    delta = np.empty(K)
    previous = np.empty(K)
    total = 0.0
    for s in range(n_seq):
        start, stop = offsets[s], offsets[s + 1]
        for k in range(K):
            delta[k] = log_pi0[k] + log_lik[start, k]
        for t in range(start + 1, stop):
            for k in range(K):
                previous[k] = delta[k]
            for j in range(K):
                best = -np.inf
                arg = 0
                for i in range(K):
                    v = previous[i] + log_P[i, j]
                    if v > best:
                        best = v
                        arg = i
                delta[j] = best + log_lik[t, j]
                back[t, j] = arg
        best = -np.inf
        arg = 0
        for k in range(K):
            if delta[k] > best:
                best = delta[k]
                arg = k
        total += best
        path[stop - 1] = arg
        for t in range(stop - 1, start, -1):
            path[t - 1] = back[t, path[t]]
    return path, total


@njit_exact
def backward_weights(alpha_t, P, next_state, out):
    """Unnormalised ``p(s_t = i | s_{t+1} = next_state, y_{1:t}) ∝ alpha_i(t) P_{i, next}``
    into ``out``."""
    for i in range(alpha_t.shape[0]):
        out[i] = alpha_t[i] * P[i, next_state]


@njit_exact
def _inverse_cdf(weights, u):
    total = 0.0
    for k in range(weights.shape[0]):
        total += weights[k]
    target = u * total
    cumulative = 0.0
    last = 0
    for k in range(weights.shape[0]):
        if weights[k] > 0.0:
            last = k
            cumulative += weights[k]
            if target < cumulative:
                return k
    return last


@njit_exact
def ffbs_kernel(log_pi0, log_P, log_lik, offsets, uniforms, path):
    """Draw a path from ``p(s | y)`` into ``path`` (int64, T) by forward filtering and
    backward sampling, one uniform of ``uniforms`` (T,) per state; returns the log
    evidence summed over sequences (``-inf``, and ``path`` untouched for that sequence,
    when the data are impossible)."""
    T, K = log_lik.shape
    n_seq = offsets.shape[0] - 1
    P = np.exp(log_P)
    alpha = np.zeros((T, K))
    shift = np.zeros(T)
    rho = np.zeros(T)
    weights = np.empty(K)
    total = 0.0
    for s in range(n_seq):
        start, stop = offsets[s], offsets[s + 1]
        value = forward_filter(log_pi0, log_P, log_lik, start, stop, alpha, shift, rho)
        total += value
        if value == -np.inf:
            continue
        path[stop - 1] = _inverse_cdf(alpha[stop - 1], uniforms[stop - 1])
        for t in range(stop - 2, start - 1, -1):
            backward_weights(alpha[t], P, path[t + 1], weights)
            path[t] = _inverse_cdf(weights, uniforms[t])
    return total


@njit_exact
def path_log_prob(log_pi0, log_P, path, offsets):
    """``log p(path)`` of the Markov chain (initial and transition terms), summed over
    sequences."""
    total = 0.0
    for s in range(offsets.shape[0] - 1):
        start, stop = offsets[s], offsets[s + 1]
        total += log_pi0[path[start]]
        for t in range(start + 1, stop):
            total += log_P[path[t - 1], path[t]]
    return total
