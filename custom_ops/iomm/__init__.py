"""The infinite overlapping mixture model: the kernels behind :mod:`pp_models.iomm`.

- :mod:`custom_ops.iomm.experts`: the product of a point's exponential-family experts in
  natural parameters (Heller 2007 Eq. 7.4) and its log density, Bernoulli (Eqs 7.6-7.7)
  and diagonal Gaussian (Eq. 7.5), with the background distribution of a point in no
  cluster;
- :mod:`custom_ops.iomm.memberships`: the sweep over the membership matrix ``Z`` of
  Algorithm 7.1 (Gibbs on the shared clusters, Metropolis-Hastings on a point's own
  clusters);
- :mod:`custom_ops.iomm.parameters`: the Metropolis-Hastings sweep over the cluster
  parameters of Algorithm 7.1 (Eq. 7.13) and the prior draws of unused slots;
- :mod:`custom_ops.iomm.split_merge`: a split-merge move on whole clusters of ``Z``
  and the expert of the cluster a split opens, drawn from a fit to its proposed members
  (Jain & Neal 2004's sequential allocation in Meeds et al. 2007's form).
"""
