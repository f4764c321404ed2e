"""Planted-bug twins of the LDS simulation smoother step (never switches in shipped
code)."""

from inference.gibbs.lds import LDSSimulationSmoother
from tests.custom_ops.lds.twins import filtered_covariance_kernel

__all__ = ["FilteredCovarianceSmoother"]


class FilteredCovarianceSmoother(LDSSimulationSmoother):
    """The step running :func:`filtered_covariance_kernel`."""

    @property
    def smoother(self):
        return filtered_covariance_kernel()
