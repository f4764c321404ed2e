"""Random variables PyMC lacks, usable inside any ``with pm.Model():`` block.

- :class:`CRP`: Chinese restaurant process (Ewens / Pitman-Yor) partition of ``n`` items.
- Collapsed conjugate likelihoods of data given a partition:
  :class:`CollapsedGaussian` (Normal-Inverse-Wishart), :class:`CollapsedDiagGaussian`
  (Normal-Gamma per column), :class:`CollapsedBernoulli` (Beta),
  :class:`CollapsedMultinomial` (Dirichlet).
- :class:`MarkovChain`: the state path of a hidden Markov model (one or more sequences).
- Shrinkage priors on a precision matrix: :class:`BayesianGLassoPrecision` (Wang 2012),
  :class:`SpikeSlabPrecision` (Wang 2015).
- :class:`FlooredHalfNormal`: half-normal scale prior with a soft floor, which keeps a
  Gaussian mixture's likelihood bounded on tied (rounded) data.
- :class:`IndianBuffet`: Indian buffet process over binary feature matrices.
- :class:`SpanningTree`: decomposable prior over labelled spanning trees (Meilă &
  Jaakkola 2006).
- :class:`PYDiffusionTree` (Pitman-Yor diffusion tree) and :class:`DiffusionTreeGaussian`
  (Brownian motion down it, observed at the leaves): :mod:`pp_models.distributions.pydt`.
"""

from pp_models.distributions.collapsed import (
    CollapsedBernoulli,
    CollapsedDiagGaussian,
    CollapsedGaussian,
    CollapsedMultinomial,
    CollapsedRV,
)
from pp_models.distributions.crp import CRP, CRPRV
from pp_models.distributions.indian_buffet import IndianBuffet, IndianBuffetRV
from pp_models.distributions.markov_chain import MarkovChain, MarkovChainRV
from pp_models.distributions.precision_priors import BayesianGLassoPrecision, SpikeSlabPrecision
from pp_models.distributions.pydt import DiffusionTreeGaussian, PYDiffusionTree
from pp_models.distributions.scale_priors import FlooredHalfNormal, FlooredHalfNormalRV
from pp_models.distributions.spanning_tree import SpanningTree, SpanningTreeRV

__all__ = [
    "CRP",
    "CRPRV",
    "BayesianGLassoPrecision",
    "CollapsedBernoulli",
    "CollapsedDiagGaussian",
    "CollapsedGaussian",
    "CollapsedMultinomial",
    "CollapsedRV",
    "DiffusionTreeGaussian",
    "FlooredHalfNormal",
    "FlooredHalfNormalRV",
    "IndianBuffet",
    "IndianBuffetRV",
    "MarkovChain",
    "MarkovChainRV",
    "PYDiffusionTree",
    "SpanningTree",
    "SpanningTreeRV",
    "SpikeSlabPrecision",
]
