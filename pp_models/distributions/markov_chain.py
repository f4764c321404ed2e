"""The state path of a hidden Markov model as a PyMC distribution.

``z = MarkovChain("z", pi0, P, offsets)`` is an integer path of length
``T = offsets[-1]`` holding one or more sequences (``offsets[s]..offsets[s+1]-1``), each
starting from the initial distribution ``pi0`` (K,) and moving by the rows of the
transition matrix ``P`` (K, K), ``P[i, j] = p(z_t = j | z_{t-1} = i)``::

    log p(z) = sum_s [log pi0[z_{o_s}] + sum_{t = o_s + 1}^{o_{s+1} - 1} log P[z_{t-1}, z_t]]

(Ghahramani & Roweis 1999, the HMM's state model). Prior draws run as Numba code
(:func:`custom_ops.hmm.draws.markov_chain_draw`). The random variable's ``owner.op`` is
a :class:`MarkovChainRV`, which the zoo's FFBS step claims (``inference.gibbs.hmm``).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Discrete
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.hmm.draws import markov_chain_draw
from custom_ops.jit import rv_draw_cache_key

__all__ = ["MarkovChain", "MarkovChainRV", "as_offsets"]


def as_offsets(offsets, name: str = "offsets") -> np.ndarray:
    """``offsets`` as int64 rising strictly from 0 (at least two entries); else
    ``ValueError`` naming ``name``."""
    offsets = np.asarray(offsets)
    if offsets.ndim != 1 or offsets.size < 2 or not np.issubdtype(offsets.dtype, np.integer):
        raise ValueError(f"{name} must be a 1-D integer array of at least 2 entries")
    if offsets[0] != 0 or np.any(np.diff(offsets) <= 0):
        raise ValueError(f"{name} must rise strictly from 0, got {offsets.tolist()}")
    return offsets.astype(np.int64)


class MarkovChainRV(RandomVariable):
    """Random variable of a Markov chain's path: params ``(pi0, P, offsets)``."""

    name = "markov_chain"
    signature = "(k),(k,k),(s)->(t)"
    dtype = "int64"
    _print_name = ("MarkovChain", "\\operatorname{MarkovChain}")

    def make_node(self, rng, size, pi0, P, offsets):
        pi0 = pt.as_tensor_variable(pi0, dtype="float64")
        P = pt.as_tensor_variable(P, dtype="float64")
        offsets = pt.as_tensor_variable(offsets)
        if not offsets.dtype.startswith(("int", "uint")):
            raise TypeError(f"offsets must be integers, got dtype {offsets.dtype}")
        return super().make_node(rng, size, pi0, P, pt.cast(offsets, "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        return (dist_params[2][-1],)

    @classmethod
    def rng_fn(cls, rng, pi0, P, offsets, size):
        offsets = np.asarray(offsets, dtype=np.int64)
        pi0 = np.asarray(pi0, dtype=np.float64)
        P = np.asarray(P, dtype=np.float64)
        batch = np.broadcast_shapes(pi0.shape[:-1], P.shape[:-2])
        if size is not None:
            batch = tuple(size)
        pi0 = np.broadcast_to(pi0, (*batch, pi0.shape[-1]))
        P = np.broadcast_to(P, (*batch, *P.shape[-2:]))
        out = np.empty((*batch, int(offsets[-1])), dtype=np.int64)
        for idx in np.ndindex(*batch):
            markov_chain_draw(
                rng, np.ascontiguousarray(pi0[idx]), np.ascontiguousarray(P[idx]), offsets, out[idx]
            )
        return out


markov_chain = MarkovChainRV()


@numba_core_rv_funcify.register(MarkovChainRV)
def _numba_core_markov_chain(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, pi0, P, offsets, out=None):
        if out is None:
            out = np.empty(offsets[-1], dtype=np.int64)
        markov_chain_draw(
            rng,
            np.ascontiguousarray(pi0),
            np.ascontiguousarray(P),
            np.ascontiguousarray(offsets),
            out,
        )
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


class MarkovChain(Discrete):
    r"""The state path of a first-order Markov chain over ``K`` states, one or more
    sequences.

    .. math::

        \log p(z) = \sum_s \Big[\log \pi_0[z_{o_s}]
        + \sum_{t=o_s+1}^{o_{s+1}-1} \log P[z_{t-1}, z_t]\Big]

    Parameters
    ----------
    pi0 : tensor_like of float, shape (K,)
        Initial distribution (a probability vector).
    P : tensor_like of float, shape (K, K)
        Transition matrix, rows probability vectors.
    offsets : array-like of int, shape (n_seq + 1,)
        Where each sequence starts, rising strictly from 0 to the path's length ``T``;
        a constant.
    """

    rv_op = markov_chain

    @classmethod
    def dist(cls, pi0, P, offsets, **kwargs):
        offsets = as_offsets(offsets)
        pi0 = pt.as_tensor_variable(pi0, dtype="float64")
        P = pt.as_tensor_variable(P, dtype="float64")
        return super().dist([pi0, P, pt.constant(offsets, dtype="int64")], **kwargs)

    def support_point(rv, size, pi0, P, offsets):
        # the most probable initial state throughout (positive probability when P's
        # diagonal is, and a valid start otherwise)
        T = offsets[-1]
        shape = (T,) if rv_size_is_none(size) else pt.concatenate([size, [T]])
        return pt.full(shape, pt.argmax(pi0, axis=-1), dtype="int64")

    def logp(value, pi0, P, offsets):
        if value.ndim != 1:
            raise NotImplementedError("MarkovChain logp is implemented for one path (1-D z)")
        K = pi0.shape[-1]
        inside = pt.all(pt.and_(pt.ge(value, 0), pt.lt(value, K)))
        z = pt.clip(value, 0, K - 1)
        starts = pt.set_subtensor(
            pt.zeros(value.shape[0], dtype="bool")[offsets[:-1]], np.array(True)
        )
        previous = pt.concatenate([z[:1], z[:-1]])
        terms = pt.switch(starts, pt.log(pi0)[z], pt.log(P)[previous, z])
        logp = pt.switch(pt.and_(inside, pt.eq(value.shape[0], offsets[-1])), terms.sum(), -np.inf)
        return check_parameters(
            logp,
            pt.all(pt.ge(pi0, 0)),
            pt.all(pt.ge(P, 0)),
            msg="pi0 >= 0, P >= 0",
        )
