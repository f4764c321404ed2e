"""Neal (2000) Algorithm 8: Gibbs for a CRP partition with explicit (non-conjugate)
component parameters, using ``m`` auxiliary components.

The model this step expects (what ``pp_models.dpm.model(..., likelihood="normal")``
builds)::

    z ~ CRP(alpha, n)                          canonical labels, K <= n blocks
    theta[k] ~ H  for k = 0..n-1 (one slot per possible block; e.g. mu[k], sigma[k])
    x_i ~ F(theta[z_i])

Slots ``k >= K`` are unused and, given everything else, distributed as ``H``. One step:

1. Algorithm 8 sweep over the items (Numba, :func:`~custom_ops.dpm.gibbs.
   auxiliary_sweeps`): item ``i`` joins block ``k`` with weight ``(n_{k,-i} - d)
   F(x_i | theta_k)`` or one of ``m`` fresh components ``phi_j ~ H`` with weight
   ``(alpha + K_{-i} d) / m * F(x_i | phi_j)``; a singleton's own parameter is one of the
   ``m`` (Neal 2000 §6, Algorithm 8).
2. Relabel canonically, moving each block's parameter to its new slot.
3. Refresh the unused slots with exact draws from ``H``.

The occupied blocks' parameters are updated by another step (NUTS, which ``fit``
assigns), completing Algorithm 8's second stage. The component density ``F`` is one of
:data:`~custom_ops.dpm.gibbs.COMPONENT_CODES` (``"normal"``, ``"poisson"``,
``"bernoulli"``), given by name with the names of the parameter variables.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt

from custom_ops.dpm.gibbs import (
    COMPONENT_CODES,
    AuxiliaryComponents,
    ComponentData,
    CRPPrior,
    auxiliary_sweeps,
)
from inference.gibbs.base import ZooGibbsStep, depends_directly
from inference.gibbs.registry import register_step
from pp_models.distributions.crp import CRPRV
from pp_models.validation import check_int

__all__ = ["CRPAuxiliaryGibbs"]


@register_step
class CRPAuxiliaryGibbs(ZooGibbsStep):
    """Neal's Algorithm 8 for a CRP partition with explicit component parameters.

    Parameters
    ----------
    vars : list
        The CRP variable ``z``.
    component : {"normal", "poisson", "bernoulli"}
        The component density: independent normals (parameters ``mu, sigma``),
        Poissons (``rate``) or Bernoullis (``p``) per column.
    params : sequence of str
        Names of the component-parameter variables, each of shape ``(n, d)`` (one row per
        slot), in the order ``component`` expects. The step rewrites their values (slot
        permutation and the unused slots) but leaves the occupied blocks' values to
        another step (NUTS under ``fit``), so it does not own them.
    data : str
        Name of the data variable ``X`` (n, d).
    m : int
        Number of auxiliary components (>= 1).
    sweeps : int
        Sweeps per ``step`` call.
    model : pymc.Model, optional
    rng : seed or Generator, optional
    """

    name = "crp_auxiliary_gibbs"
    #: tempered: every component density F(x_i | theta) enters the seating weights to the
    #: power beta (Algorithm 8 holds for any non-negative likelihood, F^beta included);
    #: the unused slots' refresh from H does not involve the data
    can_temper = True
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "n_changed": (np.int64, []),
    }

    def __init__(self, vars, *, component: str, params, data: str, m: int = 3,
                 sweeps: int = 1, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        model = self.model
        if component not in COMPONENT_CODES:
            raise ValueError(f"component: unknown {component!r}; choose one of "
                             f"{sorted(COMPONENT_CODES)}")
        self.component = component
        _code, param_names = COMPONENT_CODES[component]
        if len(self.vars) != 1:
            raise ValueError(f"vars: CRPAuxiliaryGibbs updates one CRP variable, got "
                             f"{self.var_names}")
        params = [params] if isinstance(params, str) else list(params)
        if len(params) != len(param_names):
            raise ValueError(
                f"params: component={component!r} needs {len(param_names)} parameter "
                f"variable(s) ({', '.join(param_names)}), got {params}"
            )
        for name in params:
            if name not in model.named_vars or model[name] not in model.free_RVs:
                raise ValueError(f"params: {name!r} is not a free random variable of the model")
        z_rv = model.values_to_rvs[self.vars[0]]
        params = [model[name] for name in params]
        rvs = [z_rv, *params]
        if not isinstance(z_rv.owner.op, CRPRV):
            raise TypeError(f"vars: {z_rv.name} is not a CRP random variable")
        self.m = check_int(m, "m", minimum=1)
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        n = int(z_rv.owner.op.dist_params(z_rv.owner)[2].eval())
        self.n = n
        if data not in model.named_vars:
            raise ValueError(f"data: {data!r} is not a variable of the model")
        data_rv = model[data]
        for p in params:
            if p.ndim != 2 or int(p.shape[0].eval()) != n:
                raise ValueError(
                    f"params: {p.name} must have shape (n, d) with one row per item (n = {n})"
                )
            for q in p.owner.op.dist_params(p.owner):
                if q.ndim == 2 and not q.type.broadcastable[0]:
                    raise ValueError(
                        f"params: the prior of {p.name} must be the same for every slot (its "
                        "parameters may vary by column only)"
                    )
        alpha, discount, _n = z_rv.owner.op.dist_params(z_rv.owner)
        self._names = [model.rvs_to_values[rv].name for rv in rvs]
        self._param_value_names = self._names[1:]
        self._inputs_fn = self.compile_point_fn([alpha, discount, data_rv, *params])

        # Prior draws of B slots of every parameter: rebuild each prior with size (B, d)
        # and an rng input (a fresh Generator per call, seeded from self.rng).
        B = pt.iscalar("B")
        rng_in = pytensor.shared(np.random.default_rng(0))
        draws = []
        for p in params:
            op = p.owner.op
            d = p.shape[1]
            _next_rng, new = op(*op.dist_params(p.owner), size=pt.stack([B, d]), rng=rng_in,
                                return_next_rng=True)
            draws.append(new)
        draws = model.replace_rvs_by_values(draws)
        self._rng_shared = rng_in
        self._prior_draw_fn = pytensor.function(
            [*model.value_vars, B], draws, on_unused_input="ignore"
        )
        # natural -> value space for each parameter
        holders, forwards = [], []
        for p in params:
            holder = p.type()
            transform = model.rvs_to_transforms.get(p)
            holders.append(holder)
            forwards.append(
                holder if transform is None else transform.forward(holder, *p.owner.inputs)
            )
        forwards = model.replace_rvs_by_values(forwards)
        self._forward_fn = pytensor.function(
            [*holders, *model.value_vars], forwards, on_unused_input="ignore"
        )
        self._value_vars = list(model.value_vars)
        # the parameters must enter only their priors and the likelihood of `data`
        for rv in model.basic_RVs:
            if rv in rvs or rv is data_rv:
                continue
            if any(depends_directly(model, rv.owner.op.dist_params(rv.owner), q) for q in rvs):
                raise ValueError(
                    f"{rv.name} depends on {', '.join(self._names)}; Algorithm 8 here expects "
                    f"them to enter only the likelihood of {data!r}"
                )

    def base_measure_draws(self, point, B):
        """B independent draws from the base measure of each parameter (natural scale)."""
        self._rng_shared.set_value(
            np.random.default_rng(self.rng.integers(2**63)), borrow=True
        )
        values = [point[v.name] for v in self._value_vars]
        return [np.asarray(a) for a in self._prior_draw_fn(*values, B)]

    def step(self, point):
        z_old = np.asarray(point[self._names[0]])
        alpha, discount, X, *params = (np.asarray(v) for v in self._inputs_fn(point))
        X = np.ascontiguousarray(X, dtype=np.float64)
        n = X.shape[0]
        widths = [p.shape[1] for p in params]
        theta = np.ascontiguousarray(np.concatenate(params, axis=1), dtype=np.float64)
        z = np.ascontiguousarray(z_old, dtype=np.int64)
        K = int(z.max()) + 1
        B = self.sweeps * n * self.m + n
        pool = np.ascontiguousarray(
            np.concatenate(self.base_measure_draws(point, B), axis=1), dtype=np.float64
        )
        code = COMPONENT_CODES[self.component][0]
        z_new, theta_new = auxiliary_sweeps(
            ComponentData(X, code), z, theta[:K], CRPPrior(float(alpha), float(discount)),
            AuxiliaryComponents(self.m, pool[: B - n]), self.beta, self.rng, self.sweeps,
        )
        K_new = theta_new.shape[0]
        # unused slots: fresh draws from H (their full conditional)
        full = np.empty_like(theta)
        full[:K_new] = theta_new
        full[K_new:] = pool[B - n : B - n + (self.n - K_new)]
        splits = np.cumsum(widths)[:-1]
        natural = np.split(full, splits, axis=1)
        values = [point[v.name] for v in self._value_vars]
        forward = self._forward_fn(*natural, *values)
        new_values = {self._names[0]: z_new.astype(z_old.dtype)}
        for name, val in zip(self._param_value_names, forward, strict=True):
            new_values[name] = np.asarray(val).astype(point[name].dtype)
        stats = {"n_clusters": K_new, "n_changed": int(np.count_nonzero(z_new != z_old))}
        return self.updated(point, **new_values), [stats]
