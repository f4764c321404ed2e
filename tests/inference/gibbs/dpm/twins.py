"""Planted-bug twins of the CRP steps: each differs from the real step by one realistic
mistake, and the exact-enumeration or getting-it-right tests must catch it."""

import math

import numpy as np

from inference.gibbs import CRPAuxiliaryGibbs, CRPCollapsedGibbs, EscobarWestAlpha


class ErratumGibbs(CRPCollapsedGibbs):
    """Murphy (2012) Algorithm 25.1 as printed: the predictive-likelihood factor dropped
    (every item is seated by the CRP prior alone). Getting-it-right cannot see this bug
    (the chain still leaves the *prior* joint invariant); the exact posterior can."""

    name = "test_erratum_gibbs"

    def kernel_data(self, values):
        return "bernoulli", None, (np.ones(0), np.ones(0))


class HyperMismatchGibbs(CRPCollapsedGibbs):
    """The sampler's NIW scale matrix is 4x the model's (a wrong hyperparameter)."""

    name = "test_hyper_mismatch_gibbs"

    def kernel_data(self, values):
        family, X, (m0, kappa0, nu0, S0) = super().kernel_data(values)
        return family, X, (m0, kappa0, nu0, 4.0 * S0)


class NoProposalRatioSplitMerge(CRPCollapsedGibbs):
    """Split-merge accepting with prior x likelihood only (q(reverse)/q(forward) dropped)."""

    name = "test_no_q_split_merge"

    @staticmethod
    def split_merge_log_acceptance(log_prior_ratio, log_lik_ratio, log_q_forward,
                                   log_q_reverse):
        return log_prior_ratio + log_lik_ratio


class BrokenAuxiliary(CRPAuxiliaryGibbs):
    """Algorithm 8 with auxiliary components from the wrong base measure (parameters ten
    times too large)."""

    name = "test_broken_auxiliary"

    def base_measure_draws(self, point, B):
        return [10.0 * a for a in super().base_measure_draws(point, B)]


class NoMixtureEscobarWest(EscobarWestAlpha):
    """Escobar-West with the two-component Gamma mixture replaced by its first component."""

    name = "test_ew_no_mixture"

    def draw_alpha(self, alpha, K, n, a, b):
        eta = self.rng.beta(alpha + 1.0, n)
        rate = b - math.log(eta)
        return self.rng.gamma(a + K, 1.0 / rate)


class StaleHyperGibbs(CRPCollapsedGibbs):
    """Reads the likelihood's hyperparameters once (at the first step) and caches them as
    constants: wrong as soon as another step moves learned hyperparameters."""

    name = "test_stale_hyper_gibbs"

    def kernel_data(self, values):
        family, X, hyper = super().kernel_data(values)
        if not hasattr(self, "_cached_hyper"):
            self._cached_hyper = hyper
        return family, X, self._cached_hyper
