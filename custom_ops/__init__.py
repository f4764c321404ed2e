"""PyTensor Ops and the numerical kernels behind them.

This package sits at the bottom of the layering: it may use numpy, scipy, numba and
pytensor, never pymc model code (``pp_models``) or samplers (``inference``).
"""

from custom_ops._numba_cache import make_cache_writes_process_safe, use_user_cache_dir

# before any kernel module imports numba: compiled kernels are cached in the user's
# cache folder, not written into the installed package
use_user_cache_dir()
# before anything is compiled: parallel processes must not corrupt the shared cache
make_cache_writes_process_safe()
