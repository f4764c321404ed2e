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

import numpy as np
import pymc as pm
import xarray as xr

from custom_ops.conjugate import gaussian_hyper
from pp_models.distributions.spanning_tree import SpanningTree
from pp_models.mixture_of_trees.chow_liu import _AXES, as_discrete_data
from pp_models.mixture_of_trees.likelihood import GaussianTreeMixtureData, TreeMixtureData
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
    weights_sorted,
)
from pp_models.registry import family_of_module
from pp_models.trees import check_tree_weights
from pp_models.validation import (
    as_data_matrix,
    check_bool,
    check_feature_names,
    check_int,
    check_positive,
)

__all__ = ["GAUSSIAN_STEP_NAME", "STEP_NAME", "model"]

#: Registry names of the Gibbs steps the model asks for (discrete, Gaussian).
STEP_NAME = "mixture_of_trees_gibbs"
GAUSSIAN_STEP_NAME = "gaussian_mixture_of_trees_gibbs"


def model(X, n_components: int, *, kind: str = "discrete", alpha: float = 1.0,
          edge_prior=None, ess: float = 1.0, n_categories=None,
          feature_names=None, m0=None, kappa0: float = 1.0, delta: float = 3.0,
          S0=None, split_merge: bool = False, block_moves: int = 0) -> pm.Model:
    """Build the Bayesian mixture of trees over the rows of ``X``.

    Parameters
    ----------
    X : array (n, V)
        Category codes >= 0 (whole-number floats accepted), ``V >= 2``.
    n_components : int
        ``K >= 1``.
    kind : {"discrete", "gaussian"}
        ``"discrete"``: category codes, BDeu Dirichlet CPTs integrated out.
        ``"gaussian"``: real data; each component a Gaussian Markov on its tree with a
        hyper-Markov Normal-Inverse-Wishart prior integrated out (clique marginals
        ``NIW(m0_C, kappa0, delta + |C| - 1, S0_CC)``; Dawid & Lauritzen 1993), so
        ``p(D | T) = prod_v p(D_v) prod_{uv in T} p(D_uv) / (p(D_u) p(D_v))``.
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
    m0, kappa0, delta, S0
        Gaussian only: prior mean (default the column means), its precision scale
        (default 1: a component mean a priori within about one covariance of ``m0``),
        the hyper inverse-Wishart degrees of freedom (``delta > 0``; a clique of size c
        gets ``delta + c - 1``) and scale (default the diagonal of the column variances,
        so with ``delta = 3`` the prior mean of every variance is the sample variance).
    split_merge : bool
        Discrete only: the Gibbs step adds a split-merge move per pair of components
        (restricted-Gibbs launch, trees integrated out of the acceptance ratio). It
        helps on small data; with hundreds of rows it is almost never accepted (see
        ``inference.gibbs.mixture_of_trees``).
    block_moves : int
        Discrete only: block moves per sweep of the Gibbs step (0: none). Each puts a
        group of similar rows that share a component (a row and up to 7 of its nearest
        rows) into a component drawn from its conditional with the trees integrated out,
        so near-duplicate rows move together (``inference.gibbs.mixture_of_trees``).
        Finding the nearest rows costs ``n^2 V`` once.

    Notes
    -----
    The Gibbs step starts every tuning chain from assignments drawn from the prior
    (seeded per chain) rather than PyMC's initial point, every row in component 0:
    from that start the one-row sweep must peel rows off one giant component, and the
    chains stayed in different modes (tutorial digits: R-hat 1.65-1.96 on the sorted
    weights; with prior starts 1.06-1.29; wine, Gaussian: 1.4-1.8 -> 1.01).

    Returns
    -------
    pymc.Model
        Free ``w`` (component), ``z`` (obs), ``trees`` (component, node: parent vectors
        rooted at node 0); observed ``X``. Never samples.
    """
    if kind not in ("discrete", "gaussian"):
        raise ValueError(f"kind must be 'discrete' or 'gaussian', got {kind!r}")
    columns = list(X.columns) if hasattr(X, "columns") else None
    if kind == "discrete":
        codes, K = as_discrete_data(X, n_categories=n_categories, min_rows=1)
    else:
        codes = as_data_matrix(X, "X", min_rows=1, axes=_AXES)
    n, V = codes.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns) for a tree, got {V}")
    Kc = check_int(n_components, "n_components", minimum=1)
    alpha = check_positive(alpha, "alpha")
    ess = check_positive(ess, "ess")
    kappa0 = check_positive(kappa0, "kappa0")
    delta = check_positive(delta, "delta")
    split_merge = check_bool(split_merge, "split_merge")
    block_moves = check_int(block_moves, "block_moves", minimum=0)
    if kind == "gaussian" and split_merge:
        raise ValueError("split_merge: the split-merge move exists for kind='discrete' only")
    if kind == "gaussian" and block_moves:
        raise ValueError("block_moves: the block move exists for kind='discrete' only")
    if kind == "gaussian":
        if m0 is None:
            m0 = codes.mean(axis=0)
        if S0 is None:
            var = codes.var(axis=0) if n > 1 else np.ones(V)
            S0 = np.diag(np.where(var > 0, var, 1.0))
        m0, kappa0, _nu, S0 = gaussian_hyper(V, m0, kappa0, float(delta) + V - 1, S0)
    beta = np.ones((V, V)) if edge_prior is None else check_tree_weights(edge_prior,
                                                                          "edge_prior")
    if beta.shape != (V, V):
        raise ValueError(f"edge_prior must have shape ({V}, {V}), got {beta.shape}")
    off = ~np.eye(V, dtype=bool)
    if np.any(beta[off] <= 0):
        raise ValueError("edge_prior: every off-diagonal weight must be > 0")
    names = check_feature_names(feature_names if feature_names is not None else columns, V)
    names = names if names is not None else [f"x{j}" for j in range(V)]

    coords = {"component": np.arange(Kc), "node": names, "obs": np.arange(n)}
    with pm.Model(coords=coords) as m:
        w = pm.Dirichlet("w", a=np.full(Kc, float(alpha)), dims="component")
        trees = SpanningTree("trees", beta, shape=(Kc, V), dims=("component", "node"))
        z = pm.Categorical("z", p=w, shape=n, dims="obs")
        if kind == "discrete":
            TreeMixtureData("X", z, trees, K, float(ess), observed=codes,
                            dims=("obs", "node"))
        else:
            GaussianTreeMixtureData("X", z, trees, m0, kappa0, float(delta), S0,
                                    observed=codes, dims=("obs", "node"))

    if kind == "discrete":
        step_name = STEP_NAME
        options = {"n_categories": K, "ess": float(ess), "alpha": float(alpha),
                   "edge_prior": beta, "split_merge": bool(split_merge),
                   "block_moves": int(block_moves)}
        hook = partial(_edge_probabilities, codes=codes, n_categories=K, ess=float(ess),
                       edge_prior=beta)
    else:
        step_name = GAUSSIAN_STEP_NAME
        options = {"m0": m0, "kappa0": kappa0, "delta": float(delta), "S0": S0,
                   "alpha": float(alpha), "edge_prior": beta}
        hook = partial(_gaussian_edge_probabilities, X=codes, m0=m0, kappa0=kappa0,
                       delta=float(delta), S0=S0, edge_prior=beta)
    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        step_hints=(StepHint(step_name, ("w", "z", "trees"), options),),
        derived=(
            DerivedStatistic("n_occupied", partial(_n_occupied, K=Kc),
                             "number of non-empty components"),
            DerivedStatistic("weights_sorted", weights_sorted,
                             "mixture weights in decreasing order"),
        ),
        label_variables=("w", "z", "trees"),
        relabelling=Relabelling("component", allocations="z", label_valued=("z",)),
        postprocess=hook,
        notes=(f"w, z, trees: {step_name} (collapsed assignments, exact tree "
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
    from custom_ops.mixture_of_trees.discrete import component_edge_log_weights
    from pp_models.mixture_of_trees.outputs import add_edge_probabilities

    if "trees" not in dt["posterior"].data_vars and "posterior_labels" not in dt.children:
        return dt
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n_categories = np.ascontiguousarray(n_categories, dtype=np.int64)
    log_beta = np.log(np.asarray(edge_prior, dtype=np.float64))
    np.fill_diagonal(log_beta, 0.0)

    def component_log_weights(rows):
        # the compiled count kernel: the hook scores every draw whose assignments changed
        lw, _alone = component_edge_log_weights(codes, np.ascontiguousarray(rows), n_categories,
                                                float(ess), log_beta, 1.0)
        return lw

    return add_edge_probabilities(dt, component_log_weights)


def _gaussian_edge_probabilities(dt: xr.DataTree, *, X, m0, kappa0, delta, S0,
                                 edge_prior) -> xr.DataTree:
    """The Gaussian model's post-fit hook (see :func:`_edge_probabilities`)."""
    from pp_models.mixture_of_trees.outputs import (
        add_edge_probabilities,
        gaussian_edge_log_weights,
    )

    if "trees" not in dt["posterior"].data_vars and "posterior_labels" not in dt.children:
        return dt

    def component_log_weights(rows):
        return gaussian_edge_log_weights(X[rows], m0, kappa0, delta, S0, edge_prior)

    return add_edge_probabilities(dt, component_log_weights)
