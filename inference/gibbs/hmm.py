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
from pytensor.graph.basic import Variable
from scipy.special import logit

from custom_ops.hmm.forward_backward import ffbs_kernel
from inference.gibbs.base import ZooGibbsStep, terms_depending_on
from inference.gibbs.registry import register_step
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.model import HMMSpec

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


@register_step
class HMMPathFFBS(ZooGibbsStep):
    """The path ``z`` of :func:`pp_models.hmm.model` by FFBS (an exact block draw).

    Parameters
    ----------
    vars : list
        The path ``z`` (a :class:`~pp_models.distributions.MarkovChain`).
    log_pi0, log_P, log_lik : TensorVariable
        Symbolic ``(K,)``, ``(K, K)`` and ``(T, K)`` log initial, transition and
        emission probabilities in terms of the model's variables (the factory's hint).
    offsets : array of int
        The sequences' boundaries.

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

    def __init__(
        self,
        vars,
        *,
        log_pi0: Variable,
        log_P: Variable,
        log_lik: Variable,
        offsets,
        model=None,
        rng=None,
        blocked=True,
    ):
        super().__init__(vars, model=model, rng=rng, blocked=blocked)
        if len(self.vars) != 1:
            raise ValueError(f"vars: HMMPathFFBS updates the path alone, got {self.var_names}")
        name = self.model.values_to_rvs[self.vars[0]].name
        observed = {rv.name for rv in self.model.observed_RVs} | {
            rv.name for rv in self.model.free_RVs
        }
        _only_enters(self.model, name, observed, self.name)
        self._key = self.var_names[0]
        self._offsets = np.asarray(offsets, dtype=np.int64)
        self._fn = self.compile_point_fn([log_pi0, log_P, log_lik])

    def step(self, point):
        log_pi0, log_P, log_lik = (
            np.ascontiguousarray(v, dtype=np.float64) for v in self._fn(point)
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
        value = self.ffbs(log_pi0, log_P, log_lik, self._offsets, self.rng.random(T), path)
        new = path.astype(old.dtype)
        return self.updated(point, **{self._key: new}), [
            {"n_changed": int(np.count_nonzero(new != old)), "log_evidence": float(value)}
        ]


class _ValueSpace:
    """Write a variable's natural value into PyMC's value space (its transform)."""

    def __init__(self, model, name: str):
        rv = model[name]
        self.key = model.rvs_to_values[rv].name
        transform = model.rvs_to_transforms.get(rv)
        kind = type(transform).__name__
        if transform is None:
            self.value = lambda x: x
        elif kind == "LogTransform":
            self.value = np.log
        elif kind == "LogOddsTransform":
            self.value = logit
        else:
            x = pt.tensor(dtype="float64", shape=(None,) * rv.ndim)
            self.value = pytensor.function([x], transform.forward(x, *rv.owner.inputs))


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
        if not isinstance(spec, HMMSpec) or spec.marginalize:
            raise ValueError(
                "hmm_conjugate needs the options of pp_models.hmm.model's step "
                "hint (spec) on a model whose path is sampled"
            )
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
        self._y_fn = self.compile_point_fn(m["y"])
        self._writers = {name: _ValueSpace(m, name) for name in wanted}
        self._current = {name: self.compile_point_fn(m[name]) for name in self.emission.parameters}

    def counts(self, z) -> tuple[np.ndarray, np.ndarray]:
        """The path's initial-state and transition counts (:func:`transition_counts`)."""
        return transition_counts(z, self.spec.offsets, self.spec.n_states)

    def step(self, point):
        spec = self.spec
        K = spec.n_states
        z = np.asarray(point[self._z_key], dtype=np.int64)
        y = np.asarray(self._y_fn(point))
        first, counts = self.counts(z)
        new = {
            "pi0": dirichlet_draw(self.rng, spec.initial_concentration + first),
            "P": dirichlet_draw(self.rng, spec.transition_concentration + counts),
        }
        current = {name: np.asarray(fn(point)) for name, fn in self._current.items()}
        new.update(
            self.emission.conditional_draw(self.rng, y, z, K, spec.hyper, current, self.beta)
        )
        values = {}
        for name, natural in new.items():
            writer = self._writers[name]
            old = point[writer.key]
            values[writer.key] = np.asarray(writer.value(natural), dtype=old.dtype)
        return self.updated(point, **values), [{"n_used": int(np.unique(z).size)}]
