"""Planted-bug twins of the IOMM steps, each a realistic mistake in Algorithm 7.1.

- :class:`OtherPointsOddsMemberships`: the prior odds of joining a shared cluster
  counted over the ``N - 1`` other points, ``m / (N - 1 - m)`` (Eq. 7.12 has
  ``m / N`` against ``(N - m) / N``).
- :class:`NoHastingsParameters`: the Bernoulli parameter move without the Hastings term
  ``T(theta | theta') / T(theta' | theta)`` of Eq. 7.13 (the Beta proposal is not
  symmetric).
- :class:`NoJacobianParameters`: the Gaussian precision's random walk on ``log tau``
  without its Hastings term ``tau' / tau``.
- :class:`NoProposalTermsSplitMerge`: the split-merge move's acceptance ratio without
  the proposal probabilities (``without_proposal_terms`` planted in
  :func:`custom_ops.iomm.split_merge.split_merge_moves` by ``twin_kernel``).
- :class:`IgnoresBetaMemberships`, :class:`IgnoresBetaParameters`: accept an inverse
  temperature and keep sampling the posterior (beta = 1), the steps a tempered run would
  get if beta were not passed to the kernels.

The test-only kernels the parameter twins run are in ``tests/custom_ops/iomm/twins.py``.
"""

from __future__ import annotations

import numpy as np

from custom_ops.iomm.split_merge import split_merge_moves
from inference.gibbs.iomm import IOMMMemberships, IOMMParameters
from pp_models.validation import check_inverse_temperature
from tests.custom_ops.iomm.twins import (
    no_hastings_sweep,
    no_jacobian_sweep,
    without_proposal_terms,
)
from tests.helpers.twin_kernels import twin_kernel

__all__ = ["IgnoresBetaMemberships", "IgnoresBetaParameters", "NoHastingsParameters",
           "NoJacobianParameters", "NoProposalTermsSplitMerge", "OtherPointsOddsMemberships"]


class NoProposalTermsSplitMerge(IOMMMemberships):
    """Split-merge proposals accepted without their proposal probabilities."""

    name = "test_iomm_no_proposal_terms_split_merge"

    @property
    def split_merge_kernel(self):
        return twin_kernel(split_merge_moves, split_merge_log_ratio=without_proposal_terms)


class OtherPointsOddsMemberships(IOMMMemberships):
    """Prior odds ``m / (N - 1 - m)`` instead of ``m / (N - m)``."""

    name = "test_iomm_other_points_odds"

    def prior_log_odds(self, N: int) -> np.ndarray:
        m = np.arange(N + 1, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.log(m) - np.log(N - 1 - m)
        out[N - 1:] = np.inf
        return out


class NoHastingsParameters(IOMMParameters):
    """The Beta proposal of Eq. 7.13 treated as symmetric."""

    name = "test_iomm_no_hastings"
    bernoulli_sweep = staticmethod(no_hastings_sweep)


class NoJacobianParameters(IOMMParameters):
    """The log-scale random walk on the Gaussian precisions without ``tau' / tau``."""

    name = "test_iomm_no_jacobian"
    gaussian_sweep = staticmethod(no_jacobian_sweep)


class IgnoresBetaMemberships(IOMMMemberships):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_iomm_memberships_ignore_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


class IgnoresBetaParameters(IOMMParameters):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_iomm_parameters_ignore_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")
