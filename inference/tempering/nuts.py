"""PyMC's NUTS on a power posterior.

PyMC 6's ``model.logp_dlogp_function(vars, tempered=True, ...)`` compiles
``varlogp + w * datalogp`` and its gradient with the weight ``w`` in a shared variable
(``ValueGradFunction.set_weights([w])``), and every gradient-based PyMC step accepts such a
function (``GradientSharedStep(logp_dlogp_func=...)``). :class:`TemperedNUTS` is
``pm.NUTS`` built on it: ``w`` is the replica's inverse temperature. The function is
compiled once per model and set of variables and shared by every replica: a replica
sets the weight to its own beta before each of its steps (the other inputs, the values
of the variables it does not update, are set from the point at every step by PyMC
anyway). A copy per replica (``ValueGradFunction.copy``) would re-link the Numba graph
for each replica.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from inference.step_state import sampling_state_from_data, sampling_state_to_data
from pp_models.validation import check_inverse_temperature

__all__ = ["TemperedNUTS", "tempered_logp_dlogp"]


def tempered_logp_dlogp(model: pm.Model, vars, initial_point):
    """The tempered ``(logp, dlogp)`` function of ``vars`` (value variables), compiled
    once per model and variables (the same object for every caller: set its weight
    before each use)."""
    from inference.sampling_core import model_cache

    key = ("tempered_logp_dlogp", tuple(v.name for v in vars))
    cache = model_cache(model)
    fn = cache.get(key)
    if fn is None:
        fn = cache[key] = model.logp_dlogp_function(
            vars, tempered=True, ravel_inputs=True, initial_point=initial_point)
        fn.trust_input = True
    return fn


class TemperedNUTS(pm.NUTS):
    """``pm.NUTS`` sampling ``p(theta) p(X | theta)^beta`` (module docstring).

    Parameters
    ----------
    vars : list
        Continuous value variables (or random variables) of ``model``.
    model : pymc.Model
    initial_point : dict
        A point of ``model`` (PyMC's layout), used for shapes.
    **options
        Any ``pm.NUTS`` option (``target_accept``, ``max_treedepth``, ...).

    Notes
    -----
    It follows the zoo's tempering contract (:class:`inference.gibbs.ZooGibbsStep`):
    ``can_temper``, ``beta``, :meth:`set_inverse_temperature`, :meth:`replica`, and
    ``chain_state`` / ``restore_chain_state`` (its whole ``sampling_state``: step size,
    mass-matrix adaptation and random generator, so a stored tempered chain resumes
    exactly).
    """

    can_temper = True
    beta = 1.0
    #: its step size and mass matrix adapt while tuning (the tempered run then holds the
    #: swaps while the ladder adapts, :class:`~inference.tempering.driver.TemperedStep`)
    adapts_while_tuning = True

    def __init__(self, vars, *, model, initial_point, **options):
        model = pm.modelcontext(model)
        from pymc.util import get_value_vars_from_user_vars

        value_vars = get_value_vars_from_user_vars(vars, model)
        self._tempering_args = (value_vars, model, initial_point, dict(options))
        super().__init__(value_vars, model=model, initial_point=initial_point,
                         logp_dlogp_func=tempered_logp_dlogp(model, value_vars, initial_point),
                         **options)
        self.set_inverse_temperature(1.0)

    def set_inverse_temperature(self, beta) -> None:
        """Sample ``p(theta) p(X | theta)^beta`` from now on."""
        beta = check_inverse_temperature(beta, "beta")
        self._weights = np.array([beta], dtype=self._logp_dlogp_func.dtype)
        self.beta = beta

    def step(self, point):
        # the compiled function is shared between replicas: weight it for this one
        self._logp_dlogp_func.set_weights(self._weights)
        # a hot replica's trajectories diverge often (the power posterior near the prior
        # has heavy tails): the kinetic energy overflows, NUTS sees the non-finite energy
        # and records a divergence; NumPy's overflow warning would only repeat that
        with np.errstate(over="ignore", invalid="ignore"):
            return super().step(point)

    def replica(self) -> TemperedNUTS:
        """A new NUTS on the same compiled function, with its own adaptation."""
        vars, model, initial_point, options = self._tempering_args
        new = TemperedNUTS(vars, model=model, initial_point=initial_point, **options)
        new.set_inverse_temperature(self.beta)
        return new

    def chain_state(self) -> dict:
        """The sampling state (adaptation, generator) as plain data
        (:mod:`inference.step_state`)."""
        return {"sampling_state": sampling_state_to_data(self.sampling_state)}

    def restore_chain_state(self, state: dict) -> None:
        self.sampling_state = sampling_state_from_data(state["sampling_state"],
                                                       self.sampling_state)
