"""Numba kernels of the graphical lasso (Friedman, Hastie & Tibshirani 2008; ESL Alg. 17.2).

The graphical lasso minimises (Murphy 2012 Eq. 26.70)::

    J(Omega) = -log det Omega + tr(S Omega) + lam * sum_{j,k} |omega_jk|

over positive-definite ``Omega`` (the diagonal term is dropped in the "off-diagonal"
convention of scikit-learn). Block coordinate descent works on ``W = Omega^{-1}``: for
each column ``j`` in turn, with ``V = W11`` (``W`` without row and column ``j``) and
``s12 = S[-j, j]``, it solves the lasso::

    min_beta 1/2 beta' V beta - beta' s12 + lam ||beta||_1

by cyclic coordinate descent and sets ``w12 = V beta``. These kernels keep ``W`` in a
full ``p x p`` array (no copies of ``W11``: index ``j`` is skipped) and the lasso
coefficients of every column in ``B[:, j]`` (warm starts across sweeps and lambdas).

Why ``W`` stays positive definite: replacing column ``j`` changes ``det W`` by the
factor ``(w_jj - w12' W11^{-1} w12) / (old Schur complement)``, and with ``w12 = W11
beta`` the new Schur complement is ``w_jj - beta' W11 beta``. The kernel computes it
(O(p)) before accepting a column and keeps the old column if it is not positive, so
starting from a positive-definite ``W`` every iterate is positive definite (exact lasso
solutions never trigger the guard: they maximise ``log det W`` over the column's box
``|w12 - s12| <= lam``, Banerjee et al. 2008).

Kernels
-------
- :func:`glasso_sweeps`: block coordinate descent until the mean absolute change of
  ``W`` in a sweep falls below a threshold (Friedman et al.'s rule).
- :func:`precision_from_regressions`: ``Omega`` by the partitioned inverse
  ``omega_jj = 1 / (w_jj - w12' beta)``, ``omega_{-j,j} = -beta omega_jj`` (exact zeros).
- :func:`kkt_violation`: the largest violation of the subgradient conditions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact

__all__ = ["glasso_sweeps", "kkt_violation", "precision_from_regressions"]


class _Problem(NamedTuple):
    """The block coordinate descent's arrays (float64, (p, p)): ``W`` the current
    estimate of the covariance, ``S`` the empirical covariance and ``B`` every column's
    lasso coefficients (column ``j`` for variable ``j``); ``W`` and ``B`` are updated in
    place."""

    W: np.ndarray
    S: np.ndarray
    B: np.ndarray


class _ColumnWork(NamedTuple):
    """One column's scratch (float64, (p,)): ``r`` ends as ``W11 @ beta`` (rows != j),
    ``saved`` holds the column's coefficients from before its solve."""

    r: np.ndarray
    saved: np.ndarray


@njit_exact(inline="always")
def _soft(x, t):
    if x > t:
        return x - t
    if x < -t:
        return x + t
    return 0.0


@njit_exact
def _lasso_column(problem, work, j, lam, inner_tol, inner_max):
    """Coordinate descent for column ``j`` of ``problem.B``; ``work.r`` ends as ``W11 @
    beta`` (rows != j), ``work.saved`` holds the column as it was."""
    W, S, B = problem
    r, saved = work
    p = W.shape[0]
    for i in range(p):
        r[i] = 0.0
        saved[i] = B[i, j]
    for l in range(p):
        if l == j:
            continue
        bl = B[l, j]
        if bl != 0.0:
            # W is symmetric: read row l (contiguous) instead of column l
            for i in range(p):
                r[i] += W[l, i] * bl
    n_inner = 0
    for _ in range(inner_max):
        n_inner += 1
        max_delta = 0.0
        for k in range(p):
            if k == j:
                continue
            old = B[k, j]
            wkk = W[k, k]
            new = _soft(S[k, j] - r[k] + wkk * old, lam) / wkk
            if new != old:
                delta = new - old
                B[k, j] = new
                for i in range(p):
                    r[i] += W[k, i] * delta
                change = abs(delta) * wkk
                if change > max_delta:
                    max_delta = change
        if max_delta < inner_tol:
            break
    return n_inner


