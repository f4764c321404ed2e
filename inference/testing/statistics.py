"""Test statistics of a joint state, and the default set for getting-it-right / SBC."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import xarray as xr

from pp_models.model_info import get_info

__all__ = [
    "Statistic",
    "default_statistics",
    "derived_statistics",
    "evaluate_statistics",
    "holm",
]

#: A statistic maps the joint state (variable name -> value) to a scalar.
Statistic = Callable[[Mapping[str, np.ndarray]], float]

_MAX_ELEMENTWISE = 4


def default_statistics(
    param_shapes: Mapping[str, tuple[int, ...]], data_names: Sequence[str]
) -> dict[str, Statistic]:
    """Every scalar parameter and its square; means (and mean squares) of larger ones.

    Parameters of up to four elements contribute each element and its square; larger
    ones their mean and mean square; each data variable its mean and mean square (Geweke
    2004 §3 uses first and second moments in the same way).
    """
    stats: dict[str, Statistic] = {}
    for name, shape in param_shapes.items():
        size = int(np.prod(shape)) if shape else 1
        if size <= _MAX_ELEMENTWISE:
            for flat in range(size):
                label = name if not shape else f"{name}[{_unravel(flat, shape)}]"
                stats[label] = _element(name, flat)
                stats[f"{label}^2"] = _element_square(name, flat)
        else:
            stats[f"mean({name})"] = _mean(name)
            stats[f"mean({name}^2)"] = _mean_square(name)
    for name in data_names:
        stats[f"mean({name})"] = _mean(name)
        stats[f"mean({name}^2)"] = _mean_square(name)
    return stats


def evaluate_statistics(
    statistics: Mapping[str, Statistic], state: Mapping[str, np.ndarray]
) -> np.ndarray:
    """Values of every statistic at ``state``; a non-scalar result is an error."""
    out = np.empty(len(statistics))
    # A zoo factory's derived statistics share one xarray view of the state, and the
    # elements of a vector-valued one one evaluation: building a Dataset per statistic
    # per state would be most of getting-it-right's time on the finite mixture.
    derived_values: dict = {}
    for i, (name, fn) in enumerate(statistics.items()):
        if isinstance(fn, _DerivedAt):
            value = np.asarray(fn.at(state, derived_values))
        else:
            value = np.asarray(fn(state))
        if value.size != 1:
            raise ValueError(
                f"statistics: {name!r} must return a scalar, got shape {value.shape}"
            )
        out[i] = float(value.reshape(()))
    return out


def _unravel(flat: int, shape: tuple[int, ...]) -> str:
    return ",".join(str(i) for i in np.unravel_index(flat, shape))


# Module-level factories (not lambdas) so the statistics pickle for process executors.
class _element:
    def __init__(self, name, flat):
        self.name, self.flat = name, flat

    def __call__(self, state):
        return np.asarray(state[self.name], dtype=float).reshape(-1)[self.flat]


class _element_square(_element):
    def __call__(self, state):
        return super().__call__(state) ** 2


class _mean:
    def __init__(self, name):
        self.name = name

    def __call__(self, state):
        return np.asarray(state[self.name], dtype=float).mean()


class _mean_square(_mean):
    def __call__(self, state):
        return np.mean(np.asarray(state[self.name], dtype=float) ** 2)


def derived_statistics(model, state) -> dict[str, Statistic]:
    """The label-invariant statistics a zoo factory declares (``ZooModelInfo.derived``),
    as statistics of one joint state (one per element of a vector-valued one); those that
    cannot be evaluated on ``state`` are left out."""
    info = get_info(model)
    out: dict[str, Statistic] = {}
    for derived in info.derived if info else ():
        try:
            value = np.asarray(_DerivedAt(derived.function, None)(state))
        except Exception:
            continue
        for flat in range(value.size):
            label = derived.name if value.size == 1 else f"{derived.name}[{flat}]"
            out[label] = _DerivedAt(derived.function, None if value.size == 1 else flat)
    return out


class _DerivedAt:
    """A posterior-level DerivedStatistic evaluated at one joint state."""

    def __init__(self, function: Callable, flat: int | None):
        self.function, self.flat = function, flat

    def __call__(self, state):
        return self.at(state, {})

    def at(self, state, values: dict):
        """The statistic at ``state``; ``values`` holds what other statistics of the same
        state computed (the state's Dataset under ``None``, each function's values under
        the function), and is filled with what this one computes."""
        if self.function not in values:
            if None not in values:
                values[None] = xr.Dataset(
                    {
                        k: (("chain", "draw", *[f"{k}_{i}" for i in range(np.ndim(v))]),
                            np.asarray(v)[None, None])
                        for k, v in state.items()
                    }
                )
            values[self.function] = np.asarray(self.function(values[None])).reshape(-1)
        value = values[self.function]
        return value if self.flat is None else value[self.flat]


def holm(pvalues: np.ndarray) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values."""
    n = pvalues.size
    order = np.argsort(pvalues)
    adjusted = np.empty(n)
    running = 0.0
    for rank, idx in enumerate(order):
        running = max(running, min(1.0, (n - rank) * pvalues[idx]))
        adjusted[idx] = running
    return adjusted
