"""Finite Gaussian mixture with explicit assignments (the foundation's proof model).

Generative model (diagonal covariances), for ``i = 1..n``, ``k = 1..K``, ``j = 1..d``::

    w ~ Dirichlet(gamma, ..., gamma)
    mu[k, j] ~ Normal(m_j, 2 s_j)            m, s: the data's column means and sds
    sigma[k, j] ~ FlooredHalfNormal(s_j, h_j)  h: the column's recording resolution
    z[i] ~ Categorical(w)
    X[i, j] ~ Normal(mu[z[i], j], sigma[z[i], j])

The priors are scaled by the data so the model is usable on any units.
``FlooredHalfNormal(s, h)`` (:mod:`pp_models.distributions.scale_priors`) is the
half-normal of scale ``s`` times ``exp(-h^2 / (2 sigma^2))``: unchanged where
``sigma >> h``, vanishing as ``sigma -> 0``. Data are recorded to a resolution ``h``
(iris: 0.1 cm), so values tie, and a component holding ``m`` tied values of a column has
a likelihood growing like ``sigma^-m`` as its ``sigma -> 0``: with a prior of positive
density at 0 (the plain half-normal) the posterior is improper and a chain that finds
such a component stays there (on iris: a component on the 29 setosa petal widths of
0.2 cm, ``sigma ~ 1e-8``, NUTS's step size ~1e-4). A spread far below the resolution is
not something the data can show, so the prior makes it improbable; ``resolution=``
overrides the value read from the data (:func:`pp_models.resolution.recording_resolution`).
``fit`` samples
``z`` with the exact blocked Gibbs update (the ``z_i`` are conditionally independent
given the parameters; Murphy 2012 §11.4.2) and ``w, mu, sigma`` with NUTS.

The components are exchangeable, so their labels are not identified: chains may visit
different permutations. The label-invariant summaries added after sampling are
``n_occupied`` (number of non-empty components), ``weights_sorted`` (the weights in
decreasing order) and ``log_likelihood`` (log p(X | w, mu, sigma), z summed out).
"""

from __future__ import annotations

from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr
from scipy.special import logsumexp
from scipy.stats import norm

from pp_models import finite_mixture_predictive as _predictive
from pp_models.distributions.scale_priors import FlooredHalfNormal
from pp_models.finite_mixture_outputs import plot_results
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
    weights_sorted,
)
from pp_models.registry import CLIEntry, Family, family_of_module
from pp_models.resolution import recording_resolution
from pp_models.validation import (
    as_data_matrix,
    check_feature_names,
    check_int,
    check_positive,
    check_positive_vector,
)

__all__ = ["FAMILY", "model", "plot_results"]


def model(
    X,
    n_components: int,
    *,
    weight_concentration: float = 1.0,
    resolution=None,
    feature_names=None,
) -> pm.Model:
    """Build the finite Gaussian mixture over the rows of ``X``.

    Parameters
    ----------
    X : array-like, shape (n, d)
        Observations; finite, at least 2 rows.
    n_components : int
        Number of mixture components ``K >= 1``.
    weight_concentration : float
        Symmetric Dirichlet parameter ``gamma > 0`` of the weights.
    resolution : float or sequence of float, optional
        The resolution each column was recorded to (one number for all, or one per
        column, ``> 0``): the floor of the prior on ``sigma``. Default: read from the
        data by :func:`pp_models.resolution.recording_resolution` (the step of the
        decimal grid the values lie on).
    feature_names : sequence of str, optional
        Names of the columns (default ``x0, x1, ...`` or a DataFrame's columns).

    Returns
    -------
    pymc.Model
        Free variables ``w, mu, sigma, z``; observed ``X``. Never samples.
    """
    columns = list(X.columns) if hasattr(X, "columns") else None
    X = as_data_matrix(X, "X")
    K = check_int(n_components, "n_components", minimum=1)
    gamma = check_positive(weight_concentration, "weight_concentration")
    n, d = X.shape
    names = check_feature_names(feature_names if feature_names is not None else columns, d)
    names = names if names is not None else [f"x{j}" for j in range(d)]

    center = X.mean(axis=0)
    scale = X.std(axis=0)
    scale = np.where(scale > 0, scale, 1.0)
    floor = (recording_resolution(X) if resolution is None
             else check_positive_vector(resolution, "resolution", d))

    coords = {"component": np.arange(K), "feature": names, "obs": np.arange(n)}
    with pm.Model(coords=coords) as mixture:
        w = pm.Dirichlet("w", a=np.full(K, gamma), dims="component")
        mu = pm.Normal("mu", mu=center, sigma=2.0 * scale, dims=("component", "feature"))
        sigma = FlooredHalfNormal("sigma", sigma=scale, floor=floor,
                                  dims=("component", "feature"))
        z = pm.Categorical("z", p=w, dims="obs")
        pm.Normal("X", mu=mu[z], sigma=sigma[z], observed=X, dims=("obs", "feature"))

    info = ZooModelInfo(
        family=family_of_module(__name__),
        preferred_method="gibbs",
        step_hints=(StepHint("categorical_gibbs", ("z",), _assignment_conditional),),
        derived=(
            DerivedStatistic(
                "n_occupied", partial(_n_occupied, K=K), "number of non-empty components"
            ),
            DerivedStatistic(
                "weights_sorted", weights_sorted, "mixture weights in decreasing order"
            ),
            DerivedStatistic(
                "log_likelihood",
                partial(_log_likelihood, X=X),
                "log p(X | w, mu, sigma) with z summed out",
            ),
        ),
        label_variables=("z", "w", "mu", "sigma"),
        relabelling=Relabelling("component", allocations="z", label_valued=("z",)),
        notes="z: exact blocked Gibbs; w, mu, sigma: NUTS. Labels are not identified.",
    )
    return attach_info(mixture, info)


