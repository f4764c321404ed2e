"""The Pitman-Yor diffusion tree's pointwise log-likelihood (for LOO) and posterior
predictive draws (``inference.log_likelihood``, ``inference.predictive``).

Given a tree and ``sigma2``, every column of ``X`` is Gaussian: Brownian motion from the
origin at ``t = 0`` down the tree, observed at the leaves at ``t = 1``, so ``X[:, j] ~
N(0, sigma2 C)`` with ``C_ij`` the divergence time of leaves ``i, j``'s most recent common
ancestor and ``C_ii = 1`` (Knowles 2012 Eq. 4.26); more generally the location of any
two nodes ``a, b`` has covariance ``sigma2 t(a ^ b)``, ``a ^ b`` their deepest common
ancestor-or-self. At each posterior draw:

- pointwise log-likelihood of row ``i``: the conditional predictive ``log p(x_i | X_{-i},
  tree, sigma2)``, each column's Gaussian conditional (mean ``x_ij - (Q x_j)_i / Q_ii``,
  variance ``sigma2 / Q_ii``, ``Q = C^{-1}``: the internal locations integrated out);
- posterior predictive: the internal nodes' locations drawn from their conditional
  Gaussian given the leaves, then each leaf afresh from its parent's location, ``x_i ~
  N(u_parent, sigma2 (1 - t_parent))`` (the collapsed ``X``'s own forward draw starts
  the Brownian motion at the origin again).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pp_models.model_info import draws_dataset, observed_data, row_dim
from pp_models.trees import DiffusionTree

__all__ = ["divergence_covariance", "pointwise_log_likelihood", "posterior_predictive"]


def divergence_covariance(tree: DiffusionTree) -> tuple[np.ndarray, np.ndarray]:
    """``(nodes, T)``: the leaves then the internal nodes in use, and ``T[a, b]`` the
    divergence time of their deepest common ancestor-or-self (1 on a leaf's diagonal)."""
    n = tree.n_leaves
    nodes = np.concatenate([np.arange(n), tree.internal_nodes])
    index = {int(v): k for k, v in enumerate(nodes)}
    time = np.array([tree.time(int(v)) for v in nodes])
    below: dict[int, list[int]] = {int(v): [] for v in nodes}
    for v in nodes:  # every node joins its own and its ancestors' subtrees
        a = int(v)
        while a >= 0:
            below[a].append(index[int(v)])
            a = int(tree.parent[a])
    T = np.zeros((nodes.size, nodes.size))
    for k in np.argsort(time[n:], kind="stable") + n:  # the deeper ancestor writes last
        members = np.asarray(below[int(nodes[k])])
        T[np.ix_(members, members)] = time[k]
    T[np.arange(n), np.arange(n)] = 1.0
    return nodes, T


def _draws(posterior: xr.Dataset):
    for name in ("tree", "sigma2"):
        if name not in posterior.data_vars:
            raise ValueError(f"the posterior lacks {name!r}, which the diffusion tree's "
                             "pointwise log-likelihood and replicates need")
    packed = np.asarray(posterior["tree"].values)
    sigma2 = np.asarray(posterior["sigma2"].values, dtype=np.float64).reshape(-1)
    return packed.reshape(-1, *packed.shape[-2:]), sigma2


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, obs)}``: each row's conditional predictive."""
    X = np.asarray(observed_data(model, "X"), dtype=np.float64)
    trees, sigma2 = _draws(posterior)
    n, d = X.shape
    out = np.empty((trees.shape[0], n))
    for s in range(trees.shape[0]):
        _nodes, T = divergence_covariance(DiffusionTree.from_packed(trees[s], validate=False))
        Q = np.linalg.inv(T[:n, :n])
        q = np.diag(Q)
        resid = (Q @ X) / q[:, None]  # x_ij minus its conditional mean
        var = sigma2[s] / q
        out[s] = (-0.5 * d * np.log(2 * np.pi * var)
                  - 0.5 * (resid**2).sum(1) / var)
    return draws_dataset(posterior, model, "X",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], n),
                         dims=(row_dim(model, "X"),))


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset:
    """``{"X": (chain, draw, obs, dim)}``: one replicate of every row per draw."""
    X = np.asarray(observed_data(model, "X"), dtype=np.float64)
    trees, sigma2 = _draws(posterior)
    n, d = X.shape
    out = np.empty((trees.shape[0], n, d))
    for s in range(trees.shape[0]):
        tree = DiffusionTree.from_packed(trees[s], validate=False)
        nodes, T = divergence_covariance(tree)
        C, B, U = T[:n, :n], T[n:, :n], T[n:, n:]
        solved = np.linalg.solve(C, np.concatenate([X, B.T], axis=1))
        mean = B @ solved[:, :d]
        cov = sigma2[s] * (U - B @ solved[:, d:])
        u = mean + _gaussian_root(cov) @ rng.standard_normal((cov.shape[0], d))
        parent = tree.parent[:n]
        slot = np.searchsorted(nodes[n:], parent) if nodes.size > n else parent
        t_parent = -np.expm1(tree.log1m_t[parent - n])
        out[s] = u[slot] + np.sqrt(sigma2[s] * (1.0 - t_parent))[:, None] * \
            rng.standard_normal((n, d))
    return draws_dataset(posterior, model, "X",
                         out.reshape(posterior.sizes["chain"], posterior.sizes["draw"], n, d))


def _gaussian_root(cov: np.ndarray) -> np.ndarray:
    """A matrix ``R`` with ``R R^T = cov`` for a covariance that rounding may leave a
    little indefinite (eigenvalues clipped at 0)."""
    values, vectors = np.linalg.eigh(0.5 * (cov + cov.T))
    return vectors * np.sqrt(np.clip(values, 0.0, None))
