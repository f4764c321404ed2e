"""``pm.sample``'s per-draw callback: Ctrl-C between draws, and draws to a trace folder.

PyMC catches ``KeyboardInterrupt`` around each chain; when chains run one after another
(``cores=1``) the next chain then starts as if nothing had happened, so one Ctrl-C only
ends the chain being sampled. ``fit`` instead lets the first Ctrl-C only set a flag
(:func:`inference.interrupt.stop_requested`) and :class:`SampleCallback`, called by PyMC
after every recorded draw, raises ``KeyboardInterrupt`` there: between two draws (never
inside a compiled kernel), and again at the first draw of every later chain, so no chain
goes on. With parallel chains the callback runs in the parent process, which then stops
every worker.

With ``trace=path`` the same callback writes each chain's kept draws and its last point
into the trace folder (:mod:`inference.trace_store`, created at the first draw, when the
shapes of the draws and statistics are known).
"""

from __future__ import annotations

import numpy as np
from pymc.util import is_transformed_name

from inference.sampling_core import create_trace, merged_stats, store_row
from inference.trace_store import FLUSH_SECONDS, ChainState, TraceStore

__all__ = ["SampleCallback"]


class SampleCallback:
    """``callback(trace, draw)`` for ``pm.sample``.

    ``stop``: the :class:`~inference.interrupt.StopFlag` to honour; ``user``: the user's
    own callback, called first; ``trace``: the trace folder (checked already) or None;
    ``resume_states``: each chain's stored state when continuing a trace (the stored
    run is extended from draw ``state.completed`` on; draws past the requested number,
    made because ``pm.sample`` gives every chain the same length, are not stored).
    """

    def __init__(self, model, stop, *, user=None, trace=None, sizes=None,
                 flush_seconds=None, resume_states=None, store=None):
        self.model = model
        self.stop = stop
        self.user = user
        self.path = trace
        self.sizes = sizes or {}
        self.flush_seconds = FLUSH_SECONDS if flush_seconds is None else float(flush_seconds)
        self.states = resume_states
        self.store = store
        self._chains: dict[int, dict] = {}
        self._started: set[int] = set()

    def __call__(self, trace, draw):
        # a draw exists: from here on a Ctrl-C keeps the draws made (before, while PyMC
        # compiles, it stops the run at once)
        self.stop.arm()
        if self.user is not None:
            self.user(trace=trace, draw=draw)
        if self.stop.is_set() and draw.chain not in self._started:
            # a chain that starts after the Ctrl-C: its first draw is not stored
            raise KeyboardInterrupt
        self._started.add(draw.chain)
        if self.path is not None:
            self._record(trace, draw)
        if self.stop.is_set():
            raise KeyboardInterrupt

    # ------------------------------------------------------------------ recording
    def _names(self, trace) -> list[str]:
        return [n for n in trace.varnames if not is_transformed_name(n)]

    def _record(self, trace, draw):
        chain = self._chains.get(draw.chain)
        if chain is None:
            if self.store is None:
                self.store = self._create(trace, draw)
            state = self.states[draw.chain] if self.states else None
            offset = state.completed if state is not None else 0
            chain = self._chains[draw.chain] = {
                "writer": self.store.writer(draw.chain, offset=offset,
                                            flush_seconds=self.flush_seconds,
                                            start_seconds=state.seconds if state else 0.0),
                "values": {}, "stats": {}, "completed": 0, "tuned": 0, "point": None,
                "room": self.store.draws - offset,
            }
        chain["point"] = draw.point
        if draw.tuning:
            chain["tuned"] += 1
        elif chain["completed"] < chain["room"]:
            k, room = chain["completed"], chain["room"]
            idx = trace.draw_idx - 1
            store_row(chain["values"], {n: trace.samples[n][idx] for n in self._names(trace)},
                      k, room)
            store_row(chain["stats"], merged_stats(draw.stats), k, room)
            chain["completed"] += 1
        if chain["writer"].due():
            self._flush(chain)

    def _flush(self, chain):
        if chain["point"] is None:
            return
        chain["writer"].flush(chain["values"], chain["stats"], chain["completed"],
                              chain["tuned"], chain["point"], [])

    def _create(self, trace, draw) -> TraceStore:
        model = self.model
        posterior = {}
        for name in self._names(trace):
            value = np.asarray(trace.samples[name][0])
            posterior[name] = (value.dtype, value.shape,
                               tuple(model.named_vars_to_dims.get(name, ())))
        stats = {k: (np.asarray(v).dtype, np.shape(v))
                 for k, v in merged_stats(draw.stats).items()}
        value_vars = {k: [list(np.shape(v)), str(np.asarray(v).dtype)]
                      for k, v in draw.point.items()}
        return create_trace(self.path, model, posterior=posterior, stats=stats,
                            value_vars=value_vars, steps=["pm.sample"], **self.sizes)

    def finish(self, interrupted: bool) -> None:
        """Write what is left of every chain and the run's status."""
        for chain in self._chains.values():
            if chain["completed"] > chain["writer"].flushed or chain["point"] is not None:
                self._flush(chain)
        if self.store is not None:
            done = all(c >= self.store.draws for c in self.store.completed())
            self.store.set_status("complete" if done and not interrupted else "interrupted")


def resume_initvals(model, states: list[ChainState | None]) -> list[dict | None]:
    """Each chain's stored point as ``pm.sample`` ``initvals`` (free variables by name, on
    their own scale), None for a chain that stored nothing."""
    fn = _constrained_fn(model)
    out = []
    for state in states:
        if state is None:
            out.append(None)
            continue
        values = fn(state.point)
        out.append({rv.name: np.asarray(v) for rv, v in zip(model.free_RVs, values,
                                                             strict=True)})
    return out


def _constrained_fn(model):
    outs = model.replace_rvs_by_values(list(model.free_RVs))
    return model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore",
                            point_fn=True)
