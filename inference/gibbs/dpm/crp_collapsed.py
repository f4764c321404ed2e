"""Collapsed Gibbs for a Chinese-restaurant partition with a conjugate likelihood.

Neal (2000) Algorithm 3 (Murphy 2012 §25.2.4, Algorithm 25.1 with the erratum fixed: the
weights multiply the CRP prior by the posterior predictive, Eq. 25.33), mixed every
``split_merge_every`` sweeps with Jain & Neal (2004) split-merge proposals built from a
restricted-Gibbs launch state. The hot loops are in :mod:`custom_ops.dpm.gibbs`.

The step claims a :class:`~pp_models.distributions.CRP` variable ``z`` automatically when
the only other term of the model that depends on ``z`` is one collapsed likelihood
(:class:`~pp_models.distributions.CollapsedGaussian`, ``CollapsedDiagGaussian``,
``CollapsedBernoulli`` or ``CollapsedMultinomial``), or none (a prior-only partition).
The restaurant's parameters and the likelihood's hyperparameters may be random: they are
read from the point at every step.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm

from custom_ops.conjugate import FAMILY_CODES, pack_hyper
from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import canonicalize, crp_logp
from custom_ops.dpm.gibbs import (
    ConjugateData,
    CRPPrior,
    collapsed_sweeps,
    kmeans_partition,
    sequential_map_partition,
    split_merge_proposal,
)
from inference.gibbs.base import ZooGibbsStep, depends_directly, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.distributions.collapsed import CollapsedRV
from pp_models.distributions.crp import CRPRV
from pp_models.validation import check_int

__all__ = ["CRPCollapsedGibbs", "find_crp_likelihood"]


def find_crp_likelihood(model: pm.Model, z_rv, *, allow_other: bool = False):
    """The collapsed likelihood random variable scoring data given ``z_rv``, or ``None``.

    Raises ``ValueError`` when ``z_rv`` enters any other term of the joint density
    (another random variable or a potential) and ``allow_other`` is false, or enters
    more than one collapsed likelihood.
    """
    rvs, potentials = terms_depending_on(model, z_rv)
    collapsed, others = [], [pot.name for pot in potentials]
    for rv in rvs:
        params = rv.owner.op.dist_params(rv.owner)
        if isinstance(rv.owner.op, CollapsedRV) and _is_labels(params[0], z_rv) and not any(
            depends_directly(model, p, z_rv) for p in params[1:]
        ):
            collapsed.append(rv)
        else:
            others.append(rv.name)
    if len(collapsed) > 1:
        raise ValueError(
            f"{z_rv.name} labels {len(collapsed)} collapsed likelihoods "
            f"({', '.join(rv.name for rv in collapsed)}); the collapsed Gibbs step handles one"
        )
    if others and not allow_other:
        raise ValueError(
            f"{z_rv.name} also enters {', '.join(others)}; collapsed Gibbs (Neal's Algorithm "
            "3) needs the partition to enter only its CRP prior and one collapsed likelihood. "
            "For explicit component parameters use the 'crp_auxiliary_gibbs' step (Algorithm 8)."
        )
    return collapsed[0] if collapsed else None


def _is_labels(param, z_rv) -> bool:
    """``param`` is ``z_rv`` itself or a dtype cast of it (any other function of the
    labels may define a different partition)."""
    from pytensor.scalar.basic import Cast
    from pytensor.tensor.elemwise import Elemwise

    while param is not z_rv:
        owner = param.owner
        if (
            owner is None
            or not isinstance(owner.op, Elemwise)
            or not isinstance(owner.op.scalar_op, Cast)
        ):
            return False
        param = owner.inputs[0]
    return True


@register_step
class CRPCollapsedGibbs(ZooGibbsStep):
    """Neal's Algorithm 3 plus Jain-Neal split-merge for a CRP partition ``z``.

    Parameters
    ----------
    vars : list
        The one :class:`~pp_models.distributions.CRP` random variable.
    model : pymc.Model, optional
    rng : seed or Generator, optional
        Replaced per chain by PyMC's seeding.
    sweeps : int
        Gibbs sweeps per ``step`` call (default 1).
    split_merge_every : int
        Run split-merge proposals every this many ``step`` calls; 0 switches them off.
    split_merge_proposals : int
        Proposals per split-merge round.
    launch_scans : int
        Intermediate restricted Gibbs scans of the launch state (Jain & Neal's ``t``).
    greedy_start : bool
        When the chain tunes (``tune > 0`` in ``pm.sample`` / ``fit``), the first step
        chooses the chain's start among several candidate partitions: the incoming one,
        the items seated greedily in a random order (each at the table maximising Eq.
        25.33 given those seated before, :func:`~custom_ops.dpm.gibbs.
        sequential_map_partition`) and k-means partitions for each k of
        ``start_kmeans`` (:func:`~custom_ops.dpm.gibbs.kmeans_partition`). Each
        candidate runs ``start_pilot`` iterations of this step's own kernel (sweeps and
        split-merge proposals), and the chain continues from the pilot end state with the
        highest collapsed log joint ``log p(z) + log p(X | z)`` at the current
        hyperparameters. Only the start changes: tuning draws are discarded and the
        chain's transition kernel is untouched. Chains draw their orders, k-means seeds
        and pilot moves from their own random generators, so their starts differ.
        ``False``: start from the incoming partition (one cluster unless ``initvals``).
    start_kmeans : tuple of int
        The k of the k-means candidates (values >= n are skipped).
    start_pilot : int
        Pilot iterations per candidate before they are compared. The raw candidates'
        joints say little about where a chain goes: a candidate with the best raw joint
        can lead to a mode far below the best, while the best candidate after a short
        pilot leads to the best mode (docs/families/dpm.md). The search costs about
        (2 + len(start_kmeans)) x start_pilot iterations, once per chain.

    Notes
    -----
    Tempering (:class:`~inference.gibbs.ZooGibbsStep`): at inverse temperature ``beta``
    the step samples ``p(z) p(X | z)^beta`` with ``p(X | z)`` the collapsed marginal: the
    sweeps seat an item by its CRP weight times the predictive to the power ``beta``, the
    split-merge launch scans use the same tempered predictives and the acceptance
    multiplies the collapsed likelihood ratio by ``beta`` (:mod:`custom_ops.dpm.gibbs`).

    Each call rebuilds the blocks' sufficient statistics from the incoming point, so the
    step is correct whatever other steps (or PyMC) did to ``z``; the rebuild costs one
    pass over the data, less than a sweep. The output labels are canonical (order of
    first appearance), the representation :class:`~pp_models.distributions.CRP` gives
    probability to.
    """

    name = "crp_collapsed_gibbs"
    can_temper = True
    chain_state_attributes = ("_start_pending", "_calls")
    distributions = (CRPRV,)
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "n_changed": (np.int64, []),
        "split_accepted": (np.int64, []),
        "merge_accepted": (np.int64, []),
    }

    def __init__(
        self,
        vars,
        *,
        model=None,
        rng=None,
        blocked=True,
        sweeps: int = 1,
        split_merge_every: int = 1,
        split_merge_proposals: int = 1,
        launch_scans: int = 4,
        greedy_start: bool = True,
        start_kmeans: tuple[int, ...] = (2, 3, 4, 6, 8, 12, 16),
        start_pilot: int = 10,
    ):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        self.greedy_start = bool(greedy_start)
        self.start_kmeans = tuple(check_int(k, "start_kmeans", minimum=2) for k in start_kmeans)
        self.start_pilot = check_int(start_pilot, "start_pilot", minimum=0)
        #: (candidate name, log joint after its pilot) of the last start search, best first
        self.start_scores: list[tuple[str, float]] = []
        self._start_pending = False
        if len(self.vars) != 1:
            raise ValueError(f"vars: {type(self).__name__} updates one CRP variable, got "
                             f"{self.var_names}")
        z_rv = self.model.values_to_rvs[self.vars[0]]
        if not isinstance(z_rv.owner.op, CRPRV):
            raise TypeError(f"vars: {z_rv.name} is not a CRP random variable")
        self.sweeps = check_int(sweeps, "sweeps", minimum=0)
        self.split_merge_every = check_int(split_merge_every, "split_merge_every", minimum=0)
        self.split_merge_proposals = check_int(split_merge_proposals, "split_merge_proposals",
                                               minimum=0)
        self.launch_scans = check_int(launch_scans, "launch_scans", minimum=0)
        if self.sweeps == 0 and (self.split_merge_every == 0 or self.split_merge_proposals == 0):
            raise ValueError("sweeps=0 needs split-merge proposals, or the step does nothing")

        alpha, discount, _n = z_rv.owner.op.dist_params(z_rv.owner)
        likelihood = find_crp_likelihood(self.model, z_rv)
        if likelihood is None:
            self.family = None
            outputs = [alpha, discount]
        else:
            self.family = likelihood.owner.op.family
            lik_params = likelihood.owner.op.dist_params(likelihood.owner)
            hyper = lik_params[1 : 1 + len(hyper_names(self.family))]
            outputs = [alpha, discount, likelihood, *hyper]
        self.likelihood_name = None if likelihood is None else likelihood.name
        self._value_name = self.var_names[0]
        self._inputs_fn = self.compile_point_fn(outputs)
        self._calls = 0

    def setup_chain(self, rng, tune, draws):
        super().setup_chain(rng, tune, draws)
        self._start_pending = self.greedy_start and tune > 0

    def _choose_start(self, X, z, alpha, discount, family, hyper, code, hp):
        """The start of the chain: the candidate partition (class docstring) whose pilot
        run ends with the highest collapsed log joint; the pilot's end state."""
        n = z.shape[0]

        def log_joint(labels):
            # the power posterior's (log p(z) + beta log p(X | z)) at a tempered replica
            return crp_logp(labels, alpha, discount) + self.beta * collapsed_loglik_value(
                family, labels, X, hyper)

        candidates = [("incoming", canonicalize(np.ascontiguousarray(z, dtype=np.int64))[0])]
        order = self.rng.permutation(n)
        seated = np.empty(n, dtype=np.int64)
        seated[order] = sequential_map_partition(X[order], alpha, discount, code, hp)
        candidates.append(("greedy", canonicalize(seated)[0]))
        for k in self.start_kmeans:
            if k < n:
                candidates.append((f"kmeans{k}", kmeans_partition(X, k, self.rng)))
        scored = []
        for name, labels in candidates:
            for _ in range(self.start_pilot):
                labels = self._kernel(X, labels, alpha, discount, code, hp, split_merge=True)[0]
            scored.append((log_joint(labels), name, labels))
        best = max(range(len(scored)), key=lambda i: scored[i][0])
        self.start_scores = sorted(((name, lj) for lj, name, _ in scored),
                                   key=lambda item: -item[1])
        return scored[best][2]

    def _kernel(self, X, z, alpha, discount, code, hp, split_merge):
        """One transition: the Gibbs sweeps, then (if ``split_merge``) the split-merge
        proposals. Returns (canonical labels, splits accepted, merges accepted)."""
        data, prior = ConjugateData(X, code, hp), CRPPrior(alpha, discount)
        if self.sweeps > 0:
            z = collapsed_sweeps(data, z, prior, self.beta, self.rng, self.sweeps)
        else:
            z, _K = canonicalize(z)
        n_split = n_merge = 0
        if split_merge and self.split_merge_every > 0 and z.shape[0] >= 2:
            for _ in range(self.split_merge_proposals):
                proposed, lp, ll, lqf, lqr, is_split = split_merge_proposal(
                    data, z, prior, self.beta, self.rng, self.launch_scans
                )
                tempered_ll = 0.0 if self.beta == 0.0 else self.beta * ll
                if math.log(self.rng.random()) < self.split_merge_log_acceptance(
                    lp, tempered_ll, lqf, lqr
                ):
                    z, _K = canonicalize(proposed)
                    n_split += int(is_split)
                    n_merge += int(not is_split)
        return z, n_split, n_merge

    def kernel_data(self, values):
        """(family, X, hyperparameter tuple) for the kernels, from the point's values."""
        if self.family is None:
            # prior only: no data (the step uses a zero-column matrix, whose likelihood
            # terms are all 1)
            return "bernoulli", None, (np.ones(0), np.ones(0))
        X = np.ascontiguousarray(values[2], dtype=np.float64)
        return self.family, X, tuple(np.asarray(v, dtype=np.float64) for v in values[3:])

    @staticmethod
    def split_merge_log_acceptance(log_prior_ratio, log_lik_ratio, log_q_forward,
                                   log_q_reverse):
        """Metropolis-Hastings log ratio of a split-merge proposal (Jain & Neal 2004,
        Eqs. 3.5-3.7): prior ratio x likelihood ratio x q(reverse) / q(forward); the
        caller passes the likelihood ratio already raised to ``beta``."""
        return log_prior_ratio + log_lik_ratio + log_q_reverse - log_q_forward

    def step(self, point):
        z_old = np.asarray(point[self._value_name])
        values = self._inputs_fn(point)
        alpha, discount = float(values[0]), float(values[1])
        family, X, hyper = self.kernel_data(values)
        if X is None:
            X = np.zeros((z_old.shape[0], 0))
        code = FAMILY_CODES[family]
        hp = pack_hyper(family, hyper)
        z = np.ascontiguousarray(z_old, dtype=np.int64)
        if self._start_pending:
            self._start_pending = False
            if X.shape[1] > 0:
                z = self._choose_start(X, z, alpha, discount, family, hyper, code, hp)
        self._calls += 1
        z, n_split, n_merge = self._kernel(
            X, z, alpha, discount, code, hp,
            split_merge=self._calls % max(self.split_merge_every, 1) == 0)
        z_new = z.astype(z_old.dtype)
        stats = {
            "n_clusters": int(z_new.max()) + 1 if z_new.size else 0,
            "n_changed": int(np.count_nonzero(z_new != z_old)),
            "split_accepted": n_split,
            "merge_accepted": n_merge,
        }
        return self.updated(point, **{self._value_name: z_new}), [stats]


def hyper_names(family: str) -> tuple[str, ...]:
    from custom_ops.conjugate import FAMILIES

    return FAMILIES[family].hyper_names

