"""The linear dynamical system's Gibbs step (:func:`pp_models.lds.model` with
``marginalize=False``).

``lds_simulation_smoother`` (:class:`LDSSimulationSmoother`): the whole state path ``x``
in one exact block draw from ``p(x | A, C, Q, R, m0, P0, y)`` by forward filtering,
backward sampling (Carter & Kohn 1994; :mod:`custom_ops.lds.simulation`). The
parameters are left to the other steps (NUTS given the path).

It tempers (``can_temper``): at inverse temperature ``beta`` the likelihood
``prod_t N(y_t; C x_t, R)^beta`` is, as a function of ``x``, proportional to
``prod_t N(y_t; C x_t, R / beta)``, so the same draw runs with ``R / beta``; at
``beta = 0`` nothing is observed and the path is a draw from its prior.
"""

from __future__ import annotations

import numpy as np
from pytensor.graph.basic import Variable

from custom_ops.lds.kalman import kalman_filter_kernel
from custom_ops.lds.simulation import simulation_smoother_kernel
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step

__all__ = ["LDSSimulationSmoother"]


@register_step
class LDSSimulationSmoother(ZooGibbsStep):
    """The path ``x`` of :func:`pp_models.lds.model` by the simulation smoother.

    Parameters
    ----------
    vars : list
        The path ``x`` (``T x n``).
    A, C, Q, R, m0, P0 : TensorVariable
        The model's matrices in terms of its variables (the factory's hint).

    Notes
    -----
    Its stats: ``log_likelihood``, ``log p(y | parameters)`` with the path summed out,
    at the step's temperature.
    """

    name = "lds_simulation_smoother"
    can_temper = True
    stats_dtypes_shapes = {"log_likelihood": (np.float64, [])}

    def __init__(
        self,
        vars,
        *,
        A: Variable,
        C: Variable,
        Q: Variable,
        R: Variable,
        m0: Variable,
        P0: Variable,
        model=None,
        rng=None,
        blocked=True,
    ):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(
                f"vars: the simulation smoother updates the path alone, got {self.var_names}"
            )
        m = self.model
        name = m.values_to_rvs[self.vars[0]].name
        rvs, potentials = terms_depending_on(m, m[name])
        extra = sorted(rv.name for rv in rvs if rv.name not in (name, "y"))
        if extra or potentials:
            raise ValueError(
                f"{self.name}: {name} also enters {extra or 'a potential'}; the step's "
                "conditional accounts only for its own prior and y"
            )
        self._key = self.var_names[0]
        self._fn = self.compile_point_fn([A, C, Q, R, m0, P0, m["y"]])

    @property
    def smoother(self):
        """The backward-sampling kernel (a tests' planted-bug twin overrides it)."""
        return simulation_smoother_kernel

    def step(self, point):
        A, C, Q, R, m0, P0, y = (np.ascontiguousarray(v, dtype=np.float64) for v in self._fn(point))
        y = y.reshape(y.shape[0], -1)
        if self.beta == 0.0:
            y = np.full_like(y, np.nan)
        elif self.beta != 1.0:
            R = R / self.beta
        log_lik, mf, Pf, mp, Pp = kalman_filter_kernel(y, A, C, Q, R, m0, P0)
        old = point[self._key]
        if np.isnan(log_lik).any():
            # the parameters make an innovation covariance singular: keep the path
            return point, [{"log_likelihood": -np.inf}]
        T, n = mf.shape
        x = self.smoother(A, mf, Pf, mp, Pp, self.rng.standard_normal((T, n)))
        if np.isnan(x).any():
            return point, [{"log_likelihood": float(log_lik.sum())}]
        new = np.asarray(x, dtype=old.dtype).reshape(old.shape)
        return self.updated(point, **{self._key: new}), [{"log_likelihood": float(log_lik.sum())}]
