"""``bhc.fit``: the tree builder's name before the estimators were named by algorithm
(``fit`` is :func:`inference.fit`'s verb). Deprecated; removed in the next release."""

from __future__ import annotations

import warnings

from pp_models.bhc.defaults import check_alpha, check_data, resolve_hyper
from pp_models.bhc.greedy import greedy
from pp_models.bhc.randomized import _randomized_options, embhc, randomized
from pp_models.bhc.result import BHCResult

__all__ = ["fit"]

METHODS = ("greedy", "randomized", "embhc")


def fit(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    method="greedy",
    random_seed=None,
    subsample=None,
    leaf_size=None,
    em_iterations=3,
    filter_prior="size",
    split="balanced",
    filter_predictive="tree",
) -> BHCResult:
    """Deprecated: use :func:`~pp_models.bhc.greedy`, :func:`~pp_models.bhc.randomized`
    or :func:`~pp_models.bhc.embhc` (``method`` names one of them; the other arguments
    are theirs)."""
    warnings.warn(
        f"bhc.fit is deprecated; call bhc.{method if method in METHODS else 'greedy'}(...) "
        "(estimators are named by their algorithm)",
        DeprecationWarning,
        stacklevel=2,
    )
    X = check_data(X, likelihood)
    check_alpha(alpha)
    resolve_hyper(X, likelihood, hyper)
    if method not in METHODS:
        raise ValueError(f"method: unknown {method!r}; choose one of {METHODS}")
    n = X.shape[0]
    _randomized_options(
        n, method, subsample, leaf_size, em_iterations, filter_prior, split, filter_predictive
    )
    common = {"likelihood": likelihood, "alpha": alpha, "hyper": hyper}
    if method == "greedy":
        return greedy(X, **common)
    if method == "randomized":
        return randomized(
            X, **common, random_seed=random_seed, subsample=subsample, leaf_size=leaf_size,
            filter_prior=filter_prior, split=split, filter_predictive=filter_predictive,
        )
    return embhc(
        X, **common, random_seed=random_seed, subsample=subsample, em_iterations=em_iterations
    )
