"""Simulation-based calibration (Talts, Betancourt, Simpson, Vehtari & Gelman 2018).

For s = 1..S: draw theta~ ~ p(theta), y~ ~ p(y | theta~); run the inference under test on
y~; record the rank of g(theta~) among L posterior draws of g(theta). If the inference
is correct, each rank is uniform on {0, ..., L}. Each simulation is an independent task,
seeded from one ``numpy.random.SeedSequence``, so any ``concurrent.futures.Executor``
(a process pool, a Dask cluster's ``Client.get_executor()``) gives the same ranks as the
serial run.
"""

from __future__ import annotations

import hashlib
import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, replace

import cloudpickle
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from scipy import stats as sps

from inference.testing.generative import GenerativeModel, check_data_vars
from inference.testing.statistics import (
    Statistic,
    default_statistics,
    derived_statistics,
    evaluate_statistics,
    holm,
)
from pp_models.model_info import attach_info, get_info, posterior_with_labels
from pp_models.validation import check_int, check_model

__all__ = ["SBCResult", "sbc"]


@dataclass
class SBCResult:
    """Ranks of the prior draws among the posterior draws, per simulation and statistic.

    Attributes
    ----------
    ranks : pandas.DataFrame
        ``n_simulations x statistics``, integers in ``0..n_rank_draws``.
    ess : pandas.DataFrame
        Bulk effective sample size of each statistic's posterior draws per simulation; an
        ESS well below ``n_rank_draws`` means correlated draws and ranks that are not
        uniform even for correct inference (Talts et al. §4.1): draw more.
    n_rank_draws : int
        ``L``, the number of posterior draws each rank is taken among.
    seeds : list of (entropy, spawn_key)
        Each simulation's ``SeedSequence`` (for rerunning one).
    """

    ranks: pd.DataFrame
    ess: pd.DataFrame
    n_rank_draws: int
    seeds: list

    def uniformity(self, n_bins: int | None = None) -> pd.DataFrame:
        """Per statistic: chi-square test of the binned ranks, and a KS test of the
        normalised ranks, with Holm-adjusted p-values over all of them."""
        L = self.n_rank_draws
        S = len(self.ranks)
        if n_bins is None:
            n_bins = int(max(2, min(20, L + 1, S // 5)))
        # Equal-width bins over 0..L; uneven bin sizes are accounted for exactly.
        edges = np.linspace(0, L + 1, n_bins + 1)
        sizes = np.diff(np.floor(edges).astype(int))
        rows = []
        for name in self.ranks.columns:
            r = self.ranks[name].to_numpy()
            counts = np.bincount(np.digitize(r, np.floor(edges[1:-1])), minlength=n_bins)
            expected = S * sizes / (L + 1)
            chi2 = sps.chisquare(counts, expected)
            # Continuous-ify the discrete ranks with a uniform jitter for the KS test.
            u = (r + np.random.default_rng(0).uniform(size=r.size)) / (L + 1)
            ks = sps.kstest(u, "uniform")
            rows.append(dict(statistic=name, chi2=chi2.statistic, p_chi2=chi2.pvalue,
                             ks=ks.statistic, p_ks=ks.pvalue,
                             min_ess=float(self.ess[name].min())))
        table = pd.DataFrame(rows).set_index("statistic")
        adjusted = holm(np.concatenate([table["p_chi2"], table["p_ks"]]))
        table["p_chi2_holm"] = adjusted[: len(table)]
        table["p_ks_holm"] = adjusted[len(table):]
        return table

    def passed(self, alpha: float = 0.01) -> bool:
        """True when no Holm-adjusted uniformity p-value is below ``alpha``."""
        t = self.uniformity()
        return bool((t[["p_chi2_holm", "p_ks_holm"]].to_numpy() >= alpha).all())

    def assert_passed(self, alpha: float = 0.01) -> None:
        if not self.passed(alpha):
            raise AssertionError(f"SBC rejected uniformity at alpha={alpha}:\n{self}")

    def __str__(self) -> str:
        with pd.option_context("display.width", 140):
            return self.uniformity().to_string(float_format=lambda v: f"{v:.4g}")

    def plot(self, *, prob: float = 0.99, statistics: Sequence[str] | None = None):
        """ECDF-difference plot (Säilynoja, Bürkner & Vehtari 2022) per statistic.

        The curve is ECDF(rank/(L+1)) minus the uniform CDF; the band is a simultaneous
        ``prob`` band for S uniform ranks, found by simulation, so a correct method's
        curves stay inside it with probability ``prob``.
        """
        import matplotlib.pyplot as plt

        names = list(statistics or self.ranks.columns)
        S, L = len(self.ranks), self.n_rank_draws
        grid = np.linspace(0, 1, 101)[1:-1]
        lower, upper = _simultaneous_band(S, L, grid, prob)
        ncols = min(4, len(names))
        nrows = math.ceil(len(names) / ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 2.8 * nrows),
                                 squeeze=False)
        for ax, name in zip(axes.flat, names):
            u = (self.ranks[name].to_numpy() + 0.5) / (L + 1)
            ecdf = np.searchsorted(np.sort(u), grid, side="right") / S
            ax.fill_between(grid, lower - grid, upper - grid, color="0.85")
            ax.axhline(0, color="0.4", lw=0.8)
            ax.plot(grid, ecdf - grid, lw=1.5)
            ax.set_title(name, fontsize=9)
            ax.set_xlabel("fractional rank")
        for ax in list(axes.flat)[len(names):]:
            ax.axis("off")
        axes.flat[0].set_ylabel("ECDF difference")
        fig.tight_layout()
        return fig


def sbc(
    model: pm.Model,
    *,
    data_vars: Sequence[str],
    n_simulations: int = 200,
    fit_kwargs: Mapping | None = None,
    statistics: Mapping[str, Statistic] | None = None,
    n_rank_draws: int = 99,
    executor: Executor | None = None,
    random_seed=None,
) -> SBCResult:
    """Simulation-based calibration of ``inference.fit`` (with ``fit_kwargs``) on ``model``.

    Parameters
    ----------
    model : pymc.Model
        Generative model; ``data_vars`` observed or free.
    data_vars : sequence of str
    n_simulations : int
        ``S`` (>= 2).
    fit_kwargs : dict, optional
        Passed to :func:`inference.fit` for every simulation (``method``, ``draws``,
        ``tune``, ``chains``, ...). ``step`` may be a callable ``model -> step(s)``,
        called on each simulation's conditioned model.
    statistics : mapping name -> function(state) -> float, optional
        Default: each parameter element (or mean of a large parameter) and its square,
        and the model's label-invariant statistics.
    n_rank_draws : int
        ``L``: the posterior draws (chains pooled, equally spaced) each rank is taken
        among. Fewer than ``chains * draws`` thins the draws, as Talts et al. advise.
    executor : concurrent.futures.Executor, optional
        Where the simulations run: ``None`` in this process, one after the other; a
        ``ProcessPoolExecutor``; a Dask ``Client(...).get_executor()``.
    random_seed : int, optional

    Returns
    -------
    SBCResult
    """
    check_model(model)
    data_vars = check_data_vars(model, data_vars)
    n_simulations = check_int(n_simulations, "n_simulations", minimum=2)
    n_rank_draws = check_int(n_rank_draws, "n_rank_draws", minimum=1)
    fit_kwargs = dict(fit_kwargs or {})
    for reserved in ("random_seed", "progressbar"):
        if reserved in fit_kwargs:
            raise ValueError(f"fit_kwargs: {reserved!r} is set by sbc for each simulation")
    if executor is not None and not isinstance(executor, Executor):
        raise TypeError("executor must be a concurrent.futures.Executor (or None)")

    gen = GenerativeModel(model, data_vars)
    gen.seed(np.random.default_rng(0))
    probe = gen.draw_prior()
    stats = _statistics(statistics, gen, probe)
    draws_total = fit_kwargs.get("draws", 1000) * fit_kwargs.get("chains", 4)
    if n_rank_draws > draws_total:
        raise ValueError(
            f"n_rank_draws={n_rank_draws} exceeds the {draws_total} posterior draws per "
            "simulation (fit_kwargs draws x chains)"
        )

    payload = cloudpickle.dumps((model, data_vars, fit_kwargs, stats, n_rank_draws))
    seeds = np.random.SeedSequence(random_seed).spawn(n_simulations)
    if executor is None:
        results = [_simulate(payload, seed) for seed in seeds]
    else:
        futures = [executor.submit(_simulate, payload, seed) for seed in seeds]
        results = [f.result() for f in futures]

    names = list(stats)
    ranks = pd.DataFrame([r[0] for r in results], columns=names)
    ess = pd.DataFrame([r[1] for r in results], columns=names)
    if (ess.min() < n_rank_draws / 2).any():
        warnings.warn(
            "some posterior draws have bulk ESS below n_rank_draws / 2: correlated draws "
            "make ranks non-uniform even for correct inference; increase draws or lower "
            "n_rank_draws",
            stacklevel=2,
        )
    return SBCResult(ranks.astype(int), ess, n_rank_draws,
                     [(s.entropy, s.spawn_key) for s in seeds])


def _statistics(statistics, gen, probe) -> dict[str, Statistic]:
    if statistics is None:
        shapes = {name: np.shape(probe[name]) for name in gen.param_names}
        stats = default_statistics(shapes, [])
        stats.update(derived_statistics(gen.model, probe))
    else:
        if not isinstance(statistics, Mapping) or not statistics:
            raise TypeError("statistics must be a non-empty dict of name -> function(state)")
        stats = dict(statistics)
    evaluate_statistics(stats, probe)
    return stats


# Per-process cache: each worker compiles the generative functions once per payload.
_GENERATORS: dict[str, GenerativeModel] = {}


def _simulate(payload: bytes, seed: np.random.SeedSequence):
    """One SBC replicate: (ranks per statistic, ESS per statistic)."""
    from inference.fitting import fit

    key = hashlib.sha1(payload).hexdigest()
    model, data_vars, fit_kwargs, stats, n_rank_draws = cloudpickle.loads(payload)
    gen = _GENERATORS.get(key)
    if gen is None:
        gen = _GENERATORS[key] = GenerativeModel(model, data_vars)
    rng = np.random.default_rng(seed)
    gen.seed(rng)
    truth = gen.draw_prior()

    conditioned = pm.observe(gen.model, {name: truth[name] for name in gen.data_names})
    info = get_info(gen.model)
    if info is not None:
        attach_info(conditioned, replace(info))
    kwargs = dict(fit_kwargs)
    step = kwargs.pop("step", None)
    if callable(step) and not hasattr(step, "step"):
        with conditioned:
            step = step(conditioned)
    kwargs.setdefault("compute_convergence_checks", False)
    pymc_log = logging.getLogger("pymc")
    level = pymc_log.level
    pymc_log.setLevel(logging.WARNING)
    try:
        dt = fit(conditioned, step=step, random_seed=int(rng.integers(2**31)),
                 progressbar=False, postprocess=False, **kwargs)
    finally:
        pymc_log.setLevel(level)

    posterior = posterior_with_labels(dt)  # fit keeps raw labels in posterior_labels
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    values = np.empty((n_chains, n_draws, len(stats)))
    for c in range(n_chains):
        for d in range(n_draws):
            state = {name: posterior[name].values[c, d] for name in gen.param_names}
            state.update({name: truth[name] for name in gen.data_names})
            values[c, d] = evaluate_statistics(stats, state)
    truth_values = evaluate_statistics(stats, truth)

    flat = values.reshape(n_chains * n_draws, -1)
    keep = np.linspace(0, flat.shape[0] - 1, n_rank_draws).round().astype(int)
    thinned = flat[keep]
    less = (thinned < truth_values).sum(axis=0)
    ties = (thinned == truth_values).sum(axis=0)
    ranks = less + np.array([rng.integers(0, t + 1) for t in ties])
    ess = [_bulk_ess(values[:, :, j]) for j in range(values.shape[-1])]
    return ranks, ess


def _bulk_ess(x: np.ndarray) -> float:
    import arviz as az

    if np.ptp(x) == 0:
        return float(x.size)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(az.ess(xr.DataArray(x, dims=("chain", "draw")), method="bulk"))


def _simultaneous_band(S: int, L: int, grid: np.ndarray, prob: float, n_sim: int = 2000):
    """Simultaneous ECDF band for S uniform ranks on 0..L (by simulation)."""
    rng = np.random.default_rng(12345)
    u = (rng.integers(0, L + 1, size=(n_sim, S)) + 0.5) / (L + 1)
    u.sort(axis=1)
    ecdfs = np.stack([np.searchsorted(row, grid, side="right") / S for row in u])
    # Pointwise quantiles at the level that gives the simultaneous coverage wanted.
    for level in np.linspace(1 - prob, (1 - prob) / 50, 60):
        lo = np.quantile(ecdfs, level / 2, axis=0)
        hi = np.quantile(ecdfs, 1 - level / 2, axis=0)
        inside = np.all((ecdfs >= lo) & (ecdfs <= hi), axis=1).mean()
        if inside >= prob:
            return lo, hi
    return lo, hi
