"""Power posteriors of a PyMC model: its log-likelihood and exact draws from its prior.

A replica at inverse temperature ``beta`` targets

    p_beta(theta) ∝ p(theta) p(X | theta)^beta,

with ``log p(theta)`` PyMC's ``model.varlogp`` (the free variables' terms, Jacobians of
their transforms included) and ``log p(X | theta)`` PyMC's ``model.datalogp`` (the
observed variables' terms plus the potentials: a potential is treated as a likelihood
term, as PyMC's own tempered ``logp_dlogp_function`` and ``sample_smc`` do; the zoo's
models put no prior term in a potential, a test checks it). Everything here is compiled
once per model and kept for the model's lifetime.

- :func:`log_likelihood_function`: ``point -> log p(X | theta)``, for swaps and evidence;
- :func:`tempered_log_density`: the graph ``log p(theta) + beta log p(X | theta)`` with
  ``beta`` a shared variable, for the tempered gradient-free steps
  (:mod:`inference.tempering.pymc_steps`);
- :class:`PriorDraws`: exact joint draws of every free variable from the prior, in
  PyMC's point layout (transformed values): the replica at ``beta = 0`` uses them
  instead of MCMC;
- :func:`check_has_likelihood`: the evidence of a model without data is refused.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor
from pymc.pytensorf import compile as compile_pymc
from pymc.pytensorf import reseed_rngs
from pytensor.compile.mode import Mode
from pytensor.tensor.random.type import RandomGeneratorType

__all__ = ["PriorDraws", "check_has_likelihood", "has_likelihood", "log_likelihood_function",
           "tempered_log_density"]


def has_likelihood(model: pm.Model) -> bool:
    """Whether ``model`` has a likelihood term: an observed variable or a potential."""
    return bool(model.observed_RVs) or bool(model.potentials)


def check_has_likelihood(model: pm.Model, what: str = "model") -> None:
    """``ValueError`` when ``model`` has no observed variable and no potential (its
    power posteriors are all the prior and its evidence is 1)."""
    if not has_likelihood(model):
        raise ValueError(f"{what}: the model has no observed data (no observed variable "
                         "and no potential), so it has no likelihood to temper and no "
                         "evidence; build it with observed=...")


def _cache(model):
    from inference.sampling_core import model_cache

    return model_cache(model)


def log_likelihood_function(model: pm.Model):
    """``point -> float``: ``log p(X | theta)`` (``model.datalogp``) at a point (PyMC's
    dict of value variables). Compiled once per model."""
    cache = _cache(model)
    fn = cache.get("tempering_loglik")
    if fn is None:
        compiled = model.compile_fn(model.datalogp, inputs=model.value_vars,
                                    on_unused_input="ignore", point_fn=True)

        def fn(point, _compiled=compiled):
            return float(_compiled(point))

        cache["tempering_loglik"] = fn
    return fn


def tempered_log_density(model: pm.Model):
    """``(graph, beta)``: the power posterior's log density ``model.varlogp + beta *
    model.datalogp`` of the model's value variables, and ``beta``, the scalar shared
    variable it is weighted by (the same terms as PyMC's tempered
    ``logp_dlogp_function``). Built once per model: every tempered step of the model
    compiles this graph and sets ``beta`` to its own inverse temperature before use."""
    cache = _cache(model)
    entry = cache.get("tempered_log_density")
    if entry is None:
        beta = pytensor.shared(np.float64(1.0), name="inverse_temperature")
        entry = cache["tempered_log_density"] = (model.varlogp + beta * model.datalogp, beta)
    return entry


class PriorDraws:
    """Exact joint draws of the free variables of ``model`` from its prior.

    ``draw()`` returns PyMC's point dict: every value variable by name, transformed
    variables on their transformed scale. Compiled once per model (:meth:`for_model`);
    :meth:`seed` reseeds the compiled function's random generators.
    """

    def __init__(self, model: pm.Model):
        self.model = model
        rvs = list(model.free_RVs)
        outputs = []
        for rv in rvs:
            transform = model.rvs_to_transforms.get(rv)
            outputs.append(rv if transform is None
                           else transform.forward(rv, *rv.owner.inputs))
        self._names = [model.rvs_to_values[rv].name for rv in rvs]
        self._dtypes = [model.rvs_to_values[rv].dtype for rv in rvs]
        # PyTensor's Python linker: a graph of random draws gains nothing from Numba, and
        # some of PyMC's draws (stick-breaking weights) have no Numba implementation
        self._fn = compile_pymc(inputs=[], outputs=outputs,
                                mode=Mode(linker="py", optimizer="fast_compile"))
        self._rngs = [v for v in self._fn.get_shared()
                      if isinstance(v.type, RandomGeneratorType)]

    @classmethod
    def for_model(cls, model: pm.Model) -> PriorDraws:
        cache = _cache(model)
        draws = cache.get("tempering_prior_draws")
        if draws is None:
            draws = cache["tempering_prior_draws"] = cls(model)
        return draws

    def seed(self, rng: np.random.Generator) -> None:
        """Reseed from ``rng`` (one integer drawn from it)."""
        reseed_rngs(self._rngs, int(rng.integers(2**63)))

    def draw(self) -> dict[str, np.ndarray]:
        values = self._fn()
        if len(self._names) == 1 and not isinstance(values, list | tuple):
            values = [values]
        return {name: np.asarray(v).astype(dtype, copy=False)
                for name, v, dtype in zip(self._names, values, self._dtypes, strict=True)}

    def state(self) -> list:
        """The random generators' states (to continue a stored chain exactly)."""
        return [r.get_value(borrow=True).bit_generator.state for r in self._rngs]

    def restore(self, state: list) -> None:
        for shared, s in zip(self._rngs, state, strict=True):
            gen = np.random.default_rng()
            gen.bit_generator.state = s
            shared.set_value(gen, borrow=True)
