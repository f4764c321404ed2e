"""Shrinkage priors on a precision matrix for Bayesian Gaussian graphical models.

- :class:`BayesianGLassoPrecision` (Wang 2012, Eq. 2):

  .. math::

     p(\\Omega \\mid \\lambda) \\propto \\prod_{i<j} \\tfrac{\\lambda}{2} e^{-\\lambda
     |\\omega_{ij}|} \\prod_i \\tfrac{\\lambda}{2} e^{-\\lambda \\omega_{ii} / 2}\\,
     1[\\Omega \\succ 0].

  Its normaliser does not depend on lambda (substitute ``Omega' = lam Omega``: the PD
  cone is a cone), so ``logp`` is correct up to a constant even with a prior on lambda.
- :class:`SpikeSlabPrecision` (Wang 2015, "stochastic search structure learning"): the
  edge indicators summed out,

  .. math::

     p(\\Omega) \\propto \\prod_{i<j} [\\pi N(\\omega_{ij} \\mid 0, v_1^2) + (1 - \\pi)
     N(\\omega_{ij} \\mid 0, v_0^2)] \\prod_i \\tfrac{\\lambda}{2} e^{-\\lambda
     \\omega_{ii}/2}\\, 1[\\Omega \\succ 0],

  the Omega-marginal of Wang's joint over (Omega, Z).

Both take PyMC's :class:`~pymc.distributions.transforms.CholeskyCovTransform` as the
default transform (``Omega = L L'`` with a log diagonal; log-Jacobian ``p log 2 +
sum_k (p - k + 2) log L_kk``), so NUTS moves in an unconstrained space and never
leaves the PD cone. Prior draws are by rejection of independent entries (Numba,
:mod:`custom_ops.ggm.gibbs`): exact, but only practical for small p.
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.distribution import Continuous
from pymc.distributions.shape_utils import rv_size_is_none
from pymc.distributions.transforms import CholeskyCovTransform
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.ggm.gibbs import draw_bglasso_prior, draw_spike_slab_prior
from custom_ops.jit import rv_draw_cache_key
from pp_models.pymc_internals import register_default_transform
from pp_models.validation import check_int

__all__ = [
    "BayesianGLassoPrecision",
    "BayesianGLassoPrecisionRV",
    "SpikeSlabPrecision",
    "SpikeSlabPrecisionRV",
]

#: Rejection-sampling budget of a prior draw.
MAX_TRIES = 1_000_000



def _fail(tries):
    if tries > MAX_TRIES:
        raise RuntimeError(
            f"no positive-definite prior draw in {MAX_TRIES} rejection tries: prior draws "
            "of this precision prior are only practical for small p"
        )


class BayesianGLassoPrecisionRV(RandomVariable):
    """Random variable of the Bayesian graphical lasso prior: params ``(lam, p)``."""

    name = "bglasso_precision"
    signature = "(),()->(p,p)"
    dtype = "floatX"
    _print_name = ("BGLassoPrecision", "\\operatorname{BGLassoPrecision}")

    def make_node(self, rng, size, lam, p):
        lam = pt.as_tensor_variable(lam, dtype="float64")
        return super().make_node(rng, size, lam, pt.cast(pt.as_tensor_variable(p), "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        p = dist_params[1].squeeze()
        return (p, p)

    @classmethod
    def rng_fn(cls, rng, lam, p, size):
        p = int(np.asarray(p).reshape(-1)[0])
        lam = np.asarray(lam, dtype=np.float64)
        batch = tuple(size) if size is not None else lam.shape
        lam = np.broadcast_to(lam, batch)
        out = np.empty((*batch, p, p))
        for idx in np.ndindex(*batch):
            out[idx], tries = draw_bglasso_prior(rng, float(lam[idx]), p, MAX_TRIES)
            _fail(tries)
        return out


class SpikeSlabPrecisionRV(RandomVariable):
    """Random variable of the SSSL prior: params ``(v0, v1, pi, lam, p)``."""

    name = "spike_slab_precision"
    signature = "(),(),(),(),()->(p,p)"
    dtype = "floatX"
    _print_name = ("SpikeSlabPrecision", "\\operatorname{SpikeSlabPrecision}")

    def make_node(self, rng, size, v0, v1, pi, lam, p):
        params = [pt.as_tensor_variable(v, dtype="float64") for v in (v0, v1, pi, lam)]
        return super().make_node(rng, size, *params, pt.cast(pt.as_tensor_variable(p), "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        p = dist_params[4].squeeze()
        return (p, p)

    @classmethod
    def rng_fn(cls, rng, v0, v1, pi, lam, p, size):
        p = int(np.asarray(p).reshape(-1)[0])
        params = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (v0, v1, pi, lam)))
        batch = tuple(size) if size is not None else params[0].shape
        params = [np.broadcast_to(v, batch) for v in params]
        out = np.empty((*batch, p, p))
        for idx in np.ndindex(*batch):
            out[idx], _, tries = draw_spike_slab_prior(
                rng, *(float(v[idx]) for v in params), p, MAX_TRIES
            )
            _fail(tries)
        return out


bglasso_precision = BayesianGLassoPrecisionRV()
spike_slab_precision = SpikeSlabPrecisionRV()


@numba_core_rv_funcify.register(BayesianGLassoPrecisionRV)
def _numba_core_bglasso(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, lam, p):
        out, tries = draw_bglasso_prior(rng, float(lam), int(p), MAX_TRIES)
        if tries > MAX_TRIES:
            raise RuntimeError("no positive-definite prior draw (p too large for rejection)")
        return out

    return random_fn, rv_draw_cache_key(__file__)


@numba_core_rv_funcify.register(SpikeSlabPrecisionRV)
def _numba_core_spike_slab(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, v0, v1, pi, lam, p):
        out, _, tries = draw_spike_slab_prior(
            rng, float(v0), float(v1), float(pi), float(lam), int(p), MAX_TRIES
        )
        if tries > MAX_TRIES:
            raise RuntimeError("no positive-definite prior draw (p too large for rejection)")
        return out

    return random_fn, rv_draw_cache_key(__file__)


def _pd_and_parts(value):
    """(is positive definite, strictly-lower entries, diagonal) of a square ``value``."""
    chol = pt.linalg.cholesky(value, on_error="nan")
    is_pd = pt.all(pt.isfinite(pt.diagonal(chol, axis1=-2, axis2=-1)), axis=-1)
    p = value.shape[-1]
    rows, cols = pt.tril_indices(p, -1)
    return is_pd, value[..., rows, cols], pt.diagonal(value, axis1=-2, axis2=-1)


class BayesianGLassoPrecision(Continuous):
    """Bayesian graphical lasso prior on a p x p precision matrix (Wang 2012).

    Parameters
    ----------
    lam : tensor_like of float > 0
        Shrinkage: Laplace rate of the off-diagonal entries, exponential rate ``lam/2``
        of the diagonal.
    p : int
        Dimension (a constant).

    References
    ----------
    Wang, H. (2012). Bayesian graphical lasso models and efficient posterior computation.
    Bayesian Analysis 7(4), 867-886.
    """

    rv_op = bglasso_precision

    @classmethod
    def dist(cls, lam, p, **kwargs):
        p = check_int(p, "p", minimum=1)
        return super().dist([pt.as_tensor_variable(lam, dtype="float64"),
                             pt.constant(p, dtype="int64")], **kwargs)

    def support_point(rv, size, lam, p):
        eye = pt.eye(p) * 2.0 / lam
        if rv_size_is_none(size):
            return eye
        return pt.broadcast_to(eye, pt.concatenate([size, [p, p]]))

    def logp(value, lam, p):
        is_pd, off, diag = _pd_and_parts(value)
        n_off = off.shape[-1]
        logp = (
            (n_off + p) * pt.log(lam / 2.0)
            - lam * pt.sum(pt.abs(off), axis=-1)
            - lam / 2.0 * pt.sum(diag, axis=-1)
        )
        return pt.switch(is_pd & (lam > 0), logp, -np.inf)


class SpikeSlabPrecision(Continuous):
    """Continuous spike-and-slab prior on a precision matrix (Wang 2015), edges summed out.

    Parameters
    ----------
    v0, v1 : tensor_like of float, 0 < v0 < v1
        Standard deviations of the spike (absent edge) and the slab (present edge).
    pi : tensor_like of float in (0, 1)
        Prior edge-inclusion probability (before truncation to the PD cone).
    lam : tensor_like of float > 0
        Exponential rate ``lam / 2`` of the diagonal.
    p : int

    References
    ----------
    Wang, H. (2015). Scaling it up: stochastic search structure learning in graphical
    models. Bayesian Analysis 10(2), 351-377.
    """

    rv_op = spike_slab_precision

    @classmethod
    def dist(cls, v0, v1, pi, lam, p, **kwargs):
        p = check_int(p, "p", minimum=1)
        params = [pt.as_tensor_variable(v, dtype="float64") for v in (v0, v1, pi, lam)]
        return super().dist([*params, pt.constant(p, dtype="int64")], **kwargs)

    def support_point(rv, size, v0, v1, pi, lam, p):
        eye = pt.eye(p) * 2.0 / lam
        if rv_size_is_none(size):
            return eye
        return pt.broadcast_to(eye, pt.concatenate([size, [p, p]]))

    def logp(value, v0, v1, pi, lam, p):
        is_pd, off, diag = _pd_and_parts(value)
        half_log_2pi = 0.5 * np.log(2.0 * np.pi)
        slab = pt.log(pi) - pt.log(v1) - half_log_2pi - 0.5 * (off / v1) ** 2
        spike = pt.log1p(-pi) - pt.log(v0) - half_log_2pi - 0.5 * (off / v0) ** 2
        logp = (
            pt.sum(pt.logaddexp(slab, spike), axis=-1)
            + p * pt.log(lam / 2.0)
            - lam / 2.0 * pt.sum(diag, axis=-1)
        )
        ok = is_pd & (lam > 0) & (v0 > 0) & (v1 > v0) & (pi > 0) & (pi < 1)
        return pt.switch(ok, logp, -np.inf)


@register_default_transform(BayesianGLassoPrecisionRV, SpikeSlabPrecisionRV)
def _precision_default_transform(op, rv):
    return CholeskyCovTransform(n=rv.owner.inputs[-1])
