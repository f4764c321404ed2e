"""The IOMM sampler (Heller 2007 Algorithm 7.1) as two zoo steps.

- ``"iomm_memberships"`` (:class:`IOMMMemberships`) owns ``Z`` (and ``alpha`` when it is
  random): one :func:`custom_ops.iomm.memberships.membership_sweep` per call, Gibbs on
  each point's shared clusters and a Metropolis-Hastings move on its own clusters, then
  ``split_merge`` split-merge proposals on whole clusters
  (:func:`custom_ops.iomm.split_merge.split_merge_moves`: a split draws the new
  cluster's expert parameters fitted to its members, a merge redraws the freed slot's
  from the prior, so these proposals also write ``theta``, or ``mu`` and ``tau``, of the
  one slot they fill or free), then ``alpha | Z ~ Gamma(a + K+, b + H_N)`` (the IBP's
  ``alpha^K+ exp(-alpha H_N)``).
- ``"iomm_parameters"`` (:class:`IOMMParameters`) owns the cluster parameters
  (``theta``, or ``mu`` and ``tau``): one Metropolis-Hastings sweep (Eq. 7.13) over the
  used clusters, prior draws for the unused slots
  (:mod:`custom_ops.iomm.parameters`).

:func:`pp_models.iomm.model` names both in its step hints, so ``fit(iomm.model(X))``
alternates them as Algorithm 7.1 does. Each step leaves the model's joint posterior
invariant on its own; the pair samples the exchangeable posterior (which slot a new
cluster occupies is arbitrary, so only label-invariant quantities have a meaning).

Both steps temper (the tempering contract of :class:`~inference.gibbs.ZooGibbsStep`):
their kernels take ``beta``, the power of the likelihood ``p(X | Z, Theta)`` in every
conditional (the step's ``beta``, set by ``set_inverse_temperature``; 1 for the
posterior), so a tempered run samples the power posteriors ``p(Z, Theta) p(X | Z,
Theta)^beta``. ``alpha`` enters only the IBP prior of ``Z``: its update ignores beta.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy.special import expit, logit

from custom_ops.ibp_fa.ibp import harmonic
from custom_ops.iomm.experts import BERNOULLI, GAUSSIAN
from custom_ops.iomm.memberships import ibp_log_odds, membership_sweep
from custom_ops.iomm.parameters import bernoulli_parameter_sweep, gaussian_parameter_sweep
from custom_ops.iomm.split_merge import SPLIT_MERGE_STATS, Experts, split_merge_moves
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.iomm.model import IOMMSpec, parameter_names
from pp_models.validation import check_int

__all__ = ["IOMMMemberships", "IOMMParameters"]

_TINY = np.finfo(np.float64).tiny
_EPS = np.finfo(np.float64).epsneg


def _spec_or_error(spec, step: str) -> IOMMSpec:
    if not isinstance(spec, IOMMSpec):
        raise ValueError(f"{step} needs the options of pp_models.iomm.model's step hint "
                         "(spec); build the model with that factory")
    return spec


class _NaturalValues:
    """Read a positive or unit-interval variable from a point on its natural scale and
    write it back in value space: NumPy for PyMC's log and log-odds transforms (a
    compiled call per variable costs more than a sweep at small sizes), compiled
    functions for any other transform."""

    def __init__(self, step: ZooGibbsStep, name: str):
        m = step.model
        rv = m[name]
        self.key = m.rvs_to_values[rv].name
        transform = m.rvs_to_transforms.get(rv)
        kind = type(transform).__name__
        if transform is None:
            self.natural = lambda point: np.asarray(point[self.key], dtype=np.float64)
            self.value = lambda x: x
        elif kind == "LogTransform":
            self.natural = lambda point: np.exp(point[self.key])
            self.value = np.log
        elif kind == "LogOddsTransform":
            # a logit beyond +-700 rounds to 0 or 1; keep it inside (0, 1), where the
            # kernels' logs are finite
            self.natural = lambda point: np.clip(expit(point[self.key]), _TINY, 1 - _EPS)
            self.value = logit
        else:
            x = pt.tensor(dtype="float64", shape=(None,) * rv.ndim)
            forward = pytensor.function([x], transform.forward(x, *rv.owner.inputs))
            self.natural = step.compile_point_fn(rv)
            self.value = forward


def _check_blanket(model, name: str, allowed: set[str], step: str) -> None:
    """Refuse a model in which ``name`` enters a term the step's conditional leaves out."""
    rvs, potentials = terms_depending_on(model, model[name])
    extra = sorted(rv.name for rv in rvs if rv.name not in allowed)
    if extra or potentials:
        raise ValueError(f"{step}: {name} also enters {extra or 'a potential'}; the step's "
                         f"conditional accounts only for {sorted(allowed)}")


