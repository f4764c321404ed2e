"""Parallel tempering as one step of the zoo's chain loop.

:class:`TemperedStep` holds, for one chain, a replica of the model's steps at each
inverse temperature of a ladder ``beta_0 < ... < beta_{N-1} = 1``. One call of
:meth:`TemperedStep.step` is one iteration of non-reversible parallel tempering (Syed,
Bouchard-Cote, Deligiannidis & Doucet 2022, Algorithm 1 with the even/odd swaps of
:mod:`inference.tempering.swaps`): every replica makes one sweep of its steps (the
replica at ``beta = 0`` draws from the prior exactly instead, :class:`~inference.
tempering.power.PriorDraws`), then neighbours swap states. It returns the state at
``beta = 1`` and, as step statistics, the ladder, each temperature's log-likelihood, the
swap acceptance probabilities and the round trips so far.

Because it is a step (a :class:`~inference.gibbs.ZooGibbsStep`), ``fit`` runs it with the
zoo's chain loop (:mod:`inference.chains`): chains are independent tempered runs in
forked workers, Ctrl-C stops between iterations, draws go to a trace folder and
``resume=True`` continues a stored run exactly (:meth:`chain_state` holds every
replica's state, its steps' states and the ladder). :func:`tempering_group` then moves
the tempering statistics out of ``sample_stats`` into the DataTree's ``tempering`` group.

While tuning, the ladder is updated at the ends of rounds of doubling length so that the
swap rejection rates become equal (:func:`~inference.tempering.ladder.update_schedule`);
after the first half of the tuning it stays fixed.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from pymc.step_methods.compound import flatten_steps
from pymc.util import get_random_generator

from inference.gibbs.base import ZooGibbsStep
from inference.step_state import from_data, to_data
from inference.tempering.ladder import adaptation_rounds, cumulative_barrier, update_schedule
from inference.tempering.power import PriorDraws, log_likelihood_function
from inference.tempering.swaps import RoundTrips, deo_swap
from pp_models.validation import check_ladder

__all__ = ["TEMPERING_GROUP", "TEMPERING_STATS", "TemperedStep", "describe_tempering",
           "swaps_accepted", "tempering_group"]

#: Name of the DataTree group holding the tempering diagnostics.
TEMPERING_GROUP = "tempering"

#: Step statistics of :class:`TemperedStep` (moved to the tempering group by
#: :func:`tempering_group`).
TEMPERING_STATS = ("tempering_beta", "tempering_log_likelihood", "tempering_swap_prob",
                   "tempering_index", "tempering_round_trips")


class TemperedStep(ZooGibbsStep):
    """Non-reversible parallel tempering of ``steps`` on ``model`` (module docstring).

    Parameters
    ----------
    steps : list of step methods
        The model's steps at ``beta = 1``, each able to temper (zoo steps with
        ``can_temper``, :class:`~inference.tempering.nuts.TemperedNUTS`); they are
        templates: every chain gets fresh replicas of them (``replica()``).
    model : pymc.Model
    ladder : sequence of float
        Starting inverse temperatures, strictly increasing, ending at 1.
    adapt : bool
        Update the ladder while tuning.
    prior_draws : bool
        Forward-sample the prior at ``beta = 0`` (when the ladder starts at 0).
    hold_swaps : bool or None
        While the ladder is being adapted (the first half of the tuning), measure the
        swaps' acceptance probabilities but do not exchange states, so that each
        replica's own adaptation (NUTS's step size and mass matrix) sees only states of
        its temperature; swaps start with the last ladder update. ``None`` (default):
        hold only when a step adapts while tuning (NUTS). Without such a step the swaps
        run from the first iteration, as in Syed et al.'s Algorithm 4: the rejection
        rates that adapt the ladder are then measured on replicas that exchange states,
        as they will after tuning, not on independent chains each still near its start.
    rng : seed or Generator, optional
    """

    name = "parallel_tempering"

    def __init__(self, steps, *, model, ladder, adapt: bool = True,
                 prior_draws: bool = True, hold_swaps: bool | None = None, rng=None,
                 blocked=True):
        templates = [leaf for s in steps for leaf in flatten_steps(s)]
        super().__init__([v for leaf in templates for v in leaf.vars], model=model, rng=rng)
        for leaf in templates:
            if not getattr(leaf, "can_temper", False):
                raise ValueError(f"tempering: step {getattr(leaf, 'name', leaf)!r} cannot "
                                 "temper")
        self._templates = templates
        self.initial_ladder = check_ladder(ladder)
        self.n_temperatures = self.initial_ladder.size
        self.adapt = bool(adapt)
        if hold_swaps is None:
            hold_swaps = any(getattr(leaf, "adapts_while_tuning", False)
                             for leaf in templates)
        self.hold_swaps = bool(hold_swaps)
        self._loglik = log_likelihood_function(self.model)
        self._prior = (PriorDraws.for_model(self.model)
                       if prior_draws and self.initial_ladder[0] == 0.0 else None)
        n = self.n_temperatures
        stats = {}
        for leaf in templates:
            for key, (dtype, shape) in leaf.stats_dtypes_shapes.items():
                # PyMC's NUTS also reports a 'warning' object per draw: not an array
                if shape is not None and np.dtype(dtype).kind in "biuf":
                    stats[key] = (dtype, shape)
        self._cold_stats = set(stats)
        stats.update({
            "tempering_beta": (np.float64, [n]),
            "tempering_log_likelihood": (np.float64, [n]),
            "tempering_swap_prob": (np.float64, [n - 1]),
            "tempering_index": (np.int64, [n]),
            "tempering_round_trips": (np.int64, []),
        })
        self.stats_dtypes_shapes = stats
        self._replicas = None
        self._points = None

    # ------------------------------------------------------------------ chain set-up
    def setup_chain(self, rng, tune, draws):
        self.rng = get_random_generator(rng, copy=False)
        n = self.n_temperatures
        streams = self.rng.spawn(n + 2)
        self._replicas = []
        for r in range(n):
            leaves = [t.replica() for t in self._templates]
            for leaf, g in zip(leaves, streams[r].spawn(len(leaves)), strict=True):
                leaf.setup_chain(g, tune, draws)
            self._replicas.append(leaves)
        self._swap_rng = streams[n]
        if self._prior is not None:
            self._prior.seed(streams[n + 1])
        self.ladder = self.initial_ladder.copy()
        self._set_betas()
        # fresh replicas, so nothing to reset: PyMC's NUTS starts its adaptation anew
        self._points = None
        self._iteration = 0
        self._round_ends = set(adaptation_rounds(tune)) if self.adapt else set()
        self._swaps_from = max(self._round_ends, default=0) if self.hold_swaps else 0
        self._reject_sum = np.zeros(n - 1)
        self._attempts = np.zeros(n - 1)
        self._trips = RoundTrips(n)
        self.tune = bool(tune)

    def _set_betas(self):
        for beta, leaves in zip(self.ladder, self._replicas, strict=True):
            for leaf in leaves:
                leaf.set_inverse_temperature(float(beta))

    def stop_tuning(self):
        self.tune = False
        for leaves in self._replicas or ():
            for leaf in leaves:
                leaf.stop_tuning()

    # ------------------------------------------------------------------ one iteration
    def _uses_prior(self, r: int) -> bool:
        return r == 0 and self._prior is not None and self.ladder[0] == 0.0

    def step(self, point):
        n = self.n_temperatures
        if self._points is None:
            self._points = [dict(point) for _ in range(n)]
        else:
            self._points[n - 1] = point
        points = self._points
        cold_stats: dict = {}
        for r in range(n):
            if self._uses_prior(r):
                points[r] = self._prior.draw()
                continue
            p = points[r]
            for leaf in self._replicas[r]:
                p, stats = leaf.step(p)
                if r == n - 1:
                    for s in stats:
                        cold_stats.update((k, v) for k, v in s.items() if k in self._cold_stats)
            points[r] = p
        logliks = np.array([self._loglik(p) for p in points])
        perm, probs = deo_swap(self.ladder, logliks, self._iteration % 2, self._swap_rng)
        if self.tune and self._iteration < self._swaps_from:
            # while the ladder is adapted, each replica's steps adapt to their own
            # temperature (NUTS's step size and mass matrix): the swaps' probabilities are
            # measured for the schedule but not applied
            perm = np.arange(n)
        self._points = [points[j] for j in perm]
        logliks = logliks[perm]
        self._trips.apply(perm)
        tried = ~np.isnan(probs)
        self._reject_sum[tried] += 1.0 - probs[tried]
        self._attempts[tried] += 1
        if self.tune and self._round_ends:
            if self._iteration + 1 in self._round_ends:
                rates = self._reject_sum / np.maximum(self._attempts, 1)
                self.ladder = update_schedule(self.ladder, rates)
                self._set_betas()
                self._reject_sum[:] = 0.0
                self._attempts[:] = 0.0
        self._iteration += 1
        cold_stats.update({
            "tempering_beta": self.ladder.copy(),
            "tempering_log_likelihood": logliks,
            "tempering_swap_prob": probs,
            "tempering_index": self._trips.index.copy(),
            "tempering_round_trips": self._trips.count,
        })
        return self._points[n - 1], [cold_stats]

    # ------------------------------------------------------------------ for AIS
    def rejection_rates(self) -> np.ndarray:
        """Mean swap rejection probability of each pair since the last ladder update."""
        return self._reject_sum / np.maximum(self._attempts, 1)

    def replica_steps(self, r: int) -> list:
        """The steps of the replica at temperature ``r`` (after ``setup_chain``)."""
        return self._replicas[r]

    # ------------------------------------------------------------------ stored chains
    def chain_state(self) -> dict:
        """Everything the next iteration depends on besides the cold state (which the
        trace stores as the chain's point): every replica's point and steps' states, the
        ladder and its adaptation, the swap and prior generators, the round trips; as
        plain data (:mod:`inference.step_state`)."""
        state = {
            "points": to_data(self._points[:-1]) if self._points is not None else None,
            "ladder": to_data(self.ladder),
            "iteration": int(self._iteration),
            "round_ends": sorted(int(e) for e in self._round_ends),
            "swaps_from": int(self._swaps_from),
            "reject_sum": to_data(self._reject_sum),
            "attempts": to_data(self._attempts),
            "trips": self._trips.state(),
            "swap_rng": self._swap_rng.bit_generator.state,
            "prior": self._prior.state() if self._prior is not None else None,
            "replicas": [[leaf.chain_state() for leaf in leaves]
                         for leaves in self._replicas],
            "tune": bool(self.tune),
        }
        return {"rng": self.rng.bit_generator.state, "tempering": state}

    def restore_chain_state(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        saved = state["tempering"]
        if saved["points"] is not None:
            self._points = [*from_data(saved["points"]), None]
        self.ladder = np.asarray(from_data(saved["ladder"]), dtype=np.float64)
        self._set_betas()
        self._iteration = int(saved["iteration"])
        # a resumed chain is given the tuning iterations left, not the schedule's
        self._round_ends = set(saved["round_ends"])
        self._swaps_from = int(saved["swaps_from"])
        self._reject_sum = np.asarray(from_data(saved["reject_sum"]), dtype=np.float64)
        self._attempts = np.asarray(from_data(saved["attempts"]), dtype=np.float64)
        self._trips.restore(saved["trips"])
        self._swap_rng.bit_generator.state = saved["swap_rng"]
        if self._prior is not None and saved["prior"] is not None:
            self._prior.restore(saved["prior"])
        for leaves, states in zip(self._replicas, saved["replicas"], strict=True):
            for leaf, leaf_state in zip(leaves, states, strict=True):
                leaf.restore_chain_state(leaf_state)


# ---------------------------------------------------------------------- outputs
def tempering_group(dt: xr.DataTree, *, tune: int = 0) -> xr.DataTree:
    """Move :class:`TemperedStep`'s statistics from ``sample_stats`` into a
    ``tempering`` group (in place; returns ``dt``).

    The group holds, per chain and draw, the ladder (``beta``), each temperature's
    log-likelihood (``log_likelihood``), the swap acceptance probabilities
    (``swap_prob``, NaN where the pair was not tried), which state sits at each
    temperature (``index``) and the round trips completed (``round_trips_total``); and per
    chain the summaries over the kept draws: ``ladder`` (the final one), ``swap_acceptance``
    (mean acceptance probability of each pair), ``barrier`` (Lambda, the sum of the
    rejection rates: the global communication barrier, Syed et al. 2022 §4.1),
    ``cumulative_barrier`` (Lambda at each temperature) and ``round_trips`` (during the
    kept draws).
    """
    if "sample_stats" not in dt.children:
        return dt
    stats = dt["sample_stats"].to_dataset()
    if "tempering_beta" not in stats:
        return dt
    names = {"tempering_beta": "beta", "tempering_log_likelihood": "log_likelihood",
             "tempering_swap_prob": "swap_prob", "tempering_index": "index",
             "tempering_round_trips": "round_trips_total"}
    dims = {"tempering_beta": "temperature", "tempering_log_likelihood": "temperature",
            "tempering_index": "temperature", "tempering_swap_prob": "pair"}
    group = {}
    for old, new in names.items():
        var = stats[old]
        extra = [d for d in var.dims if d not in ("chain", "draw")]
        if extra:
            var = var.rename({extra[0]: dims[old]})
        group[new] = var
    ds = xr.Dataset(group)
    n = ds.sizes["temperature"]
    ds = ds.assign_coords(temperature=np.arange(n), pair=np.arange(n - 1))
    acceptance = ds["swap_prob"].mean("draw", skipna=True)
    ds["ladder"] = ds["beta"].isel(draw=-1)
    ds["swap_acceptance"] = acceptance
    rejection = 1.0 - acceptance.fillna(0.0)
    ds["cumulative_barrier"] = xr.DataArray(
        np.stack([cumulative_barrier(r) for r in rejection.values]),
        dims=("chain", "temperature"))
    ds["barrier"] = rejection.sum("pair")
    ds["swaps_accepted"] = xr.DataArray(
        np.stack([swaps_accepted(ds["index"].values[c], ds["swap_prob"].values[c])
                  for c in range(ds.sizes["chain"])]), dims=("chain", "pair"))
    trips = ds["round_trips_total"]
    ds["round_trips"] = trips.isel(draw=-1) - trips.isel(draw=0)
    ds.attrs.update({
        "description": "non-reversible parallel tempering (Syed et al. 2022): ladder, "
                       "log-likelihood of each temperature's state, swaps, round trips",
        "tuning_steps": int(tune),
    })
    dt["sample_stats"] = xr.DataTree(stats.drop_vars(list(names)))
    dt[TEMPERING_GROUP] = xr.DataTree(ds)
    return dt


def swaps_accepted(index: np.ndarray, swap_prob: np.ndarray) -> np.ndarray:
    """The swaps each neighbouring pair made, from one chain's index process.

    ``index`` (draws, N): the state at each temperature after each iteration's swaps;
    ``swap_prob`` (draws, N-1): NaN where the pair was not tried. A pair tried at draw
    ``t`` swapped when the state below it is the one that was above it at ``t - 1``.
    Unlike the mean acceptance probability, this shows a pair no state crosses: the
    acceptance probability can be high there while the swaps only exchange states that
    came from the same side (the power posteriors change phase between the two
    temperatures, and each replica's own moves do not leave the phase its state is in).
    """
    index = np.asarray(index)
    tried = ~np.isnan(np.asarray(swap_prob, dtype=float))[1:]
    moved = (index[1:, :-1] == index[:-1, 1:]) & (index[1:, :-1] != index[:-1, :-1])
    return (tried & moved).sum(axis=0).astype(np.int64)


def describe_tempering(dt: xr.DataTree) -> list[str]:
    """Lines telling how a tempered fit's states travelled along the ladder: the barrier
    Lambda against the temperatures it calls for (about ``2 Lambda``, the rule of thumb
    of Syed et al. 2022), the round trips, and the pairs no state crossed."""
    if TEMPERING_GROUP not in dt.children:
        return []
    g = dt[TEMPERING_GROUP].to_dataset()
    n = g.sizes["temperature"]
    barrier = g["barrier"].values
    trips = g["round_trips"].values.astype(int)
    acc = g["swap_acceptance"].values
    lines = [f"tempering: {n} temperatures, swap acceptance {np.nanmin(acc):.2f}-"
             f"{np.nanmax(acc):.2f}, barrier Lambda {np.nanmax(barrier):.1f} (about "
             f"{int(np.ceil(2 * np.nanmax(barrier)))} temperatures suggested), round trips "
             f"per chain {', '.join(str(t) for t in trips)}"]
    crossed = g["swaps_accepted"].values  # (chain, pair)
    ladder = g["ladder"].values
    loglik = g["log_likelihood"].values
    walls = []
    for c in range(crossed.shape[0]):
        for i in np.flatnonzero(crossed[c] == 0):
            lo, hi = np.nanmedian(loglik[c, :, i]), np.nanmedian(loglik[c, :, i + 1])
            walls.append(f"chain {c}: beta {ladder[c, i]:.3g} to {ladder[c, i + 1]:.3g} "
                         f"(median log-likelihood {lo:.0f} to {hi:.0f})")
    if walls:
        lines.append("  no state crossed " + "; ".join(walls[:4])
                     + ("; ..." if len(walls) > 4 else "")
                     + ": the power posteriors change phase there, the states above never "
                     "came from the prior, and more temperatures do not carry them across "
                     "(docs/benchmarks.md, 'Tempering and evidence')")
    return lines
