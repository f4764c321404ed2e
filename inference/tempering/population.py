"""A population of particles of an all-continuous model, moved together.

Annealed importance sampling (:mod:`inference.tempering.ais`) moves many independent
particles through the same power posteriors ``p_beta(theta) ∝ p(theta) p(X |
theta)^beta``. For a model whose free variables are all continuous, the particles are
rows of one matrix ``X`` (particles, d) of unconstrained values (PyMC's value variables,
raveled and concatenated in the order of ``model.free_RVs``), and one compiled call
evaluates, for every row at once, ``log p(theta)`` (``model.varlogp``, Jacobians
included), ``log p(X | theta)`` (``model.datalogp``) and both gradients: the model's
graphs vectorised over a leading axis (PyTensor's ``vectorize_graph``), compiled once per
model. A transition is then a few array operations and one compiled call per leapfrog
step for the whole population, instead of a Python step call per particle.

The transition is Hamiltonian Monte Carlo (Neal 2011, "MCMC using Hamiltonian dynamics",
§5.2: leapfrog, Eq. 5.18-5.20, and the Metropolis test of §3.2) with a diagonal mass
matrix: momentum ``p ~ N(0, diag(1 / s^2))`` for a position scale ``s`` (d,), so the
leapfrog's position update is ``x += eps s^2 p``; each particle's step size is ``eps``
times a uniform jitter on [0.8, 1.2] (Neal 2011 §4.2, against periodic trajectories). For
fixed ``eps``, ``s`` and number of leapfrog steps the move leaves ``p_beta`` invariant;
nothing in it depends on the other particles.
"""

from __future__ import annotations

import math

import numpy as np
import pymc as pm

from inference.sampling_core import model_cache

__all__ = ["HMC_JITTER", "BatchedPowerPosterior", "leapfrog_steps"]

#: Each particle's step size is ``eps`` times a uniform draw on ``1 ± HMC_JITTER``.
HMC_JITTER = 0.2


class BatchedPowerPosterior:
    """``log p(theta)``, ``log p(X | theta)`` and their gradients on a population, and the
    HMC move (module docstring). Build with :meth:`for_model` (compiled once per model);
    :meth:`for_model` raises ``NotImplementedError`` when an operation of the model's
    graph cannot be vectorised."""

    def __init__(self, model: pm.Model):
        import pytensor.tensor as pt
        from pymc.pytensorf import compile as compile_pymc
        from pytensor.graph.replace import vectorize_graph

        point = model.initial_point()
        values = [model.rvs_to_values[rv] for rv in model.free_RVs]
        self.names = [v.name for v in values]
        self.shapes = [np.shape(point[n]) for n in self.names]
        self.sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.dim = int(sum(self.sizes))
        particles = pt.matrix("particles", dtype="float64")
        m = particles.shape[0]
        replace, offset = {}, 0
        for v, shape, size in zip(values, self.shapes, self.sizes, strict=True):
            block = particles[:, offset : offset + size].reshape((m, *shape))
            replace[v] = block.astype(v.dtype)
            offset += size
        prior, lik = vectorize_graph([model.varlogp, model.datalogp], replace)
        # a term that does not depend on the particles stays a scalar: broadcast it
        prior = pt.broadcast_to(prior, (m,))
        lik = pt.broadcast_to(lik, (m,))
        # the particles are independent: the gradient of the sum is each row's gradient
        dprior = pt.grad(prior.sum(), particles, disconnected_inputs="ignore")
        dlik = pt.grad(lik.sum(), particles, disconnected_inputs="ignore")
        self._fn = compile_pymc([particles], [prior, lik, dprior, dlik], on_unused_input="ignore")

    @classmethod
    def for_model(cls, model: pm.Model) -> BatchedPowerPosterior:
        cache = model_cache(model)
        batched = cache.get("tempering_batched_power_posterior")
        if batched is None:
            batched = cache["tempering_batched_power_posterior"] = cls(model)
        return batched

    def flatten(self, point: dict) -> np.ndarray:
        """One particle (d,) from PyMC's point dict."""
        return (
            np.concatenate([np.ravel(np.asarray(point[n], dtype=np.float64)) for n in self.names])
            if self.names
            else np.zeros(0)
        )

    def evaluate(self, x: np.ndarray):
        """``(log prior (M,), log-likelihood (M,), their gradients (M, d) each)``."""
        prior, lik, dprior, dlik = self._fn(x)
        return (
            np.asarray(prior, dtype=np.float64),
            np.asarray(lik, dtype=np.float64),
            np.asarray(dprior, dtype=np.float64),
            np.asarray(dlik, dtype=np.float64),
        )

    @staticmethod
    def potential(prior: np.ndarray, lik: np.ndarray, beta: float) -> np.ndarray:
        """The potential energy ``-(log p(theta) + beta log p(X | theta))``."""
        return -(prior + beta * lik)

    @staticmethod
    def log_acceptance(h0: np.ndarray, h1: np.ndarray) -> np.ndarray:
        """Metropolis: ``min(0, H(start) - H(end))``, a non-finite end rejected."""
        return np.where(np.isfinite(h1), np.minimum(h0 - h1, 0.0), -np.inf)

    def hmc_move(
        self,
        x: np.ndarray,
        beta: float,
        eps: float,
        scale: np.ndarray,
        n_leapfrog: int,
        rng: np.random.Generator,
        state=None,
    ):
        """One HMC transition of every particle of ``x`` (M, d) at inverse temperature
        ``beta`` (module docstring). ``state``: :meth:`evaluate` at ``x`` when known.
        Returns ``(x, state at x, acceptance probabilities (M,))``."""
        prior, lik, dprior, dlik = self.evaluate(x) if state is None else state
        m = x.shape[0]
        step = eps * rng.uniform(1.0 - HMC_JITTER, 1.0 + HMC_JITTER, size=(m, 1))
        s2 = scale**2
        p = rng.standard_normal(x.shape) / scale
        with np.errstate(over="ignore", invalid="ignore"):
            h0 = self.potential(prior, lik, beta) + 0.5 * np.sum(p * p * s2, axis=1)
            y = x.copy()
            p = p + 0.5 * step * (dprior + beta * dlik)
            for i in range(n_leapfrog):
                y = y + step * s2 * p
                new = self.evaluate(y)
                grad = new[2] + beta * new[3]
                p = p + (step if i < n_leapfrog - 1 else 0.5 * step) * grad
            h1 = self.potential(new[0], new[1], beta) + 0.5 * np.sum(p * p * s2, axis=1)
            log_accept = self.log_acceptance(h0, h1)
        accept = np.log(rng.uniform(size=m)) < log_accept
        x = np.where(accept[:, None], y, x)
        state = tuple(
            np.where(accept.reshape((m,) + (1,) * (a.ndim - 1)), b, a)
            for a, b in zip((prior, lik, dprior, dlik), new, strict=True)
        )
        return x, state, np.exp(log_accept)


def leapfrog_steps(eps: float, length: float = 1.5, most: int = 64) -> int:
    """Leapfrog steps for a trajectory of about ``length`` position scales."""
    return int(min(most, max(1, math.ceil(length / eps))))
