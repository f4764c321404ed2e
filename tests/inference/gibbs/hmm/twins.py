"""Planted-bug twins of the HMM steps: FFBS drawing each state from its filtered
distribution (the backward pass's conditional without the transition to the state drawn
after it), the conjugate step counting the moves between sequences as transitions, and
twins that accept an inverse temperature and ignore it."""

import numpy as np

from custom_ops.hmm.forward_backward import ffbs_kernel
from custom_ops.jit import njit_exact
from inference.gibbs.hmm import HMMConjugate, HMMPathFFBS
from pp_models.validation import check_inverse_temperature
from tests.helpers.twin_kernels import twin_kernel


@njit_exact
def filtered_weights(alpha_t, P, next_state, out):
    """``p(s_t | y_{1:t})``: the filtered probabilities, ignoring ``s_{t+1}``."""
    for i in range(alpha_t.shape[0]):
        out[i] = alpha_t[i]


filtered_ffbs = twin_kernel(ffbs_kernel, backward_weights=filtered_weights)


class FilteredFFBS(HMMPathFFBS):
    """Backward pass from the filtered distributions (ignores ``P_{i, s_{t+1}}``)."""

    name = "test_hmm_ffbs_filtered"
    ffbs = staticmethod(filtered_ffbs)


class CountsAcrossSequences(HMMConjugate):
    """The transition counts taken over the stacked series as if it were one sequence
    (the move from one sequence's last state to the next one's first counted)."""

    name = "test_hmm_conjugate_across_sequences"

    def counts(self, z):
        first, _ = super().counts(z)
        K = self.spec.n_states
        counts = np.zeros((K, K))
        np.add.at(counts, (z[:-1], z[1:]), 1.0)
        return first, counts


class IgnoresBetaFFBS(HMMPathFFBS):
    """Accepts an inverse temperature and keeps sampling the posterior."""

    name = "test_hmm_ffbs_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


class IgnoresBetaConjugate(HMMConjugate):
    """Accepts an inverse temperature and keeps sampling the posterior."""

    name = "test_hmm_conjugate_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")