@register_step
class IOMMMemberships(ZooGibbsStep):
    """The memberships ``Z`` (and ``alpha``) of :func:`pp_models.iomm.model`.

    Parameters
    ----------
    vars : list
        ``Z``, and ``alpha`` when the model's ``alpha`` is random.
    spec : IOMMSpec
        Filled in by the factory's step hint.
    sweeps : int
        Sweeps over the points per ``step`` call.
    split_merge : int
        Split-merge proposals after each sweep (0: none). Each is a move on ``Z`` and
        the cluster parameters together: an accepted split sets the parameters of the
        slot it fills, an accepted merge redraws those of the slot it frees from the
        prior (the parameters of every other slot are left as they are).

    Notes
    -----
    Its stats: ``n_clusters`` (after the step); ``moves_accepted`` and
    ``moves_proposed``, the Metropolis-Hastings moves on points' own clusters;
    ``capacity_rejections``, moves proposing more clusters than free slots and splits
    finding no unused slot; ``splits_accepted`` and ``merges_accepted``, out of
    ``split_merge_proposed``.
    """

    name = "iomm_memberships"
    stats_dtypes_shapes = {
        "n_clusters": (np.int64, []),
        "moves_accepted": (np.int64, []),
        "moves_proposed": (np.int64, []),
        "capacity_rejections": (np.int64, []),
        "splits_accepted": (np.int64, []),
        "merges_accepted": (np.int64, []),
        "split_merge_proposed": (np.int64, []),
    }

    can_temper = True

    #: The split-merge kernel (a planted-bug twin under tests/ swaps it for its own).
    split_merge_kernel = staticmethod(split_merge_moves)

    def __init__(self, vars, *, model=None, rng=None, blocked=True, spec=None,
                 sweeps: int = 1, split_merge: int = 0):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        spec = _spec_or_error(spec, "IOMMMemberships")
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        self.split_merge = check_int(split_merge, "split_merge", minimum=0)
        self.spec = spec
        m = self.model
        names = {m.values_to_rvs[v].name for v in self.vars}
        wanted = {"Z"} | ({"alpha"} if spec.random_alpha else set())
        if names != wanted:
            raise ValueError(f"vars: IOMMMemberships updates {sorted(wanted)} together, got "
                             f"{sorted(names)}")
        _check_blanket(m, "Z", {"X"}, "IOMMMemberships")
        if spec.random_alpha:
            _check_blanket(m, "alpha", {"Z"}, "IOMMMemberships")
            self._alpha = _NaturalValues(self, "alpha")
        self._z_key = m.rvs_to_values[m["Z"]].name
        self._x_fn = self.compile_point_fn(m["X"])
        self._params = [_NaturalValues(self, n) for n in parameter_names(spec.likelihood)]
        self._code = BERNOULLI if spec.likelihood == "bernoulli" else GAUSSIAN
        self._background = (np.ascontiguousarray(spec.background)
                            if spec.background is not None else np.zeros((spec.D, 2)))
        self._log_odds = self.prior_log_odds(spec.N)
        self._harmonic = float(harmonic(spec.N))
        prior = spec.prior
        self._prior = np.ascontiguousarray(
            np.column_stack([prior["a"], prior["b"], np.zeros(spec.D), np.zeros(spec.D)])
            if self._code == BERNOULLI
            else np.column_stack([prior["mean"], prior["sd"], prior["shape"], prior["rate"]]))

    # the IBP's conditionals, in one place each (twins under tests/ override them)
    def prior_log_odds(self, N: int) -> np.ndarray:
        """``log(m / (N - m))``, ``m = 0..N``: prior log odds of joining a cluster that
        ``m`` other points belong to (Eq. 7.12 against its complement)."""
        return ibp_log_odds(N)

    def birth_rate(self, alpha: float, N: int) -> float:
        """Mean number of a point's own clusters under the IBP: ``alpha / N``."""
        return alpha / N

    def _experts(self, point) -> tuple[np.ndarray, np.ndarray]:
        """Every slot's natural parameters ``E`` and parameters on the model's scale
        (``theta``, or ``mu`` and ``tau``), each (C, D, S)."""
        if self._code == BERNOULLI:
            theta = np.asarray(self._params[0].natural(point), dtype=np.float64)
            return (np.ascontiguousarray(logit(theta)[:, :, None]),
                    np.array(theta[:, :, None], dtype=np.float64, order="C"))
        mu = np.asarray(self._params[0].natural(point), dtype=np.float64)
        tau = np.asarray(self._params[1].natural(point), dtype=np.float64)
        return (np.ascontiguousarray(np.stack([tau, tau * mu], axis=-1)),
                np.ascontiguousarray(np.stack([mu, tau], axis=-1)))

    def step(self, point):
        spec = self.spec
        X = np.ascontiguousarray(self._x_fn(point), dtype=np.float64)
        Z = np.array(point[self._z_key], dtype=np.int8, copy=True)
        E, params = self._experts(point)
        before = params.copy() if self.split_merge else None
        experts = Experts(self._code, X, E, params, self._prior, self._background)
        alpha = (float(self._alpha.natural(point)) if spec.random_alpha
                 else float(spec.alpha))
        accepted = proposed = overflow = 0
        moves = np.zeros(len(SPLIT_MERGE_STATS), dtype=np.int64)
        for _ in range(self.sweeps):
            a, p, o, _flips = membership_sweep(
                self.rng, self._code, X, Z, E, self._background, self._log_odds,
                self.birth_rate(alpha, spec.N), float(self.beta))
            accepted += a
            proposed += p
            overflow += o
            if self.split_merge:
                self.split_merge_kernel(self.rng, experts, Z, alpha, float(self.beta),
                                        self.split_merge, moves)
            if spec.random_alpha:
                shape, rate = spec.alpha_prior
                k_plus = int((Z != 0).any(axis=0).sum())
                alpha = self.rng.gamma(shape + k_plus, 1.0 / (rate + self._harmonic))
        new = {self._z_key: Z.astype(point[self._z_key].dtype)}
        if self.split_merge and (moves[1] or moves[3]):
            # the slots a split filled or a merge freed have new parameters; the others
            # keep their stored values bit for bit
            changed = np.flatnonzero((params != before).any(axis=(1, 2)))
            for s, reader in enumerate(self._params):
                old = point[reader.key]
                value = np.array(old, copy=True)
                value[changed] = np.asarray(reader.value(params[:, :, s]),
                                            dtype=old.dtype)[changed]
                new[reader.key] = value
        if spec.random_alpha:
            old = point[self._alpha.key]
            new[self._alpha.key] = np.asarray(self._alpha.value(np.asarray(alpha)),
                                              dtype=old.dtype).reshape(old.shape)
        stats = {
            "n_clusters": int((Z != 0).any(axis=0).sum()),
            "moves_accepted": accepted,
            "moves_proposed": proposed,
            "capacity_rejections": overflow + int(moves[4]),
            "splits_accepted": int(moves[1]),
            "merges_accepted": int(moves[3]),
            "split_merge_proposed": int(moves[0] + moves[2]),
        }
        return self.updated(point, **new), [stats]


