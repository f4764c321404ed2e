"""Replica swaps of non-reversible parallel tempering (deterministic even/odd, DEO).

N replicas sit at inverse temperatures ``beta_0 < ... < beta_{N-1}``; replica ``i``
targets ``pi_i(x) ∝ p(x) L(x)^beta_i``. After every sweep, the pairs ``(i, i + 1)``
with ``i`` even (even iterations) or odd (odd iterations) propose to exchange their
states, accepted with probability (Syed et al. 2022, Eq. 2)

    alpha_i = min(1, exp((beta_{i+1} - beta_i) (l_i - l_{i+1}))),   l = log L(x).

Alternating the parity deterministically (instead of choosing it at random) makes the
index process non-reversible: a state keeps travelling in one direction along the ladder
until a swap is rejected, so round trips take O(N) instead of O(N^2) iterations
(their §3). The swap leaves the product of the ``pi_i`` invariant: each pair's exchange is
a Metropolis move on that product.

:class:`RoundTrips` counts round trips: a replica's state that has been at
``beta_0`` (the reference) reaches ``beta_{N-1}`` (the target) and returns to
``beta_0`` (their §3.1, the quantity the schedule maximises).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["RoundTrips", "deo_swap", "swap_log_acceptance"]


def swap_log_acceptance(beta_lo: float, beta_hi: float, loglik_lo: float,
                        loglik_hi: float) -> float:
    """log of the Metropolis ratio of exchanging the states at ``beta_lo < beta_hi``
    with log-likelihoods ``loglik_lo`` (state at ``beta_lo``) and ``loglik_hi``."""
    value = (beta_hi - beta_lo) * (loglik_lo - loglik_hi)
    return value if not math.isnan(value) else -math.inf


def deo_swap(ladder, logliks, parity: int, rng: np.random.Generator):
    """One round of swaps between the pairs ``(i, i + 1)`` with ``i % 2 == parity``.

    Parameters
    ----------
    ladder : (N,) float64
    logliks : (N,) float64, log-likelihood of the state at each temperature
    parity : 0 or 1
    rng : numpy Generator (one uniform per attempted pair, in order of ``i``)

    Returns
    -------
    permutation : (N,) int64
        ``new_state_at[i] = old_state_at[permutation[i]]``.
    probabilities : (N-1,) float64
        The acceptance probability of each attempted pair, NaN for the others.
    """
    n = len(ladder)
    perm = np.arange(n)
    probs = np.full(n - 1, np.nan)
    for i in range(parity, n - 1, 2):
        log_a = swap_log_acceptance(ladder[i], ladder[i + 1], logliks[i], logliks[i + 1])
        p = 1.0 if log_a >= 0.0 else math.exp(log_a)
        probs[i] = p
        if rng.random() < p:
            perm[i], perm[i + 1] = perm[i + 1], perm[i]
    return perm, probs


class RoundTrips:
    """Track which state sits where along the ladder and count its round trips.

    ``index[i]`` is the label of the state at temperature ``i`` (labels start as
    ``0..N-1``, the temperature each state started at).
    """

    def __init__(self, n: int):
        self.index = np.arange(n, dtype=np.int64)
        # per state label: 0 never at the reference yet, 1 left the reference, 2 reached
        # the target after the reference
        self._phase = np.zeros(n, dtype=np.int64)
        self.count = 0
        self._mark()

    def _mark(self):
        n = self.index.size
        at_ref, at_target = self.index[0], self.index[n - 1]
        if self._phase[at_ref] == 2:
            self.count += 1
        self._phase[at_ref] = 1
        if self._phase[at_target] == 1:
            self._phase[at_target] = 2

    def apply(self, permutation: np.ndarray) -> None:
        """Record a swap round's permutation (:func:`deo_swap`)."""
        self.index = self.index[permutation]
        self._mark()

    def state(self) -> dict:
        return {"index": self.index.tolist(), "phase": self._phase.tolist(),
                "count": int(self.count)}

    def restore(self, state: dict) -> None:
        self.index = np.asarray(state["index"], dtype=np.int64)
        self._phase = np.asarray(state["phase"], dtype=np.int64)
        self.count = int(state["count"])
