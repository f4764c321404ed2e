"""The tiny NSFA problem the tempered step is checked on (D = 2 rows, N = 1 column), its
model, its exact power posterior (:func:`tests.oracles.ibp_fa.nsfa_oracle`) and the
label-invariant statistics compared with it."""

import numpy as np

from pp_models import ibp_fa
from tests.oracles.ibp_fa import nsfa_oracle

__all__ = ["CAPACITY", "LAM", "NOISE", "Y", "oracle", "statistics", "tiny_model"]

Y = np.array([[2.2], [-1.4]])
LAM = 1.0
NOISE = (3.0, 2.0)
CAPACITY = 20


def tiny_model(noise="diagonal", alpha=(2.0, 2.0)):
    return ibp_fa.model(Y, alpha=alpha, noise=noise, loading_prior=LAM, noise_prior=NOISE,
                        capacity=CAPACITY, birth_proposal=(2.0, 0.1))


def oracle(beta, noise="diagonal", alpha=(2.0, 2.0)):
    return nsfa_oracle(Y[:, 0], beta, lam=LAM, noise=NOISE, alpha=alpha, capacity=CAPACITY,
                       isotropic=noise == "isotropic")


def statistics(Z, V, X, tau, alpha):
    """Label-invariant statistics of stacked states: Z (n, 2, C), V, X (n, C, 1)."""
    on = Z != 0
    pattern = 2 * on[:, 0].astype(int) + on[:, 1].astype(int)  # 2: row 1 only, 1: row 2, 3
    s = np.einsum("ndk,nk->nd", on * V, X[:, :, 0])
    out = {"n10": (pattern == 2).sum(1), "n01": (pattern == 1).sum(1),
           "n11": (pattern == 3).sum(1), "K": (pattern > 0).sum(1),
           "s1": s[:, 0], "s2": s[:, 1], "s1^2": s[:, 0] ** 2, "s2^2": s[:, 1] ** 2,
           "tau1": tau[:, 0], "tau2": tau[:, -1]}
    if alpha is not None:
        out["alpha"] = alpha
    return out
