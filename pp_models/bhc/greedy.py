"""Greedy Bayesian hierarchical clustering (Heller 2007 Alg. 3.2): :func:`greedy`.

Also the :class:`TreeBuilder` the randomized builders share (greedy BHC on subsets of the
rows, the filters' assignment); the hot loops are in :mod:`custom_ops.bhc.builders`.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops import conjugate as cj
from custom_ops.bhc import builders as kernels
from custom_ops.bhc import evidence as ops
from pp_models.bhc.defaults import check_alpha, check_data, resolve_hyper
from pp_models.bhc.result import NOT_COMPUTABLE, BHCResult, evaluate
from pp_models.progress import WorkProgress

__all__ = ["TreeBuilder", "build_tree", "greedy"]


class TreeBuilder:
    """Shared state for greedy / randomized tree construction over subsets of rows."""

    def __init__(self, X, likelihood, alpha, hyper_tuple):
        self.X = X
        self.fam = cj.FAMILY_CODES[likelihood]
        self.likelihood = likelihood
        self.alpha = alpha
        self.H = cj.pack_hyper(likelihood, hyper_tuple)
        self.pstats = cj.point_stats(self.fam, X)
        n = X.shape[0]
        self.use_table = likelihood == "bernoulli"
        if self.use_table:
            self.tables = kernels.bernoulli_tables(*cj.bernoulli_view(self.H), n)
        else:
            self.tables = (np.zeros((0, 1)), np.zeros((0, 1)), np.zeros(1))
        self.n_scored = 0
        # pairs scored again: a node whose best candidate was merged away re-scans the
        # live nodes (greedy_kernel keeps O(n) state instead of every pair's score)
        self.n_rescored = 0
        # of all pair evaluations, those that needed log r exactly (not settled by a bound)
        self.n_exact = 0
        # pairs scored so far, which the greedy kernel adds to as it goes (greedy's
        # progress line reads it; the randomized builders count placed points instead)
        self.pairs_scored = np.zeros(1, dtype=np.int64)
        self.progress: WorkProgress | None = None

    def placed(self, n_points: int) -> None:
        """Report ``n_points`` more points placed in the final tree (randomized builders)."""
        if self.progress is not None:
            self.progress.advance(n_points)

    def greedy_nodes(self, stats, log_d, log_p):
        merges, scored, rescored, exact = kernels.greedy_kernel(
            kernels.GreedyNodes(stats, log_d, log_p), self.alpha,
            kernels.MergeLikelihood(self.fam, self.H, self.use_table, *self.tables),
            self.pairs_scored,
        )
        self.n_scored += int(scored)
        self.n_rescored += int(rescored)
        self.n_exact += int(exact)
        return merges

    def greedy_points(self, idx):
        """Greedy BHC on rows ``idx``: local merge list (ids 0..len(idx)-1 = idx order)."""
        k = len(idx)
        la = math.log(self.alpha)
        stats = self.pstats[idx]
        lp = np.array([cj.log_marginal(self.fam, stats[i], self.H) for i in range(k)])
        return self.greedy_nodes(stats, np.full(k, la), lp)

    def subtree_values(self, idx, local_merges):
        """(stats, log d, log p) at the root of a local tree over rows ``idx``."""
        if len(idx) == 1:
            s = self.pstats[idx[0]]
            return s, math.log(self.alpha), cj.log_marginal(self.fam, s, self.H)
        log_p, _r, _q, log_d, _ml, stats = ops.tree_forward(
            self.fam, self.pstats[idx], local_merges, self.alpha, self.H
        )
        return stats[-1], log_d[-1], log_p[-1]

    def assign(self, X, cstats, log_w, group=None, n_groups=None):
        """Filter rows ``X`` into nodes (:func:`custom_ops.bhc.builders.assign_kernel`)."""
        if group is None:
            group = np.arange(cstats.shape[0])
            n_groups = cstats.shape[0]
        return kernels.assign_kernel(
            self.fam,
            X,
            np.ascontiguousarray(cstats),
            np.asarray(log_w, float),
            np.asarray(group, dtype=np.int64),
            int(n_groups),
            self.H,
        )


def greedy(X, *, likelihood="bernoulli", alpha=1.0, hyper=None,
           progressbar: bool = True) -> BHCResult:
    """Greedy BHC (Heller 2007 Alg. 3.2): merge the pair with the largest r_k until one
    tree remains (ties: the smaller node ids). Every candidate pair is scored once,
    (n - 1)^2 evaluations in all, plus re-scans of the nodes whose best candidate was
    merged away (each node keeps only its best: O(n d) memory; see
    :func:`custom_ops.bhc.builders.greedy_kernel`). For n in the tens of thousands and
    beyond, :func:`~pp_models.bhc.randomized` and :func:`~pp_models.bhc.embhc` score
    far fewer pairs.

    Parameters
    ----------
    X : (n, d) array-like
        Binary (bernoulli), non-negative integer counts (multinomial) or real rows.
    likelihood : {"bernoulli", "multinomial", "gaussian", "diag_gaussian"}
    alpha : float
        DP concentration (> 0).
    hyper : dict, optional
        Conjugate hyperparameters by name (see :mod:`custom_ops.conjugate`); missing
        ones take :func:`~pp_models.bhc.default_hyper`'s empirical values.
    progressbar : bool
        A progress line (pairs scored, of (n - 1)^2) when the run takes over a second;
        off in CI (see :mod:`pp_models.progress`).

    Returns
    -------
    BHCResult
    """
    def merges_of(builder):
        return builder.greedy_points(np.arange(builder.X.shape[0]))

    return build_tree(X, likelihood, alpha, hyper, "greedy", merges_of,
                      progressbar=progressbar)


def build_tree(X, likelihood, alpha, hyper, method, merges_of, *,
               progressbar: bool = False) -> BHCResult:
    """What every BHC estimator does around its algorithm: validate the shared inputs,
    make a :class:`TreeBuilder`, call ``merges_of(builder)`` (which validates the
    algorithm's own options first) and evaluate the tree into a :class:`BHCResult`.

    With ``progressbar`` a progress line follows the work: pairs scored for greedy BHC,
    points placed in the tree for the randomized builders."""
    X = check_data(X, likelihood)
    alpha = check_alpha(alpha)
    hyper_tuple, hyper_dict = resolve_hyper(X, likelihood, hyper)
    builder = TreeBuilder(X, likelihood, alpha, hyper_tuple)
    n = X.shape[0]
    if method == "greedy":
        bar = WorkProgress("bhc.greedy", (n - 1) ** 2, unit="pairs", enabled=progressbar)
        builder.pairs_scored = bar.counter
    else:
        bar = WorkProgress(f"bhc.{method}", n, unit="points", enabled=progressbar)
        builder.progress = bar
    with bar:
        try:
            merges = merges_of(builder)
        except np.linalg.LinAlgError as err:
            # the NIW block states of the filters (embhc, randomized) factor their
            # posterior scale and raise where it is not numerically positive definite
            raise ValueError(NOT_COMPUTABLE) from err
    return evaluate(
        X, likelihood, alpha, hyper_tuple, hyper_dict, merges, method, builder.n_scored
    )
