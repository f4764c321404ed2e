"""Exact power posterior and evidence of the NSFA model at D = 2 rows, N = 1 column.

Written from the model's definition (Knowles 2012 Eqs 2.12, 3.1-3.3), independently of
the sampler's kernels. The model is :func:`pp_models.ibp_fa.model` on ``Y = (y_1,
y_2)^T`` with a fixed loading precision ``lambda`` (a float ``loading_prior``), the
noise precisions ``tau_d`` diagonal and either fixed or ``Gamma(a, b)``, and ``alpha``
fixed or ``Gamma(a, b)``. Everything continuous but ``tau`` and ``alpha`` is integrated
in closed form and those two by quadrature, so for each inverse temperature ``beta``
this gives the normaliser ``Z_beta = int p(theta) p(Y | theta)^beta dtheta`` (``Z_1``:
the evidence ``p(Y)``) and the power posterior's expectations of label-invariant
statistics.

Derivation (D = 2, N = 1)
-------------------------
A column of ``Z`` is one of three patterns: ``10`` (row 1 only), ``01`` or ``11``.
Eq. 2.12 at D = 2 gives each used column the factor ``alpha (D - m)! (m - 1)! / D! =
alpha / 2`` for m = 1 and 2, so with ``n_p`` columns of pattern ``p`` (``prod_h K_h! =
n_10! n_01! n_11!``) the classes have probability

    P(n | alpha) = prod_p Poisson(n_p; alpha / 2)        (K+ = sum n_p, alpha H_2 = 1.5 alpha)

and with ``alpha ~ Gamma(a, b)`` integrated,
``P(n) = b^a Gamma(a + K+) / (Gamma(a) (b + 3/2)^(a + K+)) 2^-K+ / prod_p n_p!``,
``E[alpha | n] = (a + K+) / (b + 3/2)``. (The zoo's prior stops at ``K+ <= capacity``;
the capacity of the tests makes the rest negligible and it is applied exactly here.)

The noise precisions are one per row or (``isotropic``) one shared: then the rows
factorise given ``(q_11, tau)`` and ``tau`` is summed over last.

With N = 1, ``X`` is a vector ``x`` and ``(G X)_d = sum_k Z_dk V_dk x_k``. Given ``x``,
the signal of row ``d`` is ``s_d ~ N(0, v_d)`` with ``v_d = sum_{k in row d} x_k^2 /
lambda`` (its loadings integrated), the rows independent. The likelihood to the power
beta, integrated over ``s_d``, is, with ``p = beta tau_d``,

    L_d(v, tau) = int N(s; 0, v) N(y_d; s, 1/tau_d)^beta ds
                = (tau_d / 2 pi)^(beta/2) (1 + p v)^(-1/2) exp(-p y_d^2 / (2 (1 + p v))),

and ``s_d`` given ``(v, tau)`` is then ``N(p v y_d / (1 + p v), v / (1 + p v))``. The
sums ``q_p = sum_{k of pattern p} x_k^2`` are independent chi-square(``n_p``), ``v_1 =
(q_10 + q_11) / lambda``, ``v_2 = (q_01 + q_11) / lambda``: given ``q_11`` the rows
factorise, so

    Z_beta = sum_n P(n) E_q11[ A_1(n_10, q_11) A_2(n_01, q_11) ],
    A_d(n, Q) = E_{q ~ chi2_n} E_{tau_d}[ L_d((q + Q) / lambda, tau_d) ],

each expectation a one-dimensional Gauss rule (generalised Gauss-Laguerre for the
chi-square and Gamma weights). A statistic of row ``d`` (``s_d``, ``s_d^2``, ``tau_d``)
enters as ``h(v, tau) L_d`` in place of ``L_d``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

__all__ = ["NSFAOracle", "nsfa_oracle"]

_STATS = ("one", "s", "s2", "tau")


def _gamma_rule(shape: float, rate: float, n: int):
    """Nodes and weights with ``sum w f(x) ~ E[f(X)]``, ``X ~ Gamma(shape, rate)``."""
    t, w = special.roots_genlaguerre(n, shape - 1.0)
    return t / rate, w / special.gamma(shape)


def _chi2_rule(dof: int, n: int):
    if dof == 0:
        return np.zeros(1), np.ones(1)
    x, w = _gamma_rule(dof / 2.0, 0.5, n)
    return x, w


@dataclass(frozen=True)
class NSFAOracle:
    """What :func:`nsfa_oracle` computed at one ``beta``."""

    beta: float
    log_normaliser: float  # log Z_beta; at beta = 1 the log evidence log p(Y)
    class_probability: np.ndarray  # (n_max+1,)^3 over (n_10, n_01, n_11)
    mean: dict  # exact expectations of the statistics (see statistics())
    sd: dict  # exact standard deviations where known


def _row_tables(y, beta, lam, tau_nodes, Q, n_max, n_quad):
    """``E_q[h L_d((q + Q_j) / lambda, tau_i)]`` for n = 0..n_max, every Q node and tau
    node, h in _STATS: (4, n_max+1, |Q|, |tau|)."""
    out = np.zeros((len(_STATS), n_max + 1, Q.size, tau_nodes.size))
    tau = tau_nodes[None, None, :]
    for n in range(n_max + 1):
        q, wq = _chi2_rule(n, n_quad)
        v = (q[:, None] + Q[None, :])[..., None] / lam  # (q, Q, 1)
        p = beta * tau
        one_pv = 1.0 + p * v
        L = (tau / (2 * np.pi)) ** (beta / 2) * one_pv ** -0.5 * np.exp(
            -p * y * y / (2.0 * one_pv))
        mean_s = p * v * y / one_pv
        var_s = v / one_pv
        hs = {"one": 1.0, "s": mean_s, "s2": mean_s ** 2 + var_s, "tau": tau}
        for i, name in enumerate(_STATS):
            out[i, n] = np.tensordot(wq, hs[name] * L, axes=(0, 0))
    return out


def nsfa_oracle(y, beta: float, *, lam: float, noise, alpha, capacity: int,
                isotropic: bool = False, n_max: int = 12, n_quad: int = 32) -> NSFAOracle:
    """The power posterior of the D = 2, N = 1 NSFA model (module docstring).

    Parameters
    ----------
    y : (2,) the data column
    beta : inverse temperature in [0, 1]
    lam : the fixed loading precision
    noise : float (fixed tau_1 = tau_2) or (a, b), tau_d ~ Gamma(a, rate b)
    isotropic : one noise precision for both rows (else one per row)
    alpha : float (fixed) or (a, b), alpha ~ Gamma(a, rate b)
    capacity : the model's slots (classes with K+ > capacity have prior 0)
    n_max : largest count per pattern summed over (the classes beyond have
        negligible mass for the tests' settings; checked by the tests)
    n_quad : nodes of each Gauss rule
    """
    y = np.asarray(y, dtype=np.float64)
    if isinstance(noise, tuple):
        tau_nodes, tau_weights = _gamma_rule(noise[0], noise[1], n_quad)
    else:
        tau_nodes, tau_weights = np.array([float(noise)]), np.ones(1)

    n = np.arange(n_max + 1)
    n10, n01, n11 = np.meshgrid(n, n, n, indexing="ij")
    K = n10 + n01 + n11
    log_fact = special.gammaln(n10 + 1) + special.gammaln(n01 + 1) + special.gammaln(n11 + 1)
    if isinstance(alpha, tuple):
        a, b = alpha
        log_prior = (a * np.log(b) + special.gammaln(a + K) - special.gammaln(a)
                     - (a + K) * np.log(b + 1.5) - K * np.log(2.0) - log_fact)
        alpha_given_n = (a + K) / (b + 1.5)
        alpha_sq_given_n = (a + K) * (a + K + 1) / (b + 1.5) ** 2
    else:
        al = float(alpha)
        log_prior = -1.5 * al + K * np.log(al / 2.0) - log_fact
        alpha_given_n = np.full(K.shape, al)
        alpha_sq_given_n = alpha_given_n ** 2
    log_prior = np.where(K <= capacity, log_prior, -np.inf)

    # per n_11: its chi-square nodes Q, the rows' tables at those nodes, the sum over Q
    W = np.zeros((len(_STATS), 2, n_max + 1, n_max + 1, n_max + 1))  # stat, row, n10, n01, n11
    for m in range(n_max + 1):
        Q, wQ = _chi2_rule(m, n_quad)
        T1 = _row_tables(y[0], beta, lam, tau_nodes, Q, n_max, n_quad)
        T2 = _row_tables(y[1], beta, lam, tau_nodes, Q, n_max, n_quad)
        for i in range(len(_STATS)):
            # row 1's statistic times row 2's likelihood, and the other way round; the
            # rows share tau when isotropic, else each has its own
            if isotropic:
                W[i, 0, :, :, m] = np.einsum("ajt,bjt,j,t->ab", T1[i], T2[0], wQ, tau_weights)
                W[i, 1, :, :, m] = np.einsum("ajt,bjt,j,t->ab", T1[0], T2[i], wQ, tau_weights)
            else:
                A1, A2 = T1 @ tau_weights, T2 @ tau_weights
                W[i, 0, :, :, m] = np.einsum("aj,bj,j->ab", A1[i], A2[0], wQ)
                W[i, 1, :, :, m] = np.einsum("aj,bj,j->ab", A1[0], A2[i], wQ)
    log_w = np.log(W[0, 0]) + log_prior
    shift = log_w[np.isfinite(log_w)].max()
    joint = np.exp(log_w - shift)
    Zs = joint.sum()
    prob = joint / Zs
    log_norm = float(np.log(Zs) + shift)

    def expect(values):
        return float(np.sum(prob * values))

    mean, sd = {}, {}
    for name, values in (("n10", n10), ("n01", n01), ("n11", n11), ("K", K)):
        mean[name] = expect(values)
        sd[name] = float(np.sqrt(max(expect(values ** 2) - mean[name] ** 2, 0.0)))
    mean["alpha"] = expect(alpha_given_n)
    sd["alpha"] = float(np.sqrt(max(expect(alpha_sq_given_n) - mean["alpha"] ** 2, 0.0)))
    base = W[0, 0]
    ratio = np.divide(W, base, out=np.zeros_like(W), where=base > 0)
    for d in range(2):
        mean[f"s{d + 1}"] = expect(ratio[1, d])
        mean[f"s{d + 1}^2"] = expect(ratio[2, d])
        mean[f"tau{d + 1}"] = expect(ratio[3, d])
        sd[f"s{d + 1}"] = float(np.sqrt(max(mean[f"s{d + 1}^2"] - mean[f"s{d + 1}"] ** 2, 0)))
    return NSFAOracle(beta=float(beta), log_normaliser=log_norm, class_probability=prob,
                      mean=mean, sd=sd)
