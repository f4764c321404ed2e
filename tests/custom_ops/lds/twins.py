"""Planted-bug twins of the LDS simulation smoother's kernel (never switches in shipped
code)."""

from custom_ops.jit import njit_exact
from custom_ops.lds.simulation import simulation_smoother_kernel
from custom_ops.spd_kernels import spd_inverse
from tests.helpers.twin_kernels import twin_kernel

__all__ = ["filtered_covariance_kernel"]


@njit_exact
def filtered_covariance(Pf_t, A, Pp_next):
    # the bug: the right gain, but the filtered covariance, not reduced by x_{t+1}
    J = Pf_t @ A.T @ spd_inverse(Pp_next)
    return J, Pf_t.copy()


def filtered_covariance_kernel():
    """The simulation smoother with :func:`filtered_covariance` as its backward
    conditional."""
    return twin_kernel(simulation_smoother_kernel, backward_conditional=filtered_covariance)
