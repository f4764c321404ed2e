"""Draws from the Pitman-Yor diffusion tree prior (Knowles 2012 §4.3.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from custom_ops.pydt.draws import pydt_draw_data, pydt_draw_tree
from custom_ops.pydt.ops import check_parameters
from pp_models.trees import DiffusionTree
from pp_models.validation import check_int, rng_from_seed

__all__ = ["PriorDraw", "sample_prior"]


@dataclass(frozen=True)
class PriorDraw:
    """One draw: the tree and the data at its leaves (``X`` has ``dim`` columns)."""

    tree: DiffusionTree
    X: np.ndarray

    @property
    def n_leaves(self) -> int:
        return self.tree.n_leaves

    @property
    def n_internal(self) -> int:
        return self.tree.n_internal


def sample_prior(n_leaves, *, c, theta, alpha, dim=1, sigma2=1.0, size=1, random_seed=None):
    """Trees (and data) from the Pitman-Yor diffusion tree prior.

    Each tree grows by the sequential generative process (Knowles 2012 §4.3, Eqs.
    4.9-4.11, divergence times by inversion in A-space, Eqs. 4.13 / 4.15); the data are
    Brownian motion with variance ``sigma2`` per unit time down the tree (Eq. 4.7).

    Parameters
    ----------
    n_leaves : int
        Number of leaves (>= 2).
    c, theta, alpha : float
        Divergence function ``a(t) = c / (1 - t)``, concentration and discount (ranges
        in :mod:`custom_ops.pydt.ops`).
    dim : int
        Columns of the data (0 for trees alone).
    sigma2 : float
        Brownian-motion variance.
    size : int
        Number of independent draws.
    random_seed : int, Generator or None

    Returns
    -------
    list of PriorDraw
    """
    n_leaves = check_int(n_leaves, "n_leaves", minimum=2)
    dim = check_int(dim, "dim", minimum=0)
    size = check_int(size, "size", minimum=1)
    check_parameters(c, theta, alpha, sigma2)
    rng = rng_from_seed(random_seed)
    n = int(n_leaves)
    draws = []
    for _ in range(size):
        parent = np.empty(2 * n - 1, dtype=np.int64)
        log1m_t = np.empty(n - 1)
        pydt_draw_tree(rng, n, float(c), float(theta), float(alpha), parent, log1m_t)
        X = np.empty((n, int(dim)))
        if dim:
            pydt_draw_data(rng, parent, log1m_t, float(sigma2), int(dim), X)
        draws.append(PriorDraw(DiffusionTree(parent, log1m_t, validate=False), X))
    return draws
