"""The Pitman-Yor diffusion tree as PyMC random variables.

``tree = PYDiffusionTree("tree", c, theta, alpha, n_leaves)`` is a random rooted tree
over ``n_leaves`` labelled leaves with divergence times (Knowles 2012 §4.3). Its value is
the packed array of :meth:`pp_models.trees.DiffusionTree.to_packed`, shape
``(2 n - 1, 2)``: per node slot ``[parent, log(1 - t)]`` (leaves are rows ``0..n-1``,
internal slots ``n..2n-2``; parent ``-1`` for the root, ``-2`` for an unused slot; the
time column is 0 where it has no meaning). ``DiffusionTree.from_packed(value)`` turns a
draw into a tree object.

``X = DiffusionTreeGaussian("X", tree, sigma2, dim)`` is Brownian motion with variance
``sigma2`` per unit time run down the tree from the origin and observed at the leaves at
``t = 1`` (Eq. 4.26), an ``(n, dim)`` matrix.

Both ``logp``\\ s come from :class:`custom_ops.pydt.ops.PYDTLogProb`: the tree's is
log p(structure, times | c, theta, alpha) (Eqs. 4.23 x 4.25, a density in the times
``t``), the data's log p(X | tree, sigma2) with the internal locations integrated out.
Prior draws run the sequential generative process (§4.3.1) and Brownian motion as
compiled Numba code; the tree's ``owner.op`` is a :class:`PYDiffusionTreeRV`, which the
zoo's tree moves claim (``inference.gibbs.pydt``).
"""

from __future__ import annotations

import numpy as np
import pytensor.tensor as pt
from pymc.distributions.dist_math import check_parameters
from pymc.distributions.distribution import Continuous
from pymc.distributions.shape_utils import rv_size_is_none
from pytensor.link.numba.dispatch import basic as numba_basic
from pytensor.link.numba.dispatch.random import numba_core_rv_funcify
from pytensor.tensor.random.op import RandomVariable

from custom_ops.jit import rv_draw_cache_key
from custom_ops.pydt.draws import pydt_draw_data, pydt_draw_tree
from custom_ops.pydt.ops import PYDTLogProb
from custom_ops.pymc_guard import (
    refuse_pymc_log_likelihood,
    refuse_pymc_posterior_predictive,
)
from pp_models.validation import check_int

__all__ = [
    "DiffusionTreeGaussian",
    "DiffusionTreeGaussianRV",
    "PYDiffusionTree",
    "PYDiffusionTreeRV",
    "comb_tree",
    "unpack_tree",
]


def comb_tree(n: int) -> np.ndarray:
    """A valid packed binary tree for any parameters: a comb with internal node ``n + k``
    over leaf ``k`` and node ``n + k + 1`` at ``t = (k + 1) / n`` (the initial value)."""
    packed = np.zeros((2 * n - 1, 2))
    for k in range(n - 1):
        v = n + k
        packed[k, 0] = v
        packed[v, 0] = -1 if k == 0 else v - 1
        packed[v, 1] = np.log1p(-(k + 1) / n)
    packed[n - 1, 0] = 2 * n - 2
    return packed


def unpack_tree(value):
    """Symbolic ``(parent int64, log1m_t)`` of a packed tree tensor."""
    n = (value.shape[0] + 1) // 2
    parent = pt.cast(pt.round(value[:, 0]), "int64")
    return parent, value[n:, 1]


def _draw_tree(rng, c, theta, alpha, n, out):
    parent = np.empty(2 * n - 1, dtype=np.int64)
    log1m_t = np.empty(n - 1)
    pydt_draw_tree(rng, n, c, theta, alpha, parent, log1m_t)
    out[:, 0] = parent
    out[:, 1] = 0.0
    out[n:, 1] = log1m_t


