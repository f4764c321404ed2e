"""``fit``'s ``tempering=`` argument, checked before anything compiles."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from inference.tempering.ladder import initial_ladder
from pp_models.validation import check_int, check_ladder

__all__ = ["DEFAULT_TEMPERATURES", "TemperingOptions", "check_tempering"]

#: Temperatures of ``tempering=True``.
DEFAULT_TEMPERATURES = 8

_KEYS = ("n_temperatures", "ladder", "adapt", "prior_draws")


@dataclass(frozen=True)
class TemperingOptions:
    """What a tempered run does.

    Attributes
    ----------
    ladder : tuple of float
        The starting inverse temperatures, increasing from ``ladder[0]`` to 1.
    adapt : bool
        Update the ladder while tuning so neighbours reject swaps equally often
        (:func:`inference.tempering.ladder.update_schedule`).
    prior_draws : bool
        At ``beta = 0`` draw exactly from the prior (forward sampling) instead of running
        the steps.
    """

    ladder: tuple[float, ...]
    adapt: bool = True
    prior_draws: bool = True

    @property
    def n_temperatures(self) -> int:
        return len(self.ladder)


def check_tempering(value, name: str = "tempering") -> TemperingOptions | None:
    """``fit``'s ``tempering``: ``None``/``False`` (off), ``True`` (8 temperatures), an
    int ``N >= 2`` (N temperatures), a ladder (a sequence of inverse temperatures,
    strictly increasing, ending at 1), or a dict with keys ``n_temperatures`` or
    ``ladder``, ``adapt`` (default True), ``prior_draws`` (default True).

    Returns ``TemperingOptions`` or ``None``; ``TypeError``/``ValueError`` naming the
    argument otherwise.
    """
    if value is None or value is False:
        return None
    if value is True:
        return TemperingOptions(tuple(initial_ladder(DEFAULT_TEMPERATURES)))
    if isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_):
        n = check_int(value, name, minimum=2)
        return TemperingOptions(tuple(initial_ladder(n)))
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(_KEYS))
        if unknown:
            raise ValueError(f"{name}: unknown key(s) {unknown}; allowed: {list(_KEYS)}")
        if "ladder" in value and "n_temperatures" in value:
            raise ValueError(f"{name}: give n_temperatures or ladder, not both")
        if "ladder" in value:
            ladder = check_ladder(value["ladder"], f"{name}['ladder']")
        else:
            n = check_int(value.get("n_temperatures", DEFAULT_TEMPERATURES),
                          f"{name}['n_temperatures']", minimum=2)
            ladder = initial_ladder(n)
        flags = {}
        for key in ("adapt", "prior_draws"):
            flag = value.get(key, True)
            if not isinstance(flag, bool | np.bool_):
                raise TypeError(f"{name}['{key}'] must be True or False, got {flag!r}")
            flags[key] = bool(flag)
        return TemperingOptions(tuple(float(b) for b in ladder), **flags)
    if isinstance(value, list | tuple | np.ndarray):
        return TemperingOptions(tuple(float(b) for b in check_ladder(value, name)))
    raise TypeError(f"{name} must be True, a number of temperatures (>= 2), a ladder of "
                    f"inverse temperatures or a dict, got {value!r}")
