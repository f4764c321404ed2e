"""Model evidence ``log p(X)`` from power posteriors.

``p(X) = Z(1) / Z(0)`` with ``Z(beta) = ∫ p(theta) p(X | theta)^beta dtheta`` (Z(0) = 1).
Three estimators, each from runs at a ladder ``0 = beta_0 < ... < beta_{N-1} = 1``:

- ``"stepping_stone"`` (Xie, Lewis, Fan, Kuo & Chen 2011, Eq. 8): ``Z(beta_{k+1}) /
  Z(beta_k) = E_{beta_k}[p(X | theta)^(beta_{k+1} - beta_k)]``, each ratio the mean over
  the draws at ``beta_k`` of a tempered parallel run (:mod:`inference.tempering.driver`),
  ``log p(X)`` the sum of the logs of the ratios;
- ``"thermodynamic"`` (Friel & Pettitt 2008): ``log p(X) = ∫_0^1 E_beta[log p(X |
  theta)] dbeta``, by the trapezoidal rule on the ladder with the correction of Friel,
  Hurn & Wyse (2014, Eq. 6), ``- sum_k (Delta beta_k)^2 / 12 (V_{k+1} - V_k)`` where
  ``V_k = Var_{beta_k}[log p(X | theta)]``;
- ``"ais"``: annealed importance sampling (Neal 2001; Murphy 2012 §24.6.2, §24.7.3),
  :mod:`inference.tempering.ais` (an all-continuous model's particles moved together,
  :mod:`inference.tempering.population`).

Never the harmonic mean of the likelihood, whose variance is often infinite, nor Chib's
candidate estimator, wrong when the posterior is multimodal (Murphy §24.7.1-2).

The standard error ``se``: for the stepping stone and thermodynamic estimators, each
chain's estimate is a smooth function of the per-temperature means of a per-draw vector
(the stones' importance weights ``exp((beta_{k+1} - beta_k) (l - max))``, or the
log-likelihoods). The delta method turns the estimate into the mean of one per-draw
series, its influence ``g_t = sum_k a_k x_{t,k}`` (``a_k = 1 / mean_k`` for the stones,
the quadrature weights for the integral), and the variance of that mean is ``Var(g) /
ESS(g)`` with ``ESS`` the effective sample size of Geyer's initial monotone sequence
estimator of the autocorrelation (Geyer 1992; ArviZ's ``ess(method="mean")``, which also
compares the chain's two halves). One series carries both the autocorrelation of every
rung and the correlation between rungs that the swaps create; a batch-means estimate
with a fixed number of batches cannot see an autocorrelation time longer than its
batches. When the temperatures come from independent runs, the rungs' variances
``a_k^2 Var(x_k) / ESS(x_k)`` are added instead. Chains are independent runs: the
estimate is the mean of the chains' estimates; the within-chain variance ``sum of their
variances / chains^2`` and the between-chain ``Var(chain estimates) / chains`` are pooled
when they agree, and the between-chain figure alone is the ``se`` when the chains
disagree beyond what their own standard errors explain (a chi-squared test at
:data:`~inference.tempering.evidence_result.DISAGREEMENT_LEVEL`,
:func:`~inference.tempering.evidence_result.combine_chains`): a chain stuck in one mode of
a multimodal power posterior has a small within-chain variance and an estimate far from
the others', and the within-chain figure alone would then claim a precision the run does
not have. ``se_dof`` is the degrees of freedom of ``se**2`` (about ``sum_c (ESS_c - 1)
+ chains - 1`` pooled, ``chains - 1`` between the chains alone), for a Student-t
interval.

A stone whose weights are heavy-tailed (two neighbouring power posteriors too far apart)
has a mean, and a ``Var(w) / ESS``, that rest on weights the draws rarely show: the se
then understates the error, typically with the estimate too low. Each stone's Pareto
shape ``k`` (as PSIS measures it) is in the table, and ``se_method`` says
``UNRELIABLE`` when one exceeds :data:`PARETO_K_LIMIT`.

The ladder's discretisation error: the stepping stone is unbiased for each ratio
whatever the ladder (a coarse ladder costs variance, which the se sees), the trapezoid
is not; both are computed from the same draws, and their difference is reported as
``ladder_error`` (for the thermodynamic estimate, an estimate of its quadrature error,
which its ``se`` does not include; for the stepping stone, a check). For AIS, see its
module.

Where the draws come from (``sampler``): parallel tempering (``fit(..., tempering=...)``,
any model whose steps can temper), or, for an all-continuous model, independent nutpie
runs at each temperature (:mod:`inference.tempering.nutpie_ladder`; the temperatures'
draws are then independent, and the covariance between temperatures is zero rather than
estimated). ``"auto"`` takes nutpie when the model is all-continuous and nutpie is
installed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from inference.posterior_layout import lay_out
from inference.progress import in_ci
from inference.tempering.evidence_result import EvidenceResult, combine_chains
from inference.tempering.options import check_tempering
from inference.tempering.power import check_has_likelihood
from inference.tempering.sampling import fit_tempered
from pp_models.model_info import get_info
from pp_models.validation import (
    check_int,
    check_ladder,
    check_model,
    check_random_seed,
    check_sampling_sizes,
    rng_from_seed,
)

__all__ = [
    "EVIDENCE_METHODS",
    "EVIDENCE_SAMPLERS",
    "PARETO_K_LIMIT",
    "EvidenceResult",
    "combine_chains",
    "estimate_from_tempering",
    "evidence",
    "ladder_error",
    "pareto_k",
    "stones_pareto_k",
    "variance_of_mean",
]

EVIDENCE_METHODS = ("stepping_stone", "thermodynamic", "ais")

#: Where the power posteriors' draws come from (module docstring).
EVIDENCE_SAMPLERS = ("auto", "nutpie", "parallel_tempering")

#: Default number of temperatures: parallel tempering's ladder, AIS's annealing steps.
_DEFAULT_TEMPERATURES = {"stepping_stone": 12, "thermodynamic": 24, "ais": 200}


def _ess(x: np.ndarray) -> float:
    """Effective sample size of one chain's draws (ArviZ's 'mean' method: Geyer's
    initial monotone sequence on the chain's two halves)."""
    import arviz as az

    if np.ptp(x) == 0:
        return float(x.size)
    return float(az.ess(x[None, :], method="mean"))


