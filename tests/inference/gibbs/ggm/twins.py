"""Planted-bug twins of the tempered GGM block Gibbs steps."""

from custom_ops.ggm_gibbs import column_sweep, gram
from custom_ops.spd_kernels import spd_inverse
from inference.gibbs.ggm import BGLassoBlockGibbs, SSSLBlockGibbs
from pp_models.validation import check_inverse_temperature


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
        column_sweep(self.rng, omega, sigma, S, float(X.shape[0]), lam, tau, 1.0,
                     self.gamma_shape_offset)
        return 0.5 * (omega + omega.T)
