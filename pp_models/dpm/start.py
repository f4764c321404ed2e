"""Where the stick-breaking chains of a Gaussian DP mixture start.

A truncated stick-breaking mixture sampled by NUTS keeps the number of clusters it
starts with: creating a cluster means moving a component and its weight across the data
together, a move NUTS's local trajectories do not make. From PyMC's default start (every
component at the prior mean, equal weights), chains settle at whatever the first few
hundred gradient steps found; on iris with the NIW prior, one of two chains stayed at
one cluster where the collapsed Gibbs sampler finds two with probability 1.
:func:`stick_breaking_start` therefore gives the components a start from a partition
of the data, chosen as the collapsed Gibbs step chooses its start: candidates (one
cluster, k-means with several k) scored by the collapsed log joint
``log p(z) + sum_k log p(X_k)`` (Ewens prior at the prior mean of ``alpha``; conjugate
marginals, :func:`custom_ops.conjugate.log_marginal`). Occupied components start at
their conjugate posterior means with weights from the cluster sizes (largest first, as
the stick-breaking prior orders them in expectation), empty ones at the prior mean with
a small weight. PyMC and nutpie still jitter this start per chain.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from custom_ops import conjugate as cj
from custom_ops.dpm.gibbs import kmeans_partition
from pp_models.dpm.spec import DPMSpec

__all__ = ["START_KMEANS", "start_partition", "stick_breaking_start"]

#: The k of the k-means candidates (with one cluster); those above the truncation are
#: skipped.
START_KMEANS = (2, 3, 4, 6, 8, 12, 16)


def _alpha(spec: DPMSpec) -> float:
    if spec.alpha is not None:
        return float(spec.alpha)
    a, b = spec.alpha_prior
    return a / b


def _collapsed_log_joint(spec: DPMSpec, z: np.ndarray, hp) -> float:
    sizes = np.bincount(z)
    sizes = sizes[sizes > 0]
    alpha, n = _alpha(spec), z.size
    ewens = (sizes.size * np.log(alpha) + special.gammaln(sizes).sum()
             + special.gammaln(alpha) - special.gammaln(alpha + n))
    family = cj.FAMILIES[spec.likelihood]
    code = cj.FAMILY_CODES[spec.likelihood]
    return ewens + sum(
        cj.log_marginal(code, family.stats(np.ascontiguousarray(spec.X[z == k])), hp)
        for k in range(int(z.max()) + 1))


def start_partition(spec: DPMSpec, *, seed: int = 0) -> np.ndarray:
    """The candidate partition (one cluster, or k-means with k in :data:`START_KMEANS`
    up to the truncation) with the largest collapsed log joint; canonical labels."""
    rng = np.random.default_rng(seed)
    n = spec.X.shape[0]
    family = cj.FAMILIES[spec.likelihood]
    hp = cj.pack_hyper(spec.likelihood, [np.asarray(spec.prior[k], dtype=np.float64)
                                         for k in family.hyper_names])
    candidates = [np.zeros(n, dtype=np.int64)]
    candidates += [kmeans_partition(spec.X, k, rng) for k in START_KMEANS
                   if k <= min(spec.truncation, n - 1)]
    scores = [_collapsed_log_joint(spec, z, hp) for z in candidates]
    return candidates[int(np.argmax(scores))]


def stick_breaking_start(spec: DPMSpec, *, seed: int = 0) -> dict[str, np.ndarray]:
    """Initial values of the stick-breaking model's free variables (``"gaussian"`` and
    ``"diag_gaussian"``), by name, in the parameterisation of ``model.py``'s
    ``_stick_breaking_model``; see the module docstring."""
    z = start_partition(spec, seed=seed)
    T, (n, d) = spec.truncation, spec.X.shape
    sizes = np.bincount(z)
    order = np.argsort(-sizes, kind="stable")
    h = spec.prior
    family = cj.FAMILIES[spec.likelihood]
    hyper = [np.asarray(h[k], dtype=np.float64) for k in family.hyper_names]
    m0 = np.asarray(h["m0"], dtype=np.float64)
    # weights: the clusters' shares, the empty components half a row's share between them
    weights = np.full(T, 0.5 / n / max(T - sizes.size, 1))
    weights[: sizes.size] = sizes[order] / n
    out = {"w": weights / weights.sum()}
    if spec.likelihood == "gaussian":
        nu0 = float(np.asarray(h["nu0"]))
        L = np.linalg.cholesky(np.linalg.inv(np.asarray(h["S0"], dtype=np.float64)))
        diag = np.tile(nu0 - np.arange(d), (T, 1))  # the chi-square means: A ~ I, U = L
        off = np.zeros((T, d * (d - 1) // 2))
        mu_raw = np.zeros((T, d))
        below = np.tril_indices(d, -1)
        for slot, k in enumerate(order):
            post = cj.posterior_parameters("gaussian", family.stats(
                np.ascontiguousarray(spec.X[z == k])), hyper)
            precision = np.linalg.inv(post["S"] / max(post["nu"] - d - 1.0, 1.0))
            U = np.linalg.cholesky(precision)
            A = np.linalg.solve(L, U)  # lower triangular, positive diagonal
            diag[slot] = np.diag(A) ** 2
            off[slot] = A[below]
            mu_raw[slot] = U.T @ (post["m"] - m0)
        out.update(bartlett_diag=diag, mu_raw=mu_raw)
        if d > 1:
            out["bartlett_offdiag"] = off
        return out
    a0, b0 = (np.asarray(h[k], dtype=np.float64) for k in ("a0", "b0"))
    tau = np.tile(a0 / b0, (T, 1))
    mu_raw = np.zeros((T, d))
    for slot, k in enumerate(order):
        post = cj.posterior_parameters("diag_gaussian", family.stats(
            np.ascontiguousarray(spec.X[z == k])), hyper)
        tau[slot] = post["a"] / post["b"]
        mu_raw[slot] = np.sqrt(tau[slot]) * (post["m"] - m0)
    out.update(tau=tau, mu_raw=mu_raw)
    return out
