"""Planted-bug twin of the tempered collapsed LDA step."""

from inference.gibbs.lda import CollapsedLDAGibbs
from pp_models.validation import check_inverse_temperature


class IgnoresBetaLDA(CollapsedLDAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_lda_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")
