"""Decomposable prior over the labelled spanning trees of V nodes (Meilă & Jaakkola 2006).

``T = SpanningTree("T", weights)`` is a random spanning tree with

.. math::  P(T) = \\frac{\\prod_{uv \\in T} \\beta_{uv}}{\\det L_0(\\beta)}

where ``L_0`` is the weighted Laplacian without row and column 0 (matrix-tree theorem).
Uniform weights give the uniform distribution over the ``V^(V-2)`` trees (Cayley). A
tree is stored as a parent vector rooted at node 0 (``T[0] == -1``), one per tree, so
this is a probability mass function over int vectors. Prior draws (``pm.draw``) use
Wilson's algorithm, exact and run as Numba code. ``logp`` supports batches of trees
(e.g. one tree per mixture component, shape (K, V)) with shared or batched weights.
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

from custom_ops.jit import rv_draw_cache_key
from custom_ops.mixture_of_trees.spanning_tree import spanning_tree_logp_op
from custom_ops.trees.spanning import wilson_spanning_tree

__all__ = ["SpanningTree", "SpanningTreeRV", "spanning_tree"]


class SpanningTreeRV(RandomVariable):
    """Random spanning tree: parameter ``weights`` (V, V); value: parent vector (V,)."""

    name = "spanning_tree"
    signature = "(n,n)->(n)"
    dtype = "int64"
    _print_name = ("SpanningTree", "\\operatorname{SpanningTree}")

    @classmethod
    def rng_fn(cls, rng, weights, size):
        weights = np.asarray(weights, dtype=np.float64)
        batch = weights.shape[:-2] if size is None else tuple(size)
        weights = np.broadcast_to(weights, (*batch, *weights.shape[-2:]))
        out = np.empty((*batch, weights.shape[-1]), dtype=np.int64)
        for idx in np.ndindex(*batch):
            out[idx] = wilson_spanning_tree(rng, np.ascontiguousarray(weights[idx]))
        return out


spanning_tree = SpanningTreeRV()


@numba_core_rv_funcify.register(SpanningTreeRV)
def _numba_core_spanning_tree(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, weights, out=None):
        tree = wilson_spanning_tree(rng, np.ascontiguousarray(weights))
        if out is None:
            return tree
        out[:] = tree
        return out

    random_fn.handles_out = True
    return random_fn, rv_draw_cache_key(__file__)


class SpanningTree(Discrete):
    r"""Decomposable distribution over spanning trees (Meilă & Jaakkola 2006).

    Parameters
    ----------
    weights : tensor_like of float, shape (V, V)
        Symmetric non-negative edge weights ``beta`` (only the symmetrised off-diagonal
        part is read); every node needs an edge of positive weight. All ones give the
        uniform distribution over trees.

    Notes
    -----
    Support: parent vectors rooted at node 0 with ``parents[0] == -1``; anything else
    (a cycle, another root) has probability zero. The initial point is the star at
    node 0, so its edges must have positive weight.
    """

    rv_op = spanning_tree

    @classmethod
    def dist(cls, weights, **kwargs):
        weights = pt.as_tensor_variable(weights, dtype="float64")
        if weights.ndim < 2:
            raise ValueError(f"weights must be a (V, V) matrix, got {weights.ndim}-D")
        return super().dist([weights], **kwargs)

    def support_point(rv, size, weights):
        V = weights.shape[-1]
        star = pt.concatenate([pt.constant([-1], dtype="int64"), pt.zeros(V - 1, "int64")])
        shape = weights.shape[:-1] if rv_size_is_none(size) else pt.concatenate([size, [V]])
        return pt.broadcast_to(star, shape)

    def logp(value, weights):
        V = weights.shape[-1]
        rows = pt.reshape(value, (-1, V))
        batch = pt.broadcast_to(weights, (*[value.shape[i] for i in range(value.ndim - 1)],
                                          V, V))
        logp = pt.reshape(spanning_tree_logp_op(rows, pt.reshape(batch, (-1, V, V))),
                          value.shape[:-1])
        return check_parameters(
            logp,
            pt.all(weights >= 0),
            pt.allclose(weights, pt.swapaxes(weights, -1, -2)),
            msg="weights symmetric and >= 0",
        )
