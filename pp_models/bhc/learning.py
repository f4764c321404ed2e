"""Hyperparameter learning for BHC (Heller 2007 §3.4.1): :func:`learn` alternates tree
building and MAP (default; priors of :mod:`pp_models.bhc.priors`) or type-II
maximum-likelihood optimisation of the hyperparameters."""

from __future__ import annotations

import collections
import dataclasses
import math
import warnings

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy import optimize

from custom_ops import conjugate as cj
from pp_models.bhc.defaults import LEARNABLE, check_alpha, check_data, resolve_hyper
from pp_models.bhc.greedy import greedy
from pp_models.bhc.model import _check_objective, _objective
from pp_models.bhc.priors import resolve_priors
from pp_models.bhc.randomized import embhc, randomized
from pp_models.bhc.result import BHCResult, evaluate
from pp_models.validation import check_int, check_real, rng_from_seed

__all__ = ["TREE_BUILDERS", "learn"]

#: The tree estimators by algorithm name (``learn``'s ``method``).
TREE_BUILDERS = {"greedy": greedy, "randomized": randomized, "embhc": embhc}
_UNSET = object()
#: Box of the optimiser on the log-scale factors θ of parameters without a prior
#: (``priors=False`` or ``{name: None}``): such a value stays within a factor e^±12 of
#: its initial value. Parameters with a prior are unbounded.
THETA_BOUND = 12.0


class _EvidenceFunction:
    """The objective plus the log prior of the log-values, and its gradient in the
    log-scale factors θ of the learned hyperparameters (value = base exp(θ);
    nu0 = d - 1 + (base - d + 1) exp(θ)). The prior of α is on log α = log α_base + θ, the
    others' on the scale factor's log θ (:mod:`pp_models.bhc.priors`).

    Everything that depends on the data is a shared variable: the data ``X``, the tree's
    merges, the initial α and the hyperparameters' base values (:meth:`set_data`). The
    graphs then depend only on the likelihood, the number of columns, the learned names,
    the objective and the priors, so :func:`_evidence_function` reuses one compiled
    instance for every ``learn`` call of that structure instead of compiling three new
    functions per call (the data as constants made every graph new to PyTensor's cache).
    A cached instance holds one data set at a time: concurrent ``learn`` calls of the same
    structure from several threads are not supported.
    """

    def __init__(self, X, likelihood, alpha, hyper_dict, names, merges, objective, priors):
        X = np.asarray(X, dtype=np.float64)
        d = X.shape[1]
        self.names = names
        hyper_names = cj.FAMILIES[likelihood].hyper_names
        self.X = pytensor.shared(X, name="X")
        self.merges = pytensor.shared(np.asarray(merges, dtype=np.int64), name="merges")
        self.alpha = pytensor.shared(np.float64(alpha), name="alpha_base")
        self.base = {
            k: pytensor.shared(np.asarray(hyper_dict[k], dtype=np.float64), name=f"{k}_base")
            for k in hyper_names
        }
        theta = pt.dvector("theta")
        vals = {"alpha": self.alpha, **self.base}
        sym = {}
        for pos, name in enumerate(names):
            f = pt.exp(theta[pos])
            if name == "nu0":
                sym[name] = (d - 1.0) + (vals[name] - (d - 1.0)) * f
            else:
                sym[name] = vals[name] * f
        args = {k: sym.get(k, vals[k]) for k in hyper_names}
        lp = _objective(objective, self.X, self.merges, sym.get("alpha", self.alpha),
                        likelihood, args)
        log_prior = pt.constant(0.0)
        for pos, name in enumerate(names):
            if priors[name] is not None:
                u = theta[pos] + (pt.log(self.alpha) if name == "alpha" else 0.0)
                log_prior = log_prior + priors[name].log_density_of_log(u)
        total = lp + log_prior
        self.fn = pytensor.function([theta], [total, pytensor.grad(total, theta)])
        self.parts = pytensor.function([theta], [lp, log_prior])
        self.exprs = pytensor.function([theta], [sym[k] for k in names])

    def set_data(self, X, alpha, hyper_dict, merges):
        """Point the compiled functions at new data of the same number of columns."""
        self.X.set_value(np.asarray(X, dtype=np.float64))
        self.merges.set_value(np.asarray(merges, dtype=np.int64))
        self.alpha.set_value(np.float64(alpha))
        for k, shared in self.base.items():
            shared.set_value(np.asarray(hyper_dict[k], dtype=np.float64))

    def values(self, theta):
        return dict(zip(self.names, self.exprs(theta), strict=True))


