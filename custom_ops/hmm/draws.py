"""Prior draws of a Markov chain's state path (Numba), for
:class:`pp_models.distributions.MarkovChain`'s forward draw."""

from __future__ import annotations

from custom_ops.jit import njit_exact

__all__ = ["markov_chain_draw"]


@njit_exact
def _categorical(rng, p):
    u = rng.random()
    cumulative = 0.0
    last = 0
    for k in range(p.shape[0]):
        if p[k] > 0.0:
            last = k
            cumulative += p[k]
            if u < cumulative:
                return k
    return last


@njit_exact
def markov_chain_draw(rng, pi0, P, offsets, out):
    """One path into ``out`` (int64, T): each sequence ``offsets[s]..offsets[s+1]-1``
    starts from ``pi0`` and moves by the rows of ``P``. ``rng`` is a numpy Generator."""
    for s in range(offsets.shape[0] - 1):
        start, stop = offsets[s], offsets[s + 1]
        out[start] = _categorical(rng, pi0)
        for t in range(start + 1, stop):
            out[t] = _categorical(rng, P[out[t - 1]])
