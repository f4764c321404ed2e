"""Mixtures of trees: the Ops and kernels behind :mod:`pp_models.mixture_of_trees`.

- :mod:`custom_ops.mixture_of_trees.spanning_tree`: the log probability of a spanning
  tree under a decomposable prior as an Op;
- :mod:`custom_ops.mixture_of_trees.discrete`: mixtures of trees over discrete data
  (BDeu CPTs integrated out): the collapsed likelihood Op, assignment sweeps, draws;
- :mod:`custom_ops.mixture_of_trees.gaussian`: mixtures of Gaussian trees (hyper inverse
  Wishart parameters integrated out): the same pieces;
- :mod:`custom_ops.mixture_of_trees.predictive`: each row's conditional predictive given
  the others (LOO) and replicated rows (the posterior predictive), both kinds.

The spanning-tree kernels they share are :mod:`custom_ops.trees.spanning`.
"""
