"""Random variables PyMC lacks, usable inside any ``with pm.Model():`` block.

- :class:`CRP`: Chinese restaurant process (Ewens / Pitman-Yor) partition of ``n`` items.
- Collapsed conjugate likelihoods of data given a partition:
  :class:`CollapsedGaussian` (Normal-Inverse-Wishart), :class:`CollapsedDiagGaussian`
  (Normal-Gamma per column), :class:`CollapsedBernoulli` (Beta),
  :class:`CollapsedMultinomial` (Dirichlet).
"""

from pp_models.distributions.collapsed import (
    CollapsedBernoulli,
    CollapsedDiagGaussian,
    CollapsedGaussian,
    CollapsedMultinomial,
    CollapsedRV,
)
from pp_models.distributions.crp import CRP, CRPRV
from pp_models.distributions.pydt import DiffusionTreeGaussian, PYDiffusionTree  # noqa: F401

__all__ = [
    "CRP",
    "CRPRV",
    "CollapsedBernoulli",
    "CollapsedDiagGaussian",
    "CollapsedGaussian",
    "CollapsedMultinomial",
    "CollapsedRV",
]
