"""Non-centred divergence times of a Pitman-Yor diffusion tree: move the hyperparameters
``c``, ``theta``, ``alpha`` with the times following them.

Why: in ``u = -log(1 - t) = A(t) / c`` the prior of the times given the structure
(Eqs. 4.23 x 4.25, ``a(t) dt = c du``) is, per internal node ``v`` with ``m(v)`` leaves
below and parent ``p``,

    ``c exp(-c H_{m(v)-1} (u_v - u_p))`` = ``Exponential(rate c H_{m(v)-1})`` in the gap
    ``u_v - u_p``, times ``1 / H_{m(v)-1}`` (which goes to the structure probability),

with ``H`` of Eq. 4.24 (a function of ``theta``, ``alpha``). The standardised gaps

    ``w_v = c H_{m(v)-1}(theta, alpha) (u_v - u_p)``

are independent ``Exponential(1)`` a priori whatever ``(c, theta, alpha)``. A sampler
that updates ``c`` with the times fixed and the times with ``c`` fixed (centred) is slow
when few data pin the times (``c`` and the ``u`` scale trade off: Knowles' GIR chain had an
effective sample size of 2-3 for the root time in 800 draws); updating ``(c, theta,
alpha)`` with the ``w`` fixed instead (non-centred, Papaspiliopoulos, Roberts & Skold
2007) moves every time with ``c``.

In the coordinates ``(phi, w, structure)``, ``phi = (c, theta, alpha)``, the joint density
is the model's density in ``(phi, t)`` times ``|dt/dw|`` at fixed ``phi``:
``t_v = 1 - exp(-u_v)`` and ``u`` is a triangular (cumulative) function of the gaps, so

    ``log |dt/dw| = sum_v [log(1 - t_v) - log(c H_{m(v)-1})]``

and the conditional of ``phi`` given ``w`` and the structure is
``log p_model(phi, t(w, phi)) + log |dt/dw|(phi)``. In that sum the time-prior terms
cancel to ``log P(structure | theta, alpha) - sum_v w_v``
(:func:`custom_ops.pydt.density.log_structure_prob`), which the tests check; with ``theta`` and
``alpha`` fixed and ``c -> lambda c`` the map is ``u -> u / lambda`` and the ratio reduces to
``p(c') / p(c) x lambda x`` (likelihood ratio) for ``c`` sampled on the log scale.

:func:`noncentred_times` is the map ``t(w(phi_old), phi_new)`` with that log-Jacobian;
``inference.gibbs.pydt.PYDTTreeStep(noncentred=...)`` slice-samples each hyperparameter
through it.
"""

from __future__ import annotations

import math

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.ops import h_table, parameter_code
from custom_ops.trees.diffusion import UNUSED_SLOT, diffusion_tree_structure

__all__ = ["noncentred_times", "variance_shifted_times"]



@njit_exact_numpy
def noncentred_times(parent, log1m_t, n_leaves, old, new):
    """The divergence times that keep the standardised gaps ``w`` (module docstring) when
    ``(c, theta, alpha)`` changes from ``old`` to ``new``.

    Parameters
    ----------
    parent, log1m_t : arrays
        The tree (``pp_models.trees.DiffusionTree`` layout); not modified.
    n_leaves : int
    old : tuple of float
        ``(c, theta, alpha)``, the parameters the times ``log1m_t`` were standardised
        with.
    new : tuple of float
        ``(c_new, theta_new, alpha_new)``, the new parameters.

    Returns
    -------
    (new_log1m_t, log_jacobian)
        ``log(1 - t)`` of every internal slot under the new parameters (unused slots keep
        their entry) and ``log |dt/dw|`` there, ``sum_v [log(1 - t_v) - log(c_new
        H_{m(v)-1})]``. ``-inf`` for an invalid tree or parameters.
    """
    c, theta, alpha = old
    c_new, theta_new, alpha_new = new
    n = n_leaves
    out = log1m_t.copy()
    code, order, _ptr, _idx, n_below = diffusion_tree_structure(parent, log1m_t, n)
    if (code != 0 or parameter_code(c, theta, alpha, 1.0) != 0
            or parameter_code(c_new, theta_new, alpha_new, 1.0) != 0):
        return out, -np.inf
    H = h_table(n, theta, alpha)[0]
    H_new = h_table(n, theta_new, alpha_new)[0]
    log_jac = 0.0
    for q in range(order.shape[0]):
        v = order[q]
        if v < n:
            continue
        m = n_below[v]
        p = parent[v]
        l_parent_old = 0.0 if p < 0 else log1m_t[p - n]
        l_parent_new = 0.0 if p < 0 else out[p - n]
        rate_new = c_new * H_new[m - 1]
        # gap in u (> 0) rescaled so that w = rate * gap stays put
        gap = (l_parent_old - log1m_t[v - n]) * (c * H[m - 1]) / rate_new
        out[v - n] = l_parent_new - gap
        log_jac += out[v - n] - math.log(rate_new)
    return out, log_jac


@njit_exact_numpy
def variance_shifted_times(parent, log1m_t, n_leaves, sigma2, sigma2_new):
    """The divergence times that keep every ``sigma2 (1 - t_v)`` when the Brownian
    variance changes to ``sigma2_new``: ``log(1 - t_v)`` shifted by
    ``log(sigma2 / sigma2_new)``.

    Every edge variance below the root, ``sigma2 (t_w - t_v)``, is then unchanged and
    the likelihood moves only through the root's segment ``sigma2 t_root``: the
    direction along which the data leave ``sigma2`` and the times trading off. In the
    coordinates ``(sigma2, m = log(1 - t) + log sigma2)`` the shift has unit Jacobian in
    ``log(1 - t)``, so the conditional of the variance given ``m`` is the model's density
    in ``t`` times ``|dt/dlog(1 - t)| = prod_v (1 - t_v)``.

    Returns
    -------
    (new_log1m_t, log_jacobian)
        Unused slots keep their entry; ``log_jacobian = sum_v log(1 - t_v)`` at the new
        times; ``-inf`` when a time leaves ``(0, 1)`` (the root would pass ``t = 0``) or
        a variance is not finite and positive.
    """
    n = n_leaves
    out = log1m_t.copy()
    if not (sigma2 > 0.0 and sigma2_new > 0.0 and math.isfinite(sigma2)
            and math.isfinite(sigma2_new)):
        return out, -np.inf
    shift = math.log(sigma2) - math.log(sigma2_new)
    log_jac = 0.0
    for v in range(n, parent.shape[0]):
        if parent[v] == UNUSED_SLOT:
            continue
        out[v - n] = log1m_t[v - n] + shift
        if not out[v - n] < 0.0:
            return log1m_t.copy(), -np.inf
        log_jac += out[v - n]
    return out, log_jac
