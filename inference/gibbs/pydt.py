"""MCMC moves for the Pitman-Yor diffusion tree (Knowles 2012 §4.6.1).

One :class:`PYDTTreeStep` call is a sweep over the tree variable of a
:class:`~pp_models.distributions.PYDiffusionTree`:

1. **Detach and reattach**, ``2 n - 2`` proposals by default (a fixed count: repeating
   the move as many times as the current tree has subtrees is not invariant). A subtree ``S`` (root
   ``v``, possibly a single leaf) is chosen uniformly among the non-root nodes and cut
   off; a new position on the rest ``R`` is drawn by running the generative process for
   one new point on ``R`` (Eqs. 4.9-4.11, waiting times in A-space), restarted until the
   divergence happens before ``t_v``; it is accepted with the full Metropolis-Hastings
   ratio

   ``p(T') p(X | T') g_R(old) / #nonroot(T')  /  [p(T) p(X | T) g_R(new) / #nonroot(T)]``

   where ``p`` is the closed-form prior (Eqs. 4.23, 4.25), ``g_R`` the density of the
   generative process placing one point at a position of ``R`` and ``#nonroot`` the number
   of subtrees to choose from. The truncation to ``t < t_v`` has the same normaliser in
   both directions. For a single leaf ``p(T) = p(R) g_R(position)`` (exchangeability), so
   the prior terms cancel and only the likelihood ratio (and the #nonroot ratio) remain:
   the thesis's "prior as proposal" acceptance. For a subtree with more than one leaf
   the later leaves' factors depend on the position and the prior terms do **not**
   cancel (digest §3.8, errata item 14): the ratio is
   :func:`custom_ops.pydt.sweep.mh_log_ratio`.
2. **Slice sampling of every divergence time** (Neal 2003, stepping out and shrinkage)
   in ``l = log(1 - t)`` between its parent's and its children's times, with the
   Jacobian ``dt/dl``: the density of the joint (Op) is in ``t``.

3. **Non-centred hyperparameters** (``noncentred=("c", "theta", "alpha", "precision")``,
   the factory's choice): each named hyperparameter is slice-sampled on its unconstrained scale with
   the standardised gaps ``w_v = c H_{m(v)-1}(theta, alpha) (u_v - u_parent)``,
   ``u = -log(1 - t)``, held fixed, so every divergence time moves with it
   (:mod:`custom_ops.pydt.noncentred`). The target is the model's joint log density at
   the moved times plus ``log |dt/dw|``; the ``w`` are ``Exponential(1)`` a priori whatever
   the hyperparameters, so this is a Gibbs update in the coordinates ``(phi, w,
   structure)``. It complements the centred updates (NUTS on the hyperparameters with
   the times fixed, the slice sampler on the times with them fixed), which alone mix
   slowly when few data pin the times: ``c`` and the scale of ``u`` trade off.
   A name on which the data's variance ``sigma2`` depends (the model's ``precision``)
   is moved the same way with every ``sigma2 (1 - t_v)`` held fixed instead (all times
   shifted in ``log(1 - t)``, :func:`custom_ops.pydt.noncentred.variance_shifted_times`):
   every edge variance below the root is then unchanged, the direction along which
   many data leave ``sigma2`` and the times trading off.

4. **Branch-point moves** (``branch_moves``, default ``n``): collapse a non-root
   internal node into its parent, or expand a node of ``>= 3`` children by moving a
   subset of them under a new node, each accepted by its exact
   Metropolis-Hastings-Green ratio (:mod:`custom_ops.pydt.branch`, where the ratio is
   derived). Detach-and-reattach changes the number of branch points only one subtree
   at a time, through trees of low density; these moves change it in one step.

5. **Centred hyperparameters**: every hyperparameter the step is given as a variable
   besides the tree (the factory gives it ``c``, ``theta``, ``alpha`` and the
   precision) is slice-sampled on its unconstrained scale (``log c``, ``logit alpha``:
   PyMC's transforms, whose ``log |d phi / dx|`` is part of the target) with the tree,
   times included, fixed: the same slice sampler as item 3 with the times left where
   they are. With a Gamma prior the conditional of ``log c`` is log-concave (``c``
   enters the tree's prior as ``c^I exp(-c S)``), so the sampler cannot run off to huge
   ``c`` as NUTS's leapfrog steps did between tree moves that change ``S`` and ``I``.
   Hyperparameters given to no step of this kind are left to the factory's other hints
   (NUTS, slice); internal locations stay integrated out.

6. **Ridge rounds** (``ridge_rounds``; ``ppzoo fit pydt`` asks for 3): after item 5,
   that many rounds of ``ridge_branch_moves`` branch-point moves (item 4; default
   ``branch_moves``) followed by the centred update of the tree's ``c``, ``theta`` and
   ``alpha`` (item 5). The number of branch points follows theta (the tree pins theta, and theta the
   count: posterior correlation -0.8 on iris), and each of the two moves takes only a
   short step along that ridge with the other held fixed; alternating them several
   times per detach-reattach sweep, the costly part, walks the ridge for a fraction of
   a sweep's time. Each round is a composition of moves that leave the (power)
   posterior invariant, repeated a fixed number of times, so the sweep is too. With
   the times fixed the likelihood does not depend on ``c``, ``theta`` or ``alpha``, so
   their centred update evaluates the tree's prior alone.

``sweeps`` (default 1) repeats items 1-6 that many times per call: the factory's
``thin``, so a recorded draw is several sweeps.

**Where each runs.** Every slice update (the times, the non-centred and centred
hyperparameters) is :func:`custom_ops.slice.slice_sample`, compiled or, for a density
that is a compiled PyTensor graph, its Python function. When the tree's ``c``, ``theta``,
``alpha`` among the step's variables have Gamma priors on PyMC's log transform or a Beta
prior on its log-odds transform, with constant parameters (the factory's model;
:meth:`PYDTTreeStep.compiled_hyper`), a sweep is items 1-2 (one Numba call), items 3
and the precision's centred update (Python, the model's compiled hyperprior density
plus the Numba recursion), then items 4, 5 for ``c``, ``theta``, ``alpha`` and 6 in one
Numba call (:func:`custom_ops.pydt.hyper.pydt_branch_hyper`, the step's
:attr:`~PYDTTreeStep.hyper_kernel`): the branch-point moves come after the non-centred
updates instead of before them, a different order of moves that each keep the (power)
posterior. Otherwise items 3-6 run in the order above, the centred and ridge updates in
Python.

**Tempering** (:class:`~inference.gibbs.ZooGibbsStep`, Notes). At inverse temperature
``beta`` the step samples ``p(phi) p(T | c, theta, alpha) p(X | T, sigma2)^beta``, where
``p(X | T, sigma2)`` is the Gaussian likelihood of the leaves with the internal locations
integrated out (the model's ``datalogp``; the tree's own density is prior). Every move
uses it so: the detach-and-reattach and branch-point ratios are ``Δ log prior + beta Δ
log likelihood`` plus the proposal terms (their proposals, the generative process and
the prior's own edge factor, do not look at the data), the slice samplers of the times
and of the (non-)centred hyperparameters target ``log prior + beta log likelihood`` (plus
their Jacobians), and the greedy start keeps the tree of higher tempered density. The
cached messages live inside one Numba call (rebuilt from the tree at every call), so a
replica shares nothing mutable with another.

:class:`PYDTTreeStep` runs the sweep as one Numba call
(:func:`custom_ops.pydt.sweep.pydt_sweep`) that keeps every node's upward message and
density terms cached and updates only the root paths a move or a new time touches:
O(depth x D) per proposal instead of the O(n D) recursion (the tests run the same moves
written in Python on the full recursion beside it). The kernels are class attributes
(:attr:`PYDTTreeStep.sweep_kernel`, :attr:`PYDTTreeStep.branch_kernel`) and the
non-centred change of the times a method (:meth:`PYDTTreeStep.moved_times`), so the
tests' planted-bug twins are subclasses.
"""

