"""Whether a run's draws fit in the memory this machine has, checked by ``ppzoo fit``
before it builds the samplers.

``fit`` returns every chain's draws of the recorded variables in memory as 8-byte
numbers (a ``trace=`` folder keeps them on disk as well, not instead). A run asking for
more than the machine has available would sample for hours and then be killed, or
swap the machine to a halt; :func:`check_draws_fit_in_memory` refuses it with the
figures instead. ``fit`` itself does not refuse: its buffers grow with the draws made,
so a Python caller may ask for more draws than fit and stop the run early (Ctrl-C).
"""

from __future__ import annotations

import os

import pymc as pm

from pp_models.model_info import get_info

__all__ = ["available_memory", "check_draws_fit_in_memory", "values_per_draw"]

#: Bytes per recorded number (float64 and int64 draws).
BYTES_PER_VALUE = 8


def check_draws_fit_in_memory(model: pm.Model, *, chains: int, draws: int,
                              var_names=None) -> None:
    """``ValueError`` naming ``chains`` and ``draws`` when ``chains x draws`` draws of
    the recorded variables (:func:`values_per_draw`) need more bytes than
    :func:`available_memory`; nothing where the available memory cannot be read."""
    available = available_memory()
    if available is None:
        return
    values = values_per_draw(model, var_names)
    need = chains * draws * values * BYTES_PER_VALUE
    if need > available:
        raise ValueError(
            f"chains={chains} and draws={draws}: {values} recorded values per draw, "
            f"{BYTES_PER_VALUE} bytes each, need {need / 1e9:.3g} GB, more than the "
            f"{available / 1e9:.3g} GB of memory this machine has available; use fewer "
            "chains or draws (or record fewer variables with var_names)")


def values_per_draw(model: pm.Model, var_names=None) -> int:
    """Numbers ``fit`` records per draw of ``model``: those of ``var_names``, else of
    the variables the factory records (``ZooModelInfo.trace_var_names``), else of every
    free and deterministic variable. Lengths come from the variables' static shapes
    and the model's dimension lengths; an axis known only at run time counts 1, so the
    figure is a lower bound."""
    info = get_info(model)
    if var_names is None and info is not None and info.trace_var_names is not None:
        var_names = info.trace_var_names
    variables = ([model[name] for name in var_names] if var_names is not None
                 else [*model.free_RVs, *model.deterministics])
    total = 0
    for var in variables:
        dims = model.named_vars_to_dims.get(var.name) or (None,) * var.type.ndim
        size = 1
        for static, dim in zip(var.type.shape, dims, strict=True):
            length = static
            if length is None and dim is not None and dim in model.dim_lengths:
                length = _dimension_length(model.dim_lengths[dim])
            size *= length if length is not None else 1
        total += size
    return total


def _dimension_length(variable) -> int | None:
    """A model dimension's length (a shared or constant scalar), or None."""
    if hasattr(variable, "get_value"):
        return int(variable.get_value())
    data = getattr(variable, "data", None)
    return None if data is None else int(data)


def available_memory() -> int | None:
    """Bytes of memory available to a new allocation: Linux's ``MemAvailable``, else the
    free physical pages (``sysconf``), or None where neither can be read."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
