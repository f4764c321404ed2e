"""Planted-bug twins of the NSFA step, each one realistic mistake the thesis warns of,
and the tempered step's twin that ignores beta."""

from inference.gibbs.ibp_fa import NSFAGibbs
from pp_models.validation import check_inverse_temperature


class PrintedOddsNSFA(NSFAGibbs):
    """The prior odds of Eq. 3.6 as printed, ``m/(D - 1 - m)`` (should be ``m/(D - m)``)."""

    name = "test_nsfa_printed_odds"
    _odds_offset = 1


class DeleteSingletonsNSFA(NSFAGibbs):
    """Singletons Gibbs-sampled to zero before new ones are proposed (Knowles §3.2: the
    kernel then depends on the current state of what it samples; under-counts)."""

    name = "test_nsfa_delete_singletons"
    _delete_singletons = True


class IgnoresBetaNSFA(NSFAGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1): the
    step a tempered run would get if the kernel's beta were not plumbed through."""

    name = "test_nsfa_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")
