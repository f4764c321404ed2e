"""Planted-bug twins of the GGM block Gibbs steps: each differs from the real step by one
realistic mistake, and getting-it-right (or the tempered steps' exact checks) must catch
it."""

import numpy as np

from custom_ops.ggm.gibbs import (
    ColumnPrior,
    Precision,
    WishartData,
    column_sweep,
    gram,
    sssl_latent_variances,
)
from custom_ops.spd_kernels import spd_inverse
from inference.gibbs.ggm import BGLassoBlockGibbs, SSSLBlockGibbs
from pp_models.validation import check_inverse_temperature


class WrongInverseGaussianShape(BGLassoBlockGibbs):
    """``1/tau ~ InvGaussian(lam/|omega|, lam)``: the shape should be ``lam^2``."""

    name = "test_bglasso_wrong_ig_shape"

    def draw_latent_variances(self, omega, lam):
        p = omega.shape[0]
        tau = np.ones((p, p))
        for i in range(p):
            for j in range(i):
                t = 1.0 / self.rng.wald(lam / max(abs(omega[i, j]), 1e-12), lam)
                tau[i, j] = tau[j, i] = t
        return tau


class MissingGammaShapeOne(BGLassoBlockGibbs):
    """The Schur complement drawn from ``Gamma(n/2, .)``: the prior's ``+1`` forgotten."""

    name = "test_bglasso_gamma_shape"
    gamma_shape_offset = 0.0


class LamShapeOffDiagonalOnly(BGLassoBlockGibbs):
    """``lam | Omega`` with shape ``a + p(p-1)/2``: the diagonal's ``lam/2`` factors forgotten."""

    name = "test_bglasso_lam_shape"

    def draw_lam(self, omega, a, b):
        p = self.p
        return self.rng.gamma(a + p * (p - 1) / 2, 1.0 / (b + 0.5 * np.abs(omega).sum()))


class IgnoresPriorOdds(SSSLBlockGibbs):
    """Edge indicators drawn as if ``pi = 1/2`` (the prior inclusion odds dropped)."""

    name = "test_sssl_no_prior_odds"

    def draw_latent_variances(self, omega, v0, v1, pi):
        return sssl_latent_variances(self.rng, omega, v0, v1, 0.5)


class IgnoresBetaBGLasso(BGLassoBlockGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_bglasso_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


class IgnoresBetaSSSL(SSSLBlockGibbs):
    """Accepts an inverse temperature and keeps sampling the posterior (beta = 1)."""

    name = "test_sssl_ignores_beta"

    def set_inverse_temperature(self, beta) -> None:
        check_inverse_temperature(beta, "beta")


class TempersScatterNotCount(BGLassoBlockGibbs):
    """The likelihood's ``S`` scaled by beta but its ``det(Omega)^(n/2)`` left at ``n``:
    the Wishart form at ``(n, beta S)`` instead of ``(beta n, beta S)``."""

    name = "test_bglasso_tempers_s_only"

    def _sweep(self, omega, X, lam, tau):
        sigma = spd_inverse(omega)
        S = self.beta * gram(X.copy())
        column_sweep(self.rng, Precision(omega, sigma), WishartData(S, float(X.shape[0])),
                     ColumnPrior(lam, tau, self.gamma_shape_offset), 1.0)
        return 0.5 * (omega + omega.T)