@njit_exact
def glasso_sweeps(S, W, B, lam, threshold, max_iter, inner_max):
    """Run block coordinate descent in place on ``W`` (PD on entry) and ``B``.

    Parameters
    ----------
    S : float64 (p, p)
        Empirical covariance.
    W : float64 (p, p)
        Positive-definite start; its diagonal is kept (``S_jj + lam`` or ``S_jj``).
    B : float64 (p, p)
        Warm-start lasso coefficients, column ``j`` for variable ``j`` (diagonal unused).
    lam : float
        Penalty on the off-diagonal entries (> 0).
    threshold : float
        Stop when the mean absolute change of the off-diagonal of ``W`` in a sweep is
        below it; the inner lasso stops when no coordinate moves ``w12`` by more.
    max_iter, inner_max : int
        Caps on outer sweeps and inner coordinate-descent sweeps.

    Returns
    -------
    (n_sweeps, converged, n_rejected, n_inner_total)
    """
    p = S.shape[0]
    r = np.empty(p)
    saved = np.empty(p)
    problem = _Problem(W, S, B)
    work = _ColumnWork(r, saved)
    n_pairs = p * (p - 1)
    n_rejected = 0
    n_inner_total = 0
    for sweep in range(max_iter):
        total_change = 0.0
        for j in range(p):
            n_inner_total += _lasso_column(problem, work, j, lam, threshold, inner_max)
            quad = 0.0
            for k in range(p):
                if k != j:
                    quad += r[k] * B[k, j]
            if not (W[j, j] - quad > 0.0):
                # would leave the PD cone (only possible for an inexact inner solve)
                for k in range(p):
                    B[k, j] = saved[k]
                n_rejected += 1
                continue
            for i in range(p):
                if i != j:
                    total_change += 2.0 * abs(r[i] - W[i, j])
                    W[i, j] = r[i]
                    W[j, i] = r[i]
        if n_pairs == 0 or total_change / n_pairs < threshold:
            return sweep + 1, True, n_rejected, n_inner_total
    return max_iter, False, n_rejected, n_inner_total


@njit_exact
def precision_from_regressions(W, B):
    """Partitioned inverse of ``W`` from the lasso coefficients (ESL Alg. 17.2 step 3).

    Returns ``(Omega, ok)``; ``ok`` is False when some Schur complement
    ``w_jj - w12' beta`` is not positive (then ``Omega`` is meaningless).
    """
    p = W.shape[0]
    omega = np.zeros((p, p))
    ok = True
    for j in range(p):
        quad = 0.0
        for k in range(p):
            if k != j:
                quad += W[j, k] * B[k, j]
        schur = W[j, j] - quad
        if not (schur > 0.0):
            ok = False
            schur = 1.0
        t = 1.0 / schur
        omega[j, j] = t
        for k in range(p):
            if k != j:
                omega[k, j] = -B[k, j] * t
    for j in range(p):
        for k in range(j):
            avg = 0.5 * (omega[j, k] + omega[k, j])
            omega[j, k] = avg
            omega[k, j] = avg
    return omega, ok


@njit_exact
def kkt_violation(W, S, omega, lam, penalize_diagonal):
    """Largest violation of the glasso optimality conditions at ``omega``.

    With ``W = omega^{-1}``: ``W_jk - S_jk = lam sign(omega_jk)`` where ``omega_jk != 0``
    and ``|W_jk - S_jk| <= lam`` where it is 0 (off-diagonal); ``W_jj = S_jj + lam``
    (penalised diagonal) or ``W_jj = S_jj``.
    """
    p = W.shape[0]
    worst = 0.0
    for j in range(p):
        target = S[j, j] + (lam if penalize_diagonal else 0.0)
        v = abs(W[j, j] - target)
        if v > worst:
            worst = v
        for k in range(j):
            g = W[j, k] - S[j, k]
            o = omega[j, k]
            if o > 0.0:
                v = abs(g - lam)
            elif o < 0.0:
                v = abs(g + lam)
            else:
                v = max(abs(g) - lam, 0.0)
            if v > worst:
                worst = v
    return worst
