"""Where the generative process puts one new point on an existing tree (Knowles 2012
§4.3, Eqs. 4.9-4.11, 4.16), from Python: the Numba kernel of the detach-reattach move
(:func:`custom_ops.pydt.sweep.sample_attach`) on a :class:`~pp_models.trees.DiffusionTree`,
for the predictive density's Monte Carlo check (:mod:`pp_models.pydt.outputs`); and the
children lists and leaf counts the outputs' message passing walks."""

from __future__ import annotations

import math

import numpy as np

from custom_ops.pydt.messages import EDGE, PYDTParameters
from custom_ops.pydt.sweep import NO_POSITION, attach_position

__all__ = ["children_lists", "leaf_counts_from", "sample_attach"]


def children_lists(parent):
    kids: list[list[int]] = [[] for _ in range(parent.shape[0])]
    for v, p in enumerate(parent):
        if p >= 0:
            kids[p].append(v)
    return kids


def leaf_counts_from(root, kids, n):
    """Leaves under every node reachable from ``root`` (others stay 0)."""
    counts = np.zeros(len(kids), dtype=np.int64)
    order = [root]
    for v in order:
        order.extend(kids[v])
    for v in reversed(order):
        counts[v] = 1 if v < n else sum(counts[w] for w in kids[v])
    return counts


def sample_attach(rng, tree, *, c, theta, alpha, l_limit=-math.inf):
    """Where the generative process places one new point on the valid ``tree``,
    conditioned on diverging before ``log(1 - t) = l_limit`` (restarts); ``None`` when
    200 restarts all fail. Returns ``(mode, anchor, log1m_t)`` with ``mode`` ``"edge"``
    (a new node at ``log1m_t`` on the edge above ``anchor``) or ``"node"`` (a new child
    of the internal node ``anchor``), as :meth:`~pp_models.trees.DiffusionTree.attach`
    takes them (node numbers of ``tree``)."""
    mode, anchor, l_new = attach_position(
        rng,
        np.ascontiguousarray(tree.parent, dtype=np.int64),
        np.ascontiguousarray(tree.log1m_t, dtype=np.float64),
        PYDTParameters(float(c), float(theta), float(alpha), 1.0, 1.0),
        float(l_limit),
    )
    if mode == NO_POSITION:
        return None
    return ("edge" if mode == EDGE else "node"), int(anchor), float(l_new)
