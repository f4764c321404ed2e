"""PyTensor Ops and the numerical kernels behind them.

This package sits at the bottom of the layering: it may use numpy, scipy, numba and
pytensor, never pymc model code (``pp_models``) or samplers (``inference``).
"""
