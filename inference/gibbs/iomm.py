"""The IOMM sampler (Heller 2007 Algorithm 7.1) as two zoo steps, and a third that
alternates them several times per draw.

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
alternates them as Algorithm 7.1 does; with ``thin > 1`` it names ``"iomm_sweeps"``
(:class:`IOMMSweeps`) instead, which runs ``thin`` alternations per draw on the state held
in arrays, making the same draws as the two steps alternated with one generator. Each
step leaves the model's joint posterior invariant on its own; the pair samples the
exchangeable posterior (which slot a new cluster occupies is arbitrary, so only
label-invariant quantities have a meaning).

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
from custom_ops.iomm.memberships import MembershipPrior, ibp_log_odds, membership_sweep
from custom_ops.iomm.parameters import (
    GaussianPrior,
    bernoulli_parameter_sweep,
    gaussian_parameter_sweep,
)
from custom_ops.iomm.split_merge import SPLIT_MERGE_STATS, Experts, split_merge_moves
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.iomm.model import IOMMSpec, parameter_names
from pp_models.validation import check_int

__all__ = ["IOMMMemberships", "IOMMParameters", "IOMMSweeps"]

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

    def natural_values(self, point) -> list[np.ndarray]:
        """The cluster parameters of ``point`` on the model's scale, as fresh arrays."""
        return [np.array(p.natural(point), dtype=np.float64, copy=True) for p in self._params]

    def experts(self, values) -> tuple[np.ndarray, np.ndarray]:
        """Every slot's natural parameters ``E`` and parameters on the model's scale
        (``theta``, or ``mu`` and ``tau``), each (C, D, S), from :meth:`natural_values`."""
        if self._code == BERNOULLI:
            theta = np.asarray(values[0], dtype=np.float64)
            return (np.ascontiguousarray(logit(theta)[:, :, None]),
                    np.array(theta[:, :, None], dtype=np.float64, order="C"))
        mu = np.asarray(values[0], dtype=np.float64)
        tau = np.asarray(values[1], dtype=np.float64)
        return (np.ascontiguousarray(np.stack([tau, tau * mu], axis=-1)),
                np.ascontiguousarray(np.stack([mu, tau], axis=-1)))

    def alpha_of(self, point) -> float:
        """``alpha`` of ``point`` (its fixed value when it is not random)."""
        return (float(self._alpha.natural(point)) if self.spec.random_alpha
                else float(self.spec.alpha))

    def sweep(self, X, Z, values, alpha, tally) -> float:
        """One sweep over the points, the split-merge proposals and ``alpha``'s update, on
        ``Z`` and (where a split or merge fills or frees a slot) ``values`` in place;
        returns the new ``alpha``. ``tally`` (int64, 3 + len(SPLIT_MERGE_STATS)) adds
        the moves accepted, proposed, the capacity rejections and the split-merge
        counts."""
        spec = self.spec
        E, params = self.experts(values)
        a, p, o, _flips = membership_sweep(
            self.rng, self._code, X, Z, E, self._background,
            MembershipPrior(self._log_odds, self.birth_rate(alpha, spec.N)),
            float(self.beta))
        tally[0] += a
        tally[1] += p
        tally[2] += o
        if self.split_merge:
            experts = Experts(self._code, X, E, params, self._prior, self._background)
            self.split_merge_kernel(self.rng, experts, Z, alpha, float(self.beta),
                                    self.split_merge, tally[3:])
            # the slots a split filled or a merge freed have new parameters; the others
            # keep their values bit for bit
            for s, value in enumerate(values):
                value[...] = params[:, :, s]
        if spec.random_alpha:
            shape, rate = spec.alpha_prior
            k_plus = int((Z != 0).any(axis=0).sum())
            alpha = self.rng.gamma(shape + k_plus, 1.0 / (rate + self._harmonic))
        return alpha

    def stats_of(self, Z, tally) -> dict:
        """The step's stats from the final ``Z`` and the :meth:`sweep` tally."""
        moves = tally[3:]
        return {
            "n_clusters": int((Z != 0).any(axis=0).sum()),
            "moves_accepted": int(tally[0]),
            "moves_proposed": int(tally[1]),
            "capacity_rejections": int(tally[2] + moves[4]),
            "splits_accepted": int(moves[1]),
            "merges_accepted": int(moves[3]),
            "split_merge_proposed": int(moves[0] + moves[2]),
        }

    def written(self, point, Z, values, alpha) -> dict:
        """The point's new values of the step's variables (``values``: the cluster
        parameters, written back only where they changed)."""
        new = {self._z_key: Z.astype(point[self._z_key].dtype)}
        if values is not None:
            for reader, value in zip(self._params, values, strict=True):
                old = point[reader.key]
                changed = np.flatnonzero(
                    (value != np.asarray(reader.natural(point))).any(axis=1))
                if changed.size:
                    stored = np.array(old, copy=True)
                    stored[changed] = np.asarray(reader.value(value),
                                                 dtype=old.dtype)[changed]
                    new[reader.key] = stored
        if self.spec.random_alpha:
            old = point[self._alpha.key]
            new[self._alpha.key] = np.asarray(self._alpha.value(np.asarray(alpha)),
                                              dtype=old.dtype).reshape(old.shape)
        return new

    def step(self, point):
        X = np.ascontiguousarray(self._x_fn(point), dtype=np.float64)
        Z = np.array(point[self._z_key], dtype=np.int8, copy=True)
        values = self.natural_values(point) if self.split_merge else None
        alpha = self.alpha_of(point)
        tally = np.zeros(3 + len(SPLIT_MERGE_STATS), dtype=np.int64)
        for _ in range(self.sweeps):
            alpha = self.sweep(X, Z, values if values is not None
                               else self.natural_values(point), alpha, tally)
        stats = self.stats_of(Z, tally)
        return self.updated(point, **self.written(point, Z, values, alpha)), [stats]


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

    def sweep(self, X, Z, values) -> tuple[int, int]:
        """One sweep over the used clusters' parameters (``values``: ``[theta]`` or
        ``[mu, tau]`` on the model's scale, updated in place); ``(accepted, proposed)``."""
        spec = self.spec
        prior = spec.prior
        if spec.likelihood == "bernoulli":
            return self.bernoulli_sweep(self.rng, X, Z, values[0], prior["a"], prior["b"],
                                        spec.omega, float(self.beta))
        return self.gaussian_sweep(
            self.rng, X, Z, values[0], values[1],
            GaussianPrior(prior["mean"], prior["sd"], prior["shape"], prior["rate"]),
            spec.omega, float(self.beta))

    def step(self, point):
        X = np.ascontiguousarray(self._x_fn(point), dtype=np.float64)
        Z = np.ascontiguousarray(point[self._z_key], dtype=np.int8)
        values = [np.array(p.natural(point), dtype=np.float64, copy=True)
                  for p in self._params]
        accepted = proposed = 0
        for _ in range(self.sweeps):
            a, p = self.sweep(X, Z, values)
            accepted += a
            proposed += p
        new = {}
        for reader, value in zip(self._params, values):
            old = point[reader.key]
            new[reader.key] = np.asarray(reader.value(value), dtype=old.dtype)
        stats = {"acceptance": accepted / proposed if proposed else np.nan}
        return self.updated(point, **new), [stats]


