"""Centred slice updates of a Pitman-Yor diffusion tree's ``c``, ``theta`` and ``alpha``
given the tree, and the ridge rounds that alternate them with the branch-point moves, in
one Numba call (items 4-6 of ``inference.gibbs.pydt``'s module docstring; Knowles 2012
§4.5, Eqs. 4.23, 4.25, 4.50-4.51).

With the tree (structure and times) fixed, the likelihood does not depend on ``c``,
``theta`` or ``alpha``: the conditional of each is its prior times the tree's prior
``p(T | c, theta, alpha)``, the sum of the cached node terms of
:mod:`custom_ops.pydt.messages` (:func:`custom_ops.pydt.messages.node_prior`, O(n) per
evaluation). Each is slice-sampled (:func:`custom_ops.slice.slice_sample`, initial
width 1, at most 20 steps out) on PyMC's unconstrained scale, ``x = log c``,
``log theta`` (Gamma priors) and ``x = logit alpha`` (Beta prior), whose
``log |d value / dx|`` (:func:`log_transform_jacobian`) is part of the target: the
density PyMC's ``model.logp(jacobian=True)`` gives those variables. At an inverse
temperature ``beta`` the target is the same (the likelihood, raised to ``beta``, is a
constant of it).

:func:`pydt_branch_hyper` runs ``branch_moves`` branch-point moves
(:func:`custom_ops.pydt.branch.branch_move`), the centred update, and then ``rounds``
times ``round_branch_moves`` branch-point moves and the centred update again, on one
:class:`~custom_ops.pydt.messages.PYDTState`: each piece leaves the (power) posterior
invariant, so the composition does.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from custom_ops.jit import njit_exact_numpy
from custom_ops.pydt.branch import BranchWork, branch_move
from custom_ops.pydt.messages import (
    Check,
    PYDTState,
    cached_total,
    full_state,
    new_journal,
    node_prior,
    prior_tables,
)
from custom_ops.pydt.ops import pydt_forward
from custom_ops.slice import SliceSettings, slice_sample
from custom_ops.trees.diffusion import UNUSED_SLOT

__all__ = [
    "BETA_LOGIT",
    "GAMMA_LOG",
    "HYPER_SLICE",
    "CentredHyper",
    "RidgePlan",
    "centred_hyper_update",
    "constrained_value",
    "hyper_log_density",
    "hyperprior_log_density",
    "log_transform_jacobian",
    "pydt_branch_hyper",
]

#: a Gamma(shape a, rate b) prior, sampled in ``x = log value``
GAMMA_LOG = 0
#: a Beta(a, b) prior, sampled in ``x = logit value``
BETA_LOGIT = 1
#: the slice sampler's settings for a hyperparameter: unit width on the log / logit
#: scale, at most 20 widths, 200 shrinkage draws
HYPER_SLICE = SliceSettings(1.0, 20, 200)


class CentredHyper(NamedTuple):
    """The tree's ``(c, theta, alpha)`` as the centred update sees them (arrays of 3, in
    that order): the prior's code (:data:`GAMMA_LOG`, :data:`BETA_LOGIT`) and its two
    parameters ``a``, ``b``; whether each is updated (``update``; one that is not, e.g.
    the DDT's ``theta = alpha = 0``, stays at the value the kernel is given); and the
    unconstrained values ``x`` of the updated ones, edited in place."""

    kind: np.ndarray
    a: np.ndarray
    b: np.ndarray
    update: np.ndarray
    x: np.ndarray


class RidgePlan(NamedTuple):
    """How many branch-point moves :func:`pydt_branch_hyper` makes before the first
    centred update (``branch_moves``), how many ridge ``rounds`` follow, and the
    branch-point moves in each round (``round_branch_moves``)."""

    branch_moves: int
    rounds: int
    round_branch_moves: int


@njit_exact_numpy
def _log_sigmoid(x):
    """log(1 / (1 + exp(-x))) without overflow."""
    if x >= 0.0:
        return -math.log1p(math.exp(-x))
    return x - math.log1p(math.exp(x))


@njit_exact_numpy
def constrained_value(kind, x):
    """The hyperparameter at unconstrained value ``x``: ``exp(x)`` or ``logistic(x)``."""
    if kind == GAMMA_LOG:
        return math.exp(x)
    # PyMC's log-odds transform's inverse, as PyTensor computes it
    return 1.0 / (1.0 + math.exp(-x))


@njit_exact_numpy
def log_transform_jacobian(kind, x):
    """``log |d value / dx|``: ``x`` for ``value = exp(x)``, ``log v + log(1 - v)`` for
    ``v = logistic(x)`` (PyMC's log and log-odds transforms)."""
    if kind == GAMMA_LOG:
        return x
    return _log_sigmoid(x) + _log_sigmoid(-x)


@njit_exact_numpy
def hyperprior_log_density(kind, a, b, x):
    """The prior's log density of the value at unconstrained ``x``, normalised, plus
    :func:`log_transform_jacobian` (Eqs. 4.50-4.51: Gamma(a, rate b), Beta(a, b))."""
    if kind == GAMMA_LOG:
        out = a * math.log(b) - math.lgamma(a) + (a - 1.0) * x - b * math.exp(x)
    else:
        log_v = _log_sigmoid(x)
        log_1mv = _log_sigmoid(-x)
        out = (
            (a - 1.0) * log_v
            + (b - 1.0) * log_1mv
            - (math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
        )
    return out + log_transform_jacobian(kind, x)


@njit_exact_numpy
def _set_hyper(st, k, value):
    """Put hyperparameter ``k`` (0: c, 1: theta, 2: alpha) of ``st`` at ``value``,
    recompute every node's prior term and return the tree's log prior."""
    if k == 0:
        st.c = value
    elif k == 1:
        st.theta = value
        st.tables = prior_tables(st.n, value, st.alpha)
    else:
        st.alpha = value
        st.tables = prior_tables(st.n, st.theta, value)
    topo, lt, n, lp, tables, c = st.topo, st.lt, st.n, st.lp, st.tables, st.c
    parent = topo.parent
    total = 0.0
    for v in range(n, parent.shape[0]):
        if parent[v] != UNUSED_SLOT:
            lp[v] = node_prior(v, topo, lt, n, tables, c)
            total += lp[v]
    return total


class _HyperTarget(NamedTuple):
    st: PYDTState
    k: int
    kind: int
    a: float
    b: float


@njit_exact_numpy
def _hyper_target_density(x, target):
    value = constrained_value(target.kind, x)
    return hyperprior_log_density(target.kind, target.a, target.b, x) + _set_hyper(
        target.st, target.k, value
    )


@njit_exact_numpy
def hyper_log_density(st, hyper, k, x):
    """The centred conditional's log density of hyperparameter ``k`` at unconstrained
    ``x`` (module docstring; NaN mapped to -inf), with ``st`` left at that value."""
    f = _hyper_target_density(x, _HyperTarget(st, k, hyper.kind[k], hyper.a[k], hyper.b[k]))
    return f if not math.isnan(f) else -np.inf


@njit_exact_numpy
def centred_hyper_update(rng, st, hyper):
    """Slice-sample each updated hyperparameter of ``hyper`` in turn (c, theta, alpha)
    given the tree of ``st`` (module docstring); ``st`` and ``hyper.x`` are left at the
    new values."""
    for k in range(3):
        if not hyper.update[k]:
            continue
        target = _HyperTarget(st, k, hyper.kind[k], hyper.a[k], hyper.b[k])
        x0 = hyper.x[k]
        f0 = _hyper_target_density(x0, target)
        hyper.x[k] = slice_sample(
            rng, _hyper_target_density, target, x0, f0, -np.inf, np.inf, HYPER_SLICE
        )[0]


@njit_exact_numpy
def _check_total(st, chk):
    """With data in ``chk``: the cached total against the full recursion."""
    if chk.X.shape[0] == 0:
        return
    tp, tl = cached_total(st)
    ref_p, ref_l = pydt_forward(st.topo.parent, st.lt, chk.X, st.c, st.theta, st.alpha, st.sigma2)
    err = abs(ref_p - tp) / (1.0 + abs(ref_p)) + abs(ref_l - tl) / (1.0 + abs(ref_l))
    if not err <= chk.errs[0]:
        chk.errs[0] = err


@njit_exact_numpy
def pydt_branch_hyper(rng, parent, log1m_t, X, params, plan, hyper, check):
    """Branch-point moves and centred updates of c, theta, alpha (module docstring), in
    place on a valid tree ``(parent, log1m_t)`` and on ``hyper.x``.

    Parameters
    ----------
    rng : numpy.random.Generator
    parent, log1m_t : int64 (2n - 1,), float64 (n - 1,) arrays, edited in place
    X : (n, D) float64 array
    params : custom_ops.pydt.messages.PYDTParameters
        ``(c, theta, alpha, sigma2, beta)`` at the start; ``c``, ``theta``, ``alpha``
        must be the constrained values of ``hyper.x`` where ``hyper.update`` is set.
    plan : RidgePlan
    hyper : CentredHyper
    check : bool
        Compare the cached total with :func:`custom_ops.pydt.density.pydt_forward` after
        every move and update (O(n D) each; for tests).

    Returns
    -------
    (branch_accepted, round_accepted, max_error)
        Branch-point moves accepted before the first centred update and in the rounds;
        the largest relative error seen with ``check`` (else 0).
    """
    n, d = X.shape
    c, theta, alpha, sigma2, beta = params
    st = full_state(parent, log1m_t, X, c, theta, alpha, sigma2, beta)
    jn = new_journal(parent.shape[0], d)
    work = BranchWork(np.zeros(2), np.empty(n, dtype=np.int64), np.zeros(6))
    chk = Check(X if check else np.zeros((0, d)), np.zeros(1))
    keep = np.bool_(False)
    stamp = 0
    accepted = 0
    for _ in range(plan.branch_moves):
        if branch_move(rng, st, jn, work, stamp, keep, chk):
            accepted += 1
        stamp += 1
        _check_total(st, chk)
    centred_hyper_update(rng, st, hyper)
    _check_total(st, chk)
    round_accepted = 0
    for _ in range(plan.rounds):
        for _ in range(plan.round_branch_moves):
            if branch_move(rng, st, jn, work, stamp, keep, chk):
                round_accepted += 1
            stamp += 1
            _check_total(st, chk)
        centred_hyper_update(rng, st, hyper)
        _check_total(st, chk)
    return accepted, round_accepted, chk.errs[0]
