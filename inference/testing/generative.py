"""A PyMC model seen as a joint generator of (parameters, data).

Both getting-it-right and simulation-based calibration need the same pieces, compiled
once: prior draws of everything, fresh data given parameters, and conversion between the
random variables' values and PyMC's point dict (value variables, transformed space). This
module builds them from any model whose data variables are observed or free.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import pymc as pm
import pytensor
from pymc.model.fgraph import (
    ModelObservedRV,
    fgraph_from_model,
    model_free_rv,
    model_from_fgraph,
)
from pymc.pytensorf import compile as compile_pymc
from pymc.pytensorf import reseed_rngs, toposort_replace
from pymc.sampling.forward import compile_forward_sampling_function
from pytensor.graph.replace import graph_replace
from pytensor.tensor.random.type import RandomGeneratorType

from pp_models.model_info import attach_info, get_info

__all__ = ["GenerativeModel", "check_data_vars", "free_data_model"]


def free_data_model(model: pm.Model, data_vars: Sequence[str]) -> pm.Model:
    """A copy of ``model`` in which the observed variables ``data_vars`` are free.

    Free data variables carry no value transform, so their entry in a point dict is the
    data itself. The zoo information a factory attached is carried over (its step hints
    are resolved against the copy by name).
    """
    observed = [name for name in data_vars if model[name] in model.observed_RVs]
    if not observed:
        return model
    fgraph, memo = fgraph_from_model(model)
    replacements = []
    for name in observed:
        node_var = memo[model[name]]
        op = node_var.owner.op
        assert isinstance(op, ModelObservedRV)
        rv = node_var.owner.inputs[0]
        value = rv.type(name=name)
        replacements.append((node_var, model_free_rv(rv, value, None, op.name, *op.dims)))
    toposort_replace(fgraph, tuple(replacements))
    new = model_from_fgraph(fgraph, mutate_fgraph=True)
    info = get_info(model)
    if info is not None:
        attach_info(new, replace(info))
    return new


class GenerativeModel:
    """Compiled forward and conversion functions for a model with free data variables.

    Parameters
    ----------
    model : pymc.Model
        A generative model; observed ``data_vars`` are freed (see
        :func:`free_data_model`).
    data_vars : sequence of str
        The names of the data variables.

    Attributes
    ----------
    model : pymc.Model
        The model with the data variables free.
    param_names, data_names : list of str
        Random-variable names of the parameters (every other free variable) and data.
    """

    def __init__(self, model: pm.Model, data_vars: Sequence[str]):
        self.model = free_data_model(model, data_vars)
        m = self.model
        self.data_names = list(data_vars)
        self.param_names = [rv.name for rv in m.free_RVs if rv.name not in self.data_names]
        if not self.param_names:
            raise ValueError("the model has no free parameters besides data_vars")
        free_rvs = list(m.free_RVs)
        self._free_names = [rv.name for rv in free_rvs]
        self._value_names = [m.rvs_to_values[rv].name for rv in free_rvs]
        self._params = [m[name] for name in self.param_names]
        self._data = [m[name] for name in self.data_names]
        # Everything jointly from the prior, and data given the parameters' values;
        # compiled on the first seed().
        self._prior_fn = None
        self._data_fn = None
        self._rngs: list = []
        # Random-variable values -> value-variable (transformed) values.
        placeholders = [rv.type() for rv in free_rvs]
        forward = []
        for rv, holder in zip(free_rvs, placeholders):
            transform = m.rvs_to_transforms.get(rv)
            forward.append(
                holder if transform is None else transform.forward(holder, *rv.owner.inputs)
            )
        forward = graph_replace(forward, dict(zip(free_rvs, placeholders)), strict=False)
        self._to_point_fn = pytensor.function(
            placeholders, forward, on_unused_input="ignore", mode=None
        )
        # Point -> random-variable values of the parameters.
        self._from_point_fn = m.compile_fn(
            m.replace_rvs_by_values(self._params),
            inputs=m.value_vars,
            on_unused_input="ignore",
            point_fn=True,
        )

    def seed(self, rng: np.random.Generator) -> None:
        """Seed the random functions from ``rng`` (compiling them the first time only)."""
        if self._prior_fn is None:
            self._prior_fn = compile_pymc(inputs=[], outputs=self._params + self._data)
            # Freezing the parameters makes them inputs even when they depend on shared
            # dims or data, which PyMC would otherwise deem volatile and redraw.
            self._data_fn, volatile = compile_forward_sampling_function(
                outputs=self._data,
                vars_in_trace=self._params,
                basic_rvs=self.model.basic_RVs,
                freeze_vars=set(self._params),
            )
            redrawn = [p.name for p in self._params if p in volatile]
            if redrawn:
                raise RuntimeError(f"data would be drawn with fresh {redrawn}, not given ones")
            self._rngs = [
                v
                for fn in (self._prior_fn, self._data_fn)
                for v in fn.get_shared()
                if isinstance(v.type, RandomGeneratorType)
            ]
        reseed_rngs(self._rngs, int(rng.integers(2**63)))

    def _require_seeded(self):
        if self._prior_fn is None:
            raise RuntimeError("call seed(rng) first")

    def draw_prior(self) -> dict[str, np.ndarray]:
        """One joint draw of every parameter and data variable, by name."""
        self._require_seeded()
        values = self._prior_fn()
        return dict(zip(self.param_names + self.data_names, (np.asarray(v) for v in values)))

    def draw_data(self, params: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Fresh data given parameter values (random-variable scale), by name."""
        self._require_seeded()
        inputs = {name: params[name] for name in self.param_names}
        values = self._data_fn(**inputs)
        if len(self._data) == 1 and not isinstance(values, list):
            values = [values]
        return dict(zip(self.data_names, (np.asarray(v) for v in values)))

    def to_point(self, values: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """PyMC's point dict (value-variable names, transformed) from RV values."""
        transformed = self._to_point_fn(*(values[name] for name in self._free_names))
        return {
            value_name: np.asarray(v)
            for value_name, v in zip(self._value_names, transformed)
        }

    def params_from_point(self, point: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Parameter values (random-variable scale) from a point dict."""
        values = self._from_point_fn(point)
        return dict(zip(self.param_names, (np.asarray(v) for v in values)))

    def data_value_names(self) -> list[str]:
        """Point-dict keys of the data variables (no transform: their RV names)."""
        return [self.model.rvs_to_values[rv].name for rv in self._data]


def check_data_vars(model: pm.Model, data_vars) -> list[str]:
    """``data_vars`` as a list of names of random variables of ``model``; ``ValueError``
    naming what is missing (getting-it-right and SBC validate their argument here)."""
    if isinstance(data_vars, str):
        data_vars = [data_vars]
    data_vars = list(data_vars)
    if not data_vars:
        raise ValueError("data_vars must name at least one data variable")
    rv_names = {rv.name for rv in model.free_RVs + model.observed_RVs}
    missing = [v for v in data_vars if v not in rv_names]
    if missing:
        raise ValueError(
            f"data_vars: {', '.join(map(repr, missing))} not a random variable of the model "
            f"(its random variables: {', '.join(sorted(rv_names))})"
        )
    return data_vars
