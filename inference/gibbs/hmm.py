"""The hidden Markov model's two Gibbs steps (:func:`pp_models.hmm.model`).

- ``hmm_ffbs`` (:class:`HMMPathFFBS`): the whole state path ``z`` in one exact block
  draw from ``p(z | pi0, P, theta, y)`` by forward filtering, backward sampling
  (:func:`custom_ops.hmm.forward_backward.ffbs_kernel`).
- ``hmm_conjugate`` (:class:`HMMConjugate`): ``pi0``, ``P`` and the emission parameters
  from their conjugate conditionals given the path: ``pi0 ~ Dirichlet(a0 + n_first)``,
  ``P[i] ~ Dirichlet(A[i] + n_{i.})`` (the path's transition counts within sequences),
  and the emission family's update (:mod:`pp_models.hmm.emissions`).

Both temper (``can_temper``): at inverse temperature ``beta`` FFBS runs on the
log-likelihoods ``beta log p(y_t | s_t)``, the emission update counts each observation
``beta`` times, and ``pi0`` and ``P`` (whose conditionals involve no observation) are
unchanged.
"""

from __future__ import annotations

import numpy as np
import pytensor
import pytensor.tensor as pt
from scipy.special import expit, logit

from custom_ops.hmm.forward_backward import ffbs_kernel
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.model import HMMSpec
from pp_models.model_info import observed_data

__all__ = ["HMMConjugate", "HMMPathFFBS", "dirichlet_draw", "transition_counts"]

#: Dirichlet draws are kept at least this far from 0 (their logs enter the value space
#: and FFBS): a draw below it is a probability no finite data could tell from it.
_FLOOR = 1e-300


def _only_enters(model, name: str, allowed: set[str], step: str) -> None:
    """Refuse a model in which ``name`` enters a term the step's conditional leaves out."""
    rvs, potentials = terms_depending_on(model, model[name])
    extra = sorted(rv.name for rv in rvs if rv.name not in allowed)
    if extra or potentials:
        raise ValueError(
            f"{step}: {name} also enters {extra or 'a potential'}; the step's "
            f"conditional accounts only for {sorted(allowed)}"
        )


def transition_counts(z, offsets, K) -> tuple[np.ndarray, np.ndarray]:
    """``(first, counts)``: how often each state starts a sequence, and ``counts[i, j]``
    the number of moves ``i -> j`` within sequences."""
    starts = np.zeros(z.shape[0], dtype=bool)
    starts[offsets[:-1]] = True
    first = np.bincount(z[starts], minlength=K).astype(float)
    moves = ~starts[1:]
    counts = np.zeros((K, K))
    np.add.at(counts, (z[:-1][moves], z[1:][moves]), 1.0)
    return first, counts


def dirichlet_draw(rng, alpha) -> np.ndarray:
    """Dirichlet draws along the last axis of ``alpha`` (normalised Gamma draws), each
    entry at least ``1e-300``."""
    g = np.maximum(rng.gamma(alpha), _FLOOR)
    return g / g.sum(axis=-1, keepdims=True)


class _ValueSpace:
    """A variable of the model between PyMC's value space and its natural scale.

    NumPy for the transforms the factory's variables carry (none, log, log-odds and
    PyMC's simplex transform, whose forward map is ``log x[:-1] - mean(log x)`` and
    backward map the softmax of ``(v, -sum v)``): each compiled function would be a graph
    of its own for the Numba backend to compile, per model. Compiled functions for any
    other transform.
    """

    def __init__(self, step: ZooGibbsStep, name: str):
        m = step.model
        rv = m[name]
        key = m.rvs_to_values[rv].name
        self.key = key
        transform = m.rvs_to_transforms.get(rv)
        kind = type(transform).__name__
        if transform is None:
            self.natural = lambda point: np.asarray(point[key], dtype=np.float64)
            self.value = lambda x: x
        elif kind == "LogTransform":
            self.natural = lambda point: np.exp(point[key])
            self.value = np.log
        elif kind == "LogOddsTransform":
            self.natural = lambda point: expit(point[key])
            self.value = logit
        elif kind == "SimplexTransform":
            self.natural = lambda point: _simplex_backward(point[key])
            self.value = _simplex_forward
        else:
            x = pt.tensor(dtype="float64", shape=(None,) * rv.ndim)
            self.natural = step.compile_point_fn(rv)
            self.value = pytensor.function([x], transform.forward(x, *rv.owner.inputs))


def _simplex_forward(x):
    log_x = np.log(x)
    return log_x[..., :-1] - log_x.mean(axis=-1, keepdims=True)


