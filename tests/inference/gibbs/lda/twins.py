"""Planted-bug twins of the collapsed LDA step."""

from custom_ops.jit import njit_exact
from custom_ops.lda.alias import gibbs_sweep_alias
from inference.gibbs.lda import CollapsedLDAGibbs
from pp_models.validation import check_inverse_temperature
from tests.helpers.twin_kernels import twin_kernel


class IgnoresBetaLDA(CollapsedLDAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_lda_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


@njit_exact(inline="always")
def accept_every_proposal(p_new, p_old, q_new, q_old):
    """The planted bug: a Metropolis-Hastings ratio of 1, whatever the proposal."""
    return 1.0


class NoMetropolisHastingsLDA(CollapsedLDAGibbs):
    """``sampler="alias"`` whose word proposals are all accepted: the
    Metropolis-Hastings correction of the stale alias tables dropped."""

    name = "test_lda_alias_without_mh"
    alias_kernel = staticmethod(
        twin_kernel(gibbs_sweep_alias, alias_acceptance=accept_every_proposal)
    )
