"""Escobar & West (1995) auxiliary-variable Gibbs update of a DP concentration.

With ``alpha ~ Gamma(a, rate b)`` and a Dirichlet-process partition of ``n`` items into
``K`` blocks (Ewens distribution, the CRP with discount 0), the partition depends on
``alpha`` only through ``alpha^K Gamma(alpha) / Gamma(alpha + n)``. Introducing
``eta | alpha ~ Beta(alpha + 1, n)`` makes the conditional of ``alpha`` a two-component
Gamma mixture (Escobar & West 1995, §6; Murphy 2012 §25.2.4 cites it)::

    eta ~ Beta(alpha + 1, n)
    alpha ~ pi Gamma(a + K, b - log eta) + (1 - pi) Gamma(a + K - 1, b - log eta),
    pi / (1 - pi) = (a + K - 1) / (n (b - log eta)).

The step claims nothing automatically: a factory names it in a step hint, and
:meth:`EscobarWestAlpha.from_model` checks that the model has exactly that structure.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.tensor.random.basic import GammaRV

from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.distributions.crp import CRPRV

__all__ = ["EscobarWestAlpha", "escobar_west_draw"]


def escobar_west_draw(rng: np.random.Generator, alpha: float, K: int, n: int, a: float,
                      b: float) -> float:
    """One Escobar-West update of the concentration (module docstring)."""
    eta = rng.beta(alpha + 1.0, n)
    rate = b - math.log(eta)
    odds = (a + K - 1.0) / (n * rate)
    shape = a + K if rng.random() < odds / (1.0 + odds) else a + K - 1.0
    return rng.gamma(shape, 1.0 / rate)


@register_step
class EscobarWestAlpha(ZooGibbsStep):
    """Exact Gibbs update of ``alpha ~ Gamma(a, b)``, the concentration of one CRP.

    Parameters
    ----------
    vars : list
        The concentration random variable (a ``pm.Gamma``).
    model : pymc.Model, optional
    rng : seed or Generator, optional

    Raises
    ------
    ValueError
        If ``alpha`` is not Gamma distributed, is not the concentration of exactly one
        :class:`~pp_models.distributions.CRP` with discount 0, or enters any other term.
    """

    name = "escobar_west"
    stats_dtypes_shapes = {"alpha": (np.float64, [])}
    #: alpha enters only the partition's prior (checked when the step is built), so the
    #: power posterior's conditional of alpha is the posterior's: beta is not used
    can_temper = True

    def __init__(self, vars, *, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(f"vars: EscobarWestAlpha updates one variable, got {self.var_names}")
        model = self.model
        alpha_rv = model.values_to_rvs[self.vars[0]]
        if not isinstance(alpha_rv.owner.op, GammaRV) or alpha_rv.ndim != 0:
            raise ValueError(f"vars: {alpha_rv.name} must be a scalar pm.Gamma random variable")
        shape, scale = alpha_rv.owner.op.dist_params(alpha_rv.owner)
        rvs, potentials = terms_depending_on(model, alpha_rv)
        crps, others = [], [p.name for p in potentials]
        for rv in rvs:
            if isinstance(rv.owner.op, CRPRV) and rv.owner.op.dist_params(rv.owner)[0] is alpha_rv:
                crps.append(rv)
            else:
                others.append(rv.name)
        if len(crps) != 1 or others:
            raise ValueError(
                f"vars: {alpha_rv.name} must be the concentration of exactly one CRP and enter "
                f"nothing else (found CRPs: {[r.name for r in crps]}, other terms: {others})"
            )
        crp_rv = crps[0]
        discount = crp_rv.owner.op.dist_params(crp_rv.owner)[1]
        try:
            discount_value = float(pt.get_underlying_scalar_constant_value(discount))
        except Exception:
            discount_value = None
        if discount_value != 0.0:
            raise ValueError(
                f"vars: the Escobar-West update needs a Dirichlet process (discount 0); "
                f"{crp_rv.name} has discount {discount}"
            )
        self._z_name = model.rvs_to_values[crp_rv].name
        self._value_name = self.var_names[0]
        self._prior_fn = self.compile_point_fn([shape, 1.0 / scale])
        # natural -> value space (log for the default transform)
        transform = model.rvs_to_transforms.get(alpha_rv)
        natural = pt.dscalar("alpha_natural")
        if transform is None:
            self._forward = None
        else:
            forward = transform.forward(natural, *alpha_rv.owner.inputs)
            self._forward = pytensor.function([natural], forward)
        self._natural_fn = self.compile_point_fn(alpha_rv)

    def draw_alpha(self, alpha: float, K: int, n: int, a: float, b: float) -> float:
        """One Escobar-West draw (a method so that tests can plant bugs in a subclass)."""
        return escobar_west_draw(self.rng, alpha, K, n, a, b)

    def step(self, point):
        z = np.asarray(point[self._z_name])
        n = z.shape[0]
        K = np.unique(z).size
        a, b = (float(v) for v in self._prior_fn(point))
        alpha = float(self._natural_fn(point))
        new = self.draw_alpha(alpha, K, n, a, b)
        value = np.asarray(new if self._forward is None else self._forward(new))
        old = point[self._value_name]
        return self.updated(point, **{self._value_name: value.astype(old.dtype)}), [
            {"alpha": new}
        ]
