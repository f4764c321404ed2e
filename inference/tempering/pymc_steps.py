"""PyMC's gradient-free steps on a power posterior.

PyMC's ``Metropolis`` and ``Slice`` compile their log density from ``model.logp()``, and
``BinaryGibbsMetropolis`` and ``CategoricalGibbsMetropolis`` from ``model.compile_logp()``.
The tempered classes here are those steps, unchanged, built on a view of the model
(:class:`TemperedModelView`) whose ``logp()`` is the power posterior's log density

    log p(theta) + beta log p(X | theta)   (``model.varlogp + beta * model.datalogp``),

with ``beta`` the shared variable of :func:`~inference.tempering.power.tempered_log_density`
(one per model). A step sets it to its own inverse temperature before each of its steps,
so every replica of a tempered chain runs on the step's one compiled function
(:meth:`TemperedPyMCStep.replica` copies the step's state, not its functions). Each
acceptance ratio is then the prior ratio times the likelihood ratio to the power beta,
and each proposal is PyMC's own, so the step leaves the power posterior invariant.

``PyMC's step class -> tempered class`` is :data:`TEMPERED_PYMC_STEPS`; the tempered
run's plan (:mod:`inference.tempering.steps`) swaps them in wherever PyMC (or a factory's
step hint) would assign the untempered class.
"""

from __future__ import annotations

import copy
import types

import numpy as np
import pymc as pm

from inference.step_state import sampling_state_from_data, sampling_state_to_data
from inference.tempering.power import tempered_log_density
from pp_models.validation import check_inverse_temperature

__all__ = [
    "TEMPERED_PYMC_STEPS",
    "TemperedBinaryGibbsMetropolis",
    "TemperedCategoricalGibbsMetropolis",
    "TemperedMetropolis",
    "TemperedModelView",
    "TemperedPyMCStep",
    "TemperedSlice",
]


class TemperedModelView:
    """``model`` as a tempered PyMC step sees it: every attribute is the model's, but
    ``logp()`` and ``compile_logp()`` give the power posterior's log density (module
    docstring). Only the whole model's summed density is tempered; asking for the
    terms of some variables, elementwise terms or no Jacobian is refused (no PyMC step
    here does)."""

    def __init__(self, model: pm.Model):
        self._model = model
        self._logp, self.inverse_temperature = tempered_log_density(model)

    def __getattr__(self, name):
        if name.startswith("__") or name == "_model":
            raise AttributeError(name)
        return getattr(self._model, name)

    def logp(self, vars=None, jacobian: bool = True, sum: bool = True):
        if vars is not None or not jacobian or not sum:
            raise ValueError(
                "TemperedModelView.logp: only the whole model's summed log "
                "density (with Jacobians) is tempered"
            )
        return self._logp

    def compile_logp(self, vars=None, jacobian: bool = True, sum: bool = True, **compile_kwargs):
        return self._model.compile_fn(self.logp(vars, jacobian, sum), **compile_kwargs)


class TemperedPyMCStep:
    """The zoo's tempering contract on a PyMC step (mixed in before the PyMC class):
    ``can_temper``, ``beta``, :meth:`set_inverse_temperature`, :meth:`replica` sharing
    the compiled functions, and ``chain_state``/``restore_chain_state`` (PyMC's whole
    ``sampling_state``, so a stored tempered chain resumes exactly)."""

    can_temper = True
    beta = 1.0

    def __init__(self, vars, *, model=None, **options):
        self._inverse_temperature = None
        view = TemperedModelView(pm.modelcontext(model))
        super().__init__(vars, model=view, **options)
        self._inverse_temperature = view.inverse_temperature
        self.set_inverse_temperature(1.0)

    def set_inverse_temperature(self, beta) -> None:
        """Sample ``p(theta) p(X | theta)^beta`` from now on."""
        self.beta = check_inverse_temperature(beta, "beta")

    def step(self, point):
        # the compiled function, and its weight, are shared by every replica and every
        # tempered step of the model: weight it for this one
        self._inverse_temperature.set_value(np.float64(self.beta))
        return super().step(point)

    def replica(self):
        """A copy for another temperature: the same compiled functions and shared
        inputs, its own copies of the arrays and lists PyMC's step changes in place
        (tuning, acceptance counts, the scan order) and of its generator."""
        new = copy.copy(self)
        for name, value in vars(self).items():
            if isinstance(value, np.ndarray | list | dict | np.random.Generator) and name not in (
                "vars",
                "fs",
                "shared",
                "var_names",
            ):
                setattr(new, name, copy.deepcopy(value))
            elif isinstance(value, types.MethodType) and value.__self__ is self:
                # CategoricalGibbsMetropolis stores its chosen ``astep`` on the instance:
                # left bound to this step, the copy would draw from this step's generator
                setattr(new, name, types.MethodType(value.__func__, new))
        return new

    def chain_state(self) -> dict:
        """The sampling state (tuning, generator) as plain data
        (:mod:`inference.step_state`)."""
        return {"sampling_state": sampling_state_to_data(self.sampling_state)}

    def restore_chain_state(self, state: dict) -> None:
        self.sampling_state = sampling_state_from_data(state["sampling_state"],
                                                       self.sampling_state)


class TemperedMetropolis(TemperedPyMCStep, pm.Metropolis):
    """``pm.Metropolis`` on the power posterior (module docstring); takes its options."""

    name = "tempered_metropolis"


class TemperedSlice(TemperedPyMCStep, pm.Slice):
    """``pm.Slice`` on the power posterior (module docstring); takes its options."""

    name = "tempered_slice"


class TemperedBinaryGibbsMetropolis(TemperedPyMCStep, pm.BinaryGibbsMetropolis):
    """``pm.BinaryGibbsMetropolis`` on the power posterior (module docstring)."""

    name = "tempered_binary_gibbs_metropolis"


class TemperedCategoricalGibbsMetropolis(TemperedPyMCStep, pm.CategoricalGibbsMetropolis):
    """``pm.CategoricalGibbsMetropolis`` on the power posterior (module docstring)."""

    name = "tempered_categorical_gibbs_metropolis"


#: PyMC's step classes that have a tempered version, and that version.
TEMPERED_PYMC_STEPS: dict[type, type] = {
    pm.Metropolis: TemperedMetropolis,
    pm.Slice: TemperedSlice,
    pm.BinaryGibbsMetropolis: TemperedBinaryGibbsMetropolis,
    pm.CategoricalGibbsMetropolis: TemperedCategoricalGibbsMetropolis,
}
