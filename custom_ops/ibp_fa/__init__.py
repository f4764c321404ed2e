"""IBP factor analysis: the Ops and kernels behind :mod:`pp_models.ibp_fa`.

- :mod:`custom_ops.ibp_fa.ibp`: the Indian buffet process log probability of a binary
  feature matrix as an Op;
- :mod:`custom_ops.ibp_fa.nsfa`: the sweep of Knowles' non-parametric sparse factor
  analysis sampler (NSFA);
- :mod:`custom_ops.ibp_fa.feature_moves`: moves that change a whole column of ``Z`` (a
  feature of two rows or more born or removed) or a row's entries in two features, the
  factor rows integrated out.
"""
