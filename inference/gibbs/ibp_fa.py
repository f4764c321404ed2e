"""Knowles' NSFA sampler (Algorithm 1 of Knowles 2012 ch. 3) as one zoo Gibbs step.

One ``step`` runs ``sweeps`` sweeps of :func:`custom_ops.ibp_fa.nsfa.nsfa_sweep` (in one
call of :func:`custom_ops.ibp_fa.nsfa.nsfa_sweeps`, which draws the values no update reads,
the unused slots' ``X`` rows and the loadings off ``Z``, after the last sweep only): per
row, Gibbs on the shared features' ``Z_dk`` with the loading collapsed, one
Metropolis-Hastings move on the row's singleton features with their factor rows
integrated out (prior or tuned proposal, Eq. 3.10), then ``X`` jointly, then the
conjugate updates of the noise and loading precisions and of ``alpha``; then
``feature_moves`` rounds of a whole-feature birth/death proposal and a two-feature row
update (:func:`custom_ops.ibp_fa.feature_moves.feature_birth_death_moves`). The step owns
every free variable of :func:`pp_models.ibp_fa.model`'s non-parametric model: ``Z``,
``V``, ``X`` and whichever of ``alpha``, ``lambda``, ``noise_precision`` are random; the
factory names it in its step hint.

The step samples the exchangeable posterior: every label-invariant quantity (the
number of features, their sizes, ``G X``, hyperparameters) has the right law; which
slot a new feature occupies is arbitrary (the lowest unused one).

It tempers (``can_temper``): at inverse temperature ``beta`` the sweep samples
``p(theta) P(Y | G, X, tau)^beta``, every likelihood term's noise precision ``tau_d``
becoming ``beta tau_d`` and the noise's Gamma conditional ``Gamma(a + beta N_d / 2,
b + beta SS_d / 2)`` (the derivation, update by update, is in
:mod:`custom_ops.ibp_fa.nsfa`).
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt

from custom_ops.ibp_fa.feature_moves import FEATURE_MOVE_STATS, feature_birth_death_moves
from custom_ops.ibp_fa.nsfa import (
    FIXED,
    ISOTROPIC_OR_SHARED,
    PER_ELEMENT,
    FactorState,
    SweepSettings,
    nsfa_sweeps,
)
from inference.gibbs.base import ZooGibbsStep
from inference.gibbs.registry import register_step
from pp_models.validation import check_int

__all__ = ["NSFAGibbs"]


@register_step
class NSFAGibbs(ZooGibbsStep):
    """The NSFA sampler for the non-parametric model of :func:`pp_models.ibp_fa.model`.

    Parameters
    ----------
    vars : list
        ``Z``, ``V``, ``X`` and the model's random hyperparameters (``alpha``,
        ``lambda``, ``noise_precision``).
    spec, hyper, fixed, shared_lambda, isotropic_noise, birth_proposal
        Filled in by the factory's step hint (the model's sizes, its Gamma
        hyperparameters, its fixed values, its options).
    sweeps : int
        Sweeps per ``step`` call.
    feature_moves : int
        Whole-feature birth/death proposals after each sweep (0: none).

    Stats
    -----
    ``n_features`` (after the step), ``births_accepted`` and ``birth_proposals`` (of the
    singleton moves), ``capacity_rejections`` (births refused for lack of slots, the
    whole-feature births' too), ``feature_moves_accepted`` (of
    ``feature_moves_proposed``), ``row_moves`` (two-feature row updates that changed
    ``Z``).
    """

    name = "nsfa_gibbs"
    can_temper = True
    stats_dtypes_shapes = {
        "n_features": (np.int64, []),
        "births_accepted": (np.int64, []),
        "birth_proposals": (np.int64, []),
        "capacity_rejections": (np.int64, []),
        "feature_moves_accepted": (np.int64, []),
        "feature_moves_proposed": (np.int64, []),
        "row_moves": (np.int64, []),
    }
    #: the sweep the step runs (a subclass with another kernel is a tests' planted-bug twin)
    sweep_kernel = staticmethod(nsfa_sweeps)
    #: the whole-feature moves (likewise)
    feature_kernel = staticmethod(feature_birth_death_moves)

    def __init__(self, vars, *, model=None, rng=None, blocked=True, spec=None, hyper=None,
                 fixed=None, shared_lambda=False, isotropic_noise=False,
                 birth_proposal=(10.0, 0.1), sweeps: int = 1, feature_moves: int = 0):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if spec is None or hyper is None or fixed is None:
            raise ValueError("NSFAGibbs needs the options of pp_models.ibp_fa.model's step "
                             "hint (spec, hyper, fixed); build the model with that factory")
        if spec.finite:
            raise ValueError("NSFAGibbs samples the non-parametric model (k_max=None); the "
                             "finite approximation is for NUTS / ADVI")
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        self.feature_moves = check_int(feature_moves, "feature_moves", minimum=0)
        self.spec = spec
        self.hyper = np.asarray(hyper, dtype=np.float64)
        self.birth_factor, self.birth_one_prob = (float(v) for v in birth_proposal)
        m = self.model
        names = {m.values_to_rvs[v].name: v.name for v in self.vars}
        for required in ("Z", "V", "X"):
            if required not in names:
                raise ValueError(f"vars: NSFAGibbs updates Z, V and X together; {required} "
                                 f"is missing from {self.var_names}")
        self._names = names
        self._fixed = dict(fixed)
        for name in ("alpha", "lambda", "noise_precision"):
            if (self._fixed[name] is None) != (name in names):
                raise ValueError(f"vars: {name} must be in vars exactly when it is random")
        self.lam_mode = (FIXED if self._fixed["lambda"] is not None
                         else ISOTROPIC_OR_SHARED if shared_lambda else PER_ELEMENT)
        self.noise_mode = (FIXED if self._fixed["noise_precision"] is not None
                           else ISOTROPIC_OR_SHARED if isotropic_noise else PER_ELEMENT)
        self._y_fn = self.compile_point_fn(m["Y"])
        # natural <-> value space of the positive hyperparameters: their log transforms
        # by NumPy (a compiled function call per variable costs more than a sweep at
        # small sizes), any other transform by compiled functions
        self._forward = {}
        self._natural = {}
        for name in ("alpha", "lambda", "noise_precision"):
            if name not in names:
                continue
            rv = m[name]
            transform = m.rvs_to_transforms.get(rv)
            if type(transform).__name__ == "LogTransform":
                self._forward[name] = np.log
                self._natural[name] = lambda point, key=names[name]: np.exp(point[key])
                continue
            x = pt.tensor(dtype="float64", shape=(None,) * rv.ndim)
            out = x if transform is None else transform.forward(x, *rv.owner.inputs)
            self._forward[name] = pytensor.function([x], out)
            self._natural[name] = self.compile_point_fn(rv)
        spec_obs = spec.observed
        self._observed = spec_obs
        self._W = (np.ones((spec.D, spec.N)) if spec_obs is None
                   else spec_obs.astype(np.float64))
        self._work = np.empty((spec.D, spec.N))

    def replica(self):
        """A copy for another temperature with its own residual workspace (the sweep
        writes it in place)."""
        new = super().replica()
        new._work = np.empty_like(self._work)
        return new

    def _data(self, point):
        y = np.asarray(self._y_fn(point), dtype=np.float64)
        if self._observed is None:
            return np.ascontiguousarray(y.reshape(self.spec.D, self.spec.N))
        Y = np.zeros((self.spec.D, self.spec.N))
        Y[self._observed] = y
        return Y

    def _value(self, point, name, size):
        if self._fixed[name] is not None:
            return np.full(size, float(self._fixed[name]))
        v = np.asarray(self._natural[name](point), dtype=np.float64)
        return np.ascontiguousarray(np.broadcast_to(v, (size,)).copy())

    def step(self, point):
        spec = self.spec
        n = self._names
        Y = self._data(point)
        Z = np.array(point[n["Z"]], dtype=np.int8, copy=True)
        V = np.array(point[n["V"]], dtype=np.float64, copy=True)
        X = np.array(point[n["X"]], dtype=np.float64, copy=True)
        lam = self._value(point, "lambda", spec.slots)
        tau = self._value(point, "noise_precision", spec.D)
        alpha = float(self._value(point, "alpha", 1)[0])
        births = proposals = overflow = 0
        moves = np.zeros(len(FEATURE_MOVE_STATS), dtype=np.int64)
        state = FactorState(Y, self._W, Z, V, X, lam, tau, self._work)
        settings = SweepSettings(
            self._observed is None,
            self.hyper,
            self.lam_mode,
            self.noise_mode,
            "alpha" in n,
            self.birth_factor,
            self.birth_one_prob,
        )
        if self.feature_moves:
            # the feature moves read the unused slots' loadings: one sweep per call, each
            # ending with the auxiliary values drawn (custom_ops.ibp_fa.nsfa.nsfa_sweeps)
            for _ in range(self.sweeps):
                alpha, a, p, o, _net = self.sweep_kernel(self.rng, state, self.beta, alpha,
                                                         settings, 1)
                births += a
                proposals += p
                overflow += o
                self.feature_kernel(self.rng, state, alpha, self.beta, self.feature_moves, moves)
        else:
            alpha, births, proposals, overflow, _net = self.sweep_kernel(
                self.rng, state, self.beta, alpha, settings, self.sweeps)
        new = {n["Z"]: Z.astype(point[n["Z"]].dtype), n["V"]: V, n["X"]: X}
        for name, values in (("lambda", lam), ("noise_precision", tau),
                             ("alpha", np.array([alpha]))):
            if name not in n:
                continue
            old = point[n[name]]
            natural = values[: max(old.size, 1)].reshape(old.shape)
            new[n[name]] = np.asarray(self._forward[name](natural), dtype=old.dtype)
        stats = {
            "n_features": int((Z != 0).any(axis=0).sum()),
            "births_accepted": births,
            "birth_proposals": proposals,
            "capacity_rejections": overflow + int(moves[4]),
            "feature_moves_accepted": int(moves[1] + moves[3]),
            "feature_moves_proposed": int(moves[0] + moves[2]),
            "row_moves": int(moves[6]),
        }
        return self.updated(point, **new), [stats]
