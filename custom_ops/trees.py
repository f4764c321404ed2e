"""Numba kernels for the tree representations of :mod:`pp_models.trees`."""

from __future__ import annotations
