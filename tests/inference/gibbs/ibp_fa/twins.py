"""Planted-bug twin of the tempered NSFA step."""

from inference.gibbs.ibp_fa import NSFAGibbs
from pp_models.validation import check_inverse_temperature


class IgnoresBetaNSFA(NSFAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1): the
    step a tempered run would get if the kernel's beta were not plumbed through."""

    name = "test_nsfa_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")