def _simplex_backward(v):
    v = np.asarray(v, dtype=np.float64)
    full = np.concatenate([v, -v.sum(axis=-1, keepdims=True)], axis=-1)
    e = np.exp(full - full.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class _Reader:
    """The natural values of ``pi0``, ``P``, the emission parameters and the data ``y``
    of a :func:`pp_models.hmm.model` from a point (``y`` from the point when it is free,
    as in getting-it-right, else the observed values)."""

    def __init__(self, step: ZooGibbsStep, spec: HMMSpec):
        m = step.model
        self.emission = get_emission(spec.emission)
        self.names = ("pi0", "P", *self.emission.parameters)
        self.spaces = {name: _ValueSpace(step, name) for name in self.names}
        if m["y"] in m.observed_RVs:
            y = self.emission.check(observed_data(m, "y"))
            self.y = lambda point: y
        else:
            space = _ValueSpace(step, "y")
            self.y = lambda point: self.emission.check(space.natural(point))

    def __call__(self, point) -> tuple[dict, np.ndarray]:
        """``({name: natural value}, y)``."""
        return {name: s.natural(point) for name, s in self.spaces.items()}, self.y(point)


def _check_spec(spec, step: str) -> None:
    if not isinstance(spec, HMMSpec) or spec.marginalize:
        raise ValueError(
            f"{step} needs the options of pp_models.hmm.model's step hint (spec) on a "
            "model whose path is sampled"
        )


@register_step
class HMMPathFFBS(ZooGibbsStep):
    """The path ``z`` of :func:`pp_models.hmm.model` by FFBS (an exact block draw).

    Parameters
    ----------
    vars : list
        The path ``z`` (a :class:`~pp_models.distributions.MarkovChain`).
    spec : HMMSpec
        The factory's record (the hint's option): the emission family and the
        sequences' boundaries. The initial, transition and emission log probabilities
        are computed from the point's values in NumPy
        (:meth:`pp_models.hmm.emissions.Emission.log_lik`).

    Notes
    -----
    Its stats: ``n_changed``, the states that changed; ``log_evidence``,
    ``log p(y | theta)`` with the path summed out, at the step's temperature.
    """

    name = "hmm_ffbs"
    can_temper = True
    stats_dtypes_shapes = {"n_changed": (np.int64, []), "log_evidence": (np.float64, [])}
    #: the FFBS kernel (a subclass with another kernel is a tests' planted-bug twin)
    ffbs = staticmethod(ffbs_kernel)

    def __init__(self, vars, *, spec: HMMSpec = None, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(f"vars: HMMPathFFBS updates the path alone, got {self.var_names}")
        _check_spec(spec, self.name)
        name = self.model.values_to_rvs[self.vars[0]].name
        observed = {rv.name for rv in self.model.observed_RVs} | {
            rv.name for rv in self.model.free_RVs
        }
        _only_enters(self.model, name, observed, self.name)
        self.spec = spec
        self._key = self.var_names[0]
        self._reader = _Reader(self, spec)

    def step(self, point):
        values, y = self._reader(point)
        emission = self._reader.emission
        with np.errstate(divide="ignore"):
            log_pi0 = np.log(values["pi0"])
            log_P = np.ascontiguousarray(np.log(values["P"]))
            log_lik = np.ascontiguousarray(
                emission.log_lik({n: values[n] for n in emission.parameters}, y),
                dtype=np.float64,
            )
        if self.beta != 1.0:
            # beta * (-inf) stays -inf for beta > 0; at beta = 0 nothing is observed
            log_lik = (
                np.zeros_like(log_lik)
                if self.beta == 0.0
                else np.where(np.isneginf(log_lik), -np.inf, self.beta * log_lik)
            )
        old = point[self._key]
        T = old.shape[0]
        path = np.array(old, dtype=np.int64, copy=True)
        value = self.ffbs(log_pi0, log_P, log_lik, self.spec.offsets, self.rng.random(T), path)
        new = path.astype(old.dtype)
        return self.updated(point, **{self._key: new}), [
            {"n_changed": int(np.count_nonzero(new != old)), "log_evidence": float(value)}
        ]


@register_step
class HMMConjugate(ZooGibbsStep):
    """``pi0``, ``P`` and the emission parameters of :func:`pp_models.hmm.model` from
    their conjugate conditionals given the path (module docstring).

    Parameters
    ----------
    vars : list
        ``pi0``, ``P`` and the emission parameters.
    spec : HMMSpec
        The factory's record (the hint's option).

    Notes
    -----
    Its stats: ``n_used``, the states the path visits.
    """

    name = "hmm_conjugate"
    can_temper = True
    stats_dtypes_shapes = {"n_used": (np.int64, [])}

    def __init__(self, vars, *, spec: HMMSpec = None, model=None, rng=None, blocked=True):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        _check_spec(spec, self.name)
        self.spec = spec
        self.emission = get_emission(spec.emission)
        m = self.model
        names = {m.values_to_rvs[v].name for v in self.vars}
        wanted = {"pi0", "P", *self.emission.parameters}
        if names != wanted:
            raise ValueError(
                f"vars: hmm_conjugate updates {sorted(wanted)} together, got {sorted(names)}"
            )
        _only_enters(m, "pi0", {"z"}, self.name)
        _only_enters(m, "P", {"z"}, self.name)
        for name in self.emission.parameters:
            _only_enters(m, name, {"y"}, self.name)
        self._z_key = m.rvs_to_values[m["z"]].name
        self._reader = _Reader(self, spec)

    def counts(self, z) -> tuple[np.ndarray, np.ndarray]:
        """The path's initial-state and transition counts (:func:`transition_counts`)."""
        return transition_counts(z, self.spec.offsets, self.spec.n_states)

    def step(self, point):
        spec = self.spec
        K = spec.n_states
        z = np.asarray(point[self._z_key], dtype=np.int64)
        current, y = self._reader(point)
        first, counts = self.counts(z)
        new = {
            "pi0": dirichlet_draw(self.rng, spec.initial_concentration + first),
            "P": dirichlet_draw(self.rng, spec.transition_concentration + counts),
        }
        new.update(
            self.emission.conditional_draw(self.rng, y, z, K, spec.hyper, current, self.beta)
        )
        values = {}
        for name, natural in new.items():
            space = self._reader.spaces[name]
            old = point[space.key]
            values[space.key] = np.asarray(space.value(natural), dtype=old.dtype)
        return self.updated(point, **values), [{"n_used": int(np.unique(z).size)}]