def variance_of_mean(x: np.ndarray) -> tuple[float, float]:
    """``(Var(mean of x), ESS)`` of one chain's draws ``x``: ``Var(x) / ESS(x)`` (module
    docstring)."""
    ess = _ess(x)
    if np.ptp(x) == 0:
        return 0.0, ess
    return float(x.var(ddof=1) / ess), ess


#: Pareto shape above which a mean of importance weights is unreliable (Vehtari, Simpson,
#: Gelman, Yao & Gabry 2024, "Pareto smoothed importance sampling", JMLR 25(72), §3.2).
PARETO_K_LIMIT = 0.7


def pareto_k(w: np.ndarray) -> float:
    """The estimated Pareto shape ``k`` of the upper tail of the weights ``w`` (ArviZ's
    ``pareto_khat``); NaN when it cannot be estimated (too few distinct weights)."""
    import warnings

    from arviz_stats.base.array import BaseArray

    if np.ptp(w) == 0 or np.unique(w).size < 20:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(BaseArray().pareto_khat(w[None, :], chain_axis=0, draw_axis=1,
                                                 tail="right"))
        except ValueError:
            return float("nan")


def _influence_variance(x: np.ndarray, a: np.ndarray, independent: bool
                        ) -> tuple[float, float]:
    """``(variance, ESS)`` of ``sum_k a_k mean(x[:, k])`` for one chain's draws ``x``
    (draws, K): the ESS of the influence series ``x @ a``, or the rungs' own ESS when the
    columns come from ``independent`` runs (the smallest of them is returned)."""
    if independent:
        parts = [variance_of_mean(a[k] * x[:, k]) for k in range(x.shape[1])]
        return float(sum(v for v, _ in parts)), float(min(e for _, e in parts))
    return variance_of_mean(x @ a)


