"""Maximum-likelihood LDS parameters by EM (Ghahramani & Roweis 1999, "EM applied to
HMMs and LDSs" and the "LDS Pseudocode" EM updates; Shumway & Stoffer 1982).

E-step: the RTS smoother's moments of the states. M-step, with ``N = 1`` sequence of
``T`` steps and the seed's sums ``delta = sum_t y_t x^_t'``,
``gamma = sum_t x^_t x^_t' + V^_t``, ``beta = sum_{t>=2} x^_t x^_{t-1}' + V^_{t,t-1}``,
``alpha = sum_t y_t y_t'``::

    C = delta gamma^{-1},                R = (alpha - C delta') / T,
    A = beta (gamma - gamma_T)^{-1},     Q = (gamma - gamma_1 - A beta') / (T - 1),
    m0 = x^_1,                           P0 = V^_1.

A parameter held fixed (``fixed=``) keeps its value and the others are updated given
it; ``R`` and ``Q`` are then computed in their general form,
``R = (alpha - C delta' - delta C' + C gamma C') / T`` (equal to the seed's at the
updated ``C``) and likewise for ``Q``, so every update maximises the expected
complete-data log-likelihood given the rest and the log-likelihood never decreases.
Missing entries of ``y`` (NaN) enter through their conditional moments given the
state and the observed entries of the same step.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from custom_ops.lds.kalman import kalman_filter_kernel, rts_smoother_kernel
from pp_models.lds.checks import as_series, check_parameters
from pp_models.validation import check_int, check_real, rng_from_seed

__all__ = ["PARAMETER_NAMES", "LDSEMResult", "em"]

#: The parameters of an LDS, in the order the functions of :mod:`pp_models.lds` take.
PARAMETER_NAMES = ("A", "C", "Q", "R", "m0", "P0")


@dataclass(frozen=True)
class LDSEMResult:
    """EM's answer and how it was reached.

    Attributes
    ----------
    A, C, Q, R, m0, P0 : ndarray
        The parameters at the last iteration.
    log_likelihood_trace : ndarray
        ``log p(y)`` at the parameters entering each iteration, then at the final ones
        (non-decreasing up to round-off).
    n_iter : int
        Iterations run.
    converged : bool
        Whether the log-likelihood's increase fell below ``tol`` (relative) before
        ``max_iter``.
    fixed : tuple of str
        The parameters held at their initial values.
    """

    A: np.ndarray
    C: np.ndarray
    Q: np.ndarray
    R: np.ndarray
    m0: np.ndarray
    P0: np.ndarray
    log_likelihood_trace: np.ndarray
    n_iter: int
    converged: bool
    fixed: tuple[str, ...]

    @property
    def log_likelihood(self) -> float:
        """``log p(y)`` at the returned parameters."""
        return float(self.log_likelihood_trace[-1])

    @property
    def parameters(self) -> dict[str, np.ndarray]:
        """The parameters by name, as :func:`pp_models.lds.kalman_filter` takes them."""
        return {name: getattr(self, name) for name in PARAMETER_NAMES}


def _initial_parameters(y, n, rng):
    """A start from principal components of the (mean-filled) data: ``C`` spans the top
    ``n`` directions, ``R`` the diagonal of what they leave, ``A = 0.9 I``."""
    T, p = y.shape
    filled = np.where(np.isnan(y), np.nanmean(y, axis=0), y)
    filled = np.where(np.isnan(filled), 0.0, filled)
    centred = filled - filled.mean(axis=0)
    cov = centred.T @ centred / max(T - 1, 1) + 1e-6 * np.eye(p)
    values, vectors = np.linalg.eigh(cov)
    order = np.argsort(values)[::-1]
    C = np.zeros((p, n))
    k = min(n, p)
    C[:, :k] = vectors[:, order[:k]] * np.sqrt(values[order[:k]])
    C += 0.01 * np.sqrt(np.mean(values)) * rng.normal(size=(p, n))
    residual = np.clip(np.diag(cov - C @ C.T), 1e-3 * np.mean(values), None)
    return {
        "A": 0.9 * np.eye(n),
        "C": C,
        "Q": 0.19 * np.eye(n),
        "R": np.diag(residual),
        "m0": np.zeros(n),
        "P0": np.eye(n),
    }


def _expected_observation_moments(y, C, R, ms, Ps):
    """``sum_t E[y_t x_t']``, ``sum_t E[y_t y_t']`` with missing entries' conditional
    moments given the state and the step's observed entries."""
    missing = np.isnan(y)
    y0 = np.where(missing, 0.0, y)
    Exx = Ps + ms[:, :, None] * ms[:, None, :]
    delta = y0.T @ ms
    alpha = y0.T @ y0
    for t in np.flatnonzero(missing.any(axis=1)):
        m = missing[t]
        o = ~m
        # y_m | x, y_o = G x + h + e, e ~ N(0, R_cond).
        if o.any():
            W = np.linalg.solve(R[np.ix_(o, o)], R[np.ix_(o, m)]).T
            G = C[m] - W @ C[o]
            h = W @ y[t, o]
            R_cond = R[np.ix_(m, m)] - W @ R[np.ix_(o, m)]
        else:
            G, h, R_cond = C[m], np.zeros(m.sum()), R[np.ix_(m, m)]
        Ey_m = G @ ms[t] + h
        delta[m] += G @ Exx[t] + np.outer(h, ms[t])
        E_mm = (
            G @ Exx[t] @ G.T
            + np.outer(G @ ms[t], h)
            + np.outer(h, G @ ms[t])
            + np.outer(h, h)
            + R_cond
        )
        alpha[np.ix_(m, m)] += E_mm
        cross = np.outer(Ey_m, y[t, o])
        alpha[np.ix_(m, o)] += cross
        alpha[np.ix_(o, m)] += cross.T
    return delta, alpha


