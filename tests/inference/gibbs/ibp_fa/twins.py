"""Planted-bug twins of the NSFA step, each one realistic mistake the thesis warns of: the
sweep compiled with one of its kernels replaced by a test-only one
(``tests/helpers/twin_kernels.py``); the sweeps that never draw the auxiliary values; the
whole-feature moves without their proposal probabilities; and the tempered step's twin
that ignores beta."""

import math

import numpy as np

from custom_ops.ibp_fa.feature_moves import feature_birth_death_moves
from custom_ops.ibp_fa.nsfa import nsfa_sweeps, take_out_singletons
from custom_ops.jit import njit_exact
from inference.gibbs.ibp_fa import NSFAGibbs
from pp_models.validation import check_inverse_temperature
from tests.helpers.twin_kernels import twin_kernel


@njit_exact
def printed_log_odds(m_minus, D):
    """``shared_feature_log_odds`` with the prior odds of Eq. 3.6 as printed,
    ``m / (D - 1 - m)`` (should be ``m / (D - m)``)."""
    if D - 1 - m_minus <= 0:
        return np.inf
    return math.log(m_minus / (D - 1 - m_minus))


@njit_exact
def take_out_and_delete_singletons(d, state, m, S, Ehat):
    """``take_out_singletons`` that also Gibbs-samples the row's singletons to zero before
    new ones are proposed (Knowles §3.2: the kernel then depends on the current state of
    what it samples; under-counts)."""
    kappa, _g_sq = take_out_singletons(d, state, m, S, Ehat)
    Z = state.Z
    for j in range(kappa):
        Z[d, S[j]] = 0
        m[S[j]] = 0
    return 0, 0.0


class PrintedOddsNSFA(NSFAGibbs):
    """The prior odds of Eq. 3.6 as printed, ``m/(D - 1 - m)`` (should be ``m/(D - m)``)."""

    name = "test_nsfa_printed_odds"
    sweep_kernel = staticmethod(twin_kernel(nsfa_sweeps,
                                            shared_feature_log_odds=printed_log_odds))


class DeleteSingletonsNSFA(NSFAGibbs):
    """Singletons Gibbs-sampled to zero before new ones are proposed (Knowles §3.2: the
    kernel then depends on the current state of what it samples; under-counts)."""

    name = "test_nsfa_delete_singletons"
    sweep_kernel = staticmethod(twin_kernel(
        nsfa_sweeps, take_out_singletons=take_out_and_delete_singletons))


@njit_exact
def never_redraws_auxiliary(i, n_sweeps):
    """``redraws_auxiliary`` that never draws the auxiliary values (the unused slots' X
    rows, the loadings off Z): left as the last update wrote them, since no likelihood
    term reads them."""
    return False


class NoAuxiliaryDrawsNSFA(NSFAGibbs):
    """The sweeps never draw the auxiliary values from their prior: a freed slot keeps
    its posterior X row and loadings, an unused one its initial values."""

    name = "test_nsfa_no_auxiliary_draws"
    sweep_kernel = staticmethod(twin_kernel(nsfa_sweeps, redraws_auxiliary=never_redraws_auxiliary))


class IgnoresBetaNSFA(NSFAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1): the
    step a tempered run would get if the kernel's beta were not plumbed through."""

    name = "test_nsfa_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


@njit_exact
def without_proposal_terms(log_prior_ratio, log_collapsed_ratio, log_q_reverse,
                           log_q_forward):
    """The whole-feature move's ratio with the proposal probabilities left out."""
    return log_prior_ratio + log_collapsed_ratio


class NoProposalTermsFeatureMoves(NSFAGibbs):
    """Whole-feature births and deaths accepted without their proposal probabilities."""

    name = "test_nsfa_no_proposal_terms_feature_moves"

    @property
    def feature_kernel(self):
        return twin_kernel(feature_birth_death_moves, feature_move_log_ratio=without_proposal_terms)