class PYDiffusionTreeRV(RandomVariable):
    """Random variable of a Pitman-Yor diffusion tree: params ``(c, theta, alpha, n)``."""

    name = "pydt"
    signature = "(),(),(),()->(m,k)"
    dtype = "float64"
    _print_name = ("PYDT", "\\operatorname{PYDT}")

    def make_node(self, rng, size, c, theta, alpha, n):
        c, theta, alpha = (pt.as_tensor_variable(v, dtype="float64") for v in (c, theta, alpha))
        n = pt.as_tensor_variable(n)
        if not n.dtype.startswith(("int", "uint")):
            raise TypeError(f"n_leaves must be an integer, got dtype {n.dtype}")
        return super().make_node(rng, size, c, theta, alpha, pt.cast(n, "int64"))

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        n = dist_params[3].squeeze()
        return (2 * n - 1, 2)

    @classmethod
    def rng_fn(cls, rng, c, theta, alpha, n, size):
        n = int(np.asarray(n).reshape(-1)[0])
        c, theta, alpha = (np.asarray(v, dtype=np.float64) for v in (c, theta, alpha))
        batch = np.broadcast_shapes(c.shape, theta.shape, alpha.shape)
        if size is not None:
            batch = tuple(size)
        c, theta, alpha = (np.broadcast_to(v, batch) for v in (c, theta, alpha))
        out = np.empty((*batch, 2 * n - 1, 2))
        for idx in np.ndindex(*batch):
            _draw_tree(rng, float(c[idx]), float(theta[idx]), float(alpha[idx]), n, out[idx])
        return out


pydt_tree = PYDiffusionTreeRV()


@numba_core_rv_funcify.register(PYDiffusionTreeRV)
def _numba_core_pydt(op, node):
    @numba_basic.numba_njit
    def random_fn(rng, c, theta, alpha, n):
        m = int(n)
        parent = np.empty(2 * m - 1, dtype=np.int64)
        log1m_t = np.empty(m - 1)
        pydt_draw_tree(rng, m, float(c), float(theta), float(alpha), parent, log1m_t)
        out = np.zeros((2 * m - 1, 2))
        for v in range(2 * m - 1):
            out[v, 0] = parent[v]
        for k in range(m - 1):
            out[m + k, 1] = log1m_t[k]
        return out

    return random_fn, rv_draw_cache_key(__file__)


class PYDiffusionTree(Continuous):
    r"""Pitman-Yor diffusion tree over ``n_leaves`` labelled leaves (Knowles 2012 §4.3).

    .. math::

        p(\mathcal T, \mathbf t) = \prod_{v} \frac{a(t_v) \prod_{k=3}^{K_v}
        [\theta + (k-1)\alpha] \prod_l \Gamma(n^v_l - \alpha)}
        {\Gamma(m(v) + \theta) \Gamma(1 - \alpha)^{K_v - 1}}
        \prod_{[uv]} e^{(A(t_u) - A(t_v)) H^{\theta,\alpha}_{m(v)-1}}

    with ``a(t) = c / (1 - t)`` (Eqs. 4.23, 4.25). ``theta = alpha = 0`` is Neal's
    Dirichlet diffusion tree (binary); ``theta = -2 alpha`` the binary family.

    Parameters
    ----------
    c : tensor_like of float
        Divergence-function scale, ``c > 0`` (small c: late divergence, clumpy data).
    theta : tensor_like of float
        Concentration; ``theta >= -2 alpha`` (``alpha >= 0``) or ``theta = -kappa alpha``
        (``alpha < 0``, at most ``kappa`` children).
    alpha : tensor_like of float
        Discount, ``alpha < 1``.
    n_leaves : int
        Number of leaves (a constant, >= 2).
    """

    rv_op = pydt_tree

    @classmethod
    def dist(cls, c, theta, alpha, n_leaves, **kwargs):
        n_leaves = check_int(n_leaves, "n_leaves", minimum=2)
        c, theta, alpha = (pt.as_tensor_variable(v, dtype="float64") for v in (c, theta, alpha))
        return super().dist([c, theta, alpha, pt.constant(int(n_leaves), dtype="int64")],
                            **kwargs)

    def support_point(rv, size, c, theta, alpha, n):
        n_value = int(pt.get_underlying_scalar_constant_value(n))
        point = pt.constant(comb_tree(n_value))
        if not rv_size_is_none(size):
            point = pt.broadcast_to(point, pt.concatenate([size, point.shape]))
        return point

    def logp(value, c, theta, alpha, n):
        if value.ndim != 2:
            raise NotImplementedError("PYDiffusionTree logp is implemented for one tree")
        parent, log1m_t = unpack_tree(value)
        lp, _ = PYDTLogProb()(parent, log1m_t, pt.zeros((n, 0)), c, theta, alpha, 1.0)
        lp = pt.switch(pt.eq(value.shape[0], 2 * n - 1), lp, -np.inf)
        return check_parameters(lp, c > 0, alpha < 1, msg="c > 0, alpha < 1")


def _draw_data(rng, packed, sigma2, d, out):
    n = (packed.shape[0] + 1) // 2
    parent = np.rint(packed[:, 0]).astype(np.int64)
    log1m_t = np.ascontiguousarray(packed[n:, 1])
    pydt_draw_data(rng, parent, log1m_t, float(sigma2), d, out)


