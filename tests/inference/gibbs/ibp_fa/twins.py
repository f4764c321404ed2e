"""Planted-bug twins of the NSFA step, each one realistic mistake the thesis warns of."""

from inference.gibbs.ibp_fa import NSFAGibbs


class PrintedOddsNSFA(NSFAGibbs):
    """The prior odds of Eq. 3.6 as printed, ``m/(D - 1 - m)`` (should be ``m/(D - m)``)."""

    name = "test_nsfa_printed_odds"
    _odds_offset = 1


class DeleteSingletonsNSFA(NSFAGibbs):
    """Singletons Gibbs-sampled to zero before new ones are proposed (Knowles §3.2: the
    kernel then depends on the current state of what it samples; under-counts)."""

    name = "test_nsfa_delete_singletons"
    _delete_singletons = True
