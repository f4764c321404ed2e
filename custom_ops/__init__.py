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
"""

from custom_ops.jit import make_cache_writes_process_safe, use_user_cache_dir

# before any kernel is compiled: compiled kernels are cached in the user's cache folder,
# not written into the installed package
use_user_cache_dir()
# before anything is compiled: parallel processes must not corrupt the shared cache
make_cache_writes_process_safe()
