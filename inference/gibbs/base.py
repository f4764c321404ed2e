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
  step's conditional does not account for;
- the tempering contract (:attr:`ZooGibbsStep.can_temper`, :attr:`ZooGibbsStep.beta`,
  :meth:`ZooGibbsStep.set_inverse_temperature`, :meth:`ZooGibbsStep.tempering_error`,
  :meth:`ZooGibbsStep.replica`): how a step samples a power posterior for
  :mod:`inference.tempering`.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
import pymc as pm
from pymc.step_methods.compound import BlockedStep, Competence
from pymc.util import get_random_generator
from pytensor.graph.basic import Variable

from pp_models.validation import check_inverse_temperature

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

    Notes
    -----
    **Tempering.** A tempered run (:mod:`inference.tempering`) samples power posteriors

        p_beta(theta | X)  proportional to  p(theta) p(X | theta)^beta,  beta in [0, 1],

    where ``log p(X | theta)`` is the model's ``datalogp`` (PyMC's sum of the observed
    variables' log densities and the potentials; ``theta`` is every free variable, so for
    a model with explicit assignments ``z`` it is the complete-data likelihood
    ``p(X | z, ...)``, for a collapsed model the collapsed marginal ``p(X | z)``). The
    prior part is everything else (``varlogp``). A step takes part in this contract
    through:

    - :attr:`can_temper` (class attribute): ``True`` when the step's conditional uses
      :attr:`beta` as above (a collapsed step raises the collapsed marginal to beta, so
      the conditional of one item uses the predictive ratio to the power beta; a
      Metropolis-Hastings step multiplies its likelihood ratio by beta, its proposal may
      use beta too as long as the proposal probabilities are those of the proposal it
      made). A step updating variables that enter no likelihood term (e.g. a CRP
      concentration, which enters only the partition's prior) can temper trivially: it
      sets ``can_temper = True`` and ignores beta, after checking (as it must anyway)
      that its variables enter nothing else. Default ``False``: tempering refuses a
      model with such a step, naming it, before anything compiles;
    - :attr:`beta` (default 1.0, the posterior), set only through
      :meth:`set_inverse_temperature`, which validates it;
    - :meth:`tempering_error` (a class method, called on the factory's options before the
      step is built): why the step cannot temper with those options, or ``None``;
    - :meth:`replica`: an independent copy for another temperature of the same chain,
      sharing the compiled functions.

    At beta = 0 a tempered run draws exactly from the prior by forward sampling instead
    of calling the steps, so a step never needs to be efficient (only correct) at 0.
    """

    name: ClassVar[str] = "zoo_gibbs"
    stats_dtypes_shapes: ClassVar[dict[str, tuple[Any, Any]]] = {}
    distributions: ClassVar[tuple[type, ...]] = ()

    #: Whether the step sweeps on threads of its own (a Numba parallel kernel). The
    #: zoo's chain loop then runs the chains one after another in this process rather
    #: than in forked workers: a process forked after Numba's OpenMP threads started
    #: (GNU OpenMP, its default threading layer on Linux) dies when it launches them.
    uses_threads: bool = False

    #: Whether the step samples the power posterior at inverse temperature :attr:`beta`
    #: (class docstring, Notes).
    can_temper: ClassVar[bool] = False

    #: Inverse temperature of the likelihood in the step's conditional (1: the
    #: posterior). Set it with :meth:`set_inverse_temperature`.
    beta: float = 1.0

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

    # ---------------------------------------------------------------- tempering
    def set_inverse_temperature(self, beta) -> None:
        """Make the step sample the power posterior at inverse temperature ``beta``.

        Raises ``TypeError``/``ValueError`` for a ``beta`` outside [0, 1], and
        ``ValueError`` naming the step when it cannot temper (:attr:`can_temper` false,
        or :meth:`tempering_error` of the options it was built with) and ``beta != 1``.
        """
        beta = check_inverse_temperature(beta, "beta")
        if beta != 1.0:
            reason = self.instance_tempering_error()
            if reason is not None:
                raise ValueError(reason)
        self.beta = beta

    @classmethod
    def tempering_error(cls, options: Mapping[str, Any]) -> str | None:
        """Why this step, built with the factory's ``options``, cannot sample a power
        posterior; ``None`` when it can. Called before the step is built (nothing is
        compiled), so that tempering refuses a model at once. Subclasses whose ability
        depends on an option (e.g. the likelihood part of a conditional) override it."""
        if cls.can_temper:
            return None
        return (f"step {cls.name!r} ({cls.__name__}) cannot temper: its conditional has no "
                "inverse temperature (can_temper is False)")

    def instance_tempering_error(self) -> str | None:
        """:meth:`tempering_error` of this built step (default: of its class)."""
        return type(self).tempering_error({})

    def replica(self) -> ZooGibbsStep:
        """An independent copy of the step for another replica of a tempered chain.

        It shares the compiled functions and kernels (read-only) and owns its state:
        the copy's :attr:`beta`, random generator (replaced by ``setup_chain``) and
        ``chain_state_attributes`` are its own. A step holding other mutable state that
        it changes in place (a cache of counts, say) overrides this and copies it.
        """
        new = copy.copy(self)
        for name in self.chain_state_attributes:
            setattr(new, name, copy.deepcopy(getattr(self, name)))
        new.rng = copy.deepcopy(self.rng)
        return new

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