def _sym(M):
    return 0.5 * (M + M.T)


def em(
    y,
    state_dim,
    *,
    init: Mapping | None = None,
    fixed=(),
    max_iter: int = 500,
    tol: float = 1e-8,
    random_seed=None,
) -> LDSEMResult:
    """Fit ``A, C, Q, R, m0, P0`` of an LDS to ``y`` by EM (the seed's updates).

    Parameters
    ----------
    y : array_like, shape (T, p) or (T,)
        Observations, NaN for a missing entry; ``T >= 2``.
    state_dim : int
        ``n``, the dimension of the state.
    init : mapping, optional
        Starting values of any of ``A, C, Q, R, m0, P0`` (the rest from principal
        components of the data).
    fixed : iterable of str
        Names of parameters kept at their starting value (which ``init`` must give),
        e.g. ``("A", "C", "m0", "P0")`` for a local-level model with a known start.
    max_iter : int
        Most iterations.
    tol : float
        Stop when the log-likelihood increases by less than ``tol * (1 + |log p(y)|)``.
    random_seed : int, optional
        Seeds the small perturbation of the starting ``C``.

    Returns
    -------
    LDSEMResult

    Raises
    ------
    ValueError
        Bad data, ``state_dim`` < 1, an unknown or uninitialised name in ``fixed`` or
        ``init``, or starting values failing :func:`pp_models.lds.kalman_filter`'s
        checks.
    """
    y = as_series(y)
    T, _ = y.shape
    if T < 2:
        raise ValueError(f"y needs at least 2 time steps for EM, got {T}")
    n = check_int(state_dim, "state_dim", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_real(tol, "tol", minimum=0.0)
    init = dict(init or {})
    unknown = sorted(set(init) - set(PARAMETER_NAMES))
    if unknown:
        raise ValueError(f"init has unknown parameter(s) {unknown}; known: {list(PARAMETER_NAMES)}")
    if isinstance(fixed, str):
        fixed = (fixed,)
    fixed = tuple(fixed)
    bad = sorted(set(fixed) - set(PARAMETER_NAMES))
    if bad:
        raise ValueError(f"fixed has unknown parameter(s) {bad}; known: {list(PARAMETER_NAMES)}")
    missing_init = sorted(set(fixed) - set(init))
    if missing_init:
        raise ValueError(f"fixed names {missing_init}, which init must then give")
    start = _initial_parameters(y, n, rng_from_seed(random_seed))
    start.update(init)
    params = check_parameters(y, *(start[k] for k in PARAMETER_NAMES))
    if params.A.shape[0] != n:
        raise ValueError(f"init['A'] has state dimension {params.A.shape[0]}, state_dim is {n}")
    A, C, Q, R, m0, P0 = (getattr(params, k) for k in PARAMETER_NAMES)
    trace = []
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        log_lik, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
        if np.isnan(log_lik).any():
            raise FloatingPointError(
                "EM reached parameters whose innovation covariance is not positive "
                "definite; fix R or start elsewhere"
            )
        trace.append(float(log_lik.sum()))
        if n_iter > 1 and trace[-1] - trace[-2] < tol * (1.0 + abs(trace[-1])):
            converged = True
            break
        ms, Ps, cross = rts_smoother_kernel(A, mf, Pf, mp, Pp)
        gamma = np.einsum("ti,tj->ij", ms, ms) + Ps.sum(axis=0)
        gamma_1 = np.outer(ms[0], ms[0]) + Ps[0]
        gamma_T = np.outer(ms[-1], ms[-1]) + Ps[-1]
        beta = np.einsum("ti,tj->ij", ms[1:], ms[:-1]) + cross.sum(axis=0)
        delta, alpha = _expected_observation_moments(y, C, R, ms, Ps)
        if "C" not in fixed:
            C = np.linalg.solve(gamma, delta.T).T
        if "R" not in fixed:
            R = _sym(alpha - C @ delta.T - delta @ C.T + C @ gamma @ C.T) / T
        S00 = gamma - gamma_T
        if "A" not in fixed:
            A = np.linalg.solve(S00, beta.T).T
        if "Q" not in fixed:
            S11 = gamma - gamma_1
            Q = _sym(S11 - A @ beta.T - beta @ A.T + A @ S00 @ A.T) / (T - 1)
        if "m0" not in fixed:
            m0 = ms[0].copy()
        if "P0" not in fixed:
            d = ms[0] - m0
            P0 = _sym(Ps[0] + np.outer(d, d))
        A, C, Q, R, m0, P0 = (np.ascontiguousarray(a) for a in (A, C, Q, R, m0, P0))
    else:
        log_lik = kalman_filter_kernel(y, A, C, Q, R, m0, P0)[0]
        trace.append(float(log_lik.sum()))
    return LDSEMResult(A, C, Q, R, m0, P0, np.asarray(trace), n_iter, converged, fixed)
