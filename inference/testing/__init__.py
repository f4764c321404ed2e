"""Tools that prove samplers right, for our steps and for users' own.

- :func:`getting_it_right` (Geweke 2004): marginal-conditional vs successive-conditional
  draws of the joint; catches a transition that does not leave the posterior invariant.
- :func:`getting_it_right_campaign`: many seeds x many steps (a planted-bug campaign),
  one task per run on any ``concurrent.futures.Executor``.
- :func:`sbc` (Talts et al. 2018): ranks of prior draws among posterior draws; catches
  miscalibrated inference end to end, with any ``concurrent.futures.Executor``.
- :func:`check_convergence`: R-hat / ESS on label-invariant statistics.

In a test::

    from inference.testing import getting_it_right
    assert getting_it_right(model, data_vars=["y"], step=my_step).passed()
"""

from inference.convergence import ConvergenceReport, check_convergence
from inference.testing.campaign import CampaignResult, getting_it_right_campaign
from inference.testing.gir import GIRResult, getting_it_right
from inference.testing.sbc import SBCResult, sbc

__all__ = [
    "CampaignResult",
    "ConvergenceReport",
    "GIRResult",
    "SBCResult",
    "check_convergence",
    "getting_it_right",
    "getting_it_right_campaign",
    "sbc",
]
