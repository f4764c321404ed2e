"""Annealed importance sampling of the evidence (Neal 2001; Murphy 2012 §24.6.2, §24.7.3).

A particle starts from an exact prior draw (``beta_0 = 0``) and moves through the power
posteriors at ``0 = beta_0 < beta_1 < ... < beta_{T-1} = 1``, one transition leaving
``p_{beta_t}`` invariant at each; its log weight is ``sum_t (beta_t - beta_{t-1}) log
p(X | theta_{t-1})``, and ``mean(weight)`` is an unbiased estimate of ``p(X)``.

**An all-continuous model** (every step tempered NUTS): the particles of a chain move
together (:class:`~inference.tempering.population.BatchedPowerPosterior`: one compiled,
vectorised evaluation of the prior, the likelihood and their gradients per leapfrog step
for the whole population; one HMC move per temperature). The kernels are fixed before
the particles that make the estimate start: a pilot population of ``tune`` particles (at
least :data:`MIN_PILOT`), annealed first on the schedule ``initial_ladder(T)``, sets at
each temperature the position scale (the pilot's importance-weighted standard deviation)
and the step size (adapted over :data:`PILOT_MOVES` moves towards an acceptance of
:data:`TARGET_ACCEPT`), and, unless the caller gives the schedule, respaces the T
temperatures evenly in the thermodynamic length ``∫ sd_beta(log p(X | theta)) dbeta``
(:func:`tune_population`). Each chain then anneals its own particles with those fixed
kernels (:func:`anneal_population`); the pilot and the chains draw from generators
spawned from the seed, so a seed gives the same particles whatever ``cores`` (unused
here: a chain is a few array operations).

**A model with Gibbs steps**: the transitions are the model's tempered steps with their
tuning frozen: a parallel tempering run (:class:`~inference.tempering.driver.TemperedStep`,
8 temperatures) is tuned first, which adapts NUTS's step size at each of its temperatures
and measures the swap rejection rates along its ladder; the annealing schedule then spaces
the T temperatures evenly in the estimated cumulative communication barrier (as
:func:`~inference.tempering.ladder.update_schedule` does, the barrier being the quantity
that governs how far neighbouring power posteriors are apart), unless the caller gives the
schedule, and the transition at ``beta_t`` is the tuned replica nearest in beta, set to
``beta_t``. Nothing adapts during the annealing, so every transition leaves its target
invariant. Each chain is one :class:`AnnealingStep` driven by the zoo's chain loop
(:func:`inference.chains.sample_gibbs`): its tuning iterations are the parallel-tempering
run, each kept draw is one particle (the draw is the particle's final state, its
``ais_log_weight`` a step statistic). Chains therefore run in forked workers like
``fit``'s (``cores``), each from its own generator spawned from the seed, so a seed gives
the same particles whatever ``cores``; Ctrl-C keeps the particles completed.

Standard error: within a chain (``particles`` independent particles), the delta method
on the mean weight, ``se(log Z) = sd(w) / (sqrt(M) mean(w))`` with ``M - 1`` degrees of
freedom; chains are combined as for the other estimators
(:func:`~inference.tempering.evidence_result.combine_chains`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pymc.util import get_random_generator
from scipy.interpolate import PchipInterpolator
from scipy.special import logsumexp

from inference.chains import sample_gibbs
from inference.gibbs.base import ZooGibbsStep
from inference.sampling_core import initial_point, model_cache
from inference.tempering.driver import TemperedStep
from inference.tempering.evidence_result import EvidenceResult, combine_chains
from inference.tempering.ladder import cumulative_barrier, initial_ladder
from inference.tempering.population import BatchedPowerPosterior, leapfrog_steps
from inference.tempering.power import PriorDraws, log_likelihood_function
from inference.tempering.steps import build_steps, plan_steps
from pp_models.model_info import get_info
from pp_models.validation import rng_from_seed

__all__ = ["MIN_PILOT", "PILOT_MOVES", "TARGET_ACCEPT", "TUNING_TEMPERATURES",
           "AnnealingStep", "anneal_population", "annealed_importance_sampling",
           "annealing_schedule", "tune_population"]

#: Temperatures of the parallel-tempering run that tunes the transitions.
TUNING_TEMPERATURES = 8

#: Fewest pilot particles of a population run (``tune`` of them, at least this many).
MIN_PILOT = 64

#: HMC moves per temperature of the pilot run, each adapting the step size.
PILOT_MOVES = 4

#: The acceptance probability the pilot's step sizes aim at.
TARGET_ACCEPT = 0.7


def annealing_schedule(ladder: np.ndarray, rejection: np.ndarray, n: int) -> np.ndarray:
    """``n`` inverse temperatures from 0 to 1, evenly spaced in the cumulative barrier
    interpolated (monotone PCHIP) through the tuned ``ladder`` and its swap
    ``rejection`` rates."""
    barrier = cumulative_barrier(np.clip(rejection, 0.0, 1.0))
    inverse = PchipInterpolator(barrier, ladder)
    betas = inverse(barrier[-1] * np.arange(n) / (n - 1))
    betas[0], betas[-1] = 0.0, 1.0
    return np.maximum.accumulate(betas)


class AnnealingStep(ZooGibbsStep):
    """One chain of annealed importance sampling as a zoo step (module docstring).

    While tuning, a call is one parallel-tempering iteration of ``steps``; after
    :meth:`stop_tuning` fixes the schedule, a call anneals one new particle from the
    prior to the posterior and returns its final state, with its log weight as the
    statistic ``ais_log_weight`` (NaN for the tuning iterations).

    Parameters
    ----------
    steps : list
        The model's tempered steps (templates, as for :class:`TemperedStep`).
    model : pymc.Model
    n_temperatures : int
        Annealing temperatures ``T`` (ignored when ``schedule`` is given).
    schedule : sequence of float, optional
        The annealing schedule, from 0 to 1 (validated by the caller).
    """

    name = "annealed_importance_sampling"
    can_temper = False
    stats_dtypes_shapes = {"ais_log_weight": (np.float64, [])}

    def __init__(self, steps, *, model, n_temperatures: int, schedule=None, rng=None):
        self._tempered = TemperedStep(steps, model=model,
                                      ladder=initial_ladder(TUNING_TEMPERATURES))
        super().__init__(self._tempered.vars, model=model, rng=rng)
        self.n_temperatures = int(n_temperatures if schedule is None else len(schedule))
        self._given = None if schedule is None else np.asarray(schedule, dtype=np.float64)
        self._loglik = log_likelihood_function(self.model)
        self._prior = PriorDraws.for_model(self.model)
        self.schedule = None

    def setup_chain(self, rng, tune, draws):
        self.rng = get_random_generator(rng, copy=False)
        tune_rng, prior_rng = self.rng.spawn(2)
        self._tempered.setup_chain(tune_rng, tune, 0)
        self._prior.seed(prior_rng)
        self.schedule = None
        self.tune = bool(tune)

    def stop_tuning(self):
        self.tune = False
        self._tempered.stop_tuning()
        ladder = self._tempered.ladder
        self.schedule = (self._given if self._given is not None else annealing_schedule(
            ladder, self._tempered.rejection_rates(), self.n_temperatures))
        self._nearest = np.abs(self.schedule[:, None] - ladder[None, :]).argmin(axis=1)

    def step(self, point):
        if self.schedule is None:
            if not self.tune:  # no tuning iterations: the schedule from the start
                self.stop_tuning()
            else:
                point, _stats = self._tempered.step(point)
                return point, [{"ais_log_weight": np.nan}]
        schedule, tempered = self.schedule, self._tempered
        x = self._prior.draw()
        ll = self._loglik(x)
        log_weight = 0.0
        for t in range(1, schedule.size):
            log_weight += (schedule[t] - schedule[t - 1]) * ll
            if t == schedule.size - 1:
                break
            for leaf in tempered.replica_steps(int(self._nearest[t])):
                leaf.set_inverse_temperature(float(schedule[t]))
                x, _ = leaf.step(x)
            ll = self._loglik(x)
        return x, [{"ais_log_weight": log_weight}]


# ---------------------------------------------------------------------- a population
def _weighted_moments(values: np.ndarray, log_w: np.ndarray):
    """Importance-weighted mean and variance of ``values`` (M, ...) along the particles."""
    w = np.exp(log_w - log_w.max())
    w /= w.sum()
    mean = np.tensordot(w, values, axes=1)
    return mean, np.tensordot(w, (values - mean) ** 2, axes=1)


def tune_population(batched, prior: PriorDraws, schedule: np.ndarray, pilot: int,
                    rng: np.random.Generator, *, respace: bool):
    """The kernels of a population run, set by a pilot run of ``pilot`` particles that
    the estimate does not use (module docstring). Returns ``(schedule, eps (T,),
    scale (T, d))``: at each temperature the HMC step size, adapted over
    :data:`PILOT_MOVES` moves towards an acceptance of :data:`TARGET_ACCEPT`, and the
    position scale, the pilot's importance-weighted standard deviation there. With
    ``respace``, the schedule is respaced evenly in the thermodynamic length ``∫ sd_beta(log
    p(X | theta)) dbeta`` estimated by the pilot (Gelman & Meng 1998, §5: equal steps of
    it make the importance weights' increments equally variable), step sizes and scales
    interpolated to it."""
    n = schedule.size
    x = np.stack([batched.flatten(prior.draw()) for _ in range(pilot)])
    state = batched.evaluate(x)
    log_w = np.zeros(pilot)
    eps = np.ones(n)
    scale = np.ones((n, batched.dim))
    sd_lik = np.zeros(n)
    sd_lik[0] = math.sqrt(max(float(_weighted_moments(state[1], log_w)[1]), 0.0))
    step = 1.0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(1, n):
            log_w = log_w + (schedule[t] - schedule[t - 1]) * state[1]
            s = np.sqrt(_weighted_moments(x, log_w)[1])
            scale[t] = np.where(np.isfinite(s) & (s > 1e-12), s, 1.0)
            for _ in range(PILOT_MOVES):
                x, state, accept = batched.hmc_move(x, float(schedule[t]), step, scale[t],
                                                    leapfrog_steps(step), rng, state)
                step = float(np.clip(step * math.exp(2.0 * (accept.mean() - TARGET_ACCEPT)),
                                     1e-3, 2.0))
            eps[t] = step
            var_lik = float(_weighted_moments(state[1], log_w)[1])
            sd_lik[t] = math.sqrt(var_lik) if np.isfinite(var_lik) and var_lik > 0 else 0.0
    eps[0], scale[0] = eps[1], scale[1]
    if not respace:
        return schedule, eps, scale
    delta = np.diff(schedule)
    length = np.concatenate([[0.0], np.cumsum(delta * (sd_lik[:-1] + sd_lik[1:]) / 2
                                              + 1e-9 * delta)])
    betas = np.interp(length[-1] * np.arange(n) / (n - 1), length, schedule)
    betas[0], betas[-1] = 0.0, 1.0
    betas = np.maximum.accumulate(betas)
    eps = np.exp(np.interp(betas, schedule, np.log(eps)))
    scale = np.exp(np.stack([np.interp(betas, schedule, np.log(scale[:, j]))
                             for j in range(batched.dim)], axis=1))
    return betas, eps, scale


def anneal_population(batched, x: np.ndarray, schedule: np.ndarray, eps: np.ndarray,
                      scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The log weights (M,) of the particles ``x`` (M, d), exact prior draws, annealed
    through ``schedule`` with fixed kernels (one HMC move per temperature)."""
    state = batched.evaluate(x)
    log_w = np.zeros(x.shape[0])
    for t in range(1, schedule.size):
        log_w += (schedule[t] - schedule[t - 1]) * state[1]
        if t == schedule.size - 1:
            break
        x, state, _ = batched.hmc_move(x, float(schedule[t]), float(eps[t]), scale[t],
                                       leapfrog_steps(float(eps[t])), rng, state)
    return log_w


def _population_weights(batched, model, *, n_temperatures, particles, tune, chains,
                        random_seed, schedule):
    """(chains, particles) log weights of the population run, and its schedule."""
    prior = PriorDraws.for_model(model)
    rng = rng_from_seed(random_seed)
    pilot_rng, *chain_rngs = rng.spawn(chains + 1)
    prior.seed(pilot_rng)
    start = initial_ladder(n_temperatures) if schedule is None else np.asarray(schedule)
    betas, eps, scale = tune_population(batched, prior, start, max(int(tune), MIN_PILOT),
                                        pilot_rng, respace=schedule is None)
    log_weights = np.empty((chains, particles))
    for c, chain_rng in enumerate(chain_rngs):
        prior.seed(chain_rng)
        x = np.stack([batched.flatten(prior.draw()) for _ in range(particles)])
        log_weights[c] = anneal_population(batched, x, betas, eps, scale, chain_rng)
    return log_weights, betas


def annealed_importance_sampling(model, *, n_temperatures: int, particles: int, tune: int,
                                 chains: int, cores: int | None = None, random_seed=None,
                                 schedule=None, progressbar: bool = False,
                                 population: bool = False):
    """AIS estimate of ``log p(X)`` (module docstring); returns an
    :class:`~inference.tempering.evidence.EvidenceResult`. ``schedule``: the annealing
    schedule (default: from the tuning run, ``n_temperatures`` of them).
    ``population``: the model is all-continuous, so its particles may move together
    (falls back to the tempered steps when its graph cannot be vectorised)."""
    batched = None
    if population:
        try:
            batched = BatchedPowerPosterior.for_model(model)
        except NotImplementedError:
            batched = None
    if batched is not None:
        log_weights, _betas = _population_weights(
            batched, model, n_temperatures=n_temperatures, particles=particles, tune=tune,
            chains=chains, random_seed=random_seed, schedule=schedule)
        how = ("population of particles moved together by HMC, kernels from a pilot "
               "population")
    else:
        cache = model_cache(model)
        steps = cache.get("tempered_steps")
        info = get_info(model)
        if steps is None:
            # refuses a step that cannot temper before anything compiles
            plan = plan_steps(model, info, [])
            steps = cache["tempered_steps"] = build_steps(
                model, plan, initial_point=initial_point(model))
        annealing = AnnealingStep(steps, model=model, n_temperatures=n_temperatures,
                                  schedule=schedule)
        var_names = (list(info.trace_var_names)
                     if info is not None and info.trace_var_names is not None else None)
        dt, _interrupted = sample_gibbs(model, [annealing], draws=particles, tune=tune,
                                        chains=chains, cores=cores, random_seed=random_seed,
                                        progressbar=progressbar, var_names=var_names)
        log_weights = dt["sample_stats"]["ais_log_weight"].values  # (chain, particle)
        how = "particles one at a time through the tempered steps"
    kept = log_weights.shape[1]
    estimates, variances, rows = [], [], []
    for c, log_w in enumerate(log_weights):
        estimates.append(float(logsumexp(log_w) - math.log(kept)))
        w = np.exp(log_w - log_w.max())
        variances.append(float(w.var(ddof=1) / (kept * w.mean() ** 2)) if kept > 1
                         else math.inf)
        rows.extend({"chain": c, "particle": m, "log_weight": log_w[m]}
                    for m in range(kept))
    table = pd.DataFrame(rows).set_index(["chain", "particle"])
    n_chains = log_weights.shape[0]
    combined = combine_chains(estimates, variances, [max(kept - 1, 1)] * n_chains)
    return EvidenceResult(
        log_evidence=combined.estimate,
        se=combined.se,
        method="ais",
        per_chain=tuple(estimates),
        table=table,
        se_method="delta method on each chain's mean importance weight (independent "
                  f"particles: {how}); mean over independent chains, se {combined.which}",
        draws=kept, chains=n_chains, n_temperatures=n_temperatures,
        sampler="ais", se_dof=combined.dof)
