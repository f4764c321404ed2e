"""Collapsed conjugate likelihoods: data given a partition, component parameters
integrated out.

Each distribution here is a distribution over a data matrix ``X`` (n, d) given integer
labels ``z`` (n,), usually a :class:`~pp_models.distributions.CRP`: rows with equal labels
share one component whose parameters are drawn from a conjugate prior and integrated
out (Heller 2007 §2.1.1, Eqs. 2.12-2.14; Murphy 2012 Eqs. 25.36-25.38)::

    log p(X | z) = sum over blocks k of log ∫ prod_{i: z_i = k} F(x_i | theta) H(theta) dtheta

==========================  =================================  ==========================
distribution                component F, prior H               hyperparameters
==========================  =================================  ==========================
``CollapsedGaussian``       N(mu, Sigma), full covariance;     ``m0`` (d,), ``kappa0``,
                            Normal-Inverse-Wishart              ``nu0`` > d - 1, ``S0``
``CollapsedDiagGaussian``   N(mu_j, 1/tau_j) per column;       ``m0, kappa0, a0, b0``
                            Normal-Gamma per column             each (d,)
``CollapsedBernoulli``      Bernoulli(p_j) per binary column;  ``a, b`` (d,)
                            Beta(a_j, b_j)
``CollapsedMultinomial``    Multinomial(N_i, p) per row;       ``concentration`` (K,),
                            Dirichlet (one-hot rows:            ``n_trials`` (n,) row
                            categorical)                        totals (default 1)
==========================  =================================  ==========================

``logp`` is the :class:`~custom_ops.dpm.collapsed.CollapsedLogLik` Op (Numba kernels, gradients
with respect to every hyperparameter). Forward draws (``pm.draw``, prior predictive)
draw each block's parameters from the prior and then its rows, in Numba. The labels
``z`` are discrete and get no gradient.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous, Discrete
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable
from pytensor.tensor.variable import TensorConstant

from custom_ops.dpm.collapsed import (
    collapsed_loglik,
    draw_bernoulli,
    draw_diag_gaussian,
    draw_gaussian,
    draw_multinomial,
)
from custom_ops.jit import rv_draw_cache_key
from custom_ops.pymc_guard import (
    refuse_pymc_log_likelihood,
    refuse_pymc_posterior_predictive,
)

__all__ = [
    "CollapsedBernoulli",
    "CollapsedBernoulliRV",
    "CollapsedDiagGaussian",
    "CollapsedDiagGaussianRV",
    "CollapsedGaussian",
    "CollapsedGaussianRV",
    "CollapsedMultinomial",
    "CollapsedMultinomialRV",
    "CollapsedRV",
]


def _labels(z):
    z = pt.as_tensor_variable(z)
    if not z.dtype.startswith(("int", "uint")):
        raise TypeError(f"z must hold integer labels, got dtype {z.dtype}")
    if z.ndim != 1:
        raise ValueError(f"z must be a 1-D label vector, got ndim={z.ndim}")
    return pt.cast(z, "int64")


def _vector(value, name, d):
    value = pt.as_tensor_variable(value, dtype="float64")
    if value.ndim == 0:
        if d is None:
            raise ValueError(
                f"{name}: give a vector of length d (the number of columns of X), or pass "
                f"d= to broadcast the scalar"
            )
        value = pt.full((d,), value)
    if value.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a vector, got ndim={value.ndim}")
    return value


def _scalar(value, name):
    value = pt.as_tensor_variable(value, dtype="float64")
    if value.ndim != 0:
        raise ValueError(f"{name} must be a scalar, got ndim={value.ndim}")
    return value


class CollapsedRV(RandomVariable):
    """Base of the collapsed likelihood random variables (``z`` is the first parameter).

    ``family`` names the conjugate family in ``custom_ops.conjugate``;
    ``n_hyper`` is the number of hyperparameter inputs after ``z``.
    """

    family: str = ""
    n_hyper: int = 0
    _draw = None

    def make_node(self, rng, size, z, *params):
        return super().make_node(rng, size, _labels(z), *params)

    @classmethod
    def rng_fn(cls, rng, z, *params):
        refuse_pymc_posterior_predictive(cls.__name__.removesuffix("RV"))
        *params, size = params
        z = np.asarray(z)
        if z.ndim != 1 or (size is not None and len(tuple(size)) > 0):
            raise NotImplementedError(f"{cls.__name__}: batched draws are not supported")
        out = np.empty(cls._out_shape(z, params))
        cls._draw_kernel()(rng, np.ascontiguousarray(z, dtype=np.int64), *cls._prep(params), out)
        return out

    @staticmethod
    def _prep(params):
        return [np.ascontiguousarray(p, dtype=np.float64) for p in params]

    @staticmethod
    def _out_shape(z, params):
        # One row per item; the width is the length of the first hyperparameter
        # (m0, a, or the Dirichlet concentration), i.e. the data's dimension.
        return (z.shape[0], np.shape(params[0])[-1])


class CollapsedGaussianRV(CollapsedRV):
    name = "collapsed_gaussian"
    signature = "(n),(d),(),(),(d,d)->(n,d)"
    dtype = "float64"
    family = "gaussian"
    _print_name = ("CollapsedGaussian", "\\operatorname{CollapsedGaussian}")

    @staticmethod
    def _draw_kernel():
        return draw_gaussian

    @staticmethod
    def _prep(params):
        m0, k0, nu0, S0 = params
        return [np.ascontiguousarray(m0, dtype=np.float64), float(k0), float(nu0),
                np.ascontiguousarray(S0, dtype=np.float64)]


class CollapsedDiagGaussianRV(CollapsedRV):
    name = "collapsed_diag_gaussian"
    signature = "(n),(d),(d),(d),(d)->(n,d)"
    dtype = "float64"
    family = "diag_gaussian"
    _print_name = ("CollapsedDiagGaussian", "\\operatorname{CollapsedDiagGaussian}")

    @staticmethod
    def _draw_kernel():
        return draw_diag_gaussian


class CollapsedBernoulliRV(CollapsedRV):
    name = "collapsed_bernoulli"
    signature = "(n),(d),(d)->(n,d)"
    dtype = "float64"
    family = "bernoulli"
    _print_name = ("CollapsedBernoulli", "\\operatorname{CollapsedBernoulli}")

    @staticmethod
    def _draw_kernel():
        return draw_bernoulli


class CollapsedMultinomialRV(CollapsedRV):
    name = "collapsed_multinomial"
    signature = "(n),(k),(n)->(n,k)"
    dtype = "float64"
    family = "multinomial"
    _print_name = ("CollapsedMultinomial", "\\operatorname{CollapsedMultinomial}")

    @staticmethod
    def _draw_kernel():
        return draw_multinomial


collapsed_gaussian = CollapsedGaussianRV()
collapsed_diag_gaussian = CollapsedDiagGaussianRV()
collapsed_bernoulli = CollapsedBernoulliRV()
collapsed_multinomial = CollapsedMultinomialRV()


# Numba forward draws (otherwise PyTensor's Numba backend falls back to object mode).
@numba_core_rv_funcify.register(CollapsedGaussianRV)
def _numba_core_collapsed_gaussian(op, node):
    refuse_pymc_posterior_predictive("CollapsedGaussian")
    @numba_basic.numba_njit
    def random_fn(rng, z, m0, kappa0, nu0, S0, out=None):
        if out is None:
            out = np.empty((z.shape[0], m0.shape[0]))
        draw_gaussian(rng, z, m0, float(kappa0), float(nu0), S0, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


@numba_core_rv_funcify.register(CollapsedDiagGaussianRV)
def _numba_core_collapsed_diag_gaussian(op, node):
    refuse_pymc_posterior_predictive("CollapsedDiagGaussian")
    @numba_basic.numba_njit
    def random_fn(rng, z, m0, k0, a0, b0, out=None):
        if out is None:
            out = np.empty((z.shape[0], m0.shape[0]))
        draw_diag_gaussian(rng, z, m0, k0, a0, b0, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


@numba_core_rv_funcify.register(CollapsedBernoulliRV)
def _numba_core_collapsed_bernoulli(op, node):
    refuse_pymc_posterior_predictive("CollapsedBernoulli")
    @numba_basic.numba_njit
    def random_fn(rng, z, a, b, out=None):
        if out is None:
            out = np.empty((z.shape[0], a.shape[0]))
        draw_bernoulli(rng, z, a, b, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


@numba_core_rv_funcify.register(CollapsedMultinomialRV)
def _numba_core_collapsed_multinomial(op, node):
    refuse_pymc_posterior_predictive("CollapsedMultinomial")
    @numba_basic.numba_njit
    def random_fn(rng, z, concentration, n_trials, out=None):
        if out is None:
            out = np.empty((z.shape[0], concentration.shape[0]))
        draw_multinomial(rng, z, concentration, n_trials, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


def _core_only(value, name):
    if value.ndim != 2:
        raise NotImplementedError(f"{name} logp is implemented for one (n, d) data matrix")


class CollapsedGaussian(Continuous):
    r"""Rows of ``X`` grouped by ``z``; per group N(mu, Sigma) with a Normal-Inverse-Wishart
    prior integrated out (Heller 2007 Eq. 2.13-2.14).

    Parameters
    ----------
    z : tensor_like of int, shape (n,)
        Labels (any non-negative integers; equal labels share a component).
    m0 : tensor_like of float, shape (d,)
        Prior mean of the component means.
    kappa0 : float
        Prior pseudo-count of the means (mu | Sigma ~ N(m0, Sigma / kappa0)), > 0.
    nu0 : float
        Inverse-Wishart degrees of freedom, > d - 1.
    S0 : tensor_like of float, shape (d, d)
        Inverse-Wishart scale (symmetric positive definite); E[Sigma] = S0 / (nu0 - d - 1).
    """

    rv_op = collapsed_gaussian

    @classmethod
    def dist(cls, z, m0, kappa0, nu0, S0, **kwargs):
        m0 = _vector(m0, "m0", None)
        S0 = pt.as_tensor_variable(S0, dtype="float64")
        if S0.ndim != 2:
            raise ValueError(f"S0 must be a (d, d) matrix, got ndim={S0.ndim}")
        return super().dist(
            [_labels(z), m0, _scalar(kappa0, "kappa0"), _scalar(nu0, "nu0"), S0], **kwargs
        )

    def support_point(rv, size, z, m0, kappa0, nu0, S0):
        return pt.zeros((z.shape[0], m0.shape[0])) + m0[None, :]

    def logp(value, z, m0, kappa0, nu0, S0):
        refuse_pymc_log_likelihood("CollapsedGaussian")
        _core_only(value, "CollapsedGaussian")
        return collapsed_loglik("gaussian", z, value, m0, kappa0, nu0, S0)


class CollapsedDiagGaussian(Continuous):
    r"""Rows of ``X`` grouped by ``z``; per group and column N(mu_j, 1/tau_j) with a
    Normal-Gamma prior (tau_j ~ Gamma(a0_j, rate b0_j), mu_j | tau_j ~ N(m0_j,
    1/(kappa0_j tau_j))) integrated out.

    Parameters
    ----------
    z : tensor_like of int, shape (n,)
    m0, kappa0, a0, b0 : tensor_like of float, shape (d,) (scalars broadcast with ``d``)
    d : int, optional
        Number of columns, needed only when every hyperparameter is a scalar.
    """

    rv_op = collapsed_diag_gaussian

    @classmethod
    def dist(cls, z, m0=0.0, kappa0=1.0, a0=1.0, b0=1.0, *, d=None, **kwargs):
        if d is None:
            for h in (m0, kappa0, a0, b0):
                if np.ndim(h) == 1:
                    d = np.shape(h)[0]
                    break
        return super().dist(
            [_labels(z), _vector(m0, "m0", d), _vector(kappa0, "kappa0", d),
             _vector(a0, "a0", d), _vector(b0, "b0", d)],
            **kwargs,
        )

    def support_point(rv, size, z, m0, kappa0, a0, b0):
        return pt.zeros((z.shape[0], m0.shape[0])) + m0[None, :]

    def logp(value, z, m0, kappa0, a0, b0):
        refuse_pymc_log_likelihood("CollapsedDiagGaussian")
        _core_only(value, "CollapsedDiagGaussian")
        return collapsed_loglik("diag_gaussian", z, value, m0, kappa0, a0, b0)


class CollapsedBernoulli(Discrete):
    r"""Binary rows of ``X`` grouped by ``z``; per group and column Bernoulli(p_j) with a
    Beta(a_j, b_j) prior integrated out (Heller 2007 §2.1.1, Bernoulli-Beta).

    Parameters
    ----------
    z : tensor_like of int, shape (n,)
    a, b : tensor_like of float, shape (d,) (scalars broadcast with ``d``)
    d : int, optional
    """

    rv_op = collapsed_bernoulli

    @classmethod
    def dist(cls, z, a=1.0, b=1.0, *, d=None, **kwargs):
        if d is None:
            for h in (a, b):
                if np.ndim(h) == 1:
                    d = np.shape(h)[0]
                    break
        return super().dist([_labels(z), _vector(a, "a", d), _vector(b, "b", d)], **kwargs)

    def support_point(rv, size, z, a, b):
        return pt.zeros((z.shape[0], a.shape[0]))

    def logp(value, z, a, b):
        refuse_pymc_log_likelihood("CollapsedBernoulli")
        _core_only(value, "CollapsedBernoulli")
        logp = collapsed_loglik("bernoulli", z, value, a, b)
        binary = pt.all(pt.or_(pt.eq(value, 0), pt.eq(value, 1)))
        return pt.switch(binary, logp, -np.inf)


class CollapsedMultinomial(Discrete):
    r"""Count rows of ``X`` grouped by ``z``; per group Multinomial(N_i, p) with a
    Dirichlet(concentration) prior integrated out (Heller 2007 Eq. 2.12, with the
    multinomial coefficients; one-hot rows with ``n_trials = 1``: Dirichlet-categorical).

    Parameters
    ----------
    z : tensor_like of int, shape (n,)
    concentration : tensor_like of float, shape (K,)
    n_trials : tensor_like of int, shape (n,) or scalar
        Row totals (used by forward draws; ``logp`` checks the data's row sums).
    """

    rv_op = collapsed_multinomial

    @classmethod
    def dist(cls, z, concentration, n_trials=1, **kwargs):
        z = _labels(z)
        concentration = _vector(concentration, "concentration", None)
        n_trials = pt.as_tensor_variable(n_trials, dtype="float64")
        if n_trials.ndim == 0:
            n_trials = pt.full(z.shape, n_trials)
        return super().dist([z, concentration, n_trials], **kwargs)

    def support_point(rv, size, z, concentration, n_trials):
        first = pt.zeros((z.shape[0], concentration.shape[0]))
        return pt.set_subtensor(first[:, 0], n_trials)

    def logp(value, z, concentration, n_trials):
        refuse_pymc_log_likelihood("CollapsedMultinomial")
        _core_only(value, "CollapsedMultinomial")
        if isinstance(value, TensorConstant):
            counts = np.asarray(value.data)
            if not np.all(counts == np.round(counts)):
                raise ValueError("CollapsedMultinomial: the observed counts must be whole "
                                 "numbers (found fractional values)")
        logp = collapsed_loglik("multinomial", z, value, concentration)
        # a symbolic value outside the support (negative, fractional, wrong row total) has
        # probability 0
        ok = pt.and_(pt.all(pt.ge(value, 0)), pt.all(pt.eq(value.sum(axis=1), n_trials)))
        ok = pt.and_(ok, pt.all(pt.eq(value, pt.round(value))))
        return pt.switch(ok, logp, -np.inf)
