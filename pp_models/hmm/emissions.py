"""The HMM's emission families: one place that knows, per family, the data it accepts,
its conjugate prior scaled to the data, its log-likelihood (numeric and symbolic), its
conditional posterior draw and its EM update.

========================  =====================  ========================================
emission                  parameters (K states)  prior (defaults scaled to ``y``)
========================  =====================  ========================================
``"gaussian"``            ``mu``, ``tau``        ``mu_k ~ N(mean y, (2 sd y)^2)``,
                          (precision)            ``tau_k ~ Gamma(2, var y / 2)``
``"poisson"``             ``rate``               ``rate_k ~ Gamma(1, 1 / mean y)``
``"bernoulli"``           ``p``                  ``p_k ~ Beta(1, 1)``
``"categorical"``         ``phi`` (K, C)         ``phi_k ~ Dirichlet(1, ..., 1)``
========================  =====================  ========================================

(Gamma(shape, rate).) The Gaussian prior is semi-conjugate: the conditional draw updates
``tau`` given ``mu`` and then ``mu`` given the new ``tau``, both exact (Gelman et al.
2013 §3.3, with a Gamma prior on the precision). Every conditional is that of the power
posterior at inverse temperature ``beta``: each observation's sufficient statistics
count ``beta`` times (``beta = 1`` is the posterior).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

from pp_models.validation import as_whole_numbers, check_int

__all__ = ["EMISSIONS", "Emission", "get_emission"]


def _check_finite(y, name):
    y = np.asarray(y)
    if y.dtype == np.bool_:
        y = y.astype(np.float64)
    if not (np.issubdtype(y.dtype, np.number)):
        raise TypeError(f"{name} must be numeric, got dtype {y.dtype}")
    y = y.astype(np.float64)
    if y.ndim != 1:
        raise ValueError(f"{name} must be a 1-D series (T,), got shape {y.shape}")
    bad = np.flatnonzero(~np.isfinite(y))
    if bad.size:
        shown = ", ".join(str(i) for i in bad[:10]) + (" ..." if bad.size > 10 else "")
        raise ValueError(
            f"{name} has {bad.size} NaN or infinite values (positions "
            f"{shown}); an HMM here needs every observation"
        )
    return y


@dataclass(frozen=True)
class Emission:
    """One emission family (module docstring). ``parameters``: the model's variable
    names; ``label_means``: what ``means`` returns per state."""

    name: str
    parameters: tuple[str, ...]

    # -- data and priors -------------------------------------------------------------
    def check(self, y, name="y", **options):
        return _check_finite(y, name)

    def hyper(self, y, **options) -> dict:
        return {}

    # -- the model -------------------------------------------------------------------
    def priors(self, hyper):
        """Create the parameters' random variables inside a model context."""
        raise NotImplementedError

    def observed(self, name, params, z, y):
        """The observed variable given the state path ``z``."""
        raise NotImplementedError

    def symbolic_log_lik(self, params, y):
        """``(T, K)`` symbolic ``log p(y_t | s_t = k)``."""
        raise NotImplementedError

    # -- numbers ---------------------------------------------------------------------
    def log_lik(self, params, y) -> np.ndarray:
        """``(..., T, K)`` ``log p(y_t | s_t = k)`` for parameters with leading dims."""
        raise NotImplementedError

    def conditional_draw(self, rng, y, z, K, hyper, current, beta) -> dict:
        """Natural values of the parameters drawn from their conditional given the path
        (power posterior at ``beta``)."""
        raise NotImplementedError

    def m_step(self, y, gamma, hyper) -> dict:
        """Maximum-likelihood parameters given the smoothed marginals ``gamma`` (T, K)."""
        raise NotImplementedError

    def means(self, params) -> np.ndarray:
        """``(..., K)``: each state's emission mean."""
        raise NotImplementedError

    def draw(self, rng, params, z) -> np.ndarray:
        """Observations given the path (a posterior predictive replicate)."""
        raise NotImplementedError


