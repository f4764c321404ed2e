"""The Bayesian mixture of trees (Meilă & Jordan 2000; Meilă & Jaakkola 2006).

Generative model, for components ``k = 1..K`` and rows ``i = 1..n``::

    w ~ Dirichlet(alpha, ..., alpha)
    T_k ~ SpanningTree(beta)                    P(T) ∝ prod_{uv in T} beta_uv
    theta_k | T_k ~ BDeu Dirichlet CPTs         root Dir(ess/K_r); child rows Dir(ess/(K_pa K_v))
    z_i ~ Categorical(w)
    x_i | z_i = k ~ tree T_k with CPTs theta_k

The CPTs are integrated out (``X ~ TreeMixtureData(z, T)``), so the free variables are
``w``, ``z`` and ``trees``. The Gibbs step ``"mixture_of_trees_gibbs"`` updates them in
turn: the assignments collapsed (posterior predictive of each tree), each tree exactly
from its conditional posterior, which is again decomposable with edge weights
``beta_uv`` times the edge's Bayes factor (Meilă & Jaakkola 2006), and ``w`` from its
Dirichlet posterior.
"""

from __future__ import annotations

from functools import partial
from numbers import Integral, Real

import numpy as np
import pymc as pm
import xarray as xr

from pp_models.distributions.spanning_tree import SpanningTree
from pp_models.mixture_of_trees.chow_liu import as_discrete_data
from pp_models.mixture_of_trees.likelihood import TreeMixtureData
from pp_models.model_info import (
    DerivedStatistic,
    StepHint,
    ZooModelInfo,
    attach_info,
    weights_sorted,
)
from pp_models.trees import check_tree_weights

__all__ = ["STEP_NAME", "model"]

#: Registry name of the Gibbs step the model asks for.
STEP_NAME = "mixture_of_trees_gibbs"


def model(X, n_components: int, *, kind: str = "discrete", alpha: float = 1.0,
          edge_prior=None, ess: float = 1.0, n_categories=None,
          feature_names=None) -> pm.Model:
    """Build the Bayesian mixture of trees over the rows of ``X``.

    Parameters
    ----------
    X : array (n, V)
        Category codes >= 0 (whole-number floats accepted), ``V >= 2``.
    n_components : int
        ``K >= 1``.
    kind : {"discrete"}
        Only discrete data have the collapsed (Dirichlet) form here.
    alpha : float
        Symmetric Dirichlet concentration of the mixture weights.
    edge_prior : array (V, V), optional
        Decomposable structure prior ``beta`` (symmetric, > 0 off the diagonal); default
        all ones: uniform over the ``V^(V-2)`` trees.
    ess : float
        BDeu equivalent sample size of the CPT priors.
    n_categories : int or array (V,), optional
        Categories per variable (default ``max + 1``, at least 2).
    feature_names : sequence of str, optional

    Returns
    -------
    pymc.Model
        Free ``w`` (component), ``z`` (obs), ``trees`` (component, node: parent vectors
        rooted at node 0); observed ``X``. Never samples.
    """
    if kind != "discrete":
        raise ValueError(f"kind must be 'discrete' (the collapsed Dirichlet CPTs), got {kind!r}")
    columns = list(X.columns) if hasattr(X, "columns") else None
    codes, K = as_discrete_data(X, n_categories=n_categories, min_rows=1)
    n, V = codes.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns) for a tree, got {V}")
    if isinstance(n_components, bool) or not isinstance(n_components, Integral) \
            or n_components < 1:
        raise ValueError(f"n_components must be a positive integer, got {n_components!r}")
    Kc = int(n_components)
    for name, value in (("alpha", alpha), ("ess", ess)):
        if isinstance(value, bool) or not isinstance(value, Real) or not np.isfinite(value) \
                or value <= 0:
            raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    beta = np.ones((V, V)) if edge_prior is None else check_tree_weights(edge_prior,
                                                                          "edge_prior")
    if beta.shape != (V, V):
        raise ValueError(f"edge_prior must have shape ({V}, {V}), got {beta.shape}")
    off = ~np.eye(V, dtype=bool)
    if np.any(beta[off] <= 0):
        raise ValueError("edge_prior: every off-diagonal weight must be > 0")
    names = feature_names if feature_names is not None else columns
    names = [str(c) for c in names] if names is not None else [f"x{j}" for j in range(V)]
    if len(names) != V:
        raise ValueError(f"feature_names has {len(names)} names but X has {V} columns")

    coords = {"component": np.arange(Kc), "node": names, "obs": np.arange(n)}
    with pm.Model(coords=coords) as m:
        w = pm.Dirichlet("w", a=np.full(Kc, float(alpha)), dims="component")
        trees = SpanningTree("trees", beta, shape=(Kc, V), dims=("component", "node"))
        z = pm.Categorical("z", p=w, shape=n, dims="obs")
        TreeMixtureData("X", z, trees, K, float(ess), observed=codes, dims=("obs", "node"))

    options = {"n_categories": K, "ess": float(ess), "alpha": float(alpha),
               "edge_prior": beta}
    info = ZooModelInfo(
        family="mixture_of_trees",
        preferred_method="gibbs",
        step_hints=(StepHint(STEP_NAME, ("w", "z", "trees"), options),),
        derived=(
            DerivedStatistic("n_occupied", partial(_n_occupied, K=Kc),
                             "number of non-empty components"),
            DerivedStatistic("weights_sorted", weights_sorted,
                             "mixture weights in decreasing order"),
        ),
        label_variables=("w", "z", "trees"),
        postprocess=partial(_edge_probabilities, codes=codes, n_categories=K,
                            ess=float(ess), edge_prior=beta),
        notes=("w, z, trees: mixture_of_trees_gibbs (collapsed assignments, exact tree "
               "draws from the decomposable conditional posterior, conjugate weights). "
               "Component labels are not identified."),
    )
    return attach_info(m, info)


def _n_occupied(posterior: xr.Dataset, K: int) -> xr.DataArray:
    z = posterior["z"].values
    flat = z.reshape(-1, z.shape[-1])
    counts = np.array([np.count_nonzero(np.bincount(row, minlength=K)) for row in flat])
    return xr.DataArray(counts.reshape(z.shape[:2]), dims=("chain", "draw"))


def _edge_probabilities(dt: xr.DataTree, *, codes, n_categories, ess,
                        edge_prior) -> xr.DataTree:
    """``fit``'s post-fit hook: Rao-Blackwellised posterior edge probabilities given each
    draw's assignments (see outputs)."""
    from pp_models.mixture_of_trees.outputs import add_edge_probabilities, edge_log_weights

    if "trees" not in dt["posterior"].data_vars and "posterior_labels" not in dt.children:
        return dt

    def component_log_weights(rows):
        return edge_log_weights(codes[rows], n_categories, ess, edge_prior)

    return add_edge_probabilities(dt, component_log_weights)
