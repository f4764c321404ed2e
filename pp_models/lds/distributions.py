"""The LDS's forward draws as random variables with Numba implementations.

``lds_state_path(A, Q, m0, P0, length)`` draws a path ``x_{1:T}`` (``T x n``,
``T = len(length)``) from ``x_1 ~ N(m0, P0)``, ``x_t = A x_{t-1} + N(0, Q)``;
``lds_observations(A, C, Q, R, m0, P0, length)`` draws ``y_{1:T}`` (``T x p``), the path
drawn and then ``y_t = C x_t + N(0, R)`` (Ghahramani & Roweis 1999, the generative
model). The kernels are :func:`custom_ops.lds.simulation.state_path_draw` and
:func:`custom_ops.lds.simulation.observation_draw`; as registered Numba draws they run
compiled inside PyTensor's Numba backend (a Python draw would run there in object mode).
:func:`pp_models.lds.model` uses them as the forward draws of its ``CustomDist``\\ s,
whose log-densities it gives. ``lds_observations`` integrates the path out, so, like the
model's Kalman likelihood, it refuses :func:`pymc.sample_posterior_predictive`
(:mod:`custom_ops.pymc_guard`).
"""

from __future__ import annotations

import numpy as np
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.jit import rv_draw_cache_key
from custom_ops.lds.simulation import observation_draw, state_path_draw
from custom_ops.pymc_guard import refuse_pymc_posterior_predictive

__all__ = ["LDSObservationsRV", "LDSStatePathRV", "lds_observations", "lds_state_path"]

#: the name the posterior-predictive refusal gives the collapsed likelihood
COLLAPSED = "the LDS's Kalman likelihood (states summed out)"


def _batched(params, core_ndims, size):
    """The batch shape and the parameters broadcast to it (``size`` wins)."""
    params = [np.asarray(v, dtype=np.float64) for v in params]
    batch = np.broadcast_shapes(*(v.shape[: v.ndim - k] for v, k in zip(params, core_ndims)))
    if size is not None:
        batch = tuple(size)
    return batch, [
        np.broadcast_to(v, (*batch, *v.shape[v.ndim - k :]))
        for v, k in zip(params, core_ndims, strict=True)
    ]


def _c(v):
    return np.ascontiguousarray(v, dtype=np.float64)


class LDSStatePathRV(RandomVariable):
    """A prior state path: params ``(A, Q, m0, P0, length)``; ``length`` (any values)
    gives the path its number of steps."""

    name = "lds_state_path"
    signature = "(n,n),(n,n),(n),(n,n),(t)->(t,n)"
    dtype = "float64"
    _print_name = ("LDSStatePath", "\\operatorname{LDSStatePath}")

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        shapes = param_shapes if param_shapes is not None else [p.shape for p in dist_params]
        return (shapes[4][-1], shapes[2][-1])

    @classmethod
    def rng_fn(cls, rng, A, Q, m0, P0, length, size):
        T = np.shape(length)[-1]
        batch, (A, Q, m0, P0) = _batched((A, Q, m0, P0), (2, 2, 1, 2), size)
        out = np.empty((*batch, T, m0.shape[-1]))
        for idx in np.ndindex(*batch):
            state_path_draw(rng, _c(A[idx]), _c(Q[idx]), _c(m0[idx]), _c(P0[idx]), out[idx])
        return out


class LDSObservationsRV(RandomVariable):
    """Observations with the path drawn and integrated out: params ``(A, C, Q, R, m0,
    P0, length)``."""

    name = "lds_observations"
    signature = "(n,n),(p,n),(n,n),(p,p),(n),(n,n),(t)->(t,p)"
    dtype = "float64"
    _print_name = ("LDSObservations", "\\operatorname{LDSObservations}")

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        shapes = param_shapes if param_shapes is not None else [p.shape for p in dist_params]
        return (shapes[6][-1], shapes[1][-2])

    @classmethod
    def rng_fn(cls, rng, A, C, Q, R, m0, P0, length, size):
        refuse_pymc_posterior_predictive(COLLAPSED)
        T = np.shape(length)[-1]
        batch, (A, C, Q, R, m0, P0) = _batched((A, C, Q, R, m0, P0), (2, 2, 2, 2, 1, 2), size)
        out = np.empty((*batch, T, C.shape[-2]))
        x = np.empty((T, m0.shape[-1]))
        for idx in np.ndindex(*batch):
            state_path_draw(rng, _c(A[idx]), _c(Q[idx]), _c(m0[idx]), _c(P0[idx]), x)
            observation_draw(rng, _c(C[idx]), _c(R[idx]), x, out[idx])
        return out


lds_state_path = LDSStatePathRV()
lds_observations = LDSObservationsRV()


@numba_core_rv_funcify.register(LDSStatePathRV)
def _numba_core_lds_state_path(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, A, Q, m0, P0, length, out=None):
        if out is None:
            out = np.empty((length.shape[0], m0.shape[0]))
        state_path_draw(
            rng,
            np.ascontiguousarray(A),
            np.ascontiguousarray(Q),
            np.ascontiguousarray(m0),
            np.ascontiguousarray(P0),
            out,
        )
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


@numba_core_rv_funcify.register(LDSObservationsRV)
def _numba_core_lds_observations(op, node):
    # made while pm.sample_posterior_predictive compiles its function: refuse there
    refuse_pymc_posterior_predictive(COLLAPSED)

    @numba_basic.numba_njit
    def random_fn(rng, A, C, Q, R, m0, P0, length, out=None):
        if out is None:
            out = np.empty((length.shape[0], C.shape[0]))
        x = np.empty((length.shape[0], m0.shape[0]))
        state_path_draw(
            rng,
            np.ascontiguousarray(A),
            np.ascontiguousarray(Q),
            np.ascontiguousarray(m0),
            np.ascontiguousarray(P0),
            x,
        )
        observation_draw(rng, np.ascontiguousarray(C), np.ascontiguousarray(R), x, out)
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)
