"""Linear dynamical systems: the kernels and the Op behind :mod:`pp_models.lds`.

- :mod:`custom_ops.lds.kalman`: the Kalman filter (Joseph form, missing entries
  skipped), the Rauch-Tung-Striebel smoother and the gradient of the log-likelihood by
  Fisher's identity (Numba);
- :mod:`custom_ops.lds.ops`: the Kalman log-likelihood as a PyTensor Op with its
  gradient.
"""
