"""Tempering: power posteriors, parallel tempering and model evidence.

- :mod:`~inference.tempering.power`: the model's log-likelihood and exact prior draws;
- :mod:`~inference.tempering.nuts`: PyMC's NUTS on a power posterior;
- :mod:`~inference.tempering.pymc_steps`: PyMC's Metropolis, Slice and discrete
  Gibbs-Metropolis steps on a power posterior;
- :mod:`~inference.tempering.steps`: which step tempers which variable (refusals first);
- :mod:`~inference.tempering.ladder`: initial ladders and the schedule update;
- :mod:`~inference.tempering.swaps`: non-reversible even/odd swaps, round trips;
- :mod:`~inference.tempering.driver`: one parallel-tempering iteration as a zoo step;
- :mod:`~inference.tempering.sampling`: ``fit(..., tempering=...)``;
- :mod:`~inference.tempering.options`: the ``tempering=`` argument;
- :mod:`~inference.tempering.evidence`: ``evidence(model, method=...)`` (stepping stone,
  thermodynamic integration) and :class:`EvidenceResult`;
- :mod:`~inference.tempering.ais`: annealed importance sampling;
- :mod:`~inference.tempering.population`: a population of particles of an
  all-continuous model moved together (AIS's transitions).

The contract a Gibbs step follows to take part is on
:class:`inference.gibbs.ZooGibbsStep` (``can_temper``, ``beta``,
``set_inverse_temperature``, ``tempering_error``, ``replica``).
"""

from inference.tempering.driver import TEMPERING_GROUP, TemperedStep, tempering_group
from inference.tempering.evidence import EvidenceResult, estimate_from_tempering, evidence
from inference.tempering.nuts import TemperedNUTS
from inference.tempering.options import TemperingOptions, check_tempering
from inference.tempering.power import PriorDraws, check_has_likelihood, log_likelihood_function
from inference.tempering.pymc_steps import (
    TemperedBinaryGibbsMetropolis,
    TemperedCategoricalGibbsMetropolis,
    TemperedMetropolis,
    TemperedSlice,
)

__all__ = [
    "TEMPERING_GROUP",
    "EvidenceResult",
    "PriorDraws",
    "TemperedBinaryGibbsMetropolis",
    "TemperedCategoricalGibbsMetropolis",
    "TemperedMetropolis",
    "TemperedNUTS",
    "TemperedSlice",
    "TemperedStep",
    "TemperingOptions",
    "check_has_likelihood",
    "check_tempering",
    "estimate_from_tempering",
    "evidence",
    "log_likelihood_function",
    "tempering_group",
]
