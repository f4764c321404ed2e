"""Planted-bug twins of the PYDT kernels: each a realistic mistake in a
Metropolis-Hastings ratio or a Jacobian, as a test-only kernel swapped into the shipped
kernels (``tests/helpers/twin_kernels.py``)."""

import math

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.branch import pydt_branch_moves
from custom_ops.pydt.hyper import pydt_branch_hyper
from custom_ops.pydt.sweep import pydt_sweep
from tests.helpers.twin_kernels import twin_kernel


# --- the bugs (test-only kernels standing in for the shipped ones of the same name) ----
@njit_exact_numpy
def likelihood_ratio_only(d_log_prior, d_log_lik, n_before, n_after, log_q_old, log_q_new):
    """``mh_log_ratio`` as the prior-as-proposal shortcut: the likelihood ratio alone,
    exact only for a single leaf and an unchanged number of subtrees."""
    return d_log_lik


@njit_exact_numpy
def ratio_without_proposal_densities(
    d_log_prior, d_log_lik, n_before, n_after, log_q_old, log_q_new
):
    """``mh_log_ratio`` with ``g_R(old) / g_R(new)`` left out."""
    return d_log_prior + d_log_lik + math.log(n_before) - math.log(n_after)


@njit_exact_numpy
def no_time_jacobian(l):
    """``log_time_jacobian`` left out: the times slice-sampled in ``log(1 - t)`` against
    the density in ``t``."""
    return 0.0


@njit_exact_numpy
def subset_prob_without_binomial(k, m):
    """``log_subset_prob`` without the ``binom(k, m)`` subsets of the size drawn."""
    return -math.log(k - 2.0)


@njit_exact_numpy
def no_time_proposal_density(l_v, l_u, l_min, lam):
    """``log_time_proposal`` dropped from both directions of the branch moves."""
    return 0.0


@njit_exact_numpy
def collapses_of_the_current_tree(n_internal):
    """``collapses_after_expansion`` counted on the current tree, not the proposed one."""
    return max(n_internal - 1, 1)


# --- the twin kernels --------------------------------------------------------------
def shortcut_sweep():
    return twin_kernel(pydt_sweep, mh_log_ratio=likelihood_ratio_only)


def no_proposal_ratio_sweep():
    return twin_kernel(pydt_sweep, mh_log_ratio=ratio_without_proposal_densities)


def no_time_jacobian_sweep():
    return twin_kernel(pydt_sweep, log_time_jacobian=no_time_jacobian)


#: the branch-point twins by name
BRANCH_BUGS = {
    "subset count dropped": {"log_subset_prob": subset_prob_without_binomial},
    "time density dropped": {"log_time_proposal": no_time_proposal_density},
    "reverse count of the current tree": {
        "collapses_after_expansion": collapses_of_the_current_tree
    },
}


def branch_twin(bug):
    """The branch moves (``pydt_branch_moves``) with the bug named ``bug``."""
    return twin_kernel(pydt_branch_moves, **BRANCH_BUGS[bug])


def branch_hyper_twin(bug):
    """The compiled branch moves and centred updates (``pydt_branch_hyper``) with the
    branch-point bug named ``bug``."""
    return twin_kernel(pydt_branch_hyper, **BRANCH_BUGS[bug])


@njit_exact_numpy
def no_transform_jacobian(kind, x):
    """``log_transform_jacobian`` left out: c, theta, alpha slice-sampled on the log /
    logit scale against their prior density in the original scale."""
    return 0.0


def no_transform_jacobian_hyper():
    """``pydt_branch_hyper`` with :func:`no_transform_jacobian`."""
    return twin_kernel(pydt_branch_hyper, log_transform_jacobian=no_transform_jacobian)
