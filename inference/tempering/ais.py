"""Annealed importance sampling of the evidence (Neal 2001; Murphy 2012 §24.6.2, §24.7.3).

A particle starts from an exact prior draw (``beta_0 = 0``) and moves through the power
posteriors at ``0 = beta_0 < beta_1 < ... < beta_{T-1} = 1``, one transition leaving
``p_{beta_t}`` invariant at each; its log weight is ``sum_t (beta_t - beta_{t-1}) log
p(X | theta_{t-1})``, and ``mean(weight)`` is an unbiased estimate of ``p(X)``.

The transitions are the model's tempered steps with their tuning frozen: a parallel
tempering run (:class:`~inference.tempering.driver.TemperedStep`, 8 temperatures) is
tuned first, which adapts NUTS's step size at each of its temperatures and measures the
swap rejection rates along its ladder; the annealing schedule then spaces the T
temperatures evenly in the estimated cumulative communication barrier (as
:func:`~inference.tempering.ladder.update_schedule` does, the barrier being the
quantity that governs how far neighbouring power posteriors are apart), unless the
caller gives the schedule, and the transition at ``beta_t`` is the tuned replica nearest
in beta, set to ``beta_t``. Nothing adapts during the annealing, so every transition
leaves its target invariant.

Each chain is one :class:`AnnealingStep` driven by the zoo's chain loop
(:func:`inference.chains.sample_gibbs`): its tuning iterations are the parallel-tempering
run, each kept draw is one particle (the draw is the particle's final state, its
``ais_log_weight`` a step statistic). Chains therefore run in forked workers like
``fit``'s (``cores``), each from its own generator spawned from the seed, so a seed gives
the same particles whatever ``cores``; Ctrl-C keeps the particles completed.

Standard error: within a chain (``particles`` independent particles), the delta method
on the mean weight, ``se(log Z) = sd(w) / (sqrt(M) mean(w))``; chains are combined as
for the other estimators (:mod:`inference.tempering.evidence`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from pymc.util import get_random_generator
from scipy.interpolate import PchipInterpolator
from scipy.special import logsumexp

from inference.chains import initial_point, model_cache, sample_gibbs
from inference.gibbs.base import ZooGibbsStep
from inference.tempering.driver import TemperedStep
from inference.tempering.evidence_result import EvidenceResult, combine_chains
from inference.tempering.ladder import cumulative_barrier, initial_ladder
from inference.tempering.power import PriorDraws, log_likelihood_function
from inference.tempering.steps import build_steps, plan_steps
from pp_models.model_info import get_info

__all__ = ["TUNING_TEMPERATURES", "AnnealingStep", "annealed_importance_sampling",
           "annealing_schedule"]

#: Temperatures of the parallel-tempering run that tunes the transitions.
TUNING_TEMPERATURES = 8


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


def annealed_importance_sampling(model, *, n_temperatures: int, particles: int, tune: int,
                                 chains: int, cores: int | None = None, random_seed=None,
                                 schedule=None, progressbar: bool = False):
    """AIS estimate of ``log p(X)`` (module docstring); returns an
    :class:`~inference.tempering.evidence.EvidenceResult`. ``schedule``: the annealing
    schedule (default: from the tuning run's barrier, ``n_temperatures`` of them)."""
    cache = model_cache(model)
    steps = cache.get("tempered_steps")
    info = get_info(model)
    if steps is None:
        # refuses a step that cannot temper before anything compiles
        plan = plan_steps(model, info, [])
        steps = cache["tempered_steps"] = build_steps(model, plan,
                                                      initial_point=initial_point(model))
    annealing = AnnealingStep(steps, model=model, n_temperatures=n_temperatures,
                              schedule=schedule)
    var_names = (list(info.trace_var_names)
                 if info is not None and info.trace_var_names is not None else None)
    dt, _interrupted = sample_gibbs(model, [annealing], draws=particles, tune=tune,
                                    chains=chains, cores=cores, random_seed=random_seed,
                                    progressbar=progressbar, var_names=var_names)
    log_weights = dt["sample_stats"]["ais_log_weight"].values  # (chain, particle)
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
    estimate, se, which = combine_chains(estimates, variances)
    return EvidenceResult(
        log_evidence=estimate,
        se=se,
        method="ais",
        per_chain=tuple(estimates),
        table=table,
        se_method="delta method on each chain's mean importance weight (independent "
                  f"particles); mean over independent chains, se {which}",
        draws=kept, chains=n_chains, n_temperatures=annealing.n_temperatures,
        sampler="ais")