from __future__ import annotations

import math

import numpy as np
import pytensor.tensor as pt
from pymc.logprob.transforms import LogOddsTransform, LogTransform
from pytensor.graph.basic import Constant
from pytensor.graph.traversal import ancestors, graph_inputs
from pytensor.tensor.random.basic import BetaRV, GammaRV

from custom_ops.pydt.branch import pydt_branch_moves
from custom_ops.pydt.hyper import (
    BETA_LOGIT,
    GAMMA_LOG,
    HYPER_SLICE,
    CentredHyper,
    RidgePlan,
    pydt_branch_hyper,
)
from custom_ops.pydt.messages import PYDTParameters
from custom_ops.pydt.noncentred import noncentred_times, variance_shifted_times
from custom_ops.pydt.ops import pydt_forward
from custom_ops.pydt.sweep import pydt_sweep, sweep_inputs_valid
from custom_ops.slice import slice_sample_python
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.distributions.pydt import DiffusionTreeGaussianRV, PYDiffusionTreeRV
from pp_models.pydt.greedy import greedy
from pp_models.trees import DETACHED, UNUSED_SLOT, DiffusionTree
from pp_models.validation import check_int

__all__ = ["PYDTTreeStep"]


def _tempered(log_prior, log_lik, beta):
    """``log_prior + beta log_lik``; ``-inf`` where the likelihood is zero (or NaN), at
    every beta (``0 * -inf`` would be NaN)."""
    if not log_lik > -math.inf:
        return -math.inf
    return log_prior + beta * log_lik