def stepping_stone(loglik: np.ndarray, ladder: np.ndarray, *, independent: bool = False):
    """One chain's stepping-stone estimate and variance.

    ``loglik``: (draws, N) log-likelihoods at the temperatures of ``ladder`` (N,) (the
    last column is not used); ``independent``: the temperatures' draws come from
    independent runs. Returns (log Z, variance, log ratio of each stone (N-1,)).
    """
    delta = np.diff(ladder)  # (N-1,)
    ll = loglik[:, :-1]
    scaled = delta * ll
    top = scaled.max(axis=0)
    w = np.exp(scaled - top)  # (draws, N-1), each column's max is 1
    mean = w.mean(axis=0)
    log_ratio = np.log(mean) + top
    var, ess = _influence_variance(w, 1.0 / mean, independent)
    return float(log_ratio.sum()), var, log_ratio, ess


def stones_pareto_k(loglik: np.ndarray, ladder: np.ndarray) -> np.ndarray:
    """(N-1,) the Pareto shape of each stone's weights ``exp((beta_{k+1} - beta_k) l)``
    (:func:`pareto_k`): above :data:`PARETO_K_LIMIT` the stone's mean, and the se, rest on
    weights whose variance the draws do not show."""
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.diff(ladder) * loglik[:, :-1]
        w = np.exp(scaled - scaled.max(axis=0))
    return np.array([pareto_k(w[:, k]) if np.all(np.isfinite(w[:, k])) else np.nan
                     for k in range(w.shape[1])])


def _trapezoid_weights(ladder: np.ndarray) -> np.ndarray:
    delta = np.diff(ladder)
    weights = np.zeros(ladder.size)
    weights[:-1] += delta / 2
    weights[1:] += delta / 2
    return weights


def _corrected_trapezoid(loglik: np.ndarray, ladder: np.ndarray) -> float:
    """Friel, Hurn & Wyse (2014, Eq. 6) on one chain's (draws, N) log-likelihoods."""
    delta = np.diff(ladder)
    var = loglik.var(axis=0, ddof=1)
    return float(_trapezoid_weights(ladder) @ loglik.mean(axis=0)
                 - np.sum(delta**2 / 12 * np.diff(var)))


def thermodynamic(loglik: np.ndarray, ladder: np.ndarray, *, independent: bool = False):
    """One chain's corrected-trapezoid thermodynamic-integration estimate and variance
    (module docstring). Returns (log Z, variance, ESS of the influence series)."""
    var, ess = _influence_variance(loglik, _trapezoid_weights(ladder), independent)
    return _corrected_trapezoid(loglik, ladder), var, ess


def ladder_error(loglik: np.ndarray, ladders: np.ndarray) -> float:
    """The thermodynamic estimate minus the stepping stone's, from the same draws
    ``loglik`` (chains, draws, N) at ``ladders`` (chains, N), averaged over the chains
    (module docstring); NaN when a temperature has no draws or a non-finite one."""
    if not np.all(np.isfinite(loglik)):
        return float("nan")
    diffs = []
    with np.errstate(over="ignore", invalid="ignore"):
        for ll, ladder in zip(loglik, ladders, strict=True):
            delta = np.diff(ladder)
            scaled = delta * ll[:, :-1]
            top = scaled.max(axis=0)
            stones = float(np.sum(np.log(np.exp(scaled - top).mean(axis=0)) + top))
            diffs.append(_corrected_trapezoid(ll, ladder) - stones)
    error = float(np.mean(diffs))
    return error if np.isfinite(error) else float("nan")


