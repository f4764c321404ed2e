"""Shared pytest configuration."""

import os
import warnings

import matplotlib

matplotlib.use("Agg")

# Parallel chains fork worker processes; keep BLAS single-threaded inside them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")
