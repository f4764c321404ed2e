"""Base class for the zoo's Gibbs steps: a thin layer over PyMC's ``BlockedStep``.

What it adds to ``BlockedStep``:

- ``vars`` may be given as random variables or value variables; they are stored as
  value variables, as PyMC's samplers expect;
- ``self.rng`` is a ``numpy.random.Generator`` that PyMC re-seeds per chain through
  ``setup_chain`` (PyMC 6), so every draw a step makes is reproducible from
  ``random_seed`` and independent across chains;
- :meth:`compile_point_fn` turns an expression written in terms of random variables
  into a function of PyMC's point dict (keyed by value-variable names);
- :meth:`from_model`, the constructor ``inference.fit`` calls with a factory's
  :class:`~pp_models.model_info.StepHint` options;
- :meth:`competence` claims the variables whose distribution is in ``distributions``;
- :func:`terms_depending_on` finds the terms of the joint log-density a variable enters
  (its Markov blanket's factors), which a step checks before it claims the variable:
  ``rvs, potentials = terms_depending_on(model, rv)`` and then refuse anything the
  step's conditional does not account for.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence
from pymc.util import get_random_generator
from pytensor.graph.basic import Variable

__all__ = ["ZooGibbsStep", "depends_directly", "value_vars_of"]


def value_vars_of(model: pm.Model, variables: Sequence[Variable | str]) -> list[Variable]:
    """Map random variables, value variables or their names to the model's value variables."""
    out = []
    values_by_name = {v.name: v for v in model.value_vars}
    for var in variables:
        if isinstance(var, str):
            if var in values_by_name:
                out.append(values_by_name[var])
                continue
            if var not in model.named_vars:
                raise ValueError(f"vars: {var!r} is not a variable of the model")
            var = model.named_vars[var]
        if var in model.rvs_to_values:
            out.append(model.rvs_to_values[var])
        elif var in model.value_vars:
            out.append(var)
        else:
            raise ValueError(f"vars: {var} is not a free random variable of the model")
    return out


class ZooGibbsStep(BlockedStep):
    """A Gibbs step of the zoo.

    Subclasses set ``name`` (the registry key), ``stats_dtypes_shapes`` and, when they
    should claim variables automatically, ``distributions`` (the ``RandomVariable`` /
    ``SymbolicRandomVariable`` Op classes they update exactly). They implement
    ``step(point) -> (point, [stats])`` and must not mutate the incoming point.
    """

    name: ClassVar[str] = "zoo_gibbs"
    stats_dtypes_shapes: ClassVar[dict[str, tuple[Any, Any]]] = {}
    distributions: ClassVar[tuple[type, ...]] = ()

    #: Attributes besides ``rng`` that carry a chain's state from one draw to the next
    #: (stored in a trace so a resumed chain continues exactly, see :meth:`chain_state`).
    chain_state_attributes: ClassVar[tuple[str, ...]] = ()

    def __init__(self, vars, *, model=None, rng=None, blocked: bool = True):
        self.model = pm.modelcontext(model)
        self.vars = value_vars_of(self.model, vars)
        self.var_names = [v.name for v in self.vars]
        self.rng = get_random_generator(rng)

    def chain_state(self) -> dict:
        """The step's own state in a chain, as JSON-able values: its random generator's
        state and the ``chain_state_attributes``. With the point (the variables' values)
        it is everything the next draw depends on, so :meth:`restore_chain_state` after
        ``setup_chain`` continues a stored chain exactly. State a step rebuilds from the
        point (e.g. LDA's count matrices from ``z``) is not part of it."""
        state = {"rng": self.rng.bit_generator.state}
        state.update({name: getattr(self, name) for name in self.chain_state_attributes})
        return state

    def restore_chain_state(self, state: dict) -> None:
        """Undo :meth:`chain_state` (call after ``setup_chain``)."""
        self.rng.bit_generator.state = state["rng"]
        for name in self.chain_state_attributes:
            if name in state:
                setattr(self, name, state[name])

    @classmethod
    def from_model(cls, model: pm.Model, var_names: Sequence[str], **options):
        """Build the step for ``var_names`` of ``model`` with a factory's options."""
        return cls(list(var_names), model=model, **options)

    @classmethod
    def competence(cls, var, has_grad):
        op = getattr(getattr(var, "owner", None), "op", None)
        if cls.distributions and isinstance(op, cls.distributions):
            return Competence.IDEAL
        return Competence.INCOMPATIBLE

    def compile_point_fn(self, outputs, **kwargs):
        """Compile ``outputs`` (in terms of random variables) as a function of a point.

        The returned function takes PyMC's point dict (value-variable names; transformed
        variables under their transformed names) and returns numpy arrays.
        """
        single = isinstance(outputs, Variable)
        outs = [outputs] if single else list(outputs)
        replaced = self.model.replace_rvs_by_values(outs)
        fn = self.model.compile_fn(
            replaced[0] if single else replaced,
            inputs=self.model.value_vars,
            on_unused_input="ignore",
            point_fn=True,
            **kwargs,
        )
        return fn

    @staticmethod
    def updated(point: dict[str, np.ndarray], **values: np.ndarray) -> dict[str, np.ndarray]:
        """A copy of ``point`` with ``values`` replaced (the caller's dict is untouched)."""
        new = dict(point)
        new.update(values)
        return new


def depends_directly(model: pm.Model, graphs, var) -> bool:
    """Whether ``var`` is an ancestor of ``graphs`` other than through another random
    variable of ``model`` (the dependence that enters a conditional density)."""
    from pytensor.graph.traversal import ancestors

    graphs = [graphs] if isinstance(graphs, Variable) else list(graphs)
    blockers = [rv for rv in model.basic_RVs if rv is not var]
    return any(a is var for a in ancestors(graphs, blockers=blockers))


def terms_depending_on(model: pm.Model, var) -> tuple[list[Variable], list[Variable]]:
    """The terms of ``model``'s joint log-density that depend directly on ``var``.

    Returns ``(rvs, potentials)``: the random variables other than ``var`` whose
    distribution parameters involve ``var`` (:func:`depends_directly`: not merely
    through another random variable), and the potentials that involve it. A Gibbs step
    whose conditional accounts only for some factors (e.g. a CRP prior and one collapsed
    likelihood) checks here that ``var`` enters nothing else, before any sampling.
    """
    rvs = []
    for rv in model.basic_RVs:
        if rv is var:
            continue
        if depends_directly(model, rv.owner.op.dist_params(rv.owner), var):
            rvs.append(rv)
    potentials = [pot for pot in model.potentials if depends_directly(model, pot, var)]
    return rvs, potentials