def estimate_from_tempering(dt: xr.DataTree, method: str = "stepping_stone") -> EvidenceResult:
    """The evidence from a tempered fit's DataTree (``fit(..., tempering=...)``): its
    ``tempering`` group's log-likelihood draws at each temperature."""
    if method not in ("stepping_stone", "thermodynamic"):
        raise ValueError(f"method: a tempered fit gives 'stepping_stone' or 'thermodynamic' "
                         f"estimates, not {method!r} (AIS makes its own runs)")
    if not isinstance(dt, xr.DataTree) or "tempering" not in dt.children:
        raise ValueError("dt must be the DataTree of fit(..., tempering=...) (it has no "
                         "'tempering' group)")
    group = dt["tempering"]
    loglik = group["log_likelihood"].values  # (chain, draw, temperature)
    betas = group["beta"].values
    chains, draws, _ = loglik.shape
    if draws < 4:
        raise ValueError(f"dt: {draws} draws per chain are too few for an estimate and its "
                         "standard error (need >= 4)")
    if not np.all(betas == betas[:, :1, :]):
        raise ValueError("dt: the ladder changed during the kept draws (it must be fixed "
                         "after tuning)")
    for c in range(chains):
        if betas[c, 0, 0] != 0.0:
            raise ValueError(f"dt: the ladder of chain {c} starts at {betas[c, 0, 0]}, not "
                             "0: the evidence needs the prior's end")
    return _from_draws(loglik, betas[:, 0], method, independent=False, tempering=dt,
                       sampler="parallel_tempering")


def _from_draws(loglik: np.ndarray, ladders: np.ndarray, method: str, *, independent: bool,
                tempering=None, sampler: str, divergences: np.ndarray | None = None
                ) -> EvidenceResult:
    """The estimate from ``loglik`` (chains, draws, N) at ``ladders`` (chains, N)."""
    chains, draws, n = loglik.shape
    estimates, variances, dofs, rows = [], [], [], []
    worst_k = -np.inf
    for c in range(chains):
        ladder = ladders[c]
        ll = loglik[c]
        k_hat = np.full(n - 1, np.nan)
        if method == "stepping_stone":
            est, var, log_ratio, ess = stepping_stone(ll, ladder, independent=independent)
            k_hat = stones_pareto_k(ll, ladder)
            if np.any(np.isfinite(k_hat)):
                worst_k = max(worst_k, float(np.nanmax(k_hat)))
        else:
            est, var, ess = thermodynamic(ll, ladder, independent=independent)
            log_ratio = np.full(n - 1, np.nan)
        estimates.append(est)
        variances.append(var)
        dofs.append(max(ess - 1.0, 1.0) if np.isfinite(ess) else 1.0)
        # prior draws of a heavy-tailed model (the diffusion tree's hyperparameters) can
        # have log-likelihoods near -1e200: their variance overflows to inf and their
        # ESS is not defined; the table says so without a warning
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(n):
                row = {"chain": c, "temperature": t, "beta": ladder[t],
                       "mean_log_likelihood": ll[:, t].mean(),
                       "var_log_likelihood": ll[:, t].var(ddof=1),
                       "ess": _ess(ll[:, t]) if np.all(np.isfinite(ll[:, t])) else np.nan,
                       "log_ratio": log_ratio[t] if t < n - 1 else np.nan,
                       "pareto_k": k_hat[t] if t < n - 1 else np.nan}
                if divergences is not None:
                    row["divergences"] = int(divergences[c, t])
                rows.append(row)
    table = pd.DataFrame(rows).set_index(["chain", "temperature"])
    across = ("the temperatures' independent runs added"
              if independent else "one influence series across the temperatures")
    combined = combine_chains(estimates, variances, dofs)
    tails = ""
    if worst_k > PARETO_K_LIMIT:
        tails = (f"; UNRELIABLE: a stone's weights are heavy-tailed (Pareto k up to "
                 f"{worst_k:.2f} > {PARETO_K_LIMIT}), so the se may understate the error: "
                 "add temperatures")
    return EvidenceResult(
        log_evidence=combined.estimate,
        se=combined.se,
        method=method,
        per_chain=tuple(float(e) for e in estimates),
        table=table,
        se_method=f"delta method and the effective sample size (Geyer's initial monotone "
                  f"sequence), {across}; mean over independent chains, se {combined.which}"
                  f"{tails}",
        draws=draws, chains=chains, n_temperatures=n, tempering=tempering, sampler=sampler,
        se_dof=combined.dof, ladder_error=ladder_error(loglik, ladders))


