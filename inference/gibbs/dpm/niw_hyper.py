"""Exact Gibbs update of a learned Normal-Inverse-Wishart base measure (Rasmussen 2000).

The DP mixture of full-covariance Gaussians with the cluster parameters integrated out
(:class:`~pp_models.distributions.CollapsedGaussian`) has base measure

    Sigma_k ~ IW(nu0, S0),   mu_k | Sigma_k ~ N(m0, Sigma_k / kappa0).

Rasmussen (2000, §2) and Gorur & Rasmussen (2010, §3) put conjugate hyperpriors on the
base measure's parameters,

    S0 ~ Wishart(w, V),   kappa0 ~ Gamma(a, rate b),   m0 ~ N(mean, C),

and sample them given the cluster parameters. With the clusters collapsed, this step
instantiates them first and then draws each hyperparameter from its full conditional
given them (a Gibbs sweep on the space augmented with the cluster parameters, which are
then discarded; it leaves p(S0, kappa0, m0 | z, X) invariant)::

    Lambda_k = Sigma_k^-1 ~ Wishart(nu_k, S_k^-1),  mu_k ~ N(m_k, (kappa_k Lambda_k)^-1)
        (the NIW posterior of cluster k: ``custom_ops.conjugate.posterior_parameters``)
    S0 | Lambda ~ Wishart(w + K nu0, (V^-1 + sum_k Lambda_k)^-1)
    kappa0 | mu, Lambda, m0 ~ Gamma(a + K d / 2, b + 1/2 sum_k (mu_k - m0)' Lambda_k (mu_k - m0))
    m0 | mu, Lambda, kappa0 ~ N(P^-1 (C^-1 mean + kappa0 sum_k Lambda_k mu_k), P^-1),
        P = C^-1 + kappa0 sum_k Lambda_k.

The first follows from the IW density being proportional to
``det(S0)^(nu0/2) exp(-tr(S0 Sigma^-1)/2)`` in S0, the others are the Normal-Gamma
and Normal-Normal updates. Any subset of the three may be random (the others
constant); ``nu0`` must be constant.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor
import pytensor.tensor as pt
from pymc.distributions.multivariate import WishartRV
from pytensor.tensor.random.basic import GammaRV, MvNormalRV
from scipy import stats

from custom_ops.conjugate import gaussian_stats, posterior_parameters
from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import canonicalize
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.distributions.collapsed import CollapsedRV

__all__ = ["NIWHyperGibbs", "instantiate_clusters"]

_HYPER = ("m0", "kappa0", "nu0", "S0")
_PRIOR_OPS = {"m0": MvNormalRV, "kappa0": GammaRV, "S0": WishartRV}


def instantiate_clusters(rng, z, X, m0, kappa0, nu0, S0):
    """Draw (mu_k, Lambda_k) of every block of ``z`` from its NIW posterior.

    Returns ``(mus (K, d), precisions (K, d, d))``.
    """
    labels, K = canonicalize(np.ascontiguousarray(z, dtype=np.int64))
    d = X.shape[1]
    mus = np.empty((K, d))
    precisions = np.empty((K, d, d))
    for k in range(K):
        post = posterior_parameters("gaussian", gaussian_stats(X[labels == k]),
                                    (m0, kappa0, nu0, S0))
        Sn = 0.5 * (post["S"] + post["S"].T)
        Lam = _wishart(rng, post["nu"], np.linalg.inv(Sn))
        precisions[k] = Lam
        chol = np.linalg.cholesky(post["kappa"] * Lam)
        # mu ~ N(m, (kappa Lam)^-1): solve L' x = eps
        mus[k] = post["m"] + np.linalg.solve(chol.T, rng.standard_normal(d))
    return mus, precisions


def _wishart(rng, df, scale):
    return np.atleast_2d(stats.wishart.rvs(df=df, scale=0.5 * (scale + scale.T),
                                           random_state=rng))


@register_step
class NIWHyperGibbs(ZooGibbsStep):
    """Gibbs update of ``S0 ~ Wishart``, ``kappa0 ~ Gamma`` and ``m0 ~ MvNormal``, the
    hyperparameters of one :class:`~pp_models.distributions.CollapsedGaussian`
    (module docstring).

    Parameters
    ----------
    vars : list
        The random hyperparameters (any of ``S0``, ``kappa0``, ``m0`` as passed to the
        likelihood, each with the prior named above).
    model : pymc.Model, optional
    rng : seed or Generator, optional

    Raises
    ------
    ValueError
        If a variable is not a hyperparameter of exactly one collapsed Gaussian
        likelihood, has another prior, or enters any other term; or ``nu0`` is random.
    """

    name = "niw_hyper_gibbs"
    #: tempered by a Metropolis-Hastings correction of the augmentation sweep (step)
    can_temper = True
    stats_dtypes_shapes = {"kappa0": (np.float64, []), "S0_trace": (np.float64, [])}

    def __init__(self, vars, *, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        model = self.model
        rvs = [model.values_to_rvs[v] for v in self.vars]
        likelihood = None
        for rv in rvs:
            terms, potentials = terms_depending_on(model, rv)
            if len(terms) != 1 or potentials or not isinstance(terms[0].owner.op, CollapsedRV):
                raise ValueError(f"vars: {rv.name} must enter exactly one collapsed likelihood "
                                 f"and nothing else (found {[t.name for t in terms]}, "
                                 f"potentials {[p.name for p in potentials]})")
            if likelihood is not None and terms[0] is not likelihood:
                raise ValueError("vars: all hyperparameters must belong to one likelihood")
            likelihood = terms[0]
        if likelihood.owner.op.family != "gaussian":
            raise ValueError(f"vars: {likelihood.name} is not a collapsed full-covariance "
                             "Gaussian likelihood")
        params = likelihood.owner.op.dist_params(likelihood.owner)
        z_rv, hyper = params[0], dict(zip(_HYPER, params[1:5], strict=True))
        self._roles = {}
        for rv, value in zip(rvs, self.vars, strict=True):
            role = next((k for k, h in hyper.items() if h is rv), None)
            if role is None or role == "nu0":
                raise ValueError(f"vars: {rv.name} must be m0, kappa0 or S0 of {likelihood.name} "
                                 "itself (not a function of it; nu0 cannot be learned here)")
            if not isinstance(rv.owner.op, _PRIOR_OPS[role]):
                raise ValueError(f"vars: {role} ({rv.name}) needs a "
                                 f"{_PRIOR_OPS[role].__name__} prior for this step")
            self._roles[role] = (rv, value)
        priors = []
        for role in ("m0", "kappa0", "S0"):
            if role in self._roles:
                rv = self._roles[role][0]
                priors += list(rv.owner.op.dist_params(rv.owner))
        self._z = z_rv
        self._values_fn = self.compile_point_fn([z_rv, likelihood, *hyper.values(), *priors])
        self._forward = {}
        for role, (rv, _value) in self._roles.items():
            transform = model.rvs_to_transforms.get(rv)
            if transform is None:
                self._forward[role] = None
                continue
            natural = pt.tensor("natural", shape=rv.type.shape, dtype=rv.dtype)
            self._forward[role] = pytensor.function(
                [natural], transform.forward(natural, *rv.owner.inputs),
                on_unused_input="ignore")

    # the conditionals, as methods so that tests can plant bugs in a subclass
    def s0_conditional(self, precisions, nu0, w, V):
        """(df, scale) of S0 | Lambda_1..K (module docstring)."""
        K = precisions.shape[0]
        return w + K * nu0, np.linalg.inv(np.linalg.inv(V) + precisions.sum(axis=0))

    def kappa0_conditional(self, mus, precisions, m0, a, b):
        """(shape, rate) of kappa0 | mu, Lambda, m0."""
        K, d = mus.shape
        r = mus - m0
        quad = float(np.einsum("ki,kij,kj->", r, precisions, r))
        return a + 0.5 * K * d, b + 0.5 * quad

    def m0_conditional(self, mus, precisions, kappa0, mean, cov):
        """(mean, covariance) of m0 | mu, Lambda, kappa0."""
        C_inv = np.linalg.inv(cov)
        P = C_inv + kappa0 * precisions.sum(axis=0)
        cov_post = np.linalg.inv(P)
        mean_post = cov_post @ (C_inv @ mean + kappa0 * np.einsum("kij,kj->i", precisions, mus))
        return mean_post, 0.5 * (cov_post + cov_post.T)

    def _draw(self, values, random_order):
        """One augmentation sweep (module docstring) from the point's values: the new
        natural values by role, and (kappa0, S0) after it. ``random_order``: update
        kappa0 and m0 in a random order (the sweep is then reversible, see
        :meth:`step`)."""
        z, X = np.asarray(values[0]), np.asarray(values[1], dtype=np.float64)
        m0, kappa0, nu0, S0 = (np.asarray(v, dtype=np.float64) for v in values[2:6])
        priors = iter(values[6:])
        prior = {}
        for role in ("m0", "kappa0", "S0"):
            if role in self._roles:
                prior[role] = (next(priors), next(priors))
        kappa0, nu0 = float(kappa0), float(nu0)
        mus, precisions = instantiate_clusters(self.rng, z, X, m0, kappa0, nu0, S0)
        new = {}
        if "S0" in prior:
            w, chol = prior["S0"]
            chol = np.asarray(chol)
            df, scale = self.s0_conditional(precisions, nu0, float(w), chol @ chol.T)
            S0 = _wishart(self.rng, df, scale)
            new["S0"] = S0
        order = ("kappa0", "m0")
        if random_order and self.rng.random() < 0.5:
            order = ("m0", "kappa0")
        for role in order:
            if role == "kappa0" and "kappa0" in prior:
                shape, scale = (float(v) for v in prior["kappa0"])
                a, b = self.kappa0_conditional(mus, precisions, m0, shape, 1.0 / scale)
                kappa0 = float(self.rng.gamma(a, 1.0 / b))
                new["kappa0"] = np.asarray(kappa0)
            elif role == "m0" and "m0" in prior:
                mean, cov = (np.asarray(v, dtype=np.float64) for v in prior["m0"])
                mean_post, cov_post = self.m0_conditional(mus, precisions, kappa0, mean, cov)
                m0 = mean_post + np.linalg.cholesky(cov_post) @ self.rng.standard_normal(
                    m0.size)
                new["m0"] = m0
        return new, (m0, kappa0, nu0, S0)

    def step(self, point):
        """At ``beta = 1`` one augmentation sweep (module docstring). At ``beta < 1``
        the target is ``p(h) p(X | z, h)^beta`` (h the hyperparameters, ``p(X | z, h)``
        the collapsed marginal), which the augmentation cannot reach directly: the sweep
        with kappa0 and m0 updated in a random order is a proposal kernel reversible with
        respect to the beta = 1 conditional ``p(h) p(X | z, h)`` (its h-chain is a
        data-augmentation chain whose second block is a random-scan Gibbs kernel, both
        reversible), so Metropolis-Hastings with that proposal accepts with probability
        ``min(1, (p(X | z, h') / p(X | z, h))^(beta - 1))``: the proposal density cancels
        against the beta = 1 target by detailed balance."""
        values = self._values_fn(point)
        tempered = self.beta != 1.0
        new, (m0, kappa0, nu0, S0) = self._draw(values, random_order=tempered)
        if tempered:
            z, X = np.asarray(values[0]), np.asarray(values[1], dtype=np.float64)
            old_h = tuple(np.asarray(v, dtype=np.float64) for v in values[2:6])
            new_h = (np.asarray(m0, dtype=np.float64), np.asarray(kappa0, dtype=np.float64),
                     np.asarray(nu0, dtype=np.float64), np.asarray(S0, dtype=np.float64))
            log_ratio = (self.beta - 1.0) * (
                collapsed_loglik_value("gaussian", z, X, new_h)
                - collapsed_loglik_value("gaussian", z, X, old_h))
            if not math.log(self.rng.random()) < log_ratio:
                _m0, old_kappa0, _nu0, old_S0 = old_h
                return dict(point), [{"kappa0": float(old_kappa0),
                                      "S0_trace": float(np.trace(old_S0))}]
        updates = {}
        for role, natural in new.items():
            _rv, value = self._roles[role]
            forward = self._forward[role]
            out = np.asarray(natural if forward is None else forward(natural))
            updates[value.name] = out.astype(point[value.name].dtype)
        return self.updated(point, **updates), [
            {"kappa0": kappa0, "S0_trace": float(np.trace(S0))}
        ]
