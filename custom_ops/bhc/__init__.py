"""Bayesian hierarchical clustering (Heller 2007 ch. 3): the Ops and kernels behind
:mod:`pp_models.bhc`.

- :mod:`custom_ops.bhc.evidence`: the evidence Op (``BHCEvidence``: log p(D | T) of a
  given tree by the BHC recursion, its pullback and its Numba registration);
- :mod:`custom_ops.bhc.builders`: the tree builders' kernels (greedy agglomeration with a
  heap of the nodes' best merges, the randomized builders' filters, the tree predictive,
  node statistics);
- :mod:`custom_ops.bhc.predictive`: each row's conditional predictive given the others
  under a fixed tree (the pointwise log-likelihood for LOO).
"""