# ---------------------------------------------------------------------- the entry point
def _check_evidence_ladder(ladder) -> np.ndarray:
    values = check_ladder(ladder, "ladder")
    if values[0] != 0.0:
        raise ValueError(f"ladder must start at 0 (the prior: the evidence is the ratio of "
                         f"the normalisers at 1 and 0), got {values[0]}")
    return values


def choose_sampler(model: pm.Model, sampler: str, method: str) -> str:
    """``"nutpie"`` or ``"parallel_tempering"`` for ``evidence``'s ``sampler`` (module
    docstring); ``ValueError`` naming a step that cannot temper, or the step that keeps
    ``sampler="nutpie"`` from running. Builds nothing."""
    from inference.nutpie_cache import model_signature
    from inference.sampling_core import model_cache
    from inference.tempering.nutpie_ladder import nutpie_available
    from inference.tempering.nuts import TemperedNUTS
    from inference.tempering.steps import plan_steps

    # the plan walks the model's graph (a tenth of a second on a small model): once per
    # model and variables
    cache = model_cache(model)
    signature = model_signature(model)
    entry = cache.get("tempering_plan_steps")
    if entry is None or entry[0] != signature:
        plan = plan_steps(model, get_info(model), [])
        others = [f"{getattr(item.cls, 'name', item.cls.__name__)!r} for "
                  f"{', '.join(item.var_names)}" for item in plan
                  if item.cls is not TemperedNUTS]
        entry = cache["tempering_plan_steps"] = (signature, others)
    others = entry[1]
    if method == "ais":
        # an all-continuous model's particles move together (inference.tempering.ais)
        return "parallel_tempering" if others else "population"
    if sampler == "parallel_tempering":
        return "parallel_tempering"
    if sampler == "nutpie":
        if others:
            raise ValueError(f"sampler='nutpie' needs an all-continuous model; this one has "
                             f"the steps {', '.join(others)} (use "
                             "sampler='parallel_tempering')")
        if not nutpie_available():
            raise ValueError("sampler='nutpie': nutpie is not installed")
        return "nutpie"
    return "nutpie" if not others and nutpie_available() else "parallel_tempering"


