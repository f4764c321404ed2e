"""Log probability of a spanning tree under a decomposable prior, as a PyTensor Op.

``P(T) = prod_{uv in T} beta_uv / Z(beta)`` with ``Z`` the weighted number of spanning
trees, ``log Z = log det L_0(beta)`` by the matrix-tree theorem (Kirchhoff 1847; Meilă &
Jaakkola 2006 Eq. 3). Trees are parent vectors rooted at node 0 (see
:mod:`custom_ops.trees.spanning`); ``beta`` is read symmetrised,
``(beta + beta^T) / 2``, with the
diagonal ignored.

Gradient (d log P / d beta_uv for the symmetrised weight): ``(1[uv in T] - P(uv in T))
/ beta_uv``, where the edge marginals come from the inverse reduced Laplacian; each of
``beta[u, v]`` and ``beta[v, u]`` gets half of it.

``spanning_tree_logp_op(parents, weights)``: parents int (B, V), weights (B, V, V) ->
float64 (B,) (row ``b`` of ``parents`` under ``weights[b]``).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.jit import njit_exact, register_numba_op
from custom_ops.trees.spanning import spanning_tree_logp, spanning_tree_logp_grad

__all__ = ["SpanningTreeLogp", "SpanningTreeLogpGrad", "spanning_tree_logp_op"]


def _as_parents(parents):
    parents = pt.as_tensor_variable(parents)
    if not parents.dtype.startswith(("int", "uint")):
        raise TypeError(f"parents must be an integer tensor, got dtype {parents.dtype}")
    if parents.ndim != 2:
        raise ValueError(f"parents must be 2-D (batch, V), got {parents.ndim}-D")
    return pt.cast(parents, "int64")


def _as_weights(weights):
    weights = pt.as_tensor_variable(weights, dtype="float64")
    if weights.ndim != 3:
        raise ValueError(f"weights must be a (batch, V, V) array, got {weights.ndim}-D")
    return weights


class SpanningTreeLogp(Op):
    """``log P(T_b)`` for every row ``b`` of ``parents`` (-inf for a row that is not a
    spanning tree rooted at node 0)."""

    __props__ = ()

    def make_node(self, parents, weights):
        parents = _as_parents(parents)
        weights = _as_weights(weights)
        return Apply(self, [parents, weights], [pt.vector(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        parents, weights = inputs
        _check_batch(parents, weights)
        output_storage[0][0] = _logp_rows(np.ascontiguousarray(parents),
                                          np.ascontiguousarray(weights))

    def infer_shape(self, node, input_shapes):
        return [(input_shapes[0][0],)]

    def pullback(self, inputs, outputs, cotangents):
        parents, weights = inputs
        (g,) = cotangents
        return [grad_undefined(self, 0, parents, "parents is a discrete tree"),
                SpanningTreeLogpGrad()(parents, weights, g)]


class SpanningTreeLogpGrad(Op):
    """``g_b d log P(T_b) / d weights[b]`` of :class:`SpanningTreeLogp`."""

    __props__ = ()

    def make_node(self, parents, weights, g):
        parents = _as_parents(parents)
        weights = _as_weights(weights)
        g = pt.as_tensor_variable(g, dtype="float64")
        return Apply(self, [parents, weights, g], [pt.tensor3(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        parents, weights, g = inputs
        _check_batch(parents, weights)
        output_storage[0][0] = _grad_rows(np.ascontiguousarray(parents),
                                          np.ascontiguousarray(weights), g)

    def infer_shape(self, node, input_shapes):
        return [input_shapes[1]]


def _check_batch(parents, weights):
    if parents.shape[0] != weights.shape[0] or parents.shape[1] != weights.shape[1] \
            or weights.shape[1] != weights.shape[2]:
        raise ValueError(f"parents {parents.shape} and weights {weights.shape} do not match "
                         "(expected (B, V) and (B, V, V))")


def spanning_tree_logp_op(parents, weights):
    """Symbolic ``log P(T)`` per row of ``parents`` (see :class:`SpanningTreeLogp`)."""
    return SpanningTreeLogp()(parents, weights)


# Plain numba.njit (njit_exact), not PyTensor's numba_njit: perform calls these from
# Python, and PyTensor's decorator leaves out the CPython wrapper (a call from Python
# crashed).
@njit_exact
def _logp_rows(parents, weights):
    out = np.empty(parents.shape[0])
    for b in range(parents.shape[0]):
        out[b] = spanning_tree_logp(parents[b], np.ascontiguousarray(weights[b]))
    return out


@njit_exact
def _grad_rows(parents, weights, g):
    out = np.zeros(weights.shape)
    for b in range(parents.shape[0]):
        if g[b] != 0.0:
            out[b] = g[b] * spanning_tree_logp_grad(parents[b], np.ascontiguousarray(weights[b]))
    return out


@register_numba_op(SpanningTreeLogp)
def _numba_spanning_tree_logp(op, node, **kwargs):
    @nb.numba_njit
    def spanning_tree_logp_numba(parents, weights):
        return _logp_rows(np.ascontiguousarray(parents), np.ascontiguousarray(weights))

    return spanning_tree_logp_numba


@register_numba_op(SpanningTreeLogpGrad)
def _numba_spanning_tree_logp_grad(op, node, **kwargs):
    @nb.numba_njit
    def spanning_tree_logp_grad_numba(parents, weights, g):
        return _grad_rows(np.ascontiguousarray(parents), np.ascontiguousarray(weights), g)

    return spanning_tree_logp_grad_numba
