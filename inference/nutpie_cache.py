"""One nutpie compilation per model: ``fit``'s NUTS runs reuse the compiled model.

``pm.sample(nuts_sampler="nutpie")`` calls ``nutpie.compile_pymc_model`` on every call:
PyTensor builds the log density and its gradient, and Numba compiles two C callbacks
that it cannot cache on disk (they hold the data's addresses): seconds of CPU per call
even on a warm cache. ``fit`` often samples one model object several times (other seeds,
draws or chains; new data through ``pm.set_data`` in simulation-based calibration,
getting-it-right and prediction loops), so :func:`reusing_compiled_model` lets
``pm.sample`` keep doing everything it does (seeding, the progress bar, the DataTree it
builds) and only answers its ``compile_pymc_model`` call from a per-model cache:

- a hit needs the same request (``var_names``, initial values, backend) and an
  unchanged model: the same variables, transforms, initial values, coordinates, dims,
  data shapes and bound checks, and every shared variable the compiled functions read
  with its shape and dtype (and, for a 0-d one such as a dimension's length, its value);
- data whose values changed (same shapes) are handed to the compiled model with nutpie's
  ``with_data``, which only swaps the arrays the C callbacks read: no new compile;
- anything else (a changed model, a data shape, another backend, ``freeze_model``, or
  compile options the cache does not know) compiles as ``pm.sample`` would.

The compiled functions are the ones a new compile would make from the same graph and
data, so a seed gives the same draws on a hit as on a miss.

nutpie is reached through its module attribute, which ``pm.sample`` looks up at call
time; the wrapper installed for the duration of the ``with`` block answers only the
calls made for the model of the block in the same thread or task (a context variable)
and passes every other call on unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from dataclasses import dataclass

import numpy as np
import pymc as pm
from pytensor.graph.basic import Variable
from pytensor.tensor.sharedvar import SharedVariable

from inference.progress import compiling
from inference.sampling_core import model_cache

__all__ = ["compiled_model", "model_signature", "reusing_compiled_model"]

#: ``compile_pymc_model`` options the cache understands (what ``pm.sample`` passes by
#: default); with any other one the call compiles anew.
_CACHEABLE_OPTIONS = frozenset({"var_names", "backend", "initial_points"})
_CACHE_KEY = "nutpie_compiled"


@dataclass
class _Request:
    model: pm.Model
    progressbar: bool


@dataclass
class _Entry:
    options: tuple
    signature: tuple
    compiled: object  # nutpie.compile_pymc.CompiledPyMCModel


_ACTIVE: contextvars.ContextVar[_Request | None] = contextvars.ContextVar(
    "pp_models_nutpie_request", default=None)
_LOCK = threading.Lock()
_installed = {"users": 0, "original": None}


@contextlib.contextmanager
def reusing_compiled_model(model: pm.Model, *, progressbar: bool = False):
    """Within the block, ``pm.sample(model=model, nuts_sampler="nutpie")`` compiles
    ``model`` only if no compiled version of it (for the same request) is cached.

    ``progressbar`` shows ``compiling ...`` while a miss compiles (after a second).
    """
    token = _ACTIVE.set(_Request(model, bool(progressbar)))
    _install()
    try:
        yield
    finally:
        _uninstall()
        _ACTIVE.reset(token)


def _install() -> None:
    import nutpie

    with _LOCK:
        if _installed["users"] == 0:
            _installed["original"] = nutpie.compile_pymc_model
            nutpie.compile_pymc_model = _compile_pymc_model
        _installed["users"] += 1


def _uninstall() -> None:
    import nutpie

    with _LOCK:
        _installed["users"] -= 1
        if _installed["users"] == 0:
            if nutpie.compile_pymc_model is _compile_pymc_model:
                nutpie.compile_pymc_model = _installed["original"]
            _installed["original"] = None


def _compile_pymc_model(model, **options):
    """Stands in for ``nutpie.compile_pymc_model`` while a block is active."""
    original = _installed["original"]
    request = _ACTIVE.get()
    if (request is None or model is not request.model or not set(options) <= _CACHEABLE_OPTIONS
            or options.get("backend", "numba") != "numba"):
        return original(model, **options)
    return _cached(model, options, request.progressbar, original)


def compiled_model(model: pm.Model, *, progressbar: bool = False, **options):
    """``nutpie.compile_pymc_model(model, **options)`` answered from the same per-model
    cache (``options``: ``var_names``, ``initial_points``, ``backend="numba"``); for
    callers that drive nutpie themselves (:mod:`inference.tempering.nutpie_ladder`)."""
    import nutpie

    unknown = sorted(set(options) - _CACHEABLE_OPTIONS)
    if unknown or options.get("backend", "numba") != "numba":
        raise ValueError(f"compiled_model caches numba compiles with {sorted(_CACHEABLE_OPTIONS)}"
                         f" only, got {sorted(options)}")
    original = _installed["original"] or nutpie.compile_pymc_model
    return _cached(model, options, progressbar, original)


def _cached(model, options, progressbar, original):
    key = _options_key(options)
    signature = model_signature(model)
    cache = model_cache(model)
    entry = cache.get(_CACHE_KEY)
    if entry is not None and entry.options == key and entry.signature == signature:
        compiled = _with_current_data(entry.compiled)
        if compiled is not None:
            entry.compiled = compiled
            return compiled
    with compiling("the model for nutpie", enabled=progressbar):
        compiled = original(model, **options)
    if hasattr(compiled, "with_data") and hasattr(compiled, "shared_var_keys"):
        cache[_CACHE_KEY] = _Entry(key, signature, compiled)
    return compiled


def _with_current_data(compiled):
    """``compiled`` reading the shared variables' current values, or None if one of them
    changed in a way only a new compile handles (shape, dtype, a 0-d value, or a name
    ``with_data`` cannot address)."""
    updates = {}
    names = [var.name for var in compiled.shared_var_keys]
    for var, key in compiled.shared_var_keys.items():
        old = compiled.shared_data[key]
        new = np.asarray(var.get_value(borrow=True))
        if new.shape != old.shape or new.dtype != old.dtype:
            return None
        if np.array_equal(new, old, equal_nan=new.dtype.kind in "fc"):
            continue
        if new.ndim == 0 or var.name is None or names.count(var.name) != 1:
            # a 0-d shared value may be a dimension's length (shapes follow it)
            return None
        updates[var.name] = new
    return compiled.with_data(**updates) if updates else compiled


def _options_key(options: dict) -> tuple:
    var_names = options.get("var_names")
    initial = options.get("initial_points")
    return (
        options.get("backend", "numba"),
        None if var_names is None else tuple(var_names),
        None if initial is None else tuple(
            sorted(((_name(k), _fingerprint(v)) for k, v in initial.items()), key=repr)),
    )


def model_signature(model: pm.Model) -> tuple:
    """What ``compile_pymc_model`` reads from ``model`` besides shared values: variables
    are compared by identity (the tuple keeps them alive, so ids are not reused)."""
    return (
        tuple(model.free_RVs),
        tuple(model.value_vars),
        tuple(model.observed_RVs),
        tuple(model.rvs_to_values[rv] for rv in model.observed_RVs),
        tuple(model.deterministics),
        tuple(model.potentials),
        tuple(model.rvs_to_transforms.items()),
        tuple((rv, _fingerprint(v)) for rv, v in model.rvs_to_initial_values.items()),
        bool(model.check_bounds),
        tuple((name, None if values is None else tuple(values))
              for name, values in model.coords.items()),
        tuple((name, _fingerprint(length)) for name, length in model.dim_lengths.items()),
        tuple((name, tuple(dims)) for name, dims in model.named_vars_to_dims.items()),
        # a dimension without coordinates takes its length from data (X.shape[0])
        tuple((var, np.shape(var.get_value(borrow=True))) for var in model.data_vars),
    )


def _name(key) -> str:
    return key.name if isinstance(key, Variable) else str(key)


def _fingerprint(value):
    """A hashable, comparable stand-in for an initial value or a dimension length."""
    if isinstance(value, SharedVariable):
        return ("shared", value, _fingerprint(value.get_value(borrow=True)))
    if isinstance(value, Variable):
        return ("variable", value)
    if value is None or isinstance(value, str | bool | int | float):
        return (type(value).__name__, value)
    array = np.asarray(value)
    if array.dtype.kind == "O":
        return ("objects", array.shape, tuple(_fingerprint(v) for v in array.ravel()))
    return ("array", array.dtype.str, array.shape, array.tobytes())
