"""Kernels of the Bayesian mixture of Gaussian trees with the parameters integrated out.

Component ``k`` has a spanning tree ``T_k`` and, given it, a Gaussian whose covariance
is Markov on ``T_k`` with a hyper-Markov prior (Dawid & Lauritzen 1993): a hyper
inverse-Wishart with a normal mean, whose marginal on every clique (edge) and separator
(node) is a Normal-Inverse-Wishart with hyperparameters ``(m0_C, kappa0, delta + |C| - 1,
S0_CC)`` (``delta`` convention, so the clique marginals agree on their separators). The
marginal likelihood then decomposes over the tree (Dawid & Lauritzen 1993 Eq. 30;
Meilă & Jaakkola 2006 for the tree prior)::

    p(D | T) = prod_v p(D_v) prod_{uv in T} p(D_uv) / (p(D_u) p(D_v)),

with every factor the NIW marginal likelihood of :mod:`custom_ops.conjugate` (the owner
of the conjugate families) on one or two columns. So the tree's posterior is again
decomposable, with log edge weights ``log beta_uv + g_uv``, ``g_uv = log p(D_uv) - log
p(D_u) - log p(D_v)``, and the row predictive decomposes the same way (Student-t
densities), which the collapsed assignment sweep uses.

Power posteriors: raised to an inverse temperature ``b`` the marginal is still
``exp(b sum_v log p(D_v) + sum_{uv in T} b g_uv)``, so the tree's conditional has log edge
weights ``log beta_uv + b g_uv`` and one assignment's conditional uses the predictive to
the power ``b`` (:func:`gaussian_assignment_sweep`'s ``inv_temp``).

Hyperparameters are passed as ``m0`` (V,), ``kappa0`` > 0, ``delta`` > 0, ``S0`` (V, V)
SPD. Statistics of a component are the NIW layout ``[n, sum x (V), sum x x^T (V*V)]``.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import pytensor.tensor as pt
from pytensor.gradient import grad_undefined
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from custom_ops.conjugate import (
    gaussian_add,
    gaussian_log_marginal,
    gaussian_log_predictive,
    gaussian_posterior,
    gaussian_remove,
)
from custom_ops.jit import njit_exact, register_numba_op
from custom_ops.log_weights import sample_log_weights
from custom_ops.mixture_of_trees.discrete import as_integer_tensor
from custom_ops.trees.spanning import breadth_first_order

__all__ = [
    "GaussianTreeMixtureLogp",
    "NIWPrior",
    "gaussian_assignment_sweep",
    "gaussian_component_stats",
    "gaussian_tree_draw_row",
    "gaussian_tree_edge_log_weights",
    "gaussian_tree_log_marginal",
    "gaussian_tree_mixture_logp",
    "gaussian_tree_row_log_predictive",
    "sample_gaussian_tree_mixture_data",
]


class NIWPrior(NamedTuple):
    """The hyperparameters ``(m0, kappa0, delta, S0)`` of the module docstring, as one
    argument of the kernels that sample."""

    m0: np.ndarray
    kappa0: float
    delta: float
    S0: np.ndarray


@njit_exact
def _sub_stats(stats, V, u, v):
    """NIW statistics of columns (u) or (u, v) (``v < 0``: the single column u)."""
    if v < 0:
        out = np.empty(3)
        out[0] = stats[0]
        out[1] = stats[1 + u]
        out[2] = stats[1 + V + u * V + u]
        return out
    out = np.empty(7)
    out[0] = stats[0]
    out[1] = stats[1 + u]
    out[2] = stats[1 + v]
    out[3] = stats[1 + V + u * V + u]
    out[4] = stats[1 + V + u * V + v]
    out[5] = stats[1 + V + v * V + u]
    out[6] = stats[1 + V + v * V + v]
    return out


@njit_exact
def _sub_hyper(m0, kappa0, delta, S0, u, v):
    """The clique marginal's NIW hyperparameters: ``nu = delta + |C| - 1``."""
    if v < 0:
        m = np.empty(1)
        m[0] = m0[u]
        S = np.empty((1, 1))
        S[0, 0] = S0[u, u]
        return (m, kappa0, delta, S)
    m = np.empty(2)
    m[0] = m0[u]
    m[1] = m0[v]
    S = np.empty((2, 2))
    S[0, 0] = S0[u, u]
    S[0, 1] = S0[u, v]
    S[1, 0] = S0[v, u]
    S[1, 1] = S0[v, v]
    return (m, kappa0, delta + 1.0, S)


