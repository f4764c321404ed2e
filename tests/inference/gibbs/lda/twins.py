"""Planted-bug twins of the collapsed LDA step."""

from custom_ops.lda.alias import gibbs_sweep_alias
from inference.gibbs.lda import CollapsedLDAGibbs
from pp_models.validation import check_inverse_temperature
from tests.custom_ops.lda.twins import accept_every_proposal
from tests.helpers.twin_kernels import twin_kernel


class IgnoresBetaLDA(CollapsedLDAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_lda_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


class NoMetropolisHastingsLDA(CollapsedLDAGibbs):
    """``sampler="alias"`` whose word proposals are all accepted: the
    Metropolis-Hastings correction of the stale alias tables dropped."""

    name = "test_lda_alias_without_mh"
    alias_kernel = staticmethod(
        twin_kernel(gibbs_sweep_alias, alias_acceptance=accept_every_proposal)
    )
