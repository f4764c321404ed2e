"""Bayesian Gaussian graphical models as PyMC models.

``x_i ~ N(0, Omega^{-1})`` (the factory centres the columns) with a shrinkage prior on
the precision ``Omega``:

- ``prior="bglasso"``: the Bayesian graphical lasso (Wang 2012): Laplace off-diagonal,
  exponential diagonal, positive-definite constraint; ``lam`` fixed or ``lam ~
  Gamma(a, rate b)``. Its posterior mode is the graphical lasso with ``S = X'X / n``
  and penalty ``lam / n`` (diagonal penalised).
- ``prior="spike_slab"``: continuous spike-and-slab (Wang 2015, SSSL), edge indicators
  summed out of the model; posterior edge-inclusion probabilities are computed by
  Rao-Blackwellisation, ``P(z_ij = 1 | data) = E[P(z_ij = 1 | omega_ij) | data]``.

After sampling, ``fit`` adds a ``graph`` group to the DataTree
(:func:`~pp_models.ggm.outputs.graph_summary`): ``precision_mean``,
``partial_correlation_mean`` and, for the spike-and-slab prior, ``edge_inclusion``.

``Omega`` is a :class:`~pp_models.distributions.BayesianGLassoPrecision` /
:class:`~pp_models.distributions.SpikeSlabPrecision` with PyMC's Cholesky transform, so
``fit(model, method="nuts")`` samples it; ``fit(model)`` (Gibbs, the preferred method)
uses the column-wise block Gibbs steps ``"bglasso_block_gibbs"`` / ``"sssl_block_gibbs"``
of ``inference.gibbs.ggm``.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import xarray as xr

from pp_models.distributions.precision_priors import BayesianGLassoPrecision, SpikeSlabPrecision
from pp_models.ggm.nonparanormal import nonparanormal_transform
from pp_models.ggm.outputs import graph_summary, partial_correlation_array
from pp_models.model_info import DerivedStatistic, StepHint, ZooModelInfo, attach_info
from pp_models.registry import family_of_module
from pp_models.validation import (
    as_data_matrix,
    check_bool,
    check_feature_names,
    check_fixed_or_gamma,
    check_int,
    check_positive,
)

__all__ = ["BGLASSO_STEP", "SSSL_STEP", "model"]

#: Registry names of the Gibbs steps the factory asks for.
BGLASSO_STEP = "bglasso_block_gibbs"
SSSL_STEP = "sssl_block_gibbs"

DIMS = ("node", "node_other")


def model(
    X,
    *,
    prior: str = "bglasso",
    lam: float | tuple[float, float] = 1.0,
    nonparanormal: bool = False,
    spike_sd: float = 0.02,
    slab_sd: float = 1.0,
    edge_prob: float | None = None,
    feature_names=None,
    sweeps_per_draw: int = 1,
) -> pm.Model:
    """Bayesian Gaussian graphical model (see the module docstring).

    Parameters
    ----------
    X : array (n, p)
        Data; columns are centred (and, with ``nonparanormal=True``, first mapped to
        normal scores). Scale matters for the prior: standardise first unless the units
        are meaningful.
    prior : {"bglasso", "spike_slab"}
    lam : float > 0 or (shape, rate)
        Bayesian graphical lasso: the Laplace rate (a number) or a Gamma(shape, rate)
        prior on it. Spike-and-slab: the exponential rate ``lam / 2`` of the diagonal
        (a number; Wang 2015 uses 1).
    nonparanormal : bool
        Replace each column by Liu et al.'s (2009) Winsorised normal scores
        (:func:`~pp_models.ggm.nonparanormal.nonparanormal_transform`).
    spike_sd, slab_sd : float
        Spike-and-slab standard deviations ``v0 < v1`` (Wang 2015: ``v0`` in 0.02-0.1,
        ``v1 / v0 = 50``).
    edge_prob : float in (0, 1), optional
        Spike-and-slab prior inclusion probability; default ``2 / (p - 1)`` (Wang 2015),
        capped at 0.5.
    feature_names : sequence of str, optional
        Coordinates of the two node dimensions (default: a DataFrame's columns, else
        ``x0, x1, ...``).
    sweeps_per_draw : int
        Block Gibbs sweeps per recorded draw (thinning inside the step): where the
        posterior mixes slowly (edges that switch in and out), the chain is run long and
        stored short.

    Returns
    -------
    pymc.Model
        Free variable ``Omega`` (and ``lam`` with a Gamma prior), observed ``X``.
    """
    columns = list(X.columns) if hasattr(X, "columns") else None
    X = as_data_matrix(X, "X", min_rows=2)
    p = X.shape[1]
    if p < 2:
        raise ValueError(f"X must have at least 2 columns (variables), got {p}")
    if prior not in ("bglasso", "spike_slab"):
        raise ValueError(f"prior must be 'bglasso' or 'spike_slab', got {prior!r}")
    nonparanormal = check_bool(nonparanormal, "nonparanormal")
    lam = check_fixed_or_gamma(lam, "lam")
    sweeps = check_int(sweeps_per_draw, "sweeps_per_draw", minimum=1)
    # checked whatever the prior, so that a bad value is never silently ignored
    v0 = check_positive(spike_sd, "spike_sd")
    v1 = check_positive(slab_sd, "slab_sd")
    if prior == "spike_slab":
        if isinstance(lam, tuple):
            raise ValueError("lam: the spike-and-slab prior takes a fixed lam (a number)")
        if v1 <= v0:
            raise ValueError(f"slab_sd ({v1}) must be larger than spike_sd ({v0})")
        pi = (min(2.0 / (p - 1), 0.5) if edge_prob is None
              else check_positive(edge_prob, "edge_prob"))
        if not pi < 1:
            raise ValueError(f"edge_prob must be in (0, 1), got {pi}")
    elif edge_prob is not None:
        raise ValueError("edge_prob is an option of prior='spike_slab' only")
    feature_names = (check_feature_names(feature_names if feature_names is not None
                                         else columns, p)
                     or [f"x{j}" for j in range(p)])
    if nonparanormal:
        X = nonparanormal_transform(X)
    X = X - X.mean(axis=0)
    if np.any(X.std(axis=0) == 0):
        raise ValueError("X has a constant column; its precision is not identified")

    coords = {DIMS[0]: feature_names, DIMS[1]: feature_names}
    with pm.Model(coords=coords) as m:
        if prior == "bglasso":
            lam_var = pm.Gamma("lam", alpha=lam[0], beta=lam[1]) if isinstance(lam, tuple) else lam
            omega = BayesianGLassoPrecision("Omega", lam=lam_var, p=p, dims=DIMS)
            step = BGLASSO_STEP
            var_names = ("Omega", "lam") if isinstance(lam, tuple) else ("Omega",)
        else:
            omega = SpikeSlabPrecision("Omega", v0=v0, v1=v1, pi=pi, lam=lam, p=p, dims=DIMS)
            step = SSSL_STEP
            var_names = ("Omega",)
        pm.MvNormal("X", mu=np.zeros(p), tau=omega, observed=X)

    derived = [
        DerivedStatistic(
            "partial_correlation",
            _partial_correlation,
            "partial correlations -omega_ij / sqrt(omega_ii omega_jj), one per pair i < j",
        )
    ]
    return attach_info(
        m,
        ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="gibbs",
            step_hints=(StepHint(step=step, var_names=var_names,
                                 options={"sweeps": sweeps}),),
            derived=tuple(derived),
            postprocess=_GraphSummary(v0, v1, pi) if prior == "spike_slab" else _GraphSummary(),
            notes=f"Gaussian graphical model, {prior} prior on the precision (Wang 2012/2015)",
        ),
    )


def _partial_correlation(posterior: xr.Dataset) -> xr.DataArray:
    """Partial correlations of the ``p(p-1)/2`` pairs, dims ``(chain, draw, edge)``."""
    omega = posterior["Omega"]
    names = [str(v) for v in omega.coords[omega.dims[-1]].values]
    rows, cols = np.triu_indices(len(names), 1)
    rho = partial_correlation_array(omega.values)[..., rows, cols]
    labels = [f"{names[i]}-{names[j]}" for i, j in zip(rows, cols)]
    return xr.DataArray(rho, dims=(*omega.dims[:2], "edge"), coords={"edge": labels})


class _GraphSummary:
    """``fit``'s post-fit hook: a ``graph`` group with the posterior mean precision, the
    posterior mean partial correlations and, for the spike-and-slab prior, the
    Rao-Blackwellised edge-inclusion probabilities (picklable, unlike a closure)."""

    def __init__(self, v0=None, v1=None, pi=None):
        self.v0, self.v1, self.pi = v0, v1, pi

    def __call__(self, dt: xr.DataTree) -> xr.DataTree:
        if "Omega" not in dt["posterior"].data_vars:
            return dt
        return graph_summary(dt, self.v0, self.v1, self.pi)
