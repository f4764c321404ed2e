"""Pitman-Yor diffusion trees (Knowles 2012 ch. 4): the Ops and kernels behind
:mod:`pp_models.pydt` and the PYDT's Gibbs steps (:mod:`inference.gibbs.pydt`).

- :mod:`custom_ops.pydt.ops`: the Ops (joint log density of a tree, its times and the
  data, with its gradient) and their C entry points;
- :mod:`custom_ops.pydt.density`: the recursion and its exact reverse-mode gradient;
- :mod:`custom_ops.pydt.draws`: prior draws of trees and data;
- :mod:`custom_ops.pydt.messages`: the cached upward messages and the tree edits that
  update them, shared by the sweep and the greedy build;
- :mod:`custom_ops.pydt.sweep`: the MCMC sweep (subtree moves, times) and the
  generative process placing one new point on a tree;
- :mod:`custom_ops.pydt.branch`: the branch-point collapse / expand moves;
- :mod:`custom_ops.pydt.hyper`: the centred updates of c, theta, alpha given the tree
  and the ridge rounds (with the branch-point moves, one call);
- :mod:`custom_ops.pydt.noncentred`: the non-centred moves of c, theta, alpha and the
  variance, with the times following them;
- :mod:`custom_ops.pydt.greedy`: the greedy build of a tree.

Every kernel here uses ``error_model="numpy"`` (:data:`custom_ops.jit.njit_exact_numpy`).
"""
