"""Exact Gibbs update of conditionally independent categorical variables."""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Variable

from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import register_step

__all__ = ["CategoricalGibbs"]


@register_step
class CategoricalGibbs(ZooGibbsStep):
    """Draw every element of a categorical vector ``z`` from its full conditional.

    Valid when the elements of ``z`` are conditionally independent given everything
    else (e.g. the assignments of a finite mixture): then the blocked draw of all
    ``z_i`` at once is an exact Gibbs update.

    Parameters
    ----------
    vars : list
        The one categorical random variable (shape ``(n,)``) this step owns.
    logits : TensorVariable
        Symbolic ``(n, K)`` tensor in terms of the model's random variables with
        ``logits[i, k] = log p(z_i = k | rest) + c_i``.
    likelihood_logits : TensorVariable, optional
        The part of ``logits`` that comes from the likelihood (the observed variables'
        terms, ``model.datalogp``): ``likelihood_logits[i, k] = log p(x_i | z_i = k,
        rest)``. Needed to temper: at inverse temperature beta the step draws from
        ``softmax(logits + (beta - 1) * likelihood_logits)``, the conditional of the
        power posterior ``p(theta) p(X | theta)^beta``.
    model : pymc.Model, optional
    rng : seed or Generator, optional
        Replaced per chain by PyMC's seeding.

    Notes
    -----
    Draws by the Gumbel-max trick: ``argmax_k(logits[i, k] + G_ik)`` with i.i.d.
    standard Gumbel ``G`` is an exact draw from ``softmax(logits[i])``.
    """

    name = "categorical_gibbs"
    stats_dtypes_shapes = {"n_changed": (np.int64, [])}
    can_temper = True

    def __init__(self, vars, *, logits: Variable, likelihood_logits: Variable | None = None,
                 model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(f"vars: CategoricalGibbs updates one variable, got {self.var_names}")
        if not isinstance(logits, Variable) or logits.ndim != 2:
            raise TypeError("logits must be a symbolic (n, K) tensor")
        if likelihood_logits is not None and (not isinstance(likelihood_logits, Variable)
                                              or likelihood_logits.ndim != 2):
            raise TypeError("likelihood_logits must be a symbolic (n, K) tensor")
        self._value_name = self.var_names[0]
        self._has_likelihood_part = likelihood_logits is not None
        outputs = [logits] if likelihood_logits is None else [logits, likelihood_logits]
        self._logits_fn = self.compile_point_fn(outputs)

    @classmethod
    def tempering_error(cls, options):
        if options.get("likelihood_logits") is None:
            return (f"step {cls.name!r} (CategoricalGibbs) cannot temper without the "
                    "likelihood part of its conditional: pass likelihood_logits (the "
                    "factory's step hint should give it)")
        return None

    def instance_tempering_error(self):
        return self.tempering_error({"likelihood_logits": True if self._has_likelihood_part
                                     else None})

    def conditional_logits(self, point) -> np.ndarray:
        """``logits + (beta - 1) * likelihood_logits`` at the point (the power
        posterior's conditional, up to a constant per row)."""
        values = self._logits_fn(point)
        logits = np.asarray(values[0])
        if self.beta != 1.0:
            logits = logits + (self.beta - 1.0) * np.asarray(values[1])
        return logits

    def step(self, point):
        logits = self.conditional_logits(point)
        old = point[self._value_name]
        if logits.shape[0] != old.shape[0]:
            raise ValueError(
                f"logits have {logits.shape[0]} rows but {self._value_name} has {old.shape[0]}"
            )
        gumbel = self.rng.gumbel(size=logits.shape)
        new = np.argmax(logits + gumbel, axis=1).astype(old.dtype)
        return self.updated(point, **{self._value_name: new}), [
            {"n_changed": int(np.count_nonzero(new != old))}
        ]