class _Gaussian(Emission):
    def hyper(self, y, **options):
        sd = float(np.std(y)) if y.size > 1 else 1.0
        sd = sd if sd > 0 else 1.0
        return {
            "mu_mean": float(np.mean(y)),
            "mu_sd": 2.0 * sd,
            "tau_shape": 2.0,
            "tau_rate": 0.5 * sd * sd,
        }

    def priors(self, hyper):
        mu = pm.Normal("mu", mu=hyper["mu_mean"], sigma=hyper["mu_sd"], dims="state")
        tau = pm.Gamma("tau", alpha=hyper["tau_shape"], beta=hyper["tau_rate"], dims="state")
        return {"mu": mu, "tau": tau}

    def observed(self, name, params, z, y):
        return pm.Normal(name, mu=params["mu"][z], tau=params["tau"][z], observed=y, dims="time")

    def symbolic_log_lik(self, params, y):
        return pm.logp(
            pm.Normal.dist(params["mu"][None, :], tau=params["tau"][None, :]), y[:, None]
        )

    def log_lik(self, params, y):
        mu = np.asarray(params["mu"])[..., None, :]
        tau = np.asarray(params["tau"])[..., None, :]
        return 0.5 * (np.log(tau) - np.log(2 * np.pi)) - 0.5 * tau * (y[:, None] - mu) ** 2

    def conditional_draw(self, rng, y, z, K, hyper, current, beta):
        n = np.bincount(z, minlength=K).astype(float)
        total = np.bincount(z, weights=y, minlength=K)
        mu = np.asarray(current["mu"], dtype=float)
        ss = np.bincount(z, weights=(y - mu[z]) ** 2, minlength=K)
        tau = rng.gamma(
            hyper["tau_shape"] + 0.5 * beta * n, 1.0 / (hyper["tau_rate"] + 0.5 * beta * ss)
        )
        prior_precision = 1.0 / hyper["mu_sd"] ** 2
        precision = prior_precision + beta * tau * n
        mean = (prior_precision * hyper["mu_mean"] + beta * tau * total) / precision
        mu = mean + rng.standard_normal(K) / np.sqrt(precision)
        return {"mu": mu, "tau": tau}

    def m_step(self, y, gamma, hyper):
        weight = gamma.sum(axis=0)
        mu = gamma.T @ y / weight
        var = (gamma * (y[:, None] - mu[None, :]) ** 2).sum(axis=0) / weight
        return {"mu": mu, "tau": 1.0 / var}

    def means(self, params):
        return np.asarray(params["mu"])

    def draw(self, rng, params, z):
        mu, tau = np.asarray(params["mu"]), np.asarray(params["tau"])
        return mu[z] + rng.standard_normal(z.shape) / np.sqrt(tau[z])


class _Poisson(Emission):
    def check(self, y, name="y", **options):
        return as_whole_numbers(_check_finite(y, name), name, "counts")

    def hyper(self, y, **options):
        mean = float(np.mean(y)) if y.size else 1.0
        return {"rate_shape": 1.0, "rate_rate": 1.0 / max(mean, 0.5)}

    def priors(self, hyper):
        rate = pm.Gamma("rate", alpha=hyper["rate_shape"], beta=hyper["rate_rate"], dims="state")
        return {"rate": rate}

    def observed(self, name, params, z, y):
        return pm.Poisson(name, mu=params["rate"][z], observed=y, dims="time")

    def symbolic_log_lik(self, params, y):
        return pm.logp(pm.Poisson.dist(params["rate"][None, :]), y[:, None])

    def log_lik(self, params, y):
        rate = np.asarray(params["rate"])[..., None, :]
        return y[:, None] * np.log(rate) - rate - gammaln(y + 1.0)[:, None]

    def conditional_draw(self, rng, y, z, K, hyper, current, beta):
        n = np.bincount(z, minlength=K).astype(float)
        total = np.bincount(z, weights=y, minlength=K)
        # numpy's gamma takes the scale, the inverse of the posterior rate
        rate = rng.gamma(hyper["rate_shape"] + beta * total, 1.0 / (hyper["rate_rate"] + beta * n))
        return {"rate": rate}

    def m_step(self, y, gamma, hyper):
        return {"rate": gamma.T @ y / gamma.sum(axis=0)}

    def means(self, params):
        return np.asarray(params["rate"])

    def draw(self, rng, params, z):
        return rng.poisson(np.asarray(params["rate"])[z])


