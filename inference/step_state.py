"""Step state as plain data: what a trace's commit record holds of each step.

A chain stored in a trace (:mod:`inference.trace_store`) continues exactly when it is
resumed because every step hands over its state (``chain_state``) and takes it back
(``restore_chain_state``). The commit record is JSON beside ``np.savez`` arrays, read
with ``allow_pickle=False``: a step's state is therefore plain data (dicts with string
keys, lists, numbers, strings, ``None``), never a pickle, which would run code named by
the file when it is read and breaks when a class moves between releases.

:func:`to_data` / :func:`from_data` carry the values plain JSON lacks, each as a dict
tagged ``"__type__"``: NumPy arrays (dtype, shape and the values; a float's JSON text is
its shortest round-tripping repr, so the values come back bit for bit), NumPy scalars,
tuples and dicts whose keys are not strings.

PyMC's steps keep their state in a ``sampling_state`` dataclass
(:class:`pymc.step_methods.state.DataClassState`), with nested dataclasses for the step
size and mass-matrix adaptation and a ``RandomGeneratorState`` named tuple for each
generator. :func:`sampling_state_to_data` stores its fields by name, leaving out the
frozen ones (the step's settings, which PyMC checks and never changes);
:func:`sampling_state_from_data` rebuilds the dataclass on the step's own current state
(its ``sampling_state``), so the classes come from the live step and not from the file.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from pymc.step_methods.state import DataClassState

__all__ = ["from_data", "sampling_state_from_data", "sampling_state_to_data", "to_data"]

_TAG = "__type__"


def to_data(value: Any) -> Any:
    """``value`` (nested dicts, lists, tuples, numbers, strings, ``None``, NumPy arrays
    and scalars) as JSON-able data; :func:`from_data` gives it back. Raises
    ``TypeError`` for anything else (a generator: store its ``bit_generator.state``)."""
    if isinstance(value, np.generic):
        # before the Python types: ``np.float64`` is a ``float`` and would come back one
        if value.dtype.kind not in "biuf":
            raise TypeError(f"step state: cannot store a scalar of dtype {value.dtype}")
        return {_TAG: "scalar", "dtype": value.dtype.str, "value": value.item()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biuf":
            raise TypeError(f"step state: cannot store an array of dtype {value.dtype}")
        return {
            _TAG: "ndarray",
            "dtype": value.dtype.str,
            "shape": list(value.shape),
            "data": value.ravel().tolist(),
        }
    if isinstance(value, tuple):
        return {_TAG: "tuple", "items": [to_data(v) for v in value]}
    if isinstance(value, list):
        return [to_data(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _TAG not in value:
            return {k: to_data(v) for k, v in value.items()}
        return {_TAG: "dict", "items": [[to_data(k), to_data(v)] for k, v in value.items()]}
    raise TypeError(f"step state: cannot store a {type(value).__name__} as plain data")


def from_data(data: Any) -> Any:
    """Undo :func:`to_data`."""
    if isinstance(data, list):
        return [from_data(v) for v in data]
    if not isinstance(data, dict):
        return data
    kind = data.get(_TAG)
    if kind is None:
        return {k: from_data(v) for k, v in data.items()}
    if kind == "ndarray":
        return np.array(data["data"], dtype=np.dtype(data["dtype"])).reshape(data["shape"])
    if kind == "scalar":
        return np.dtype(data["dtype"]).type(data["value"])
    if kind == "tuple":
        return tuple(from_data(v) for v in data["items"])
    if kind == "dict":
        return {from_data(k): from_data(v) for k, v in data["items"]}
    raise ValueError(f"step state: unknown stored type {kind!r}")


def _frozen(f: dataclasses.Field) -> bool:
    return bool(f.metadata.get("frozen", False))


def sampling_state_to_data(state: DataClassState) -> dict:
    """A PyMC ``sampling_state`` as plain data: its fields that are not frozen, by name
    (nested states and generator states field by field)."""
    return {
        f.name: _field_to_data(getattr(state, f.name))
        for f in dataclasses.fields(state)
        if not _frozen(f)
    }


def _field_to_data(value):
    if isinstance(value, DataClassState):
        return sampling_state_to_data(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        # a named tuple (PyMC's RandomGeneratorState): by field name
        return {name: to_data(getattr(value, name)) for name in value._fields}
    return to_data(value)


def sampling_state_from_data(data: dict, template: DataClassState) -> DataClassState:
    """The ``sampling_state`` stored by :func:`sampling_state_to_data`, rebuilt on
    ``template`` (the step's current ``sampling_state``): its classes and its frozen
    fields. Raises ``ValueError`` when the stored fields are not the template's."""
    fields = dataclasses.fields(template)
    stored = {f.name for f in fields if not _frozen(f)}
    if set(data) != stored:
        raise ValueError(
            f"step state: stored fields {sorted(data)} are not the fields "
            f"{sorted(stored)} of {type(template).__name__}"
        )
    values = {}
    for f in fields:
        current = getattr(template, f.name)
        values[f.name] = current if _frozen(f) else _field_from_data(data[f.name], current)
    return type(template)(**values)


def _field_from_data(data, current):
    if isinstance(current, DataClassState):
        return sampling_state_from_data(data, current)
    if isinstance(current, tuple) and hasattr(current, "_fields"):
        return type(current)(**{name: from_data(data[name]) for name in current._fields})
    return from_data(data)