def _log_post(tree, X, c, theta, alpha, sigma2, beta=1.0):
    """log p(T) + beta log p(X | T): the (power) posterior of the tree, unnormalised."""
    lp, ll = pydt_forward(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2)
    return _tempered(lp, ll, beta)


@register_step
class PYDTTreeStep(ZooGibbsStep):
    """Detach-and-reattach moves and slice-sampled divergence times for a
    :class:`~pp_models.distributions.PYDiffusionTree` (module docstring).

    Parameters
    ----------
    vars : list
        The tree random variable, optionally followed by scalar hyperparameters (its
        ``c``, ``theta``, ``alpha`` or a free variable its data's variance depends on)
        that the step then owns and slice-samples with the tree fixed (module
        docstring, item 5).
    model : pymc.Model, optional
    rng : seed or Generator, optional
    moves : int, optional
        Detach-reattach proposals per call; default ``2 n - 2`` (the number of subtrees
        of a binary tree, so a sweep moves every subtree once on average). A count that
        depends on the current tree (its number of subtrees) would not leave the
        posterior invariant.
    slice_times : bool
        Slice-sample every divergence time after the moves (default True).
    greedy_start : bool
        When the chain tunes (``tune > 0``), the first call also builds a tree by the
        greedy sequential procedure (:func:`pp_models.pydt.greedy.greedy`, rows in a
        random order from the chain's generator) and keeps it if its log posterior is
        higher than the incoming tree's. Tuning draws are discarded, so the chain's
        invariance is untouched.
    binary_start : bool
        Build that tree binary (``theta = alpha = 0`` in the build, the DDT's greedy;
        default True) and let the sampler merge branch points into multifurcations.
        Built at the initial ``theta``, ``alpha`` instead (``theta = 4``, ``alpha = 0.5``
        for the thesis's priors) the greedy tree has far fewer branch points than the
        posterior, and the chain needs hundreds of sweeps to grow them; from the binary
        build it gets there within a few (docs/families/pydt.md).
    noncentred : sequence of str, optional
        Names of the tree's hyperparameters (its ``c``, ``theta``, ``alpha``, or a
        scalar free variable its data's variance depends on; free random variables) to
        slice-sample after the sweep with the standardised gaps (or ``sigma2 (1 - t)``)
        fixed (module docstring, item 3); the step then updates them too (jointly with
        the times), besides whatever step owns them. Default: none.
    branch_moves : int, optional
        Collapse-or-expand proposals per call (module docstring, item 4), after the
        detach-reattach moves and the time updates; default ``n`` (a fixed count, as for
        ``moves``); 0 switches them off. They do nothing in the DDT (binary trees).
    ridge_rounds : int
        Rounds of branch-point moves and centred updates of the tree's c, theta, alpha
        per sweep (module docstring, item 6); default 0.
    ridge_branch_moves : int, optional
        Branch-point proposals per ridge round; default ``branch_moves``.
    sweeps : int
        Sweeps (items 1-6) per call, i.e. per recorded draw; default 1.
    """

    name = "pydt_tree"
    can_temper = True
    chain_state_attributes = ("_start_pending",)
    distributions = (PYDiffusionTreeRV,)
    stats_dtypes_shapes = {
        "accepted": (np.int64, []),
        "n_internal": (np.int64, []),
        "root_time": (np.float64, []),
        "branch_accepted": (np.int64, []),
    }
    #: the detach-reattach and slice-sampling sweep (items 1-2 of the module docstring)
    sweep_kernel = staticmethod(pydt_sweep)
    #: the branch-point moves (item 4)
    branch_kernel = staticmethod(pydt_branch_moves)
    #: the branch-point moves, the centred updates of c, theta, alpha and the ridge
    #: rounds in one call (items 4-6), when the priors are compiled ones
    #: (:meth:`compiled_hyper`)
    hyper_kernel = staticmethod(pydt_branch_hyper)

    def __init__(self, vars, *, model=None, rng=None, blocked=True, moves=None,
                 slice_times=True, greedy_start=True, noncentred=(), binary_start=True,
                 branch_moves=None, ridge_rounds=0, ridge_branch_moves=None, sweeps=1):
        if moves is not None:
            moves = check_int(moves, "moves", minimum=0)
        if branch_moves is not None:
            branch_moves = check_int(branch_moves, "branch_moves", minimum=0)
        ridge_rounds = check_int(ridge_rounds, "ridge_rounds", minimum=0)
        sweeps = check_int(sweeps, "sweeps", minimum=1)
        if ridge_branch_moves is not None:
            ridge_branch_moves = check_int(ridge_branch_moves, "ridge_branch_moves",
                                           minimum=0)
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        self.greedy_start = bool(greedy_start)
        self.binary_start = bool(binary_start)
        self._start_pending = False
        model = self.model
        trees = [v for v in self.vars
                 if isinstance(model.values_to_rvs[v].owner.op, PYDiffusionTreeRV)]
        if len(trees) != 1:
            raise ValueError(f"vars: PYDTTreeStep updates one PYDiffusionTree, got "
                             f"{self.var_names}")
        tree_rv = model.values_to_rvs[trees[0]]
        centred = [model.values_to_rvs[v].name for v in self.vars if v is not trees[0]]
        c, theta, alpha, n = tree_rv.owner.op.dist_params(tree_rv.owner)
        data = [rv for rv in model.basic_RVs
                if isinstance(rv.owner.op, DiffusionTreeGaussianRV)
                and rv.owner.op.dist_params(rv.owner)[0] is tree_rv]
        if len(data) > 1:
            raise ValueError(f"vars: {tree_rv.name} has more than one data variable")
        outputs = [c, theta, alpha]
        if data:
            _tree, sigma2, _dim = data[0].owner.op.dist_params(data[0].owner)
            outputs += [sigma2, data[0]]
        self._has_data = bool(data)
        self._inputs_fn = self.compile_point_fn(outputs)
        self._n = int(np.asarray(n.eval()).reshape(-1)[0]) if hasattr(n, "eval") else int(n)
        self._value_name = trees[0].name
        self.moves = moves
        self.branch_moves = self._n if branch_moves is None else branch_moves
        self.ridge_rounds = ridge_rounds
        self.sweeps = sweeps
        self.ridge_branch_moves = (self.branch_moves if ridge_branch_moves is None
                                   else ridge_branch_moves)
        self.slice_times = bool(slice_times)
        self._init_hyper(noncentred, centred, tree_rv, data[0] if data else None,
                         (c, theta, alpha) + ((sigma2,) if data else ()))

    def _hyper_kind(self, name, tree_rv, params, argument):
        """``"gaps"`` for the tree's c, theta, alpha (noncentred_times); ``"variance"``
        for what sigma2 is a function of (variance_shifted_times)."""
        model = self.model
        rv = model.named_vars.get(name)
        if rv is None or rv not in model.free_RVs:
            raise ValueError(f"{argument}: {name!r} is not a free random variable")
        if any(rv is p for p in params[:3]):
            kind = "gaps"
        elif len(params) > 3 and rv in set(ancestors([params[3]])):
            kind = "variance"
        else:
            raise ValueError(f"{argument}: {name!r} is not c, theta or alpha of "
                             f"{tree_rv.name} nor a parameter of its data's variance")
        if model.rvs_to_values[rv].type.ndim != 0:
            raise ValueError(f"{argument}: {name!r} must be a scalar")
        return kind

    def _init_hyper(self, noncentred, centred, tree_rv, data_rv, params):
        if isinstance(noncentred, str) or not all(isinstance(x, str) for x in noncentred):
            raise TypeError(f"noncentred: a sequence of variable names, got {noncentred!r}")
        model = self.model
        names = list(dict.fromkeys(noncentred))
        self._noncentred_kind = {}
        for name in names:
            kind = self._hyper_kind(name, tree_rv, params, "noncentred")
            self._noncentred_kind[model.rvs_to_values[model[name]].name] = kind
        centred_kind = {model.rvs_to_values[model[name]].name:
                        self._hyper_kind(name, tree_rv, params, "vars") for name in centred}
        self._noncentred_values = list(self._noncentred_kind)
        self._centred_values = list(centred_kind)
        # the ridge rounds' hyperparameters (item 6): the tree's own c, theta, alpha
        self._ridge_values = [v for v, kind in centred_kind.items() if kind == "gaps"]
        self._noncentred_fast = False
        self._compiled = None
        names = list(dict.fromkeys([*names, *centred]))
        if not names:
            self._compiled = self.compiled_hyper(params)
            return
        rvs = [model[name] for name in names]
        # Fast path when the hyperparameters enter nothing but the tree's density and its
        # data's: their own prior terms (unconstrained scale, with Jacobians) by
        # PyTensor, the tree's prior and likelihood by the Numba recursion. Otherwise the
        # model's whole joint.
        self._noncentred_fast = all(
            all(d is tree_rv or d is data_rv for d in deps) and not pots
            for deps, pots in (terms_depending_on(model, rv) for rv in rvs))
        if self._noncentred_fast:
            outputs = model.replace_rvs_by_values(list(params))
            if len(outputs) == 3:
                outputs.append(pt.constant(1.0, dtype="float64"))
            outputs.append(self.hyperprior_logp(rvs))
            # only the values it reads as inputs: PyTensor validates every input per call
            used = set(ancestors(outputs))
            inputs = [v for v in model.value_vars if v in used]
            self._hyper_input_names = [v.name for v in inputs]
            self._hyper_input_dtypes = [np.dtype(v.dtype) for v in inputs]
            self._hyper_logp_fn = model.compile_fn(outputs, inputs=inputs,
                                                   on_unused_input="ignore", point_fn=False)
            # inputs are converted to their exact types below: PyTensor's per-call
            # validation was half of a slice update's time
            self._hyper_logp_fn.trust_input = True
            self._compiled = self.compiled_hyper(params)
        else:
            # prior and likelihood apart, so the target can raise the likelihood to beta
            self._logp_fn = model.compile_fn([model.varlogp, model.datalogp],
                                             inputs=model.value_vars,
                                             on_unused_input="ignore")

    def compiled_hyper(self, params):
        """The centred hyperparameters (the tree's c, theta, alpha among the step's
        variables) as :class:`custom_ops.pydt.hyper.CentredHyper` and the value names
        of the updated ones, when the compiled update can take them over (items 4-6 in
        one call): each has a Gamma prior on PyMC's log transform or a Beta prior on its
        log-odds transform, with constant parameters, and enters no other term than the
        tree (checked by the caller: ``_noncentred_fast``). ``None`` otherwise: the
        updates then run in Python on the model's compiled log density."""
        model = self.model
        kind = np.zeros(3, dtype=np.int64)
        a = np.ones(3)
        b = np.ones(3)
        names = [None, None, None]
        value_vars = {v.name: v for v in model.value_vars}
        for value_name in self._ridge_values:
            rv = model.values_to_rvs[value_vars[value_name]]
            k = next(j for j in range(3) if rv is params[j])
            op = rv.owner.op
            transform = model.rvs_to_transforms.get(rv)
            dist = op.dist_params(rv.owner)
            if not all(isinstance(v, Constant) for v in graph_inputs(dist)):
                return None
            values = [float(np.asarray(p.eval())) for p in dist]
            if isinstance(op, GammaRV) and isinstance(transform, LogTransform):
                # PyTensor's Gamma takes (shape, scale)
                kind[k], a[k], b[k] = GAMMA_LOG, values[0], 1.0 / values[1]
            elif isinstance(op, BetaRV) and isinstance(transform, LogOddsTransform):
                kind[k], a[k], b[k] = BETA_LOGIT, values[0], values[1]
            else:
                return None
            names[k] = value_name
        update = np.array([name is not None for name in names])
        return CentredHyper(kind, a, b, update, np.zeros(3)), names

    def hyperprior_logp(self, rvs):
        """The hyperparameters' prior on their unconstrained scale: PyMC's log densities
        of ``rvs`` plus the transforms' ``log |d phi / dx|`` (a slice sampler in ``x =
        log c`` targets ``p(c) c``)."""
        return self.model.logp(vars=rvs, jacobian=True)

    def setup_chain(self, rng, tune, draws):
        super().setup_chain(rng, tune, draws)
        self._start_pending = self.greedy_start and tune > 0

    def _values(self, point):
        vals = self._inputs_fn(point)
        c, theta, alpha = (float(v) for v in vals[:3])
        if self._has_data:
            sigma2 = float(vals[3])
            X = np.ascontiguousarray(vals[4], dtype=np.float64)
        else:
            sigma2 = 1.0
            X = np.zeros((self._n, 0))
        return X, c, theta, alpha, sigma2

    def step(self, point):
        accepted = branch_accepted = 0
        for _ in range(self.sweeps):
            point, acc, bacc = self.sweep(point)
            accepted += acc
            branch_accepted += bacc
        tree = DiffusionTree.from_packed(point[self._value_name], validate=False)
        stats = {"accepted": accepted, "n_internal": tree.n_internal,
                 "root_time": tree.root_time, "branch_accepted": branch_accepted}
        return point, [stats]

    def sweep(self, point):
        """One sweep (items 1-6 of the module docstring): the new point and the numbers
        of detach-reattach and branch-point moves accepted."""
        packed = np.asarray(point[self._value_name])
        tree = DiffusionTree.from_packed(packed, validate=False)
        X, c, theta, alpha, sigma2 = self._values(point)
        beta = float(self.beta)
        rng = self.rng
        if self._start_pending:
            self._start_pending = False
            current = _log_post(tree, X, c, theta, alpha, sigma2, beta)
            if X.shape[1] > 0:
                order = rng.permutation(tree.n_leaves)
                if self.binary_start:
                    built = greedy(X, c=c, theta=0.0, alpha=0.0, sigma2=sigma2, order=order)
                else:
                    built = greedy(X, c=c, theta=theta, alpha=alpha, sigma2=sigma2,
                                   order=order)
                log_joint = _log_post(built.tree, X, c, theta, alpha, sigma2, beta)
                if log_joint > current:
                    tree, current = built.tree, log_joint
        # the whole sweep in one Numba call with cached messages (custom_ops.pydt.sweep);
        # (the tests run the same moves written in Python on the full recursion beside it)
        if not sweep_inputs_valid(tree.parent, tree.log1m_t, X, c, theta, alpha, sigma2):
            # a zero-density state: every proposal would be rejected
            return point, 0, 0
        params = PYDTParameters(c, theta, alpha, sigma2, beta)
        accepted = self.sweep_kernel(
            rng, tree.parent, tree.log1m_t, X, params,
            -1 if self.moves is None else int(self.moves), self.slice_times, False,
        )[0]
        if self._compiled is not None:
            return self._compiled_sweep(point, packed, tree, accepted)
        branch_accepted = 0
        if self.branch_moves > 0:
            branch_accepted = self.branch_kernel(rng, tree.parent, tree.log1m_t, X, params,
                                                 self.branch_moves, False)[0]
        new = tree.to_packed().astype(packed.dtype)
        point = self.updated(point, **{self._value_name: new})
        for value_name in self._noncentred_values:
            point = self._slice_hyper(point, value_name, self._noncentred_kind[value_name])
        for value_name in self._centred_values:
            point = self._slice_hyper(point, value_name, "centred")
        for _ in range(self.ridge_rounds):
            point, accepted_in_round = self.ridge_round(point)
            branch_accepted += accepted_in_round
        return point, int(accepted), int(branch_accepted)

    def _compiled_sweep(self, point, packed, tree, accepted):
        """The rest of a sweep after the detach-reattach moves and the times, with the
        compiled update of c, theta, alpha: the non-centred updates and the centred
        update of the precision (Python, the model's compiled log density), then the
        branch-point moves (item 4), the centred update of c, theta, alpha (item 5) and
        the ridge rounds (item 6) in one call of :attr:`hyper_kernel`. The order differs
        from :meth:`sweep`'s Python path; each piece leaves the (power) posterior
        invariant, so the composition does."""
        point = self.updated(point, **{self._value_name: tree.to_packed().astype(packed.dtype)})
        for value_name in self._noncentred_values:
            point = self._slice_hyper(point, value_name, self._noncentred_kind[value_name])
        for value_name in self._centred_values:
            if value_name not in self._ridge_values:
                point = self._slice_hyper(point, value_name, "centred")
        template, names = self._compiled
        rounds = self.ridge_rounds if template.update.any() else 0
        plan = RidgePlan(int(self.branch_moves), int(rounds), int(self.ridge_branch_moves))
        if plan.branch_moves == 0 and not template.update.any():
            return point, int(accepted), 0
        packed = np.asarray(point[self._value_name])
        tree = DiffusionTree.from_packed(packed, validate=False)
        X, c, theta, alpha, sigma2 = self._values(point)
        x = np.array([0.0 if name is None else float(point[name]) for name in names])
        hyper = template._replace(x=x)
        params = PYDTParameters(c, theta, alpha, sigma2, float(self.beta))
        branch_accepted, round_accepted, _ = self.hyper_kernel(
            self.rng, tree.parent, tree.log1m_t, X, params, plan, hyper, False)
        new = {self._value_name: tree.to_packed().astype(packed.dtype)}
        for k, name in enumerate(names):
            if name is not None:
                new[name] = np.asarray(x[k], dtype=np.asarray(point[name]).dtype)
        point = self.updated(point, **new)
        return point, int(accepted), int(branch_accepted + round_accepted)

    def ridge_round(self, point):
        """One round along the ridge (module docstring, item 6): ``ridge_branch_moves``
        branch-point moves at the point's hyperparameters, then the centred slice update
        of the tree's c, theta and alpha given the new tree. Returns the new point and
        the number of branch moves accepted."""
        packed = np.asarray(point[self._value_name])
        tree = DiffusionTree.from_packed(packed, validate=False)
        X, c, theta, alpha, sigma2 = self._values(point)
        accepted = 0
        if self.ridge_branch_moves > 0:
            params = PYDTParameters(c, theta, alpha, sigma2, float(self.beta))
            accepted = self.branch_kernel(self.rng, tree.parent, tree.log1m_t, X, params,
                                          self.ridge_branch_moves, False)[0]
            point = self.updated(point, **{self._value_name:
                                           tree.to_packed().astype(packed.dtype)})
        for value_name in self._ridge_values:
            point = self._slice_hyper(point, value_name, "centred")
        return point, accepted

    def likelihood_free(self, value_name):
        """Whether ``p(X | tree, sigma2)`` is free of this hyperparameter (the tree's c,
        theta, alpha; not what sigma2 depends on), so that its centred update given the
        tree can leave the likelihood out (module docstring, item 6)."""
        return value_name in self._ridge_values

    @staticmethod
    def moved_times(parent, log1m_t, n, kind, before, after):
        """The divergence times after the hyperparameters ``(c, theta, alpha, sigma2)``
        go from ``before`` to ``after`` with the standardised gaps held fixed (``kind``
        ``"gaps"``; :func:`custom_ops.pydt.noncentred.noncentred_times`), every ``sigma2
        (1 - t)`` (``"variance"``;
        :func:`custom_ops.pydt.noncentred.variance_shifted_times`) or the times
        themselves (``"centred"``), and ``log |dt/dw|`` of that change (module
        docstring, items 3 and 5)."""
        if kind == "gaps":
            return noncentred_times(parent, log1m_t, n, tuple(before[:3]), tuple(after[:3]))
        if kind == "variance":
            return variance_shifted_times(parent, log1m_t, n, before[3], after[3])
        return log1m_t, 0.0

    def noncentred_log_density(self, point, value_name, kind=None):
        """The conditional of one hyperparameter's unconstrained value ``x`` given the
        standardised gaps and the structure of ``point``'s tree (module docstring, item
        3), or given the whole tree (``kind="centred"``, item 5), under the power
        posterior at :attr:`beta`, up to a constant: a function ``x -> (log density,
        point at x)`` whose point holds ``x`` and the tree with the times moved to keep
        the gaps. ``kind`` defaults to the hyperparameter's non-centred kind."""
        packed = point[self._value_name]
        n = self._n
        parent = np.rint(packed[:, 0]).astype(np.int64)
        l0 = np.ascontiguousarray(packed[n:, 1], dtype=np.float64)
        X, c0, theta0, alpha0, sigma2_0 = self._values(point)
        beta = float(self.beta)
        dtype = np.asarray(point[value_name]).dtype
        fast = self._noncentred_fast
        if kind is None:
            kind = self._noncentred_kind[value_name]
        if fast and kind == "centred" and self.likelihood_free(value_name):
            # with the times fixed the likelihood is a constant of this conditional (no
            # columns: zero)
            X = np.zeros((n, 0))

        def f(x):
            trial = dict(point)
            trial[value_name] = np.asarray(x, dtype=dtype)
            if fast:
                c1, theta1, alpha1, sigma2_1, log_hyper = (
                    float(v) for v in self._hyper_logp_fn(
                        *[np.asarray(trial[name], dtype=dt) for name, dt in
                          zip(self._hyper_input_names, self._hyper_input_dtypes,
                              strict=True)]))
            else:
                _X, c1, theta1, alpha1, sigma2_1 = self._values(trial)
            l1, log_jac = self.moved_times(parent, l0, n, kind, (c0, theta0, alpha0, sigma2_0),
                                           (c1, theta1, alpha1, sigma2_1))
            if not np.isfinite(log_jac):
                return -np.inf, trial
            if l1 is not l0:
                moved = packed.copy()
                moved[n:, 1] = l1
                trial[self._value_name] = moved
            if fast:
                lp, ll = pydt_forward(parent, l1, X, c1, theta1, alpha1, sigma2_1)
            else:
                lp, ll = (float(v) for v in self._logp_fn(trial))
                log_hyper = 0.0
            value = log_hyper + _tempered(lp, ll, beta) + log_jac
            return (value if not np.isnan(value) else -np.inf), trial

        return f

    def _slice_hyper(self, point, value_name, kind):
        """Slice-sample one hyperparameter's unconstrained value with the standardised
        gaps, the variances below the root or the times fixed (``kind``; module
        docstring, items 3 and 5): :func:`custom_ops.slice.slice_sample` run by Python
        on the model's compiled log density, with the compiled update's settings
        (:data:`custom_ops.pydt.hyper.HYPER_SLICE`)."""
        f = self.noncentred_log_density(point, value_name, kind)
        last = [point]

        def log_density(x, _target):
            value, last[0] = f(x)
            return value

        x0 = float(point[value_name])
        f0 = log_density(x0, None)
        x1, _ = slice_sample_python(self.rng, log_density, None, x0, f0, -math.inf,
                                    math.inf, HYPER_SLICE)
        # the sampler's last evaluation was at x1 (custom_ops.slice)
        return point if x1 == x0 else last[0]


# the codes the step relies on (kept visible next to the import)
assert DETACHED != UNUSED_SLOT
