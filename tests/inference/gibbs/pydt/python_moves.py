"""The PYDT tree step's detach-and-reattach move and divergence-time slice sampler
written in Python on the full recursion (``pydt_forward`` per evaluation, O(n D)): the
reference the tests run beside the Numba sweep (:func:`custom_ops.pydt.sweep.pydt_sweep`,
module docstring of :mod:`inference.gibbs.pydt`), and the planted bugs of its twins
(``exact_ratio=False``: the prior-as-proposal shortcut; ``proposal_ratio=False``:
``g_R(old) / g_R(new)`` left out; ``jacobian=False``: the times' Jacobian left out)."""

from __future__ import annotations

import math

import numpy as np

from custom_ops.pydt.ops import pydt_forward
from pp_models.pydt.attach import children_lists, leaf_counts_from
from pp_models.trees import DiffusionTree
from tests.oracles.pydt import log_attach_density, sample_attach

_MAX_SHRINK = 200


def _log_post(tree, X, c, theta, alpha, sigma2):
    lp, ll = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)
    return lp + ll


def _l(tree, v):
    return -math.inf if v < tree.n_leaves else float(tree.log1m_t[v - tree.n_leaves])


def _n_nonroot(tree):
    return int(np.count_nonzero(tree.parent >= 0))


def detach_reattach(rng, tree, v, X, c, theta, alpha, sigma2, current=None,
                    exact_ratio=True, proposal_ratio=True):
    """One detach-and-reattach Metropolis-Hastings move of the subtree under ``v`` (module
    docstring), in place. Returns ``(accepted, log posterior of the kept tree)``.

    ``exact_ratio=False`` (the prior-as-proposal shortcut) and ``proposal_ratio=False``
    (``g_R(old) / g_R(new)`` left out) are the planted bugs of the tests' twins."""
    if current is None:
        current = _log_post(tree, X, c, theta, alpha, sigma2)
    n_before = _n_nonroot(tree)
    saved_parent = tree.parent.copy()
    saved_l = tree.log1m_t.copy()
    old = tree.detach(v)
    parent = tree.parent
    root = int(np.flatnonzero(parent == -1)[0])
    kids = children_lists(parent)
    counts = leaf_counts_from(root, kids, tree.n_leaves)
    new = sample_attach(rng, tree, root, kids, counts, _l(tree, v), c=c, theta=theta,
                        alpha=alpha)
    if new is None:
        tree.parent[:] = saved_parent
        tree.log1m_t[:] = saved_l
        return False, current
    log_q_new = log_attach_density(tree, root, kids, counts, *new, c=c, theta=theta,
                                   alpha=alpha)
    log_q_old = log_attach_density(tree, root, kids, counts, *old, c=c, theta=theta,
                                   alpha=alpha)
    tree.attach(v, *new)
    proposed = _log_post(tree, X, c, theta, alpha, sigma2)
    if exact_ratio:
        log_ratio = (proposed - current + math.log(n_before) - math.log(_n_nonroot(tree)))
        if proposal_ratio:
            log_ratio += log_q_old - log_q_new
    else:
        # the "prior as proposal" shortcut: exact only for a single leaf, and only when
        # the number of subtrees to choose from does not change
        ll_new = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)[1]
        tree_old = DiffusionTree(saved_parent, saved_l, validate=False)
        ll_old = pydt_forward(tree_old.parent, tree_old.log1m_t, X, c, theta, alpha,
                              sigma2)[1]
        log_ratio = ll_new - ll_old
    if math.log(rng.random()) < log_ratio:
        return True, proposed
    tree.parent[:] = saved_parent
    tree.log1m_t[:] = saved_l
    return False, current


def slice_time(rng, tree, v, X, c, theta, alpha, sigma2, current=None, max_steps=50,
               jacobian=True):
    """Slice-sample ``l = log(1 - t_v)`` of internal node ``v`` given everything else, in
    place; returns the new log posterior (Neal 2003).

    The density is in ``t``, so the target in ``l`` gains the Jacobian ``|dt/dl| = e^l``
    (``jacobian=False`` leaves it out: the planted bug of a test twin).
    Between a parent and an internal child the whole open interval is the initial
    bracket (shrinkage only); below a node whose children are all leaves the bracket
    steps out towards ``t = 1`` with Neal's randomly split step budget (Fig. 3), width
    ``1 + |l_parent|`` (fixed during the update; the times' spread in ``l`` grows with
    their depth).
    """
    n = tree.n_leaves
    k = v - n
    p = int(tree.parent[v])
    hi = 0.0 if p < 0 else float(tree.log1m_t[p - n])
    child_l = [float(tree.log1m_t[w - n]) for w in np.flatnonzero(tree.parent == v) if w >= n]
    lo = max(child_l) if child_l else -math.inf

    # density in t; dt/dl = -(1 - t) = -exp(l)
    log_jac = 1.0 if jacobian else 0.0

    def f(x):
        tree.log1m_t[k] = x
        return _log_post(tree, X, c, theta, alpha, sigma2) + log_jac * x

    x0 = float(tree.log1m_t[k])
    f0 = f(x0) if current is None else current + log_jac * x0
    if not math.isfinite(f0):
        tree.log1m_t[k] = x0
        return f0 - log_jac * x0
    log_y = f0 + math.log(rng.random())
    if math.isfinite(lo):
        left, right = lo, hi
    else:
        width = 1.0 + abs(hi)
        left = x0 - width * rng.random()
        right = min(left + width, hi)
        j = int(max_steps * rng.random())
        kk = max_steps - 1 - j
        while j > 0 and f(left) > log_y:
            left -= width
            j -= 1
        while kk > 0 and right < hi and f(right) > log_y:
            right = min(right + width, hi)
            kk -= 1
    for _ in range(_MAX_SHRINK):
        x1 = left + (right - left) * rng.random()
        if not lo < x1 < hi:
            # open interval: a time may not tie with its parent's or child's
            continue
        f1 = f(x1)
        if f1 > log_y:  # False for NaN
            return f1 - log_jac * x1
        if x1 < x0:
            left = x1
        else:
            right = x1
    # the bracket collapsed in floating point without hitting the slice: stay put
    tree.log1m_t[k] = x0
    return f0 - log_jac * x0
