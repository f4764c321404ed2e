"""The NSFA model: sparse factor analysis with an Indian buffet prior on the loadings.

Knowles (2012) ch. 3 (Knowles & Ghahramani 2011, Ann. Appl. Stat.), in the thesis's
orientation: ``Y`` is ``D x N``, its **rows are the observed dimensions** (genes, probes,
measurements: the IBP's customers) and its columns the samples::

    Y = G X + E                         (Eq. 3.1)
    Z ~ IBP(alpha) over the D rows     (D x C slots; Eq. 2.12)
    G = Z o V,  V_dk ~ N(0, 1/lambda_k) (spike-and-slab loadings, Eq. 3.2)
    X_kn ~ N(0, 1)
    E_dn ~ N(0, 1/tau_d)                (tau_d = psi_d^{-1}; diagonal or isotropic)
    alpha ~ Gamma(a, b) or fixed; lambda_k (or one shared lambda) ~ Gamma; tau ~ Gamma

(Gamma in shape/rate.) The slab ``V_dk`` of an entry with ``Z_dk = 0`` is an auxiliary
variable drawn from its prior, which gives ``G_dk`` exactly the spike-and-slab prior of
Eq. 3.2; an unused slot's ``V`` column, ``X`` row and ``lambda`` are prior draws too.
``fit(model)`` runs the NSFA sampler (step ``"nsfa_gibbs"``, Knowles Algorithm 1).

With ``k_max=K`` the model is instead the **finite, continuous approximation** for NUTS
and ADVI: ``pi_k ~ Beta(alpha/K, 1)`` (the finite IBP, Eqs 2.9-2.10) and the point mass
replaced by a narrow Gaussian, ``G_dk ~ pi_k N(0, 1/lambda_k) + (1 - pi_k) N(0,
spike_scale^2)``, with ``Z`` summed out. It is an approximation of the model above (a
finite K and a spike of non-zero width), useful as a fast first look.

Missing entries (NaN in ``Y``) are skipped by the likelihood.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import xarray as xr

from pp_models.distributions import IndianBuffet
from pp_models.model_info import (
    DerivedStatistic,
    Relabelling,
    StepHint,
    ZooModelInfo,
    attach_info,
)
from pp_models.registry import family_of_module
from pp_models.validation import (
    as_data_matrix,
    check_feature_names,
    check_fixed_or_gamma,
    check_int,
    check_positive,
)

__all__ = [
    "BIRTH_PROPOSALS",
    "STEP_NAME",
    "NSFASpec",
    "as_factor_data",
    "finite_responsibilities",
    "get_spec",
    "model",
]

#: Registry name of the NSFA Gibbs/MH step.
STEP_NAME = "nsfa_gibbs"

#: Birth proposals for the singleton move (Eq. 3.10): (rate factor, P(kappa = 1)).
BIRTH_PROPOSALS = {"prior": (1.0, 0.0), "tuned": (10.0, 0.1)}

NOISE = ("diagonal", "isotropic")
LOADING_PRECISION = ("per_factor", "shared")


@dataclass(frozen=True)
class NSFASpec:
    """What :func:`model` built (also passed to the step as options)."""

    D: int
    N: int
    slots: int
    finite: bool
    observed: np.ndarray | None  # (D, N) bool, None when complete


def as_factor_data(Y, name: str = "Y") -> tuple[np.ndarray, np.ndarray | None]:
    """``Y`` as float64 ``(D, N)`` and its observed mask (``None`` when complete).

    NaN marks a missing entry; infinite values, all-missing rows or columns, and a
    non-2-D ``Y`` raise ``ValueError``.
    """
    arr = as_data_matrix(Y, name, min_rows=1, allow_nan=True,
                         axes="D observed dimensions x N samples")
    missing = np.isnan(arr)
    rows = np.flatnonzero(missing.all(1))
    if rows.size:
        raise ValueError(f"{name}: row(s) {rows[:5].tolist()} are entirely missing (NaN); "
                         "drop them")
    cols = np.flatnonzero(missing.all(0))
    if cols.size:
        raise ValueError(f"{name}: column(s) {cols[:5].tolist()} are entirely missing (NaN); "
                         "drop them")
    if not missing.any():
        return arr, None
    return np.where(missing, 0.0, arr), ~missing


def _gamma_or_fixed(value, name):
    """(a, b) Gamma shape/rate or a fixed positive float -> ('gamma', a, b) / ('fixed', v)."""
    checked = check_fixed_or_gamma(value, name)
    return ("gamma", *checked) if isinstance(checked, tuple) else ("fixed", checked)


def _default_slots(alpha_spec, D: int) -> int:
    H = float(np.sum(1.0 / np.arange(1, D + 1)))
    mean_alpha = alpha_spec[1] if alpha_spec[0] == "fixed" else alpha_spec[1] / alpha_spec[2]
    prior_k = mean_alpha * H
    return int(max(40, np.ceil(3 * prior_k + 10 * np.sqrt(prior_k) + 10)))


def model(
    Y,
    *,
    alpha=1.0,
    noise: str = "diagonal",
    loading_precision: str = "per_factor",
    k_max: int | None = None,
    capacity: int | None = None,
    loading_prior=(1.0, 1.0),
    noise_prior=(1.0, 1.0),
    birth_proposal: str | tuple[float, float] = "tuned",
    feature_moves: int = 0,
    thin: int = 1,
    spike_scale: float = 0.01,
    dim_names=None,
) -> pm.Model:
    """Build the NSFA model of ``Y`` (D observed dimensions x N samples).

    Parameters
    ----------
    Y : array-like, shape (D, N)
        Rows are observed dimensions (the IBP's customers), columns samples; NaN marks
        a missing entry. The default priors suit data of roughly unit scale: standardise
        the rows first.
    alpha : float or (a, b)
        IBP strength: fixed (> 0), or a Gamma(a, rate b) prior (Eq. 3.16).
    noise : {"diagonal", "isotropic"}
        One noise precision per row, or one for all.
    loading_precision : {"per_factor", "shared"}
        One slab precision ``lambda_k`` per feature, or one for all.
    k_max : int, optional
        ``None`` (default): the non-parametric model for the NSFA sampler. ``K``: the
        finite continuous approximation with ``K`` features for NUTS / ADVI (module
        docstring).
    capacity : int, optional
        Slots of the non-parametric ``Z`` (the most features a state can hold; births
        beyond it are rejected and counted in the step's ``capacity_rejections``).
        Default: ``max(40, 3 E[K+] + 10 sd + 10)`` under the prior mean of alpha.
    loading_prior, noise_prior : (a, b) or float
        Gamma(shape a, rate b) priors of the slab precision(s) ``lambda`` and the noise
        precision(s) ``tau = 1/psi``, or a positive float to fix them.
    birth_proposal : {"tuned", "prior"} or (factor, pi)
        The singleton move's proposal, Eq. 3.10: ``(1 - pi) Poisson(factor alpha / D) +
        pi 1(kappa = 1)``; "prior" is (1, 0) (Eqs 3.8-3.9), "tuned" (10, 0.1) (§3.3.2).
    feature_moves : int
        Whole-feature birth/death proposals (features of two rows or more, their factor
        row integrated out: :mod:`custom_ops.ibp_fa.feature_moves`) after each sweep; 0:
        Knowles' sweep only. Non-parametric model only.
    thin : int
        Sweeps of the sampler per recorded draw (the step's ``sweeps``): every
        ``thin``-th state is recorded, so a run of ``draws`` explores ``thin`` times as
        many states for the same trace size. Non-parametric model only.
    spike_scale : float
        Standard deviation of the spike of the finite approximation (``k_max`` only).
    dim_names : sequence of str, optional
        Names of the observed dimensions (the rows of ``Y``; for a samples x
        measurements table, its column names), used as the ``dim`` coordinate and in the
        pictures. Default: the index of a DataFrame ``Y``, else ``0, 1, ...``.

    Returns
    -------
    pymc.Model
        Never samples. Non-parametric: free ``Z`` (IndianBuffet, D x C), ``V`` (D x C),
        ``X`` (C x N), and ``alpha``, ``lambda``, ``noise_precision`` when random;
        finite: ``pi``, ``G``, ``X`` and the random hyperparameters. Observed ``Y`` (the
        observed entries as a vector when some are missing).

    Raises
    ------
    ValueError, TypeError
        Naming the argument: non-2-D ``Y``, infinite values, all-NaN rows or columns,
        ``alpha <= 0``, non-positive hyperparameters, ``k_max < 1``, ``capacity < 1``,
        unknown options. Nothing is compiled.
    """
    index = list(Y.index) if hasattr(Y, "index") and hasattr(Y, "columns") else None
    data, observed = as_factor_data(Y)
    D, N = data.shape
    names = check_feature_names(dim_names if dim_names is not None else index, D,
                                name="dim_names", counted="Y has {n} rows")
    if names is not None and len(set(names)) != D:
        raise ValueError("dim_names: the names of the observed dimensions must differ")
    if noise not in NOISE:
        raise ValueError(f"noise must be one of {NOISE}, got {noise!r}")
    if loading_precision not in LOADING_PRECISION:
        raise ValueError(f"loading_precision must be one of {LOADING_PRECISION}, got "
                         f"{loading_precision!r}")
    feature_moves = check_int(feature_moves, "feature_moves", minimum=0)
    thin = check_int(thin, "thin", minimum=1)
    alpha_spec = _gamma_or_fixed(alpha, "alpha")
    lam_spec = _gamma_or_fixed(loading_prior, "loading_prior")
    noise_spec = _gamma_or_fixed(noise_prior, "noise_prior")
    if isinstance(birth_proposal, str):
        if birth_proposal not in BIRTH_PROPOSALS:
            raise ValueError(f"birth_proposal must be one of {tuple(BIRTH_PROPOSALS)} or a "
                             f"(factor, pi) pair, got {birth_proposal!r}")
        factor, one_prob = BIRTH_PROPOSALS[birth_proposal]
    else:
        try:
            factor, one_prob = (float(v) for v in birth_proposal)
        except (TypeError, ValueError):
            raise TypeError("birth_proposal must be 'tuned', 'prior' or a (factor, pi) pair, "
                            f"got {birth_proposal!r}") from None
        if not factor > 0 or not 0 <= one_prob < 1:
            raise ValueError(f"birth_proposal: need factor > 0 and 0 <= pi < 1, got "
                             f"{birth_proposal!r}")
    finite = k_max is not None
    # checked even when unused (k_max=None), so that a bad value is never silently ignored
    spike_scale = check_positive(spike_scale, "spike_scale")
    if finite:
        slots = check_int(k_max, "k_max", minimum=1)
    elif capacity is not None:
        slots = check_int(capacity, "capacity", minimum=1)
    else:
        slots = _default_slots(alpha_spec, D)
    spec = NSFASpec(D=D, N=N, slots=slots, finite=finite, observed=observed)

    coords = {"dim": names if names is not None else np.arange(D), "obs": np.arange(N),
              "feature": np.arange(slots)}
    with pm.Model(coords=coords) as m:
        if alpha_spec[0] == "fixed":
            alpha_var = alpha_spec[1]
        else:
            alpha_var = pm.Gamma("alpha", alpha_spec[1], alpha_spec[2])
        if lam_spec[0] == "fixed":
            lam = pt.as_tensor_variable(np.full(slots, lam_spec[1]))
        elif loading_precision == "shared":
            lam = pt.ones(slots) * pm.Gamma("lambda", lam_spec[1], lam_spec[2])
        else:
            lam = pm.Gamma("lambda", lam_spec[1], lam_spec[2], dims="feature")
        if noise_spec[0] == "fixed":
            tau = pt.as_tensor_variable(np.full(D, noise_spec[1]))
        elif noise == "isotropic":
            tau = pt.ones(D) * pm.Gamma("noise_precision", noise_spec[1], noise_spec[2])
        else:
            tau = pm.Gamma("noise_precision", noise_spec[1], noise_spec[2], dims="dim")
        if finite:
            pi = pm.Beta("pi", alpha_var / slots, 1.0, dims="feature")
            slab_sd = pt.ones((D, slots)) / pt.sqrt(lam)
            G = pm.CustomDist("G", pi, slab_sd, spike_scale, logp=_spike_slab_logp,
                              dist=_spike_slab_dist, dims=("dim", "feature"))
        else:
            Z = IndianBuffet("Z", alpha=alpha_var, n_rows=D, k_max=slots,
                             dims=("dim", "feature"))
            V = pm.Normal("V", 0.0, 1.0 / pt.sqrt(lam), dims=("dim", "feature"))
            G = Z * V
        X = pm.Normal("X", 0.0, 1.0, dims=("feature", "obs"))
        mean = pt.dot(G, X)
        sd = 1.0 / pt.sqrt(tau)
        if observed is None:
            pm.Normal("Y", mu=mean, sigma=sd[:, None], observed=data, dims=("dim", "obs"))
        else:
            rows, cols = np.nonzero(observed)
            pm.Normal("Y", mu=mean[rows, cols], sigma=sd[rows], observed=data[rows, cols])

    random = [name for name, s in (("alpha", alpha_spec), ("lambda", lam_spec),
                                   ("noise_precision", noise_spec)) if s[0] == "gamma"]
    resp = {"spike_scale": spike_scale,
            "lambda_fixed": lam_spec[1] if lam_spec[0] == "fixed" else None}
    n_features = partial(_n_features_finite, **resp) if finite else _n_features
    feature_sizes = partial(_feature_sizes_finite, **resp) if finite else _feature_sizes
    derived = (
        DerivedStatistic("n_features", n_features,
                         "number of active features (columns of Z with a non-zero entry)"),
        DerivedStatistic("reconstruction_norm",
                         _reconstruction_norm_finite if finite else _reconstruction_norm,
                         "Frobenius norm of the reconstruction G X"),
        DerivedStatistic("feature_sizes", feature_sizes,
                         f"the {FEATURE_SIZE_RANKS} largest feature sizes m_k, sorted"),
    )
    if finite:
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="advi",
            derived=derived,
            label_variables=("pi", "G", "X", *(("lambda",) if "lambda" in random else ())),
            notes="finite continuous approximation of NSFA (Beta-Bernoulli, Gaussian spike)",
        )
    else:
        options = {
            "spec": spec,
            "hyper": (
                lam_spec[1] if lam_spec[0] == "gamma" else 1.0,
                lam_spec[2] if lam_spec[0] == "gamma" else 1.0,
                noise_spec[1] if noise_spec[0] == "gamma" else 1.0,
                noise_spec[2] if noise_spec[0] == "gamma" else 1.0,
                alpha_spec[1] if alpha_spec[0] == "gamma" else 1.0,
                alpha_spec[2] if alpha_spec[0] == "gamma" else 1.0,
            ),
            "fixed": {
                "alpha": alpha_spec[1] if alpha_spec[0] == "fixed" else None,
                "lambda": lam_spec[1] if lam_spec[0] == "fixed" else None,
                "noise_precision": noise_spec[1] if noise_spec[0] == "fixed" else None,
            },
            "shared_lambda": loading_precision == "shared",
            "isotropic_noise": noise == "isotropic",
            "birth_proposal": (factor, one_prob),
            "feature_moves": feature_moves,
            "sweeps": thin,
        }
        info = ZooModelInfo(
            family=family_of_module(__name__),
            preferred_method="gibbs",
            step_hints=(StepHint(STEP_NAME, ("Z", "V", "X", *random), options),),
            derived=derived,
            label_variables=("Z", "V", "X", *(("lambda",) if "lambda" in random else ())),
            relabelling=Relabelling("feature", allocations="Z", kind="memberships"),
            notes="NSFA (Knowles 2012 Algorithm 1); slot order of Z, V, X is arbitrary",
        )
    object.__setattr__(m, "_pp_models_ibp_fa_spec", spec)
    return attach_info(m, info)


def _spike_slab_logp(value, pi, slab_sd, spike_sd):
    """``log[pi N(g; 0, slab_sd^2) + (1 - pi) N(g; 0, spike_sd^2)]`` elementwise."""
    slab = pt.log(pi) + pm.logp(pm.Normal.dist(0.0, slab_sd), value)
    spike = pt.log1p(-pi) + pm.logp(pm.Normal.dist(0.0, spike_sd), value)
    return pt.logaddexp(slab, spike)


def _spike_slab_dist(pi, slab_sd, spike_sd, size):
    on = pm.Bernoulli.dist(p=pi, size=size)
    return pt.switch(on, pm.Normal.dist(0.0, slab_sd, size=size),
                     pm.Normal.dist(0.0, spike_sd, size=size))


def get_spec(m: pm.Model) -> NSFASpec | None:
    """The :class:`NSFASpec` of a model built by :func:`model`, else ``None``."""
    return getattr(m, "_pp_models_ibp_fa_spec", None)


# --------------------------------------------------------------------------------------
# label-invariant statistics (functions of the posterior Dataset)
# --------------------------------------------------------------------------------------
def _n_features(posterior: xr.Dataset) -> xr.DataArray:
    Z = np.asarray(posterior["Z"].values)
    return xr.DataArray((Z != 0).any(axis=2).sum(axis=-1), dims=("chain", "draw"))


#: Feature sizes reported per draw (the largest ones; the rest of the slots are mostly 0).
FEATURE_SIZE_RANKS = 10


def _feature_sizes(posterior: xr.Dataset) -> xr.DataArray:
    m = (np.asarray(posterior["Z"].values) != 0).sum(axis=2)
    top = -np.sort(-m, axis=-1)[..., :FEATURE_SIZE_RANKS]
    return xr.DataArray(top, dims=("chain", "draw", "by_size"))


def _frobenius_of_product(G: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``|G X|_F`` per draw from ``(c, s, D, K)`` and ``(c, s, K, N)`` without forming
    ``G X``: ``|G X|^2 = sum((G^T G) o (X X^T))``, O((D + N) K^2) instead of O(D N K),
    over the active columns of each draw only."""
    out = np.empty(G.shape[:2])
    for c in range(G.shape[0]):
        for s in range(G.shape[1]):
            active = np.flatnonzero(np.any(G[c, s] != 0, axis=0))
            g = G[c, s][:, active]
            x = X[c, s][active]
            out[c, s] = np.sqrt(max(float(np.sum((g.T @ g) * (x @ x.T))), 0.0))
    return out


def _reconstruction_norm(posterior: xr.Dataset) -> xr.DataArray:
    G = (np.asarray(posterior["Z"].values) != 0) * np.asarray(posterior["V"].values)
    return xr.DataArray(_frobenius_of_product(G, np.asarray(posterior["X"].values)),
                        dims=("chain", "draw"))


def finite_responsibilities(posterior: xr.Dataset, *, spike_scale: float,
                            lambda_fixed: float | None = None) -> np.ndarray:
    """P(z_dk = 1 | G_dk, pi_k, lambda_k) under the finite approximation, (c, s, D, K)."""
    from scipy import special, stats

    G = np.asarray(posterior["G"].values)
    pi = np.clip(np.asarray(posterior["pi"].values)[:, :, None, :], 1e-300, 1 - 1e-16)
    if lambda_fixed is None:
        lam = np.asarray(posterior["lambda"].values)
        lam = lam[:, :, None, :] if lam.ndim == 3 else lam[:, :, None, None]
    else:
        lam = lambda_fixed
    slab = np.log(pi) + stats.norm.logpdf(G, 0.0, 1.0 / np.sqrt(lam))
    spike = np.log1p(-pi) + stats.norm.logpdf(G, 0.0, spike_scale)
    return special.expit(slab - spike)


def _n_features_finite(posterior: xr.Dataset, **kwargs) -> xr.DataArray:
    on = finite_responsibilities(posterior, **kwargs) > 0.5
    return xr.DataArray(on.any(axis=2).sum(axis=-1), dims=("chain", "draw"))


def _feature_sizes_finite(posterior: xr.Dataset, **kwargs) -> xr.DataArray:
    m = (finite_responsibilities(posterior, **kwargs) > 0.5).sum(axis=2)
    top = -np.sort(-m, axis=-1)[..., :FEATURE_SIZE_RANKS]
    return xr.DataArray(top, dims=("chain", "draw", "by_size"))


def _reconstruction_norm_finite(posterior: xr.Dataset) -> xr.DataArray:
    return xr.DataArray(_frobenius_of_product(np.asarray(posterior["G"].values),
                                              np.asarray(posterior["X"].values)),
                        dims=("chain", "draw"))