class _Bernoulli(Emission):
    def check(self, y, name="y", **options):
        y = as_whole_numbers(_check_finite(y, name), name, "binary values")
        if y.size and y.max() > 1:
            raise ValueError(f"{name}: binary values must be 0 or 1 (found {y.max()})")
        return y

    def hyper(self, y, **options):
        return {"p_a": 1.0, "p_b": 1.0}

    def priors(self, hyper):
        return {"p": pm.Beta("p", alpha=hyper["p_a"], beta=hyper["p_b"], dims="state")}

    def observed(self, name, params, z, y):
        return pm.Bernoulli(name, p=params["p"][z], observed=y, dims="time")

    def symbolic_log_lik(self, params, y):
        return pm.logp(pm.Bernoulli.dist(params["p"][None, :]), y[:, None])

    def log_lik(self, params, y):
        p = np.asarray(params["p"])[..., None, :]
        with np.errstate(divide="ignore"):
            return np.where(y[:, None] == 1, np.log(p), np.log1p(-p))

    def conditional_draw(self, rng, y, z, K, hyper, current, beta):
        n = np.bincount(z, minlength=K).astype(float)
        ones = np.bincount(z, weights=y.astype(float), minlength=K)
        return {"p": rng.beta(hyper["p_a"] + beta * ones, hyper["p_b"] + beta * (n - ones))}

    def m_step(self, y, gamma, hyper):
        return {"p": gamma.T @ y / gamma.sum(axis=0)}

    def means(self, params):
        return np.asarray(params["p"])

    def draw(self, rng, params, z):
        return (rng.random(z.shape) < np.asarray(params["p"])[z]).astype(np.int64)


class _Categorical(Emission):
    def check(self, y, name="y", n_categories=None, **options):
        y = as_whole_numbers(_check_finite(y, name), name, "category codes")
        if n_categories is not None:
            C = check_int(n_categories, "n_categories", minimum=2)
            if y.size and y.max() >= C:
                raise ValueError(
                    f"{name}: category codes must be < n_categories = {C} (found {y.max()})"
                )
        return y

    def hyper(self, y, n_categories=None, **options):
        C = int(n_categories) if n_categories is not None else max(int(y.max()) + 1, 2)
        return {"phi_concentration": np.ones(C)}

    def priors(self, hyper):
        a = np.asarray(hyper["phi_concentration"])
        K = len(pm.modelcontext(None).coords["state"])
        return {"phi": pm.Dirichlet("phi", a=np.tile(a, (K, 1)), dims=("state", "category"))}

    def observed(self, name, params, z, y):
        return pm.Categorical(name, p=params["phi"][z], observed=y, dims="time")

    def symbolic_log_lik(self, params, y):
        return pt.log(params["phi"]).T[y]

    def log_lik(self, params, y):
        with np.errstate(divide="ignore"):
            log_phi = np.log(np.asarray(params["phi"]))  # (..., K, C)
        return np.swapaxes(log_phi[..., y], -1, -2)

    def conditional_draw(self, rng, y, z, K, hyper, current, beta):
        a = np.asarray(hyper["phi_concentration"])
        counts = np.zeros((K, a.size))
        np.add.at(counts, (z, y), 1.0)
        g = rng.gamma(a[None, :] + beta * counts)
        return {"phi": g / g.sum(axis=1, keepdims=True)}

    def m_step(self, y, gamma, hyper):
        C = np.asarray(hyper["phi_concentration"]).size
        counts = np.zeros((gamma.shape[1], C))
        for c in range(C):
            counts[:, c] = gamma[y == c].sum(axis=0)
        return {"phi": counts / counts.sum(axis=1, keepdims=True)}

    def means(self, params):
        phi = np.asarray(params["phi"])
        return phi @ np.arange(phi.shape[-1])

    def draw(self, rng, params, z):
        phi = np.asarray(params["phi"])[z]
        u = rng.random(z.shape)[:, None]
        return np.minimum((np.cumsum(phi, axis=1) < u).sum(axis=1), phi.shape[1] - 1)


EMISSIONS = {
    "gaussian": _Gaussian("gaussian", ("mu", "tau")),
    "poisson": _Poisson("poisson", ("rate",)),
    "bernoulli": _Bernoulli("bernoulli", ("p",)),
    "categorical": _Categorical("categorical", ("phi",)),
}


def get_emission(name) -> Emission:
    """The emission family ``name``; ``ValueError`` naming the choices."""
    if not isinstance(name, str) or name not in EMISSIONS:
        raise ValueError(f"emission must be one of {', '.join(map(repr, EMISSIONS))}, got {name!r}")
    return EMISSIONS[name]
