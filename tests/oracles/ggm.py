"""Exact power posterior of a two-variable Gaussian graphical model, by quadrature.

Written from the models' densities (Wang 2012 Eq. 2; Wang 2015 Eq. 3), independently of
the samplers. ``Omega = [[a, c], [c, b]]``, the data's Gram matrix ``S`` of ``n``
observations, the likelihood to the power beta::

    p(X | Omega)^beta ∝ (a b - c^2)^(beta n / 2) exp(-beta (s11 a + s22 b + 2 s12 c) / 2),

the prior ``Exp(a; lam/2) Exp(b; lam/2) g(c) 1[a b > c^2]`` with ``g`` the Laplace
density of rate ``lam`` (graphical lasso) or ``pi N(0, v1^2) + (1 - pi) N(0, v0^2)``
(spike and slab, the edge indicator summed out; its joint truncation to the PD cone
leaves this mixture, Wang 2015). With ``c = r sqrt(a b)``, ``r`` in (-1, 1)::

    density ∝ e^{-(lam + beta s11) a / 2} e^{-(lam + beta s22) b / 2} (a b)^{beta n / 2 + 1/2}
              (1 - r^2)^{beta n / 2} g(r sqrt(a b)) e^{-beta s12 r sqrt(a b)},

integrated by generalised Gauss-Laguerre rules in ``a`` and ``b`` and, in ``r``, on
each half (the Laplace density has a kink at 0) a Gauss-Legendre rule on ``[0, rho]``
(where the spike's mass sits) and a Gauss-Jacobi rule with weight ``(1 - r)^(beta n/2)``
on ``[rho, 1]``.
"""

from __future__ import annotations

import numpy as np
from scipy import special

__all__ = ["ggm2_oracle"]


def _laguerre(power: float, rate: float, n: int):
    """Nodes x and weights w with sum w f(x) ~ int_0^inf x^power e^{-rate x} f(x) dx."""
    u, w = special.roots_genlaguerre(n, power)
    return u / rate, w / rate ** (power + 1)


def ggm2_oracle(S, n: int, beta: float, *, prior: str, lam: float, v0=None, v1=None,
                pi=None, n_quad: int = 60) -> dict:
    """Expectations under the power posterior (module docstring) of ``a``, ``b``, ``c``,
    ``c^2``, ``a^2``, ``det Omega``, the partial correlation ``-c / sqrt(a b)`` and, for
    the spike and slab, ``P(z = 1 | c)``."""
    S = np.asarray(S, dtype=np.float64)
    k = beta * n / 2.0
    a, wa = _laguerre(k + 0.5, (lam + beta * S[0, 0]) / 2.0, n_quad)
    b, wb = _laguerre(k + 0.5, (lam + beta * S[1, 1]) / 2.0, n_quad)
    # r in (0, rho): Gauss-Legendre with (1 - r^2)^k in the integrand; r in (rho, 1):
    # r = rho + (1 - rho)(1 + t)/2, 1 - r = (1 - rho)(1 - t)/2, weight (1 - t)^k
    rho = 0.2
    x, wx = special.roots_legendre(n_quad)
    r_in = rho * (1.0 + x) / 2.0
    w_in = wx * rho / 2.0 * (1.0 - r_in ** 2) ** k
    t, wt = special.roots_jacobi(n_quad, k, 0.0)
    r_out = rho + (1.0 - rho) * (1.0 + t) / 2.0
    w_out = wt * ((1.0 - rho) / 2.0) ** (k + 1) * (1.0 + r_out) ** k
    r_half = np.concatenate([r_in, r_out])
    w_half = np.concatenate([w_in, w_out])
    r = np.concatenate([-r_half, r_half])
    wr = np.concatenate([w_half, w_half])
    A, B, R = np.meshgrid(a, b, r, indexing="ij")
    W = wa[:, None, None] * wb[None, :, None] * wr[None, None, :]
    root = np.sqrt(A * B)
    C = R * root
    if prior == "bglasso":
        log_g = -lam * np.abs(C)
    elif prior == "spike_slab":
        log_slab = np.log(pi / v1) - 0.5 * C ** 2 / v1 ** 2
        log_spike = np.log((1.0 - pi) / v0) - 0.5 * C ** 2 / v0 ** 2
        log_g = np.logaddexp(log_slab, log_spike)
        inclusion = special.expit(log_slab - log_spike)
    else:
        raise ValueError(prior)
    log_f = log_g - beta * S[0, 1] * C
    f = W * np.exp(log_f - log_f.max())
    Z = f.sum()
    stats = {"a": A, "b": B, "c": C, "c^2": C ** 2, "a^2": A ** 2,
             "det": A * B * (1.0 - R ** 2), "partial_corr": -R}
    if prior == "spike_slab":
        stats["inclusion"] = inclusion
    return {name: float((f * value).sum() / Z) for name, value in stats.items()}
