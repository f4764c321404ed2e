"""Planted-bug twins of the tempered steps: each ignores the inverse temperature in one
realistic way, and the exact power-posterior tests must catch it."""

import numpy as np

from inference.gibbs import CRPAuxiliaryGibbs, CRPCollapsedGibbs
from inference.gibbs.dpm.niw_hyper import NIWHyperGibbs
from inference.tempering.nuts import TemperedNUTS
from inference.tempering.population import BatchedPowerPosterior
from inference.tempering.pymc_steps import (
    TemperedBinaryGibbsMetropolis,
    TemperedCategoricalGibbsMetropolis,
    TemperedMetropolis,
    TemperedSlice,
)


class _IgnoresBeta:
    """``set_inverse_temperature`` validates and forgets: the kernel runs at beta = 1."""

    def set_inverse_temperature(self, beta):
        super().set_inverse_temperature(beta)  # validated as usual ...
        super().set_inverse_temperature(1.0)  # ... and dropped


class CollapsedIgnoringBeta(_IgnoresBeta, CRPCollapsedGibbs):
    name = "test_collapsed_ignoring_beta"


class AuxiliaryIgnoringBeta(_IgnoresBeta, CRPAuxiliaryGibbs):
    name = "test_auxiliary_ignoring_beta"


class NIWIgnoringBeta(_IgnoresBeta, NIWHyperGibbs):
    name = "test_niw_ignoring_beta"


class NUTSIgnoringBeta(_IgnoresBeta, TemperedNUTS):
    name = "test_nuts_ignoring_beta"


class SplitMergeUntemperedAcceptance(CRPCollapsedGibbs):
    """Split-merge whose launch scans are tempered but whose acceptance uses the
    untempered likelihood ratio (proposal and acceptance inconsistent)."""

    name = "test_split_merge_untempered_acceptance"

    def split_merge_log_acceptance(self, log_prior_ratio, log_lik_ratio, log_q_forward,
                                   log_q_reverse):
        untempered = log_lik_ratio / self.beta if self.beta > 0 else log_lik_ratio
        return log_prior_ratio + untempered + log_q_reverse - log_q_forward


class MetropolisIgnoringBeta(_IgnoresBeta, TemperedMetropolis):
    name = "test_metropolis_ignoring_beta"


class SliceIgnoringBeta(_IgnoresBeta, TemperedSlice):
    name = "test_slice_ignoring_beta"


class BinaryGibbsIgnoringBeta(_IgnoresBeta, TemperedBinaryGibbsMetropolis):
    name = "test_binary_gibbs_ignoring_beta"


class CategoricalGibbsIgnoringBeta(_IgnoresBeta, TemperedCategoricalGibbsMetropolis):
    name = "test_categorical_gibbs_ignoring_beta"


class PopulationAcceptingAll(BatchedPowerPosterior):
    """The population's HMC move without its Metropolis test: every leapfrog end is
    accepted, so the move keeps the leapfrog's shadow Hamiltonian, not ``p_beta``."""

    @staticmethod
    def log_acceptance(h0, h1):
        return np.zeros_like(h0)


class PopulationIgnoringBeta(BatchedPowerPosterior):
    """The population's HMC move whose Metropolis test uses the posterior at beta = 1."""

    @staticmethod
    def potential(prior, lik, beta):
        return -(prior + lik)
