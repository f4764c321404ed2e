"""PyTensor Ops and the numerical kernels behind them.

This package sits at the bottom of the layering: it may use numpy, scipy, numba and
pytensor, never pymc model code (``pp_models``) or samplers (``inference``).

Shared here: the kernel decorators and the compile cache (:mod:`custom_ops.jit`), the
conjugate families (:mod:`custom_ops.conjugate`), the tree kernels
(:mod:`custom_ops.trees`), dense SPD linear algebra (:mod:`custom_ops.spd_kernels`) and
log-weight helpers (:mod:`custom_ops.log_weights`). Each family has a subpackage of its
own: :mod:`custom_ops.bhc`, :mod:`custom_ops.dpm`, :mod:`custom_ops.ggm`,
:mod:`custom_ops.ibp_fa`, :mod:`custom_ops.lda`, :mod:`custom_ops.mixture_of_trees`,
:mod:`custom_ops.pydt`.

Importing it changes nothing outside the package: the kernels' compile cache is a folder
of their own (:mod:`custom_ops.jit`), chosen without touching Numba's configuration.
"""
