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
quantity that governs how far neighbouring power posteriors are apart), and the
transition at ``beta_t`` is the tuned replica nearest in beta, set to ``beta_t``. Nothing
adapts during the annealing, so every transition leaves its target invariant.

Standard error: within a chain (``particles`` independent particles), the delta method
on the mean weight, ``se(log Z) = sd(w) / (sqrt(M) mean(w))``; chains are combined as
for the other estimators (:mod:`inference.tempering.evidence`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.interpolate import PchipInterpolator
from scipy.special import logsumexp

from inference.chains import initial_point, model_cache
from inference.tempering.driver import TemperedStep
from inference.tempering.ladder import cumulative_barrier, initial_ladder
from inference.tempering.power import PriorDraws, log_likelihood_function
from inference.tempering.steps import build_steps, plan_steps
from pp_models.model_info import get_info
from pp_models.validation import rng_from_seed

__all__ = ["TUNING_TEMPERATURES", "annealed_importance_sampling", "annealing_schedule"]

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


def annealed_importance_sampling(model, *, n_temperatures: int, particles: int, tune: int,
                                 chains: int, random_seed=None):
    """AIS estimate of ``log p(X)`` (module docstring); returns an
    :class:`~inference.tempering.evidence.EvidenceResult`. Chains run one after another
    in this process."""
    from inference.tempering.evidence import EvidenceResult

    cache = model_cache(model)
    steps = cache.get("tempered_steps")
    if steps is None:
        # refuses a step that cannot temper before anything compiles
        plan = plan_steps(model, get_info(model), [])
        steps = cache["tempered_steps"] = build_steps(model, plan,
                                                      initial_point=initial_point(model))
    loglik = log_likelihood_function(model)
    prior = PriorDraws.for_model(model)
    rngs = rng_from_seed(random_seed).spawn(chains)
    estimates, variances, rows = [], [], []
    for c, rng in enumerate(rngs):
        tempered = TemperedStep(steps, model=model,
                                ladder=initial_ladder(TUNING_TEMPERATURES))
        tune_rng, prior_rng = rng.spawn(2)
        tempered.setup_chain(tune_rng, tune, 0)
        point = initial_point(model, int(rng.integers(2**30)))
        for _ in range(tune):
            point, _stats = tempered.step(point)
        tempered.stop_tuning()
        ladder = tempered.ladder
        schedule = annealing_schedule(ladder, tempered.rejection_rates(), n_temperatures)
        nearest = np.abs(schedule[:, None] - ladder[None, :]).argmin(axis=1)
        prior.seed(prior_rng)
        log_w = np.empty(particles)
        for m in range(particles):
            x = prior.draw()
            ll = loglik(x)
            lw = 0.0
            for t in range(1, n_temperatures):
                lw += 0.0 if schedule[t] == schedule[t - 1] else (
                    (schedule[t] - schedule[t - 1]) * ll)
                if t == n_temperatures - 1:
                    break
                for leaf in tempered.replica_steps(int(nearest[t])):
                    leaf.set_inverse_temperature(float(schedule[t]))
                    x, _ = leaf.step(x)
                ll = loglik(x)
            log_w[m] = lw
        estimate = float(logsumexp(log_w) - math.log(particles))
        w = np.exp(log_w - log_w.max())
        rel_var = w.var(ddof=1) / (particles * w.mean() ** 2) if particles > 1 else np.inf
        estimates.append(estimate)
        variances.append(float(rel_var))
        rows.extend({"chain": c, "particle": m, "log_weight": log_w[m]}
                    for m in range(particles))
    table = pd.DataFrame(rows).set_index(["chain", "particle"])
    return EvidenceResult(
        log_evidence=float(np.mean(estimates)),
        se=float(math.sqrt(sum(variances)) / chains),
        method="ais",
        per_chain=tuple(estimates),
        table=table,
        se_method="delta method on each chain's mean importance weight (independent "
                  "particles); mean over independent chains",
        draws=particles, chains=chains, n_temperatures=n_temperatures)
