"""The Dirichlet process mixture's Gibbs steps (:mod:`pp_models.dpm` names them in its
step hints; their hot loops are :mod:`custom_ops.dpm.gibbs`).

- :mod:`inference.gibbs.dpm.crp_collapsed`: ``crp_collapsed_gibbs``, Neal (2000)
  Algorithm 3 with Jain-Neal split-merge moves, component parameters integrated out;
- :mod:`inference.gibbs.dpm.crp_auxiliary`: ``crp_auxiliary_gibbs``, Neal (2000)
  Algorithm 8 for explicit component parameters;
- :mod:`inference.gibbs.dpm.escobar_west`: ``escobar_west``, the concentration's
  auxiliary-variable update (Escobar & West 1995);
- :mod:`inference.gibbs.dpm.niw_hyper`: ``niw_hyper_gibbs``, the exact update of a
  learned Normal-Inverse-Wishart base measure.
"""
