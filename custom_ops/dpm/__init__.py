"""Dirichlet process mixtures: the Ops and kernels behind :mod:`pp_models.dpm` and the
DPM's Gibbs steps (:mod:`inference.gibbs.dpm`).

- :mod:`custom_ops.dpm.crp`: the Chinese restaurant process (Pitman-Yor) partition
  log probability as an Op;
- :mod:`custom_ops.dpm.collapsed`: the collapsed (parameters integrated out) likelihood
  of a partition under a conjugate family, as Ops;
- :mod:`custom_ops.dpm.gibbs`: the CRP samplers' sweeps (collapsed and auxiliary-variable
  Gibbs, split-merge);
- :mod:`custom_ops.dpm.predictive`: the posterior predictive density on a grid, summed
  over draws, and each row's conditional predictive given the others (LOO).
"""