class DiffusionTreeGaussianRV(RandomVariable):
    """Brownian motion down a diffusion tree observed at its leaves:
    params ``(tree, sigma2, dim)``."""

    name = "diffusion_tree_gaussian"
    signature = "(m,k),(),()->(n,d)"
    dtype = "float64"
    _print_name = ("DiffusionTreeGaussian", "\\operatorname{DTGaussian}")

    def make_node(self, rng, size, tree, sigma2, dim):
        tree = pt.as_tensor_variable(tree, dtype="float64")
        sigma2 = pt.as_tensor_variable(sigma2, dtype="float64")
        dim = pt.cast(pt.as_tensor_variable(dim), "int64")
        return super().make_node(rng, size, tree, sigma2, dim)

    def _supp_shape_from_params(self, dist_params, param_shapes=None):
        tree_shape = param_shapes[0] if param_shapes is not None else dist_params[0].shape
        return ((tree_shape[-2] + 1) // 2, dist_params[2].squeeze())

    @classmethod
    def rng_fn(cls, rng, tree, sigma2, dim, size):
        refuse_pymc_posterior_predictive("DiffusionTreeGaussian")
        d = int(np.asarray(dim).reshape(-1)[0])
        tree = np.asarray(tree, dtype=np.float64)
        sigma2 = np.asarray(sigma2, dtype=np.float64)
        batch = np.broadcast_shapes(tree.shape[:-2], sigma2.shape)
        if size is not None:
            batch = tuple(size)
        tree = np.broadcast_to(tree, (*batch, *tree.shape[-2:]))
        sigma2 = np.broadcast_to(sigma2, batch)
        n = (tree.shape[-2] + 1) // 2
        out = np.empty((*batch, n, d))
        for idx in np.ndindex(*batch):
            _draw_data(rng, tree[idx], sigma2[idx], d, out[idx])
        return out


diffusion_tree_gaussian = DiffusionTreeGaussianRV()


@numba_core_rv_funcify.register(DiffusionTreeGaussianRV)
def _numba_core_dt_gaussian(op, node):
    refuse_pymc_posterior_predictive("DiffusionTreeGaussian")
    @numba_basic.numba_njit
    def random_fn(rng, tree, sigma2, dim):
        nn = tree.shape[0]
        n = (nn + 1) // 2
        d = int(dim)
        parent = np.empty(nn, dtype=np.int64)
        for v in range(nn):
            parent[v] = int(np.rint(tree[v, 0]))
        log1m_t = np.ascontiguousarray(tree[n:, 1])
        out = np.empty((n, d))
        pydt_draw_data(rng, parent, log1m_t, float(sigma2), d, out)
        return out

    return random_fn, rv_draw_cache_key(__file__)


class DiffusionTreeGaussian(Continuous):
    r"""Gaussian data at the leaves of a diffusion tree (Knowles 2012 Eq. 4.26):
    ``X[:, j] ~ N(0, sigma2 C)`` independently over columns, ``C_ij`` the divergence time
    of the most recent common ancestor of leaves ``i, j`` and ``C_ii = 1``.

    Parameters
    ----------
    tree : tensor
        A packed tree (a :class:`PYDiffusionTree` variable).
    sigma2 : tensor_like of float
        Brownian-motion variance per unit time, ``> 0``.
    dim : int
        Number of columns ``D``.
    """

    rv_op = diffusion_tree_gaussian

    @classmethod
    def dist(cls, tree, sigma2, dim, **kwargs):
        dim = check_int(dim, "dim", minimum=1)
        sigma2 = pt.as_tensor_variable(sigma2, dtype="float64")
        return super().dist([tree, sigma2, pt.constant(int(dim), dtype="int64")], **kwargs)

    def support_point(rv, size, tree, sigma2, dim):
        n = (tree.shape[-2] + 1) // 2
        shape = (n, dim) if rv_size_is_none(size) else pt.concatenate([size, [n, dim]])
        return pt.zeros(shape)

    def logp(value, tree, sigma2, dim):
        refuse_pymc_log_likelihood("DiffusionTreeGaussian")
        parent, log1m_t = unpack_tree(tree)
        # the prior output is not used: any valid (c, theta, alpha) will do
        _, ll = PYDTLogProb()(parent, log1m_t, value, 1.0, 1.0, 0.0, sigma2)
        return check_parameters(ll, sigma2 > 0, msg="sigma2 > 0")