def _assignment_conditional(model: pm.Model) -> dict:
    """Options of the Gibbs step for ``z``: its full conditional's logits.

    ``logits[i, k] = log w_k + sum_j log N(X_ij | mu_kj, sigma_kj)`` (Murphy 2012
    Eq. 11.27's responsibilities, unnormalised), and the likelihood's part of them
    (``likelihood_logits``, the second term: the observed ``X``'s log density, which a
    tempered run raises to the power beta). Written in terms of ``model["X"]`` so that
    it follows the data when they are free (getting-it-right) as well as observed.
    """
    w, mu, sigma, X = model["w"], model["mu"], model["sigma"], model["X"]
    component_logp = pm.logp(pm.Normal.dist(mu[None], sigma[None]), X[:, None, :])
    likelihood = component_logp.sum(axis=-1)
    return {"logits": pt.log(w)[None, :] + likelihood, "likelihood_logits": likelihood}


def _n_occupied(posterior: xr.Dataset, K: int) -> xr.DataArray:
    z = posterior["z"].values
    flat = z.reshape(-1, z.shape[-1])
    counts = np.array([np.bincount(row, minlength=K).astype(bool).sum() for row in flat])
    return xr.DataArray(counts.reshape(z.shape[:2]), dims=("chain", "draw"))


def _log_likelihood(posterior: xr.Dataset, X: np.ndarray) -> xr.DataArray:
    w = posterior["w"].values  # (c, s, K)
    mu = posterior["mu"].values  # (c, s, K, d)
    sigma = posterior["sigma"].values
    out = np.empty(w.shape[:2])
    for c in range(w.shape[0]):
        # (s, n, K): sum over features of the component log densities.
        comp = norm.logpdf(X[None, :, None, :], mu[c][:, None], sigma[c][:, None]).sum(-1)
        out[c] = logsumexp(comp + np.log(w[c])[:, None, :], axis=-1).sum(-1)
    return xr.DataArray(out, dims=("chain", "draw"))


#: The family's record (pp_models.registry): factory, ppzoo entry, picture, predictive
#: functions.
FAMILY = Family(
    name="finite_mixture",
    description="finite Gaussian mixture (diagonal), Gibbs on assignments + NUTS",
    factory=model,
    cli=CLIEntry(
        methods=("gibbs", "auto"),
        build=lambda dataset, **options: model(dataset.data, **options),
        default_dataset="iris",
        defaults={"n_components": 3},
        # sized so that weights_sorted, the slowest quantity, passes `ppzoo check` with
        # room (docs/benchmarks.md, "Defaults, measured")
        fit_defaults={"draws": 2000, "tune": 1000, "chains": 4},
    ),
    plot=plot_results,
    plot_name="mixture",
    pointwise_log_likelihood=_predictive.pointwise_log_likelihood,
)
