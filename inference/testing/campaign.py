"""Getting-it-right campaigns: many seeds x many steps, one task per run.

A planted-bug campaign measures a getting-it-right test's false-alarm rate (the correct
step over many seeds) and its power (each twin over the same seeds). Every run is
independent, so :func:`getting_it_right_campaign` submits one task per (case, seed) to
any ``concurrent.futures.Executor`` (a process pool, a Dask ``Client.get_executor()``);
each run is seeded by its own seed alone, so the results are the serial ones.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pymc as pm

from inference.testing.gir import GIRResult, run_pickled
from pp_models.validation import check_executor

__all__ = ["CampaignResult", "getting_it_right_campaign"]


@dataclass(frozen=True)
class CampaignResult:
    """The runs of a campaign: ``results[(case, seed)]`` is a :class:`GIRResult`."""

    results: dict[tuple[str, int], GIRResult]
    cases: tuple[str, ...]
    seeds: tuple[int, ...]

    def smallest_p(self) -> pd.DataFrame:
        """Smallest Holm-adjusted p-value of every run (rows: cases, columns: seeds)."""
        cols = [f"{c}_holm" for c in ("p_mean", "p_rank", "p_ks")]
        table = {case: [float(np.nanmin(self.results[(case, s)].table[cols].to_numpy()))
                        for s in self.seeds] for case in self.cases}
        return pd.DataFrame.from_dict(table, orient="index", columns=list(self.seeds))

    def rejections(self, alpha: float = 0.01) -> pd.Series:
        """How many seeds each case was rejected at (family-wise) level ``alpha``."""
        return pd.Series({case: sum(not self.results[(case, s)].passed(alpha)
                                    for s in self.seeds) for case in self.cases},
                         name=f"rejections of {len(self.seeds)}")


def getting_it_right_campaign(
    cases: Mapping[str, Mapping],
    seeds: Sequence[int],
    *,
    executor=None,
) -> CampaignResult:
    """:func:`~inference.testing.getting_it_right` for every case at every seed.

    Parameters
    ----------
    cases : mapping name -> dict of ``getting_it_right`` arguments
        Each dict holds ``model`` (a ``pymc.Model``, or a function of no argument that
        builds one: built afresh for every run, as a serial loop would) and the other
        arguments (``data_vars``, ``step``, ``n_samples``, ...) except ``random_seed``.
        A step given as a callable is built on each run's model.
    seeds : sequence of int
        The ``random_seed`` of the runs; every case runs at every seed.
    executor : concurrent.futures.Executor, optional
        Where the runs go, one task per (case, seed); ``None``: here, one after the
        other. Each case is pickled once for all its seeds.

    Returns
    -------
    CampaignResult
        ``rejections(alpha)`` counts the rejected seeds per case;
        ``smallest_p()`` gives every run's smallest adjusted p-value.
    """
    if not isinstance(cases, Mapping) or not cases:
        raise TypeError("cases must be a non-empty dict of name -> getting_it_right arguments")
    for name, case in cases.items():
        if not isinstance(case, Mapping) or "model" not in case or "data_vars" not in case:
            raise TypeError(f"cases[{name!r}] must be a dict with 'model' and 'data_vars' "
                            "(and the other getting_it_right arguments)")
        model = case["model"]
        if not (isinstance(model, pm.Model) or isinstance(model, Callable)):
            raise TypeError(f"cases[{name!r}]['model'] must be a pymc.Model or a function "
                            f"building one, got {type(model).__name__}")
        if "random_seed" in case:
            raise ValueError(f"cases[{name!r}]: random_seed is set by the campaign's seeds")
    if isinstance(seeds, str | bytes) or not isinstance(seeds, Sequence | range) or not seeds:
        raise TypeError("seeds must be a non-empty sequence of int")
    seeds = tuple(seeds)
    if not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"seeds must be integers, got {seeds!r}")
    if executor is not None:
        executor = check_executor(executor)

    from inference.executors import pickled

    payloads = {}
    for name, case in cases.items():
        case = dict(case)
        model = case.pop("model")
        payloads[name] = pickled((model, case), f"cases[{name!r}]")
    results: dict[tuple[str, int], GIRResult] = {}
    futures = {}
    for name in cases:
        for seed in seeds:
            key = (name, int(seed))
            if executor is None:
                results[key] = run_pickled(payloads[name], random_seed=int(seed))
            else:
                futures[key] = executor.submit(run_pickled, payloads[name],
                                               random_seed=int(seed))
    for key, future in futures.items():
        results[key] = future.result()
    return CampaignResult(results, tuple(cases), tuple(int(s) for s in seeds))