@register_step
class IOMMParameters(ZooGibbsStep):
    """The cluster parameters of :func:`pp_models.iomm.model`: ``theta`` (Bernoulli) or
    ``mu`` and ``tau`` (Gaussian), by Metropolis-Hastings (Eq. 7.13).

    Parameters
    ----------
    vars : list
        ``theta``, or ``mu`` and ``tau``.
    spec : IOMMSpec
        Filled in by the factory's step hint (priors and the proposal width ``omega``).
    sweeps : int
        Sweeps over the parameters per ``step`` call.

    Stats
    -----
    ``acceptance``: the fraction of accepted moves in the call.
    """

    name = "iomm_parameters"
    stats_dtypes_shapes = {"acceptance": (np.float64, [])}

    can_temper = True

    #: The sweep kernels (a planted-bug twin under tests/ swaps one for its own).
    bernoulli_sweep = staticmethod(bernoulli_parameter_sweep)
    gaussian_sweep = staticmethod(gaussian_parameter_sweep)

    def __init__(self, vars, *, model=None, rng=None, blocked=True, spec=None,
                 sweeps: int = 1):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        spec = _spec_or_error(spec, "IOMMParameters")
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        self.spec = spec
        m = self.model
        params = parameter_names(spec.likelihood)
        names = {m.values_to_rvs[v].name for v in self.vars}
        if names != set(params):
            raise ValueError(f"vars: IOMMParameters updates {list(params)} together, got "
                             f"{sorted(names)}")
        for name in params:
            _check_blanket(m, name, {"X"}, "IOMMParameters")
        self._params = [_NaturalValues(self, n) for n in params]
        self._z_key = m.rvs_to_values[m["Z"]].name
        self._x_fn = self.compile_point_fn(m["X"])

    def step(self, point):
        spec = self.spec
        X = np.ascontiguousarray(self._x_fn(point), dtype=np.float64)
        Z = np.ascontiguousarray(point[self._z_key], dtype=np.int8)
        values = [np.array(p.natural(point), dtype=np.float64, copy=True)
                  for p in self._params]
        accepted = proposed = 0
        prior = spec.prior
        for _ in range(self.sweeps):
            if spec.likelihood == "bernoulli":
                a, p = self.bernoulli_sweep(self.rng, X, Z, values[0], prior["a"],
                                            prior["b"], spec.omega, float(self.beta))
            else:
                a, p = self.gaussian_sweep(self.rng, X, Z, values[0], values[1],
                                           prior["mean"], prior["sd"], prior["shape"],
                                           prior["rate"], spec.omega, float(self.beta))
            accepted += a
            proposed += p
        new = {}
        for reader, value in zip(self._params, values):
            old = point[reader.key]
            new[reader.key] = np.asarray(reader.value(value), dtype=old.dtype)
        stats = {"acceptance": accepted / proposed if proposed else np.nan}
        return self.updated(point, **new), [stats]