def evidence(model: pm.Model, *, method: str = "stepping_stone",
             n_temperatures: int | None = None, ladder=None, draws: int = 1000,
             tune: int = 1000, chains: int = 4, cores: int | None = None, random_seed=None,
             dt: xr.DataTree | None = None, sampler: str = "auto",
             progressbar: bool = False) -> EvidenceResult:
    """Estimate the log evidence ``log p(X)`` of ``model`` (module docstring).

    Parameters
    ----------
    model : pymc.Model
        A model with observed data, whose every step can temper (zoo steps with
        ``can_temper``, NUTS).
    method : {"stepping_stone", "thermodynamic", "ais"}
    n_temperatures : int, optional
        Temperatures of the ladder (default 12 for the stepping stone, 24 for
        thermodynamic integration, whose quadrature needs more), or annealing steps of
        AIS (default 200). At least 2. The ladder is ``(i / (N - 1))^(1 / 0.3)``
        (:func:`~inference.tempering.ladder.initial_ladder`); parallel tempering adapts it
        while tuning.
    ladder : sequence of float, optional
        The inverse temperatures instead of ``n_temperatures``: strictly increasing from
        0 to 1 (AIS: its annealing schedule; parallel tempering: its starting ladder).
    draws : int
        Kept draws per chain (AIS: particles per chain). At least 1 (4 for the stepping
        stone and thermodynamic integration).
    tune : int
        Tuning iterations per chain (parallel tempering adapts its ladder and NUTS its
        step size; nutpie adapts step size and mass matrix at each temperature; AIS on
        an all-continuous model anneals a pilot population of this many particles, at
        least 64, to set its kernels and schedule; AIS on a model with Gibbs steps tunes
        a parallel-tempering run this long first).
    chains, cores : int
        Independent runs, and how many run at once (processes; nutpie's threads).
    random_seed : int, optional
        The same seed gives the same estimate, whatever ``cores``.
    dt : xarray.DataTree, optional
        A ``fit(..., tempering=...)`` result to estimate from instead of sampling
        (stepping stone and thermodynamic integration; the other sizes are then unused).
    sampler : {"auto", "nutpie", "parallel_tempering"}
        Where the stepping stone's and thermodynamic integration's draws come from
        (module docstring); AIS always uses the tempered steps.
    progressbar : bool

    Returns
    -------
    EvidenceResult

    Raises
    ------
    ValueError, TypeError
        Before anything compiles: an unknown method or sampler, ``n_temperatures < 2``,
        a ladder that is not increasing from 0 to 1, ``draws <= 0``, a model without
        observed data, a step that cannot temper (named), a ``dt`` without a tempering
        group.
    """
    check_model(model)
    if not isinstance(method, str) or method not in EVIDENCE_METHODS:
        raise ValueError(f"method must be one of {', '.join(map(repr, EVIDENCE_METHODS))}; "
                         f"got {method!r}")
    if not isinstance(sampler, str) or sampler not in EVIDENCE_SAMPLERS:
        raise ValueError(f"sampler must be one of {', '.join(map(repr, EVIDENCE_SAMPLERS))}; "
                         f"got {sampler!r}")
    check_has_likelihood(model, "model")
    if dt is not None:
        return estimate_from_tempering(dt, method)
    if ladder is not None:
        if n_temperatures is not None:
            raise ValueError("give n_temperatures or ladder, not both")
        betas = _check_evidence_ladder(ladder)
    else:
        from inference.tempering.ladder import initial_ladder

        n = check_int(n_temperatures if n_temperatures is not None
                      else _DEFAULT_TEMPERATURES[method], "n_temperatures", minimum=2)
        betas = initial_ladder(n)
    draws, tune, chains, cores = check_sampling_sizes(draws, tune, chains, cores)
    random_seed = check_random_seed(random_seed)
    if method != "ais" and draws < 4:
        raise ValueError(f"draws must be >= 4 for a {method} estimate and its standard "
                         f"error, got {draws}")
    chosen = choose_sampler(model, sampler, method)
    if method == "ais":
        from inference.tempering.ais import annealed_importance_sampling

        return annealed_importance_sampling(
            model, n_temperatures=betas.size, particles=draws, tune=tune, chains=chains,
            cores=cores, random_seed=random_seed,
            schedule=betas if ladder is not None else None, progressbar=progressbar,
            population=chosen == "population")
    if chosen == "nutpie":
        from inference.tempering.nutpie_ladder import run_ladder

        runs = run_ladder(model, betas, draws=draws, tune=tune, chains=chains, cores=cores,
                          rng=rng_from_seed(random_seed), last=method == "thermodynamic",
                          progressbar=progressbar)
        return _from_draws(runs.log_likelihood, np.tile(betas, (chains, 1)), method,
                           independent=True, sampler="nutpie", divergences=runs.divergences)
    # the tempered run of fit(model, tempering=...), from the tempering layer itself: the
    # zoo's tempered steps (the model's hints) and NUTS for the rest, the same draws
    tempering = {"ladder": betas} if ladder is not None else {"n_temperatures": betas.size}
    info = get_info(model)
    traced = info.trace_var_names if info is not None else None
    tempered, _assignment = fit_tempered(
        model, info, [], check_tempering(tempering),
        sizes=dict(draws=draws, tune=tune, chains=chains, cores=cores),
        random_seed=random_seed, progressbar=bool(progressbar) and not in_ci(),
        kwargs={} if traced is None else {"var_names": list(traced)}, trace_options=None)
    # the cold chain laid out as fit lays out a result (label-invariant statistics,
    # relabelling, attributes), so EvidenceResult.tempering reads like a fit
    return estimate_from_tempering(lay_out(tempered, model), method)