@njit_exact
def gaussian_tree_edge_log_weights(stats, m0, kappa0, delta, S0):
    """``(g, alone)``: ``g[u, v] = log p(D_uv) - log p(D_u) - log p(D_v)`` (0 on the
    diagonal) and ``alone = sum_v log p(D_v)``, so ``log p(D | T) = alone + sum_{uv in
    T} g_uv``."""
    V = m0.shape[0]
    single = np.empty(V)
    alone = 0.0
    for u in range(V):
        single[u] = gaussian_log_marginal(_sub_stats(stats, V, u, -1),
                                          _sub_hyper(m0, kappa0, delta, S0, u, -1))
        alone += single[u]
    g = np.zeros((V, V))
    for u in range(V):
        for v in range(u + 1, V):
            pair = gaussian_log_marginal(_sub_stats(stats, V, u, v),
                                         _sub_hyper(m0, kappa0, delta, S0, u, v))
            g[u, v] = pair - single[u] - single[v]
            g[v, u] = g[u, v]
    return g, alone


@njit_exact
def gaussian_tree_log_marginal(stats, parents, m0, kappa0, delta, S0):
    """``log p(D | T)`` of one component's statistics under tree ``parents``."""
    g, alone = gaussian_tree_edge_log_weights(stats, m0, kappa0, delta, S0)
    out = alone
    for v in range(parents.shape[0]):
        if parents[v] >= 0:
            out += g[v, parents[v]]
    return out


@njit_exact
def gaussian_component_stats(X, z, n_components):
    """NIW statistics of every component's rows, (K, 1 + V + V*V)."""
    V = X.shape[1]
    out = np.zeros((n_components, 1 + V + V * V))
    for i in range(X.shape[0]):
        gaussian_add(out[z[i]], X[i])
    return out


@njit_exact
def gaussian_tree_row_log_predictive(x, stats, parents, m0, kappa0, delta, S0):
    """``log p(x | D, T)``: the root's Student-t times each child's conditional, i.e.
    ``prod_v t_v(x_v) prod_{uv in T} t_uv(x_u, x_v) / (t_u(x_u) t_v(x_v))``."""
    V = x.shape[0]
    out = 0.0
    xv = np.empty(1)
    xp = np.empty(1)
    pair = np.empty(2)
    for v in range(V):
        p = parents[v]
        if p < 0:
            xv[0] = x[v]
            out += gaussian_log_predictive(xv, _sub_stats(stats, V, v, -1),
                                           _sub_hyper(m0, kappa0, delta, S0, v, -1))
        else:
            pair[0] = x[p]
            pair[1] = x[v]
            xp[0] = x[p]
            out += gaussian_log_predictive(pair, _sub_stats(stats, V, p, v),
                                           _sub_hyper(m0, kappa0, delta, S0, p, v))
            out -= gaussian_log_predictive(xp, _sub_stats(stats, V, p, -1),
                                           _sub_hyper(m0, kappa0, delta, S0, p, -1))
    return out


@njit_exact
def gaussian_assignment_sweep(rng, X, state, stats, prior, inv_temp):
    """One collapsed Gibbs sweep of the assignments, in place on ``state.z`` and
    ``stats`` (:class:`~custom_ops.mixture_of_trees.discrete.MixtureState`,
    :class:`NIWPrior`):
    ``p(z_i = k | ...) ∝ w_k p(x_i | rows of k but i, T_k)^inv_temp`` (the inverse
    temperature of a power posterior, 1 for the posterior). Returns the number of
    changed assignments."""
    z, parents, log_weights = state
    m0, kappa0, delta, S0 = prior
    n = X.shape[0]
    K = parents.shape[0]
    logp = np.empty(K)
    changed = 0
    for i in range(n):
        old = z[i]
        gaussian_remove(stats[old], X[i])
        for k in range(K):
            logp[k] = log_weights[k] + inv_temp * gaussian_tree_row_log_predictive(
                X[i], stats[k], parents[k], m0, kappa0, delta, S0)
        new = sample_log_weights(logp, K, rng)
        z[i] = new
        gaussian_add(stats[new], X[i])
        if new != old:
            changed += 1
    return changed


@njit_exact
def gaussian_tree_mixture_logp(X, z, parents, m0, kappa0, delta, S0):
    """``log p(X | z, trees) = sum_k log p(D_k | T_k)``; -inf for labels out of range."""
    K = parents.shape[0]
    for i in range(z.shape[0]):
        if z[i] < 0 or z[i] >= K:
            return -np.inf
    stats = gaussian_component_stats(X, z, K)
    out = 0.0
    for k in range(K):
        out += gaussian_tree_log_marginal(stats[k], parents[k], m0, kappa0, delta, S0)
    return out


@njit_exact
def _student_t(rng, loc, scale2, dof):
    return loc + math.sqrt(scale2) * rng.standard_normal() / math.sqrt(
        rng.chisquare(dof) / dof)


