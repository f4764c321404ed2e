"""Planted-bug twins of the LDA kernels (never switches in shipped code)."""

from custom_ops.jit import njit_exact

__all__ = ["accept_every_proposal"]


@njit_exact(inline="always")
def accept_every_proposal(p_new, p_old, q_new, q_old):
    """The planted bug: a Metropolis-Hastings ratio of 1, whatever the proposal."""
    return 1.0
