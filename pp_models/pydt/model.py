"""The Pitman-Yor diffusion tree model of Knowles (2012) §4.5 as a PyMC model."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pp_models.distributions.pydt import DiffusionTreeGaussian, PYDiffusionTree
from pp_models.model_info import DerivedStatistic, StepHint, ZooModelInfo, attach_info
from pp_models.registry import family_of_module
from pp_models.trees import DiffusionTree
from pp_models.validation import as_data_matrix, check_int

__all__ = ["DEFAULT_PRIORS", "model", "trees_from_posterior"]

#: Gamma (shape, rate) / Beta (a, b) hyperpriors used in all of Knowles' experiments
#: (§4.5, Eqs. 4.50-4.51): theta ~ G(2, .5), alpha ~ Beta(1, 1), c ~ G(1, 1),
#: 1/sigma2 ~ G(1, 1).
DEFAULT_PRIORS = {"theta": (2.0, 0.5), "alpha": (1.0, 1.0), "c": (1.0, 1.0),
                  "precision": (1.0, 1.0)}


def _check_priors(priors, binary):
    if priors is None:
        priors = {}
    if not isinstance(priors, Mapping):
        raise TypeError(f"priors: a mapping name -> (a, b), got {type(priors).__name__}")
    unknown = set(priors) - set(DEFAULT_PRIORS)
    if unknown:
        raise ValueError(f"priors: unknown {sorted(unknown)}; known {sorted(DEFAULT_PRIORS)}")
    out = {**DEFAULT_PRIORS, **priors}
    for name, pair in out.items():
        try:
            a = np.asarray(pair, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"priors: {name} needs two numbers (a, b), got {pair!r}") from None
        if a.shape != (2,) or not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"priors: {name} needs two finite positive numbers, got {pair!r}")
        out[name] = (float(a[0]), float(a[1]))
    return out


def trees_from_posterior(posterior: xr.Dataset) -> list[DiffusionTree]:
    """Every posterior draw of ``tree`` as a :class:`DiffusionTree` (chains concatenated)."""
    packed = posterior["tree"].values
    return [DiffusionTree.from_packed(p, validate=False)
            for p in packed.reshape(-1, *packed.shape[-2:])]


def _per_draw(function):
    def statistic(posterior: xr.Dataset) -> xr.DataArray:
        packed = posterior["tree"].values
        flat = packed.reshape(-1, *packed.shape[-2:])
        out = np.array([function(DiffusionTree.from_packed(p, validate=False)) for p in flat])
        return xr.DataArray(out.reshape(packed.shape[:2]), dims=("chain", "draw"))

    return statistic


def model(X, *, priors=None, binary=False, ridge_rounds=0, thin=1):
    """Pitman-Yor diffusion tree density model of the rows of ``X`` (Knowles 2012 §4.5).

    ``tree ~ PYDiffusionTree(c, theta, alpha)`` over the ``n`` rows, the rows are
    Brownian motion with variance ``sigma2`` down the tree observed at ``t = 1``; the
    internal locations are integrated out (custom_ops.pydt.ops).

    Parameters
    ----------
    X : (n, D) array
        Data, one point per row.
    priors : mapping, optional
        ``{"theta": (shape, rate), "alpha": (a, b), "c": (shape, rate),
        "precision": (shape, rate)}``: Gamma / Beta hyperpriors; missing ones take the
        thesis's values (:data:`DEFAULT_PRIORS`). ``precision = 1 / sigma2``.
    binary : bool
        The Dirichlet diffusion tree (Neal 2001): ``theta = alpha = 0``, binary trees.
    ridge_rounds : int
        Rounds of branch-point moves and centred updates of ``c``, ``theta`` and
        ``alpha`` per sweep (the tree step's ``ridge_rounds``, item 6 of
        ``inference.gibbs.pydt``); 0 (the default): one of each per sweep.
        ``ppzoo fit pydt`` asks for 3.
    thin : int
        Sweeps of the sampler per recorded draw (the step's ``sweeps``): every
        ``thin``-th state is recorded.

    Returns
    -------
    pymc.Model
        Free variables ``c``, ``theta``, ``alpha`` (unless binary), ``precision`` and
        ``tree``; ``sigma2`` is deterministic. ``fit`` runs the tree step of
        ``inference.gibbs.pydt`` for all of them: the tree moves, the non-centred
        updates of ``c``, ``theta``, ``alpha`` and the precision, and their slice
        updates on the log (logit) scale with the tree fixed.
    """
    X = as_data_matrix(X, "X", min_rows=2)
    if not isinstance(binary, bool | np.bool_):
        raise TypeError(f"binary: must be a bool, got {binary!r}")
    p = _check_priors(priors, binary)
    ridge_rounds = check_int(ridge_rounds, "ridge_rounds", minimum=0)
    thin = check_int(thin, "thin", minimum=1)
    n, d = X.shape
    with pm.Model() as m:
        c = pm.Gamma("c", alpha=p["c"][0], beta=p["c"][1])
        if binary:
            theta = pt.constant(0.0)
            alpha = pt.constant(0.0)
            hyper = ("c", "precision")
        else:
            theta = pm.Gamma("theta", alpha=p["theta"][0], beta=p["theta"][1])
            alpha = pm.Beta("alpha", alpha=p["alpha"][0], beta=p["alpha"][1])
            hyper = ("c", "theta", "alpha", "precision")
        precision = pm.Gamma("precision", alpha=p["precision"][0], beta=p["precision"][1])
        sigma2 = pm.Deterministic("sigma2", 1.0 / precision)
        tree = PYDiffusionTree("tree", c, theta, alpha, n)
        DiffusionTreeGaussian("X", tree, sigma2, d, observed=X)
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        # a fixed number of detach-reattach moves per sweep (2n - 2, the non-root nodes of
        # a binary tree): a count read off the current tree (the step's default) is not
        # invariant (tests/inference/gibbs/pydt/test_kernel_exact.py)
        # noncentred: the hyperparameters also moved with the times following them (c
        # and the times trade off, and sigma2 and the times; inference/gibbs/pydt.py,
        # item 3); the hyperparameters as the step's own variables: slice-sampled on
        # their log / logit scale with the tree fixed (item 5). NUTS beside the tree
        # moves diverged on most transitions (its leapfrog runs off in log c between
        # tree moves; docs/families/pydt.md)
        # ridge_rounds: theta and the number of branch points pin each other, so the
        # branch moves and theta's update can alternate several times per sweep (item 6)
        step_hints=(StepHint("pydt_tree", ("tree", *hyper),
                             {"moves": 2 * n - 2, "noncentred": hyper,
                              "ridge_rounds": 0 if binary else ridge_rounds,
                              "sweeps": thin}),),
        derived=(
            DerivedStatistic("root_time", _per_draw(lambda t: t.root_time),
                             "divergence time of the first branch point"),
            DerivedStatistic("n_internal", _per_draw(lambda t: t.n_internal),
                             "number of branch points"),
            DerivedStatistic("n_multifurcations", _per_draw(lambda t: t.n_multifurcations),
                             "branch points with more than two children"),
        ),
        label_variables=("tree",),
        notes="DDT (binary, theta = alpha = 0)" if binary else "Pitman-Yor diffusion tree",
    )
    return attach_info(m, info)