@njit_exact
def gaussian_tree_draw_row(rng, parents_k, order, stats, prior, row):
    """One row from the posterior predictive ``p(x | D, T)`` of the rows with NIW
    statistics ``stats`` under tree ``parents_k`` (``order``: parents before children):
    the root from its Student-t, then every child from the conditional of its edge's
    bivariate Student-t given its parent (:class:`NIWPrior` ``prior``). Writes ``row``."""
    m0, kappa0, delta, S0 = prior
    V = parents_k.shape[0]
    for v in order:
        p = parents_k[v]
        if p < 0:
            m, k0, nu, S = _sub_hyper(m0, kappa0, delta, S0, v, -1)
            kn, nn, mn, Sn = gaussian_posterior(_sub_stats(stats, V, v, -1), m, k0, nu, S)
            dof = nn
            row[v] = _student_t(rng, mn[0], Sn[0, 0] * (kn + 1.0) / (kn * dof), dof)
        else:
            m, k0, nu, S = _sub_hyper(m0, kappa0, delta, S0, p, v)
            kn, nn, mn, Sn = gaussian_posterior(_sub_stats(stats, V, p, v), m, k0, nu, S)
            dof = nn - 1.0
            c = (kn + 1.0) / (kn * dof)  # shape matrix c * Sn, dof
            s11 = c * Sn[0, 0]
            s12 = c * Sn[0, 1]
            s22 = c * Sn[1, 1]
            d1 = row[p] - mn[0]
            loc = mn[1] + s12 / s11 * d1
            scale2 = (dof + d1 * d1 / s11) / (dof + 1.0) * (s22 - s12 * s12 / s11)
            row[v] = _student_t(rng, loc, scale2, dof + 1.0)
    return row


@njit_exact
def sample_gaussian_tree_mixture_data(rng, z, parents, m0, kappa0, delta, S0, out):
    """Data given assignments and trees with the parameters integrated out: the rows of
    each component one after another from the posterior predictive of the rows drawn
    before (a Pólya-urn draw of the marginal), each row by :func:`gaussian_tree_draw_row`
    (parents before children: :func:`breadth_first_order`)."""
    K, V = parents.shape
    prior = NIWPrior(m0, kappa0, delta, S0)
    for k in range(K):
        order = breadth_first_order(parents[k])
        stats = np.zeros(1 + V + V * V)
        for i in np.nonzero(z == k)[0]:
            gaussian_tree_draw_row(rng, parents[k], order, stats, prior, out[i])
            gaussian_add(stats, out[i])
    return out



class GaussianTreeMixtureLogp(Op):
    """``log p(X | z, T_1..T_K)`` of the mixture of Gaussian trees, parameters
    integrated out (:func:`gaussian_tree_mixture_logp`).

    Inputs: X float (n, V), z int (n,), parents int (K, V), m0 (V,), kappa0 (),
    delta (), S0 (V, V). The data are observed and the hyperparameters constants of the
    model (the Gibbs step never needs a gradient): no gradient.
    """

    __props__ = ()

    def make_node(self, X, z, parents, m0, kappa0, delta, S0):
        X = pt.as_tensor_variable(X, dtype="float64")
        ins = [X, as_integer_tensor(z, "z", 1), as_integer_tensor(parents, "parents", 2)]
        for name, x, ndim in (("m0", m0, 1), ("kappa0", kappa0, 0), ("delta", delta, 0),
                              ("S0", S0, 2)):
            x = pt.as_tensor_variable(x, dtype="float64")
            if x.ndim != ndim:
                raise ValueError(f"{name} must be {ndim}-D, got {x.ndim}-D")
            ins.append(x)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got {X.ndim}-D")
        return Apply(self, ins, [pt.scalar(dtype="float64")])

    def perform(self, node, inputs, output_storage):
        X, z, parents, m0, kappa0, delta, S0 = inputs
        output_storage[0][0] = np.asarray(gaussian_tree_mixture_logp(
            np.ascontiguousarray(X), np.ascontiguousarray(z), np.ascontiguousarray(parents),
            np.ascontiguousarray(m0), float(kappa0), float(delta), np.ascontiguousarray(S0)))

    def infer_shape(self, node, input_shapes):
        return [()]

    def pullback(self, inputs, outputs, cotangents):
        return [grad_undefined(self, i, x, "observed data / constant hyperparameters")
                for i, x in enumerate(inputs)]


@register_numba_op(GaussianTreeMixtureLogp)
def _numba_gaussian_tree_mixture_logp(op, node, **kwargs):
    @nb.numba_njit
    def gaussian_tree_mixture_logp_numba(X, z, parents, m0, kappa0, delta, S0):
        return np.asarray(gaussian_tree_mixture_logp(
            np.ascontiguousarray(X), np.ascontiguousarray(z), np.ascontiguousarray(parents),
            np.ascontiguousarray(m0), kappa0.item(), delta.item(), np.ascontiguousarray(S0)))

    return gaussian_tree_mixture_logp_numba
