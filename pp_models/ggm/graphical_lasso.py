"""The graphical lasso by block coordinate descent (Friedman, Hastie & Tibshirani 2008).

Minimises (Murphy 2012 Eq. 26.70; ESL Alg. 17.2)::

    J(Omega) = -log det Omega + tr(S Omega) + lam * sum_{j,k} |omega_jk|

over positive-definite ``Omega``. Two conventions:

- ``penalize_diagonal=True`` (Murphy, ESL, Friedman et al.'s ``glasso``): the sum runs
  over all entries, so ``W = Omega^{-1}`` has diagonal ``S_jj + lam``;
- ``penalize_diagonal=False`` (scikit-learn's ``graphical_lasso``): off-diagonal only,
  ``W_jj = S_jj``.

The Numba kernels are in :mod:`custom_ops.ggm.glasso`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from custom_ops.ggm.glasso import glasso_sweeps, kkt_violation, precision_from_regressions
from pp_models.ggm.inputs import as_covariance, check_penalty
from pp_models.progress import WorkProgress
from pp_models.validation import check_bool, check_int, check_positive

__all__ = [
    "GraphicalLassoPath",
    "GraphicalLassoResult",
    "graphical_lasso",
    "graphical_lasso_path",
    "lambda_max",
]


@dataclass(frozen=True)
class GraphicalLassoResult:
    """Result of :func:`graphical_lasso` at one penalty.

    Attributes
    ----------
    precision : float64 (p, p)
        The estimate ``Omega`` (positive definite, exact zeros where the lasso set them).
    covariance : float64 (p, p)
        The solver's ``W`` (positive definite; ``W = Omega^{-1}`` at the optimum).
    lam : float
    penalize_diagonal : bool
    iterations : int
        Outer sweeps over the p columns.
    converged : bool
        The mean absolute change of ``W`` in the last sweep fell below the threshold.
    kkt_gap : float
        Largest violation of the optimality conditions, evaluated with
        ``inv(precision)`` (see :func:`custom_ops.ggm.glasso.kkt_violation`).
    objective : float
        ``J(precision)``.
    precision_source : str
        ``"regressions"`` (partitioned inverse from the lasso coefficients, the usual
        case), ``"inverse"`` (``inv(W)``, used if the former failed its positive-definite
        check) or ``"mle"`` (``lam = 0``: ``inv(S)``).
    coefficients : float64 (p, p)
        Column ``j`` holds the lasso coefficients of variable ``j`` on the others (warm
        starts).
    """

    precision: np.ndarray
    covariance: np.ndarray
    lam: float
    penalize_diagonal: bool
    iterations: int
    converged: bool
    kkt_gap: float
    objective: float
    precision_source: str
    coefficients: np.ndarray = field(repr=False)

    @property
    def adjacency(self) -> np.ndarray:
        """Bool (p, p): the estimated graph (non-zero off-diagonal precision entries)."""
        adj = self.precision != 0.0
        np.fill_diagonal(adj, False)
        return adj

    @property
    def n_edges(self) -> int:
        """Number of edges of the estimated graph."""
        return int(np.count_nonzero(np.triu(self.adjacency, 1)))


@dataclass(frozen=True)
class GraphicalLassoPath:
    """Result of :func:`graphical_lasso_path`: one :class:`GraphicalLassoResult` per λ."""

    lams: np.ndarray
    results: tuple[GraphicalLassoResult, ...]

    @property
    def n_edges(self) -> np.ndarray:
        return np.array([r.n_edges for r in self.results])

    @property
    def precisions(self) -> np.ndarray:
        """float64 (n_lams, p, p)."""
        return np.stack([r.precision for r in self.results])

    def __len__(self) -> int:
        return len(self.results)

    def __getitem__(self, i: int) -> GraphicalLassoResult:
        return self.results[i]


def _objective(S, precision, lam, penalize_diagonal):
    _, logdet = np.linalg.slogdet(precision)
    l1 = np.abs(precision).sum()
    if not penalize_diagonal:
        l1 -= np.abs(np.diag(precision)).sum()
    return float(-logdet + np.sum(S * precision) + lam * l1)


def _is_pd(A) -> bool:
    try:
        np.linalg.cholesky(A)
    except np.linalg.LinAlgError:
        return False
    return True


def _start(S, lam, penalize_diagonal, warm_start):
    """A positive-definite W with the right diagonal, and warm lasso coefficients."""
    p = S.shape[0]
    diag = np.diag(S) + (lam if penalize_diagonal else 0.0)
    B = np.zeros((p, p))
    if warm_start is not None:
        W = np.array(warm_start.covariance, dtype=np.float64)
        np.fill_diagonal(W, diag)
        B = np.array(warm_start.coefficients, dtype=np.float64)
        if _is_pd(W):
            return W, B
    if penalize_diagonal:
        W = S + lam * np.eye(p)
    else:
        # diag(S) + 0.95 offdiag(S) = 0.95 S + 0.05 diag(S): PSD + PD, so PD
        W = 0.95 * S
        np.fill_diagonal(W, diag)
    return W, B


def _solve(S, lam, penalize_diagonal, warm_start, tol, max_iter, inner_max):
    p = S.shape[0]
    if lam == 0.0:
        if not _is_pd(S):
            raise ValueError(
                "lam = 0 is the unpenalised MLE inv(S), which does not exist: S is singular "
                "(n <= p?); use lam > 0"
            )
        precision = np.linalg.inv(S)
        precision = 0.5 * (precision + precision.T)
        return GraphicalLassoResult(
            precision=precision,
            covariance=S.copy(),
            lam=0.0,
            penalize_diagonal=penalize_diagonal,
            iterations=0,
            converged=True,
            kkt_gap=float(np.abs(np.linalg.inv(precision) - S).max()),
            objective=_objective(S, precision, 0.0, penalize_diagonal),
            precision_source="mle",
            coefficients=np.zeros((p, p)),
        )
    W, B = _start(S, lam, penalize_diagonal, warm_start)
    off = ~np.eye(p, dtype=bool)
    scale = float(np.abs(S[off]).mean()) if p > 1 else 1.0
    threshold = tol * (scale if scale > 0 else float(np.diag(S).mean()))
    iterations, converged, _, _ = glasso_sweeps(S, W, B, lam, threshold, max_iter, inner_max)
    precision, ok = precision_from_regressions(W, B)
    source = "regressions"
    if not (ok and _is_pd(precision)):
        # W is PD by construction (custom_ops.ggm.glasso); its inverse is the fallback
        precision = np.linalg.inv(W)
        precision = 0.5 * (precision + precision.T)
        source = "inverse"
    implied = np.linalg.inv(precision)
    return GraphicalLassoResult(
        precision=precision,
        covariance=W,
        lam=lam,
        penalize_diagonal=penalize_diagonal,
        iterations=int(iterations),
        converged=bool(converged),
        kkt_gap=float(kkt_violation(implied, S, precision, lam, penalize_diagonal)),
        objective=_objective(S, precision, lam, penalize_diagonal),
        precision_source=source,
        coefficients=B,
    )


def _check_common(S_or_X, kind, penalize_diagonal, tol, max_iter, inner_max):
    data = as_covariance(S_or_X, kind=kind)
    penalize_diagonal = check_bool(penalize_diagonal, "penalize_diagonal")
    tol = check_positive(tol, "tol")
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    inner_max = check_int(inner_max, "inner_max_iter", minimum=1)
    if not penalize_diagonal and np.any(np.diag(data.S) <= 0):
        raise ValueError(
            "S_or_X: a variable has zero variance; with an unpenalised diagonal its "
            "precision is unbounded (use penalize_diagonal=True)"
        )
    return data, max_iter, inner_max


def graphical_lasso(
    S_or_X,
    lam: float,
    *,
    penalize_diagonal: bool = True,
    warm_start: GraphicalLassoResult | None = None,
    kind: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 500,
    inner_max_iter: int = 1000,
) -> GraphicalLassoResult:
    """Sparse precision matrix by the graphical lasso (Friedman et al. 2008).

    Parameters
    ----------
    S_or_X : array (p, p) or (n, p)
        Empirical covariance (square and symmetric, positive semidefinite) or data
        (centred internally, ``S = X'X / n``); ``kind`` settles the reading.
    lam : float >= 0
        Penalty. ``lam = 0`` returns the unpenalised MLE ``inv(S)`` (needs S positive
        definite).
    penalize_diagonal : bool
        Penalise ``|omega_jj|`` too (Murphy Eq. 26.70, ESL, R's ``glasso``); ``False`` is
        scikit-learn's convention.
    warm_start : GraphicalLassoResult, optional
        A solution at another penalty (same p) to start from.
    kind : {"auto", "covariance", "data"}
    tol : float
        Stop when the mean absolute change of the off-diagonal of ``W`` in a sweep is
        below ``tol`` times the mean absolute off-diagonal entry of S (Friedman et
        al.'s rule); the inner lasso uses the same threshold. ``kkt_gap`` in the result
        reports the optimality reached.
    max_iter, inner_max_iter : int
        Caps on outer sweeps and inner coordinate-descent sweeps per column.

    Returns
    -------
    GraphicalLassoResult

    Notes
    -----
    **Why the answer is positive definite for every lam > 0 and every PSD S.** The
    solver iterates on ``W`` (the covariance estimate) and starts from a
    positive-definite one: ``S + lam I`` when the diagonal is penalised (PSD plus a
    positive multiple of I), ``0.95 S + 0.05 diag(S)`` otherwise (PSD plus a positive
    diagonal; zero variances are rejected up front). A column update replaces ``w12``
    by ``W11 beta``, which keeps ``W`` PD exactly when the new Schur complement ``w_jj -
    beta' W11 beta`` is positive; the kernel checks that before accepting a column and
    otherwise keeps the old one, so ``W`` never leaves the PD cone (at an exact lasso
    solution the check always passes: the update maximises ``log det W`` over the
    column's feasible box). The precision is then the partitioned inverse of ``W``
    from the lasso coefficients (``omega_jj = 1 / (w_jj - w12' beta) > 0``, exact
    zeros), accepted only if a Cholesky factorisation succeeds; otherwise it is
    ``inv(W)``, PD because ``W`` is. scikit-learn instead works from the precision side
    and raises "Non SPD result" when round-off breaks it (e.g. Sachs at lam = 1).

    Raises
    ------
    ValueError
        Bad ``S_or_X`` (NaN, fewer than 2 rows, a non-symmetric or non-PSD covariance),
        ``lam < 0``, ``lam = 0`` with a singular S (n <= p), a zero variance with an
        unpenalised diagonal.

    Examples
    --------
    >>> from pp_models.datasets import load
    >>> X = load("sachs").data
    >>> S = np.cov(X, rowvar=False) / 1000
    >>> graphical_lasso(S, 36.0).n_edges
    8
    """
    data, max_iter, inner_max = _check_common(
        S_or_X, kind, penalize_diagonal, tol, max_iter, inner_max_iter
    )
    lam = check_penalty(lam)
    if warm_start is not None:
        if not isinstance(warm_start, GraphicalLassoResult):
            raise TypeError(
                f"warm_start must be a GraphicalLassoResult, got {type(warm_start).__name__}"
            )
        if warm_start.precision.shape != data.S.shape:
            raise ValueError(
                f"warm_start has p = {warm_start.precision.shape[0]}, the data p = {data.p}"
            )
    return _solve(data.S, lam, bool(penalize_diagonal), warm_start, float(tol), max_iter, inner_max)


def graphical_lasso_path(
    S_or_X,
    lams: Sequence[float] | np.ndarray,
    *,
    penalize_diagonal: bool = True,
    kind: str = "auto",
    tol: float = 1e-6,
    max_iter: int = 500,
    inner_max_iter: int = 1000,
    progressbar: bool = True,
) -> GraphicalLassoPath:
    """The graphical lasso along a path of penalties, each warm-started from the last.

    The penalties are solved from the largest to the smallest (sparse solutions first,
    which is what makes warm starts pay) and returned in the order given.

    Parameters
    ----------
    S_or_X, penalize_diagonal, kind, tol, max_iter, inner_max_iter
        As in :func:`graphical_lasso`.
    lams : sequence of float >= 0
    progressbar : bool
        A progress line (penalties solved) when the path takes over a second; off in CI
        (see :mod:`pp_models.progress`).

    Returns
    -------
    GraphicalLassoPath
    """
    data, max_iter, inner_max = _check_common(
        S_or_X, kind, penalize_diagonal, tol, max_iter, inner_max_iter
    )
    if lams is None or isinstance(lams, str | bytes) or np.ndim(lams) != 1:
        raise TypeError(f"lams must be a 1-D sequence of penalties, got {lams!r}")
    if len(lams) == 0:
        raise ValueError("lams must hold at least one penalty")
    lams = np.array([check_penalty(lam, f"lams[{i}]") for i, lam in enumerate(lams)])
    order = np.argsort(-lams, kind="stable")
    results: list[GraphicalLassoResult | None] = [None] * lams.size
    previous = None
    with WorkProgress("graphical_lasso_path", lams.size, unit="penalties",
                      enabled=progressbar) as bar:
        for i in order:
            result = _solve(
                data.S, float(lams[i]), bool(penalize_diagonal), previous, float(tol),
                max_iter, inner_max,
            )
            results[i] = result
            previous = result if result.precision_source != "mle" else None
            bar.advance(1)
    return GraphicalLassoPath(lams=lams, results=tuple(results))


def lambda_max(S_or_X, *, kind: str = "auto") -> float:
    """The smallest penalty giving an empty graph: ``max_{j != k} |S_jk|``."""
    S = as_covariance(S_or_X, kind=kind).S
    off = ~np.eye(S.shape[0], dtype=bool)
    return float(np.abs(S[off]).max()) if S.shape[0] > 1 else 0.0