@register_step
class IOMMSweeps(ZooGibbsStep):
    """Algorithm 7.1's two steps alternated ``sweeps`` times in one ``step`` call: per
    sweep, :class:`IOMMMemberships`' sweep (with its split-merge proposals and
    ``alpha``'s update), then :class:`IOMMParameters`' sweep, on the state held in
    arrays between them; the point is read and written once. It owns every free
    variable of :func:`pp_models.iomm.model` (``Z``, the cluster parameters, ``alpha``
    when random); the factory names it when ``thin > 1``, so a draw is ``thin`` sweeps.

    With one generator it makes the draws of the two steps alternated with that
    generator (``tests/inference/gibbs/iomm/test_sweeps.py``), so their exactness and
    tempering tests cover it.

    Parameters
    ----------
    vars : list
        ``Z``, the cluster parameters and ``alpha`` when random.
    spec : IOMMSpec
        Filled in by the factory's step hint.
    sweeps : int
        Alternations per ``step`` call (the factory's ``thin``).
    split_merge : int
        As :class:`IOMMMemberships`.

    Notes
    -----
    Its stats are :class:`IOMMMemberships`' (summed over the sweeps) and
    :class:`IOMMParameters`' ``acceptance``.
    """

    name = "iomm_sweeps"
    stats_dtypes_shapes = {**IOMMMemberships.stats_dtypes_shapes,
                           **IOMMParameters.stats_dtypes_shapes}

    can_temper = True

    #: The two steps it alternates (a planted-bug twin under tests/ swaps one).
    memberships_step = IOMMMemberships
    parameters_step = IOMMParameters

    def __init__(self, vars, *, model=None, rng=None, blocked=True, spec=None,
                 sweeps: int = 1, split_merge: int = 0):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        spec = _spec_or_error(spec, "IOMMSweeps")
        self.sweeps = check_int(sweeps, "sweeps", minimum=1)
        self.spec = spec
        m = self.model
        names = {m.values_to_rvs[v].name for v in self.vars}
        memberships = ["Z"] + (["alpha"] if spec.random_alpha else [])
        params = list(parameter_names(spec.likelihood))
        if names != set(memberships) | set(params):
            raise ValueError(f"vars: IOMMSweeps updates {sorted(memberships + params)} "
                             f"together, got {sorted(names)}")
        self._memberships = self.memberships_step.from_model(
            m, memberships, spec=spec, split_merge=split_merge)
        self._parameters = self.parameters_step.from_model(m, params, spec=spec)
        self._x_fn = self._memberships._x_fn

    def step(self, point):
        zs, ps = self._memberships, self._parameters
        # the two steps draw from this step's generator at its inverse temperature (set
        # per call: a tempered run's replicas share them)
        zs.rng = ps.rng = self.rng
        zs.set_inverse_temperature(self.beta)
        ps.set_inverse_temperature(self.beta)
        X = np.ascontiguousarray(self._x_fn(point), dtype=np.float64)
        Z = np.array(point[zs._z_key], dtype=np.int8, copy=True)
        # the state passes through the point's storage between the sweeps, as it does
        # between the two steps (the transforms round)
        work = dict(point)
        alpha = zs.alpha_of(work)
        tally = np.zeros(3 + len(SPLIT_MERGE_STATS), dtype=np.int64)
        accepted = proposed = 0
        for _ in range(self.sweeps):
            values = zs.natural_values(work)
            alpha = zs.sweep(X, Z, values, alpha, tally)
            work.update(zs.written(work, Z, values if zs.split_merge else None, alpha))
            values = zs.natural_values(work)
            alpha = zs.alpha_of(work)
            a, p = ps.sweep(X, Z, values)
            accepted += a
            proposed += p
            for reader, value in zip(zs._params, values, strict=True):
                work[reader.key] = np.asarray(reader.value(value),
                                              dtype=point[reader.key].dtype)
        stats = zs.stats_of(Z, tally)
        stats["acceptance"] = accepted / proposed if proposed else np.nan
        new = {key: work[key] for key in (zs._z_key, *(r.key for r in zs._params))}
        if zs.spec.random_alpha:
            new[zs._alpha.key] = work[zs._alpha.key]
        return self.updated(point, **new), [stats]
