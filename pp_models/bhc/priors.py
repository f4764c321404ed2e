"""Priors on BHC's hyperparameters for MAP learning (:func:`~pp_models.bhc.learn`) and
NUTS (:func:`~pp_models.bhc.model`).

Type-II maximum likelihood of the DP concentration on small data runs away: Corollary
3.1's lower bound on the DPM evidence tends to the one-cluster evidence as α → 0 and on
n = 8 points its maximiser can sit at α ≤ 0.001 while the exact DPM evidence peaks near
1; a Beta-Bernoulli ``a`` or ``b`` runs to 0 when a column is constant. A
proper prior in the log of each learned quantity makes the MAP finite and unconstrained.

Each prior is a density on one positive quantity:

* ``"alpha"``: on α itself;
* every conjugate hyperparameter (``a``, ``b``, ``concentration``, ``kappa0``, ``nu0``,
  ``S0``, ``a0``, ``b0``): on a scale factor ``s`` applied to its base value (the
  ``hyper=`` value, default the empirical one of :func:`default_hyper`, Heller 2007
  §3.4.1): ``h = s · h_base``, and for ``nu0`` the excess over its lower limit d − 1,
  ``nu0 = d − 1 + s (nu0_base − d + 1)``. The prior says how far the data may move the
  empirical choice; per-dimension vectors keep their shape.

:data:`DEFAULT_PRIORS` (weakly informative): α ~ LogNormal(0, 1.5) (95 % in [0.05, 19],
median 1, the CRP's usual scale), each scale factor ~ LogNormal(0, 1) (95 % within a
factor 7 of the empirical value), ``kappa0``'s ~ LogNormal(0, 1.5) (the mean's prior
strength is weakly identified).

MAP is taken in u = log(value) (or log s), where the optimiser has no bound to hit: the
log prior density of u, :meth:`LogNormal.log_density_of_log` (a Normal density in u) or
:meth:`Gamma.log_density_of_log` (shape·u − rate·eᵘ + const), includes the Jacobian
of the log transform, so it equals PyMC's transformed log-density of the same variable
(``bhc.model(...).compile_logp(jacobian=True)``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from pp_models.validation import check_positive, check_real

__all__ = ["DEFAULT_PRIORS", "Gamma", "LogNormal", "resolve_priors"]


@dataclasses.dataclass(frozen=True)
class LogNormal:
    """log(x) ~ Normal(mu, sigma)."""

    mu: float = 0.0
    sigma: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "mu", check_real(self.mu, "LogNormal mu"))
        object.__setattr__(self, "sigma", check_positive(self.sigma, "LogNormal sigma"))

    def log_density_of_log(self, u):
        """Log density of u = log x (a Normal(mu, sigma) density); numpy or pytensor."""
        z = (u - self.mu) / self.sigma
        return -0.5 * z * z - math.log(self.sigma) - 0.5 * math.log(2.0 * math.pi)

    def dist(self):
        import pymc as pm

        return pm.LogNormal.dist(mu=self.mu, sigma=self.sigma)


@dataclasses.dataclass(frozen=True)
class Gamma:
    """x ~ Gamma(shape, rate) (mean shape / rate), e.g. Escobar & West's prior on α."""

    shape: float = 1.0
    rate: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "shape", check_positive(self.shape, "Gamma shape"))
        object.__setattr__(self, "rate", check_positive(self.rate, "Gamma rate"))

    def log_density_of_log(self, u):
        """Log density of u = log x: shape·u − rate·eᵘ + shape·log(rate) − log Γ(shape)."""
        exp = np.exp if isinstance(u, (numbers.Real, np.ndarray)) else _pt_exp
        return (
            self.shape * u
            - self.rate * exp(u)
            + self.shape * math.log(self.rate)
            - math.lgamma(self.shape)
        )

    def dist(self):
        import pymc as pm

        return pm.Gamma.dist(alpha=self.shape, beta=self.rate)


def _pt_exp(u):
    import pytensor.tensor as pt

    return pt.exp(u)


PRIOR_TYPES = (LogNormal, Gamma)

#: Default priors (see the module docstring); keys absent here get ``LogNormal(0, 1)``.
DEFAULT_PRIORS = {"alpha": LogNormal(0.0, 1.5), "kappa0": LogNormal(0.0, 1.5)}
_DEFAULT_SCALE_PRIOR = LogNormal(0.0, 1.0)


def default_prior(name):
    return DEFAULT_PRIORS.get(name, _DEFAULT_SCALE_PRIOR)


def resolve_priors(priors, names, arg="priors"):
    """The prior of each learned name: ``None`` → defaults, ``False`` → no prior
    (``{name: None}``), a dict → the defaults overridden per key (``None`` = no prior on
    that key). Keys must be among ``names``; values :class:`LogNormal` / :class:`Gamma`."""
    if priors is False:
        return dict.fromkeys(names)
    out = {k: default_prior(k) for k in names}
    if priors is None:
        return out
    if not isinstance(priors, dict):
        raise TypeError(f"{arg}: must be None, False or a dict keyed by {names}, got {priors!r}")
    for key, value in priors.items():
        if key not in names:
            raise ValueError(f"{arg}: {key!r} is not a learned parameter; learned: {names}")
        if value is not None and not isinstance(value, PRIOR_TYPES):
            raise TypeError(
                f"{arg}[{key!r}]: expected bhc.LogNormal(mu, sigma), bhc.Gamma(shape, rate) "
                f"or None, got {value!r}"
            )
        out[key] = value
    return out
