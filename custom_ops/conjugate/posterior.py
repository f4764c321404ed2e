"""Conjugate posteriors in NumPy, for outputs computed once per fit (DPM cluster
parameters and predictive densities, the NIW hyperprior step): the posterior parameters
of a set from its sufficient statistics, and the Student-t posterior predictive of the
Gaussian families. The jitted kernels compute the same quantities inside Numba."""

from __future__ import annotations

import numpy as np

from custom_ops.conjugate.families import family_code

__all__ = ["posterior_parameters", "student_t_predictive"]


def posterior_parameters(family, stats, hyper):
    """Parameters of the conjugate posterior of a set with sufficient statistics ``stats``
    (NumPy; ``hyper`` in ``hyper_names`` order, scalars broadcast).

    bernoulli: ``a, b`` = a + m, b + N - m (Beta per dimension); multinomial:
    ``concentration`` = α + m; gaussian (NIW; the standard form in the Heller digest
    §1.2): ``m, kappa, nu, S`` with S_n = S0 + Σxxᵀ + κ0 m0 m0ᵀ - κn mn mnᵀ;
    diag_gaussian (the Normal-Gamma update per dimension, as in :func:`_ng_post`):
    ``m, kappa, a, b``.
    """
    s = np.asarray(stats, dtype=np.float64)
    n = s[0]
    if family == "bernoulli":
        a, b = (np.asarray(h, dtype=np.float64) for h in hyper)
        m = s[1:]
        return {"a": a + m, "b": b + n - m}
    if family == "multinomial":
        return {"concentration": np.asarray(hyper[0], dtype=np.float64) + s[2:]}
    if family == "gaussian":
        m0, kappa0, nu0, S0 = (np.asarray(h, dtype=np.float64) for h in hyper)
        d = m0.shape[0]
        kn = kappa0 + n
        mn = (kappa0 * m0 + s[1 : 1 + d]) / kn
        Sn = S0 + s[1 + d :].reshape(d, d) + kappa0 * np.outer(m0, m0) - kn * np.outer(mn, mn)
        return {"m": mn, "kappa": kn, "nu": nu0 + n, "S": Sn}
    if family == "diag_gaussian":
        m0, k0, a0, b0 = (np.asarray(h, dtype=np.float64) for h in hyper)
        d = (s.shape[0] - 1) // 2
        kn = k0 + n
        mn = (k0 * m0 + s[1 : 1 + d]) / kn
        bn = b0 + 0.5 * (s[1 + d :] + k0 * m0**2 - kn * mn**2)
        return {"m": mn, "kappa": kn, "a": a0 + 0.5 * n, "b": bn}
    family_code(family)
    raise NotImplementedError(family)


def student_t_predictive(family, stats, hyper):
    """``(df, loc, scale)`` of the Student-t posterior predictive of a Gaussian family.

    gaussian: multivariate t with ``df`` = nu_n - d + 1, ``loc`` = m_n and shape matrix
    ``scale`` = S_n (kappa_n + 1) / (kappa_n df) (Heller digest §1.2); diag_gaussian:
    independent t per dimension with ``df`` = 2 a_n and ``scale`` = sqrt(b_n (kappa_n +
    1) / (a_n kappa_n)) (a standard deviation; :func:`diag_gaussian_log_predictive`).
    """
    post = posterior_parameters(family, stats, hyper)
    if family == "gaussian":
        d = post["m"].shape[0]
        df = post["nu"] - d + 1
        return df, post["m"], post["S"] * (post["kappa"] + 1) / (post["kappa"] * df)
    if family == "diag_gaussian":
        kn, an = post["kappa"], post["a"]
        return 2 * an, post["m"], np.sqrt(post["b"] * (kn + 1) / (an * kn))
    raise ValueError(f"family: the Student-t predictive needs a Gaussian family, got {family!r}")
