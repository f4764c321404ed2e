"""Data and objectives shared by the BHC tests: planted binary mixtures, one cluster's
conjugate marginal, and the tree's objective from the forward kernel."""

import math

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.bhc import evidence as ops

__all__ = ["binary_mixture", "log_ml", "tree_objective"]


def binary_mixture(n, d, k, flip, rng):
    """k prototypes at pairwise Hamming distance >= d/4, rows = prototype + flip noise."""
    while True:
        protos = rng.random((k, d)) < 0.4
        ham = (protos[:, None] != protos[None]).sum(-1) + d * np.eye(k, dtype=int)
        if ham.min() >= d / 4:
            break
    z = rng.integers(k, size=n)
    X = (protos[z] ^ (rng.random((n, d)) < flip)).astype(float)
    return X, z


def log_ml(family, X, hyper):
    """log p(X) of one cluster under ``family``'s conjugate marginal."""
    fam = cj.FAMILIES[family]
    return fam.log_marginal(fam.stats(np.atleast_2d(X)), hyper)


def tree_objective(ps, merges, alpha, H, objective):
    """The BHC tree's ``"evidence"`` (log p(D_T)) or its ``"lower_bound"`` on the DPM's
    evidence (log p(D_T) + log d_T + log Gamma(alpha) - log Gamma(n + alpha)) at
    ``alpha``, from the forward kernel."""
    log_p, _r, _q, log_d, _ml, _s = ops.tree_forward(0, ps, merges, alpha, H)
    if objective == "evidence":
        return log_p[-1]
    n = ps.shape[0]
    return log_p[-1] + log_d[-1] + math.lgamma(alpha) - math.lgamma(n + alpha)
