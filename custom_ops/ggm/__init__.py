"""Gaussian graphical models: the kernels behind :mod:`pp_models.ggm`.

- :mod:`custom_ops.ggm.gibbs`: the column-wise block Gibbs sampler of the Bayesian
  graphical lasso and of stochastic-search structure learning (Wang 2012, 2015);
- :mod:`custom_ops.ggm.glasso`: the graphical lasso's coordinate-descent sweeps.
"""
