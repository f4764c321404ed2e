"""Meilă-Jordan EM for a finite mixture of trees (Meilă & Jordan 2000; Murphy 2012 §26.3.4).

E step: responsibilities ``gamma_ik ∝ lambda_k T_k(x_i)`` in log space. M step:
``lambda_k = Gamma_k / N`` and each component's tree is a Chow-Liu tree of the data
weighted by ``gamma_.k`` (spec §c.4). The log likelihood ``sum_i log sum_k lambda_k
T_k(x_i)`` never decreases (with ``prior``, the penalised objective, which adds the log
Dirichlet densities of the smoothed tables, does; the recorded trace is the plain log
likelihood, which is then monotone only up to that penalty).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp

from pp_models.mixture_of_trees.chow_liu import (
    _AXES,
    TreeModel,
    _check_prior,
    as_discrete_data,
    fit_discrete_tree,
    fit_gaussian_tree,
    one_hot_reduced,
    tree_log_density,
)
from pp_models.progress import WorkProgress
from pp_models.validation import (
    as_data_matrix,
    check_feature_names,
    check_int,
    check_real,
    rng_from_seed,
)

__all__ = ["MixtureOfTrees", "em"]


@dataclass(frozen=True)
class MixtureOfTrees:
    """A fitted finite mixture of trees.

    Attributes
    ----------
    weights : float64 (K,)
        Mixture weights ``lambda``.
    trees : tuple of TreeModel
        One tree per component.
    log_likelihood : float
        Final ``sum_i log p(x_i)`` of the training data.
    log_likelihood_trace : float64 (n_iter + 1,)
        The log likelihood after every E step of the best restart (non-decreasing).
    n_iter : int
    converged : bool
    responsibilities : float64 (n, K)
        The last E step's ``gamma``.
    restart_log_likelihoods : float64 (n_init,)
        Final log likelihood of every restart (the best is kept).
    """

    weights: np.ndarray
    trees: tuple[TreeModel, ...]
    log_likelihood: float
    log_likelihood_trace: np.ndarray
    n_iter: int
    converged: bool
    responsibilities: np.ndarray
    restart_log_likelihoods: np.ndarray

    @property
    def n_components(self) -> int:
        return len(self.trees)

    def component_logpdf(self, X) -> np.ndarray:
        """``log lambda_k + log T_k(x_i)``, (n, K)."""
        with np.errstate(divide="ignore"):
            log_w = np.log(self.weights)
        return np.stack([t.logpdf(X) for t in self.trees], axis=1) + log_w

    def logpdf(self, X) -> np.ndarray:
        """Mixture log density of every row."""
        return logsumexp(self.component_logpdf(X), axis=1)

    def predict(self, X) -> np.ndarray:
        """Most responsible component of every row."""
        return np.argmax(self.component_logpdf(X), axis=1)

    def sample(self, n: int, random_seed=None):
        """``(X, z)``: ``n`` draws and their components."""
        rng = rng_from_seed(random_seed)
        z = rng.choice(self.n_components, size=n, p=self.weights)
        parts = [t.sample(int(np.sum(z == k)), random_seed=rng) for k, t in
                 enumerate(self.trees)]
        X = np.empty((n, self.trees[0].n_nodes), dtype=parts[0].dtype)
        for k, part in enumerate(parts):
            X[z == k] = part
        return X, z


def em(X, n_components: int, *, kind: str = "discrete", n_init: int = 1,
       max_iter: int = 100, tol: float = 1e-6, prior=None, n_categories=None,
       random_seed=None, feature_names=None, progressbar: bool = True) -> MixtureOfTrees:
    """Fit a mixture of ``n_components`` trees by EM (Meilă & Jordan 2000).

    Parameters
    ----------
    X : array (n, V)
        Discrete codes or real values (``kind``).
    n_components : int
        ``K >= 1``. With ``K = 1`` the result is the Chow-Liu tree.
    kind : {"discrete", "gaussian"}
    n_init : int
        Restarts from different initialisations; the highest final log likelihood wins.
    max_iter : int
        Maximum EM iterations per restart.
    tol : float
        Stop when the log likelihood improves by less than ``tol * n``.
    prior : float, optional
        Smoothing passed to :func:`chow_liu` in every M step (Dirichlet pseudo-count or
        covariance ridge); recommended for Gaussian data and small components.
    random_seed : int or Generator, optional
    progressbar : bool
        A progress line (EM iterations, of at most ``n_init * max_iter``) when the fit
        takes over a second; off in CI (see :mod:`pp_models.progress`).

    Returns
    -------
    MixtureOfTrees

    Notes
    -----
    Initialisation: ``K`` rows are drawn as prototypes by k-means++ seeding, every row
    goes to its
    nearest prototype (Hamming distance for discrete data, Euclidean on standardised
    columns for Gaussian), and the responsibilities are that hard assignment softened
    to ``0.9 + 0.1 / K``. EM then starts with an M step. A component whose total
    responsibility drops to zero keeps its previous tree with weight zero.
    """
    if kind not in ("discrete", "gaussian"):
        raise ValueError(f"kind must be 'discrete' or 'gaussian', got {kind!r}")
    K = check_int(n_components, "n_components", minimum=1)
    n_init = check_int(n_init, "n_init", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_real(tol, "tol", minimum=0.0)
    prior = _check_prior(prior, kind)
    if kind == "discrete":
        data, cats = as_discrete_data(X, n_categories=n_categories)
        one_hot = one_hot_reduced(data, cats)
    else:
        data = as_data_matrix(X, "X", axes=_AXES)
        cats = one_hot = None
    n, V = data.shape
    if V < 2:
        raise ValueError(f"X needs at least 2 variables (columns) for a tree, got {V}")
    if K > n:
        raise ValueError(f"n_components = {K} exceeds the number of rows {n}")
    names = check_feature_names(feature_names, V)
    names = None if names is None else tuple(names)
    rng = rng_from_seed(random_seed)
    best = None
    finals = []
    with WorkProgress("mixture_of_trees.em", n_init * max_iter, unit="iterations",
                      enabled=progressbar) as bar:
        for restart in range(n_init):
            result = _run(data, cats=cats, one_hot=one_hot, kind=kind, K=K, max_iter=max_iter,
                          tol=tol, prior=prior, rng=rng, names=names, bar=bar)
            # a restart that converged early counts as its whole budget
            bar.counter[0] = (restart + 1) * max_iter
            finals.append(result[2])
            if best is None or result[2] > best[2]:
                best = result
    weights, trees, ll, trace, n_iter, converged, resp = best
    return MixtureOfTrees(weights=weights, trees=tuple(trees), log_likelihood=float(ll),
                          log_likelihood_trace=np.asarray(trace), n_iter=n_iter,
                          converged=converged, responsibilities=resp,
                          restart_log_likelihoods=np.asarray(finals))


def _initial_responsibilities(data, kind, K, rng):
    n = data.shape[0]
    if kind == "discrete":
        points = data

        def distance(p):
            return (points != points[p]).sum(axis=1).astype(np.float64)
    else:
        sd = data.std(axis=0)
        points = (data - data.mean(axis=0)) / np.where(sd > 0, sd, 1.0)

        def distance(p):
            return np.sqrt(((points - points[p]) ** 2).sum(axis=1))

    # k-means++ seeding (Arthur & Vassilvitskii 2007): spread-out prototypes
    protos = [int(rng.integers(n))]
    nearest_d = distance(protos[0])
    dists = [nearest_d]
    for _ in range(1, K):
        d2 = nearest_d**2
        p = int(rng.choice(n, p=d2 / d2.sum())) if d2.sum() > 0 else int(rng.integers(n))
        protos.append(p)
        dists.append(distance(p))
        nearest_d = np.minimum(nearest_d, dists[-1])
    dist = np.stack(dists, axis=1)
    # ties broken at random so identical prototypes still split the data
    nearest = np.argmin(dist + rng.random(dist.shape) * 1e-3, axis=1)
    resp = np.full((n, K), 0.1 / K)
    resp[np.arange(n), nearest] += 0.9
    return resp


def _stacked_joints(one_hot, resp, max_elements=60_000_000, min_elements=2_000_000):
    """``Z^T diag(gamma_k) Z`` of every component from one matrix product (faster than K
    separate ones on large data), or None when the stacked operand would be too large,
    or so small that K separate products are faster."""
    Z = one_hot[0]
    n, D = Z.shape
    K = resp.shape[1]
    if not min_elements <= n * D * K <= max_elements:
        return None
    stacked = Z.T @ (Z[:, :, None] * resp[:, None, :]).reshape(n, D * K)
    return stacked.reshape(D, D, K)


def _m_step(data, cats, one_hot, kind, resp, prior, trees, names):
    gamma = resp.sum(axis=0)
    weights = gamma / gamma.sum()
    joints = _stacked_joints(one_hot, resp) if kind == "discrete" else None
    new_trees = []
    for k in range(resp.shape[1]):
        if gamma[k] <= 0:
            new_trees.append(trees[k])
            continue
        w = resp[:, k]
        if kind == "discrete":
            joint = None if joints is None else np.ascontiguousarray(joints[:, :, k])
            new_trees.append(fit_discrete_tree(data, cats, w, prior, names=names,
                                               one_hot=one_hot, joint=joint))
        else:
            new_trees.append(fit_gaussian_tree(data, w, prior, names=names))
    return weights, new_trees


def _component_log_density(data, kind, trees):
    if kind == "discrete":
        return np.stack([tree_log_density(data, t.parents, t.log_cpt) for t in trees], axis=1)
    return np.stack([t.logpdf(data) for t in trees], axis=1)


def _run(data, *, cats, one_hot, kind, K, max_iter, tol, prior, rng, names, bar=None):
    """One EM run from a k-means++ start (:func:`em`'s Notes): ``(weights, trees, final
    log likelihood, its trace, iterations, converged, responsibilities)``."""
    n = data.shape[0]
    resp = _initial_responsibilities(data, kind, K, rng)
    trees = [None] * K
    trace = []
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):  # noqa: B007 (n_iter is reported)
        weights, trees = _m_step(data, cats, one_hot, kind, resp, prior, trees, names)
        with np.errstate(divide="ignore"):
            log_joint = _component_log_density(data, kind, trees) + np.log(weights)
        log_norm = logsumexp(log_joint, axis=1)
        ll = float(log_norm.sum())
        with np.errstate(invalid="ignore"):
            resp = np.exp(log_joint - log_norm[:, None])
        resp = np.nan_to_num(resp, nan=0.0)
        trace.append(ll)
        if bar is not None:
            bar.advance(1)
        if len(trace) > 1 and trace[-1] - trace[-2] < tol * n:
            converged = True
            break
    return weights, trees, trace[-1], trace, n_iter, converged, resp
