"""Gibbs sampling of the Bayesian mixture of trees (``pp_models.mixture_of_trees.model``).

One step updates the weights ``w``, the assignments ``z`` and the component trees:

1. ``z``: a collapsed sweep, ``p(z_i = k | ...) ∝ w_k p(x_i | rows of k but i, T_k)``,
   the tree's posterior predictive with the BDeu CPTs integrated out;
2. each ``T_k`` exactly from ``P(T | z, X) ∝ prod_{uv in T} beta_uv BF_uv`` (BF_uv the
   edge's BDeu Bayes factor on the rows of component k; Meilă & Jaakkola 2006), by
   sequential matrix-tree sampling
   (:func:`custom_ops.trees.spanning.sequential_spanning_tree`);
3. for every pair of components, a split-merge move: all their rows reallocated at once
   by a restricted-Gibbs scan from a random launch, both trees redrawn exactly,
   accepted by Metropolis-Hastings
   with the trees integrated out of the target (matrix-tree theorem;
   :func:`custom_ops.mixture_of_trees.discrete.propose_reallocation`). One-row updates of ``z`` move
   between partitions very slowly (the tutorial's chains stayed in different modes);
   this move merges or splits whole groups of rows in one step;
4. block moves (``block_moves`` per sweep, optional): a group of similar rows (a row and
   its nearest rows by the number of differing variables) that share a component is put
   into a component drawn from its conditional with every tree integrated out, then
   every tree is redrawn exactly
   (:func:`custom_ops.mixture_of_trees.discrete.block_reassignments`). Near-duplicate
   rows (stories on one subject) move together; one row at a time they stay where their
   group is;
5. ``w ~ Dirichlet(alpha + counts(z))``.

Tempering (:class:`~inference.gibbs.ZooGibbsStep`, Notes): at inverse temperature ``b``
the step samples ``p(w) p(z | w) prod_k P(T_k) p(D_k | T_k)^b``, with ``p(D_k | T_k)``
the collapsed marginal (the model's ``datalogp``). The marginal is a node term times one
factor per edge (``exp(alone_k + sum_{uv in T_k} g_uv)``, the factors listed in
:mod:`custom_ops.mixture_of_trees.discrete` and
:mod:`custom_ops.mixture_of_trees.gaussian`), so raised to ``b`` it keeps that form:
the tree is still drawn exactly by the matrix-tree theorem, with log edge weights ``log
beta_uv + b g_uv`` (``b alone_k`` is constant in ``T_k``);
the assignment of one row uses the collapsed predictive (a ratio of two marginals) to
the power ``b``; the split-merge move's target integrates the trees out of the tempered
marginals and its restricted scans use the tempered predictives; the block move's
conditional integrates the trees out of the tempered marginals too; ``w`` enters no
likelihood term, so its Dirichlet draw is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytensor

from custom_ops.mixture_of_trees.discrete import (
    MixtureState,
    TreeMixturePrior,
    assignment_sweep,
    block_reassignments,
    component_edge_log_weights,
    propose_reallocation,
    row_neighbours,
    tree_mixture_logp,
    tree_tables,
)
from custom_ops.mixture_of_trees.gaussian import (
    NIWPrior,
    gaussian_assignment_sweep,
    gaussian_component_stats,
    gaussian_tree_edge_log_weights,
    gaussian_tree_mixture_logp,
)
from custom_ops.trees.spanning import sequential_spanning_tree
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import register_step
from pp_models.validation import check_int

__all__ = ["GaussianMixtureOfTreesGibbs", "MixtureOfTreesGibbs"]


@register_step
class MixtureOfTreesGibbs(ZooGibbsStep):
    """Collapsed Gibbs for (w, z, trees) of a mixture of trees.

    Parameters
    ----------
    vars : list
        ``w`` (Dirichlet weights), ``z`` (assignments) and ``trees`` (K, V), by these
        names or as given by ``weights``, ``assignments``, ``trees``.
    n_categories : int array (V,)
    ess : float
        BDeu equivalent sample size of the integrated-out CPTs.
    alpha : float
        Dirichlet concentration of ``w``.
    edge_prior : array (V, V)
        Decomposable structure prior ``beta``.
    data : str
        Name of the data variable (observed or free).
    split_merge : bool
        Add the split-merge (reallocation) move for every pair of components. It is
        accepted often on small data but rarely at hundreds of rows, where it adds to
        the time of a sweep (docs/families/mixture_of_trees.md). Hence off unless the
        model asks for it (``split_merge=True``).
    block_moves : int
        Block moves per sweep (module docstring, step 4; 0: none).

    Notes
    -----
    Stats per draw: ``n_changed`` (assignments that moved in the one-row sweep),
    ``split_merge_accepted`` (accepted reallocation moves), ``blocks_moved`` (block moves
    that changed their block's component) and ``log_marginal`` (log p(X | z, trees), CPTs
    integrated out).
    """

    name = "mixture_of_trees_gibbs"
    can_temper = True
    stats_dtypes_shapes = {"n_changed": (np.int64, []),
                           "split_merge_accepted": (np.int64, []),
                           "blocks_moved": (np.int64, []),
                           "log_marginal": (np.float64, [])}
    #: Largest block of a block move: a row and up to this many minus one nearest rows.
    block_max_size = 8

    def __init__(self, vars, *, n_categories, ess, alpha, edge_prior, data="X",
                 weights="w", assignments="z", trees="trees", split_merge=False,
                 block_moves=0, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        m = self.model
        wanted = {m.rvs_to_values[m[name]].name for name in (weights, assignments, trees)}
        if set(self.var_names) != wanted:
            raise ValueError(f"vars: MixtureOfTreesGibbs updates {sorted(wanted)} together, "
                             f"got {self.var_names}")
        self.n_categories = np.ascontiguousarray(n_categories, dtype=np.int64)
        self.ess = float(ess)
        self.alpha = float(alpha)
        self.log_edge_prior = np.log(np.asarray(edge_prior, dtype=np.float64))
        np.fill_diagonal(self.log_edge_prior, 0.0)
        self.prior = TreeMixturePrior(self.n_categories, self.ess, self.log_edge_prior)
        self.split_merge = bool(split_merge)
        self.split_merge_launch_scans = 3
        self.block_moves = check_int(block_moves, "block_moves", minimum=0)
        self._neighbours = None
        self._neighbours_of = None
        w_rv = m[weights]
        self._w_value = m.rvs_to_values[w_rv].name
        self._z_name = m.rvs_to_values[m[assignments]].name
        self._trees_name = m.rvs_to_values[m[trees]].name
        self._w_fn = self.compile_point_fn(w_rv)
        self._data_fn = self.compile_point_fn(m[data])
        transform = m.rvs_to_transforms.get(w_rv)
        if transform is None:
            self._w_forward = None
        else:
            x = pytensor.tensor.dvector("w")
            self._w_forward = pytensor.function([x], transform.forward(x))

    def setup_chain(self, rng, tune, draws):
        super().setup_chain(rng, tune, draws)
        # a chain with a burn-in starts from prior-drawn assignments (its first draws
        # are discarded); PyMC's initial point puts every row in component 0, which
        # the one-row sweep leaves only slowly. Without tuning (getting-it-right) the
        # chain is a plain Markov chain from its initial point.
        self._prior_start = bool(tune)

    def prior_start(self, z, n_components):
        """Overwrite ``z`` with a draw from its prior: w ~ Dir(alpha), z_i ~ Cat(w)."""
        w = self.rng.dirichlet(np.full(n_components, self.alpha))
        z[:] = self.rng.choice(n_components, size=z.shape[0], p=w)

    def read_data(self, point):
        return np.ascontiguousarray(self._data_fn(point), dtype=np.int64)

    def log_marginal(self, codes, z, trees):
        return tree_mixture_logp(codes, z, trees, self.n_categories, self.ess)

    # the updates, separate so that tests can plant bugs in one of them
    def update_assignments(self, codes, z, trees, log_w):
        tables = tree_tables(codes, z, trees, self.n_categories)
        counts = np.bincount(z, minlength=trees.shape[0]).astype(np.int64)
        return assignment_sweep(self.rng, codes, MixtureState(z, trees, log_w), tables, counts,
                                self.prior, float(self.beta))

    def tree_log_weights(self, rows):
        """Log edge weights of the tree's conditional given its rows: ``log beta_uv +
        b g_uv`` (module docstring)."""
        lw, _alone = component_edge_log_weights(
            rows, np.ones(rows.shape[0], dtype=np.bool_), self.n_categories, self.ess,
            self.log_edge_prior, float(self.beta))
        return lw

    def update_trees(self, codes, z, trees):
        for k in range(trees.shape[0]):
            trees[k] = sequential_spanning_tree(self.rng, self.tree_log_weights(codes[z == k]))

    def reallocation_log_ratio(self, log_target_new, log_target_old, log_q_forward,
                               log_q_reverse):
        """Metropolis-Hastings log acceptance ratio of a reallocation proposal."""
        return log_target_new - log_target_old + log_q_reverse - log_q_forward

    def update_reallocations(self, codes, z, trees, log_w):
        """One split-merge move per pair of components (in random order), in place."""
        K = trees.shape[0]
        pairs = [(a, b) for a in range(K) for b in range(a + 1, K)]
        accepted = 0
        for index in self.rng.permutation(len(pairs)):
            a, b = pairs[index]
            labels, order, tree_a, tree_b, *terms = propose_reallocation(
                self.rng, codes, MixtureState(z, trees, log_w), a, b, self.prior,
                self.split_merge_launch_scans, float(self.beta))
            if np.log(self.rng.random()) < self.reallocation_log_ratio(*terms):
                z[order] = labels
                trees[a] = tree_a
                trees[b] = tree_b
                accepted += 1
        return accepted

    def neighbours(self, codes):
        """Each row and its nearest rows (the blocks of the block move), computed once
        per data set (the data change only in getting-it-right runs)."""
        if self._neighbours_of is None or not np.array_equal(self._neighbours_of, codes):
            self._neighbours = row_neighbours(codes, self.block_max_size)
            self._neighbours_of = codes.copy()
        return self._neighbours

    def update_blocks(self, codes, z, trees, log_w):
        """``block_moves`` block moves on ``z`` (in place), then every tree redrawn from
        its conditional (the moves integrate the trees out). When no block moved, ``z``
        is unchanged and the trees are kept: whether a block moves does not depend on the
        trees, so given ``z`` they are still a draw of ``P(T | z, X)``."""
        moved = block_reassignments(self.rng, codes, MixtureState(z, trees, log_w),
                                    self.neighbours(codes), self.block_moves, self.prior,
                                    float(self.beta))
        if moved:
            self.update_trees(codes, z, trees)
        return moved

    def update_weights(self, z, n_components):
        counts = np.bincount(z, minlength=n_components)
        return self.rng.dirichlet(self.alpha + counts)

    def step(self, point):
        codes = self.read_data(point)
        z = np.array(point[self._z_name], dtype=np.int64)
        trees = np.array(point[self._trees_name], dtype=np.int64)
        w = np.asarray(self._w_fn(point), dtype=np.float64)
        with np.errstate(divide="ignore"):
            log_w = np.log(w)
        if getattr(self, "_prior_start", False):
            self._prior_start = False
            self.prior_start(z, trees.shape[0])
            self.update_trees(codes, z, trees)
        n_changed = self.update_assignments(codes, z, trees, log_w)
        self.update_trees(codes, z, trees)
        blocks = self.update_blocks(codes, z, trees, log_w) if self.block_moves else 0
        accepted = self.update_reallocations(codes, z, trees, log_w) if self.split_merge \
            else 0
        w = self.update_weights(z, trees.shape[0])
        w = np.maximum(w, 1e-300)
        w = w / w.sum()
        w_value = w if self._w_forward is None else self._w_forward(w)
        lm = self.log_marginal(codes, z, trees)
        new = self.updated(point, **{
            self._z_name: z.astype(point[self._z_name].dtype),
            self._trees_name: trees.astype(point[self._trees_name].dtype),
            self._w_value: np.asarray(w_value, dtype=point[self._w_value].dtype),
        })
        return new, [{"n_changed": int(n_changed), "split_merge_accepted": int(accepted),
                       "blocks_moved": int(blocks), "log_marginal": float(lm)}]


@register_step
class GaussianMixtureOfTreesGibbs(MixtureOfTreesGibbs):
    """Collapsed Gibbs for (w, z, trees) of a mixture of Gaussian trees
    (``model(..., kind="gaussian")``).

    The same scheme as :class:`MixtureOfTreesGibbs` with the hyper-Markov
    Normal-Inverse-Wishart parameters integrated out
    (:mod:`custom_ops.mixture_of_trees.gaussian`): the assignments by their collapsed
    Student-t predictives, each tree exactly from its decomposable conditional
    (:func:`custom_ops.trees.spanning.sequential_spanning_tree`), then ``w``. No
    split-merge move (the reallocation proposal is written for the discrete model).

    Parameters
    ----------
    vars : list
        ``w``, ``z``, ``trees``.
    m0, kappa0, delta, S0
        The model's prior (see ``pp_models.mixture_of_trees.model``).
    alpha, edge_prior, data, weights, assignments, trees
        As for :class:`MixtureOfTreesGibbs`.
    """

    name = "gaussian_mixture_of_trees_gibbs"

    def __init__(self, vars, *, m0, kappa0, delta, S0, alpha, edge_prior, data="X",
                 weights="w", assignments="z", trees="trees", model=None, rng=None,
                 blocked=True):
        super().__init__(vars, n_categories=np.zeros(0, dtype=np.int64), ess=1.0,
                         alpha=alpha, edge_prior=edge_prior, data=data, weights=weights,
                         assignments=assignments, trees=trees, split_merge=False,
                         model=model, rng=rng, blocked=blocked)
        self.m0 = np.ascontiguousarray(m0, dtype=np.float64)
        self.kappa0 = float(kappa0)
        self.delta = float(delta)
        self.S0 = np.ascontiguousarray(S0, dtype=np.float64)
        self.niw_prior = NIWPrior(self.m0, self.kappa0, self.delta, self.S0)

    def read_data(self, point):
        return np.ascontiguousarray(self._data_fn(point), dtype=np.float64)

    def log_marginal(self, X, z, trees):
        return gaussian_tree_mixture_logp(X, z, trees, self.m0, self.kappa0, self.delta,
                                          self.S0)

    def update_assignments(self, X, z, trees, log_w):
        stats = gaussian_component_stats(X, z, trees.shape[0])
        return gaussian_assignment_sweep(self.rng, X, MixtureState(z, trees, log_w), stats,
                                         self.niw_prior, float(self.beta))

    def tree_log_weights(self, rows):
        stats = gaussian_component_stats(rows, np.zeros(rows.shape[0], dtype=np.int64), 1)
        gain, _alone = gaussian_tree_edge_log_weights(stats[0], self.m0, self.kappa0,
                                                      self.delta, self.S0)
        return self.log_edge_prior + self.beta * gain