#: Compiled objectives by structure (likelihood, d, names, objective, priors), most
#: recently used last; a few suffice (a process fits a handful of structures).
_EVIDENCE_FUNCTIONS: collections.OrderedDict = collections.OrderedDict()
_EVIDENCE_FUNCTIONS_MAX = 16


def _evidence_function(X, likelihood, alpha, hyper_dict, names, merges, objective, priors):
    """An :class:`_EvidenceFunction` for these data: a cached one of the same structure
    with its shared variables set to them, else a newly compiled one (then cached)."""
    key = (likelihood, X.shape[1], tuple(names), objective,
           tuple((k, priors[k]) for k in names))
    evfn = _EVIDENCE_FUNCTIONS.pop(key, None)
    if evfn is None:
        evfn = _EvidenceFunction(X, likelihood, alpha, hyper_dict, names, merges, objective,
                                 priors)
    else:
        evfn.set_data(X, alpha, hyper_dict, merges)
    _EVIDENCE_FUNCTIONS[key] = evfn
    while len(_EVIDENCE_FUNCTIONS) > _EVIDENCE_FUNCTIONS_MAX:
        _EVIDENCE_FUNCTIONS.popitem(last=False)
    return evfn


def learn(
    X,
    *,
    likelihood="bernoulli",
    alpha=1.0,
    hyper=None,
    params=None,
    method="greedy",
    max_iter=10,
    tol=1e-3,
    random_seed=None,
    objective="lower_bound",
    priors=None,
    learn=_UNSET,
    **builder_kwargs,
) -> BHCResult:
    """Alternate tree building and hyperparameter optimisation (Heller 2007 §3.4.1).

    E-like step: build the tree with the estimator ``method`` (``"greedy"``,
    ``"randomized"`` or ``"embhc"``; ``builder_kwargs`` go to it) at the current
    hyperparameters.
    M-like step: for that tree, maximise the objective plus the log prior of the learned
    quantities' logs (MAP; L-BFGS on log-scale factors, gradients from the BHC Op's
    pullback). Stops when the optimised value improves by less than ``tol`` (or after
    ``max_iter`` rounds) and returns the best tree found, evaluated at its optimised
    hyperparameters, with ``history`` (per round: the tree's evidence log p(D | T),
    ``optimised_objective`` (objective + log prior, the value maximised),
    ``log_prior``, the hyperparameters, and ``at_bound``).

    ``priors`` (default ``None``: :data:`~pp_models.bhc.priors.DEFAULT_PRIORS`, α ~
    LogNormal(0, 1.5), each hyperparameter's scale factor on its ``hyper`` value ~
    LogNormal(0, 1), kappa0's LogNormal(0, 1.5)): a dict ``{name: bhc.LogNormal(mu,
    sigma) | bhc.Gamma(shape, rate) | None}`` overrides the defaults per key (``None``:
    no prior on that key). ``priors=False`` drops every prior: type-II maximum likelihood,
    Heller's scheme. A prior is on log α and on the log of the scale factor, so the
    optimiser is unconstrained in those. Without a prior a value can run away (on small
    n the bound's maximiser in α can be ≤ 0.001; a Beta ``a`` or ``b`` goes to 0 on a
    constant column), so unprioritised keys are boxed to a factor e^±12 from the initial
    value; ``at_bound`` names those whose optimum sat on the box, and a
    ``RuntimeWarning`` names them in the returned values: the objective was still
    improving, so the value is not a maximiser (add a prior, fix the parameter with
    ``params=`` or change its initial value).

    ``objective="lower_bound"`` (default) maximises Corollary 3.1's lower bound on the
    DP-mixture evidence, log[d_root Γ(α)/Γ(n+α)] + log p(D | T); ``"evidence"``
    maximises log p(D | T), Heller's literal choice. For the conjugate hyperparameters
    the two are identical; in α, p(D | T)'s optimum is set by the tree's shape (on
    greedy trees of digits it sat at α ≈ n/e whatever the subset) and raising α there
    lowered dendrogram purity, while the bound is the DPM's own evidence bounded below.

    ``params``: names among ``"alpha"`` and the likelihood's positive hyperparameters
    (bernoulli ``a, b``; multinomial ``concentration``; gaussian ``kappa0, nu0, S0``;
    diag_gaussian ``kappa0, a0, b0``). Each is learned as one scalar factor on its
    initial value (the relative shape of per-dimension vectors is kept). Default: all.
    ``learn=`` is the deprecated name of ``params``.
    """
    if learn is not _UNSET:
        warnings.warn(
            "bhc.learn(learn=...) is deprecated; use params=...", DeprecationWarning, stacklevel=2
        )
        if params is not None:
            raise TypeError("learn: give params only (learn is its deprecated name)")
        params = learn
    if method not in TREE_BUILDERS:
        raise ValueError(f"method: unknown {method!r}; choose one of {tuple(TREE_BUILDERS)}")
    X = check_data(X, likelihood)
    alpha = check_alpha(alpha)
    _check_objective(objective)
    _hyper_tuple, hyper_dict = resolve_hyper(X, likelihood, hyper)
    allowed = LEARNABLE[likelihood]
    names = tuple(allowed if params is None else params)
    bad = [k for k in names if k not in allowed]
    if bad or not names:
        raise ValueError(f"params: must be a non-empty subset of {allowed}, got {params!r}")
    priors = resolve_priors(priors, names)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_real(tol, "tol", minimum=0.0)
    rng = rng_from_seed(random_seed)

    cur_alpha, cur_hyper = alpha, dict(hyper_dict)
    best, history, evfn, prev = None, [], None, -np.inf
    for it in range(int(max_iter)):
        seed = {} if method == "greedy" else {"random_seed": rng}
        result = TREE_BUILDERS[method](
            X, likelihood=likelihood, alpha=cur_alpha, hyper=cur_hyper, **seed, **builder_kwargs
        )
        if evfn is None:
            evfn = _evidence_function(
                X, likelihood, alpha, hyper_dict, names, result.merges, objective, priors
            )
        evfn.merges.set_value(result.merges)
        # θ is relative to the initial values; warm start at the current ones
        theta0 = _theta_of(names, cur_alpha, cur_hyper, alpha, hyper_dict, X.shape[1])
        res = optimize.minimize(
            lambda th, f=evfn.fn: tuple(-np.asarray(v, dtype=float) for v in f(th)),
            theta0,
            jac=True,
            method="L-BFGS-B",
            bounds=[
                (-THETA_BOUND, THETA_BOUND) if priors[k] is None else (None, None)
                for k in names
            ],
        )
        at_bound = tuple(k for k, t in zip(names, res.x, strict=True)
                         if priors[k] is None and abs(t) >= THETA_BOUND * (1.0 - 1e-9))
        _objective_value, log_prior = (float(v) for v in evfn.parts(res.x))
        vals = evfn.values(res.x)
        cur_alpha = float(vals.get("alpha", cur_alpha))
        cur_hyper = dict(cur_hyper)
        for k in names:
            if k != "alpha":
                cur_hyper[k] = np.asarray(vals[k], dtype=float)
        value = float(-res.fun)
        history.append(
            {
                "iteration": it,
                "tree_log_evidence": result.log_evidence,
                "optimised_objective": value,
                "log_prior": log_prior,
                "alpha": cur_alpha,
                **{k: cur_hyper[k] for k in names if k != "alpha"},
                "at_bound": at_bound,
            }
        )
        if best is None or value > best[0]:
            best = (value, result.merges, cur_alpha, dict(cur_hyper), at_bound)
        if value - prev < tol:
            break
        prev = value
    _value, merges, best_alpha, best_hyper, best_at_bound = best
    if best_at_bound:
        shown = ", ".join(
            f"{k} = {best_alpha if k == 'alpha' else np.ravel(best_hyper[k])[0]:.3g}"
            for k in best_at_bound)
        warnings.warn(
            f"bhc.learn: {shown} on the optimiser's bound (a factor e^±{THETA_BOUND:g} "
            "from the initial value): the objective was still improving, so this is not a "
            "maximiser; give it a prior (priors=), fix it (params=) or start it elsewhere "
            "(hyper=, alpha=)",
            RuntimeWarning, stacklevel=2)
    hyper_tuple, hyper_dict = resolve_hyper(X, likelihood, best_hyper)
    final = evaluate(X, likelihood, best_alpha, hyper_tuple, hyper_dict, merges, method, 0)
    return dataclasses.replace(final, history=tuple(history))


def _theta_of(names, cur_alpha, cur_hyper, alpha0, hyper0, d):
    theta = np.zeros(len(names))
    for pos, k in enumerate(names):
        if k == "alpha":
            theta[pos] = math.log(cur_alpha / alpha0)
        elif k == "nu0":
            theta[pos] = math.log((cur_hyper[k] - (d - 1.0)) / (hyper0[k] - (d - 1.0)))
        else:
            base = np.ravel(np.asarray(hyper0[k], dtype=float))
            cur = np.ravel(np.asarray(cur_hyper[k], dtype=float))
            nz = np.flatnonzero(base)
            theta[pos] = math.log(cur[nz[0]] / base[nz[0]]) if nz.size else 0.0
    return theta

