"""The DP mixture's pointwise log-likelihood (for LOO) and posterior predictive draws
(``inference.log_likelihood``, ``inference.predictive``).

Pointwise log-likelihood of row ``i`` at each posterior draw:

- **collapsed CRP** (conjugate likelihoods): the conditional density of the row given the
  other rows' tables and the tables' parameters,

  ``log p(x_i | z_{-i}, theta, alpha) = log [ sum_k (n_{k,-i} - d) F(x_i | theta_k)
  + (alpha + K_{-i} d) int F(x_i | t) G0(dt) ] - log(n - 1 + alpha)``

  (the row's table summed out under the CRP given the others, Pitman 2006 Eq. 3.6 with
  discount ``d``; ``K_{-i}`` the tables the others occupy; the new table by the prior
  predictive), where each table's ``theta_k`` is drawn once per posterior draw from its
  conjugate posterior given the draw's partition and the data. ``(z, theta)`` is then a
  draw of the joint posterior and ``phi_i = (z_{-i}, theta_{tables of z_{-i}}, alpha)`` one
  of ``p(phi_i | X)``, with ``p(phi_i | X) ∝ p(phi_i | X_{-i}) p(x_i | phi_i)``: the
  importance ratio ``1 / p(x_i | phi_i)`` is exact for leave-one-out (Gelfand, Dey &
  Chang 1992; the non-factorised form ``p(y_i | y_{-i}, phi)`` of Bürkner, Gabry &
  Vehtari 2021, Eq. 6), as it is for the fully collapsed ``p(x_i | z_{-i}, X_{-i})``.
  The collapsed term is a function of the partition alone, so on a posterior that
  visits a few partitions it takes a few values per row and PSIS cannot fit its tail
  ("All tail values are the same", or Pareto k above 1); the drawn ``theta`` makes the
  term continuous. The draws use the fixed seed :data:`PARAMETER_SEED`, so the term
  is a function of the posterior draws. Learned base-measure hyperparameters and a
  random ``alpha`` are read at each draw's values;
- **stick-breaking**: the mixture density ``log sum_k w_k F(x_i | theta_k)``;
- **non-conjugate CRP** (``"normal"``, ``"poisson"``): ``log F(x_i | theta_{z_i})``, the
  row given its table's sampled parameters.

Posterior predictive: one replicate of every row per draw. Collapsed CRP: each table's
parameters drawn from their conjugate posterior given the draw's partition and the data,
then its rows (the collapsed distribution's own forward draw samples them from the
prior); stick-breaking: a component from ``w``, then the row; non-conjugate CRP: PyMC's
forward draw given ``z`` and the slot parameters (``None`` here).
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy import special, stats

from custom_ops import conjugate as cj
from custom_ops.dpm.collapsed import (
    draw_bernoulli,
    draw_diag_gaussian,
    draw_gaussian,
    draw_multinomial,
)
from custom_ops.dpm.predictive import (
    CRPDraws,
    conjugate_log_predictive_rows,
    crp_conditional_log_likelihood,
)
from pp_models.dpm.hyperpriors import learned_hyperparameters, learned_variable_names
from pp_models.dpm.spec import CONJUGATE, get_spec
from pp_models.model_info import draws_dataset, row_dim

__all__ = [
    "PARAMETER_SEED",
    "conditional_log_likelihood",
    "draw_from_posterior",
    "pointwise_log_likelihood",
    "posterior_predictive",
]

#: seed of the tables' parameter draws in the collapsed CRP's pointwise term (module
#: docstring): the same posterior gives the same ``log_likelihood`` group
PARAMETER_SEED = 20100

#: the stick-breaking form's component parameters, per likelihood
_SB_PARAMS = {"diag_gaussian": ("mu", "sigma"), "normal": ("mu", "sigma"),
              "bernoulli": ("p",), "multinomial": ("p",), "poisson": ("rate",)}


def _spec(model):
    spec = get_spec(model)
    if spec is None:
        raise ValueError("model must be built by pp_models.dpm.model")
    return spec


def _flat(posterior: xr.Dataset, name: str) -> np.ndarray:
    if name not in posterior.data_vars:
        raise ValueError(f"the posterior lacks {name!r}, which the DP mixture's pointwise "
                         "log-likelihood and replicates need (var_names)")
    values = np.asarray(posterior[name].values)
    return values.reshape(-1, *values.shape[2:])


def _alphas(posterior, spec, size) -> np.ndarray:
    if "alpha" in posterior.data_vars:
        return _flat(posterior, "alpha").astype(np.float64)
    return np.full(size, float(spec.alpha))


def _hyper_per_draw(posterior, spec, size) -> list[dict]:
    """The base measure's hyperparameters at each (flattened) draw."""
    if not spec.hyperprior:
        return [spec.prior]
    learned = {v: _flat(posterior, v).astype(np.float64) for v in learned_variable_names(spec)}
    return [learned_hyperparameters(spec, {v: a[s] for v, a in learned.items()})
            for s in range(size)]


def _shape(posterior) -> tuple[int, int]:
    return posterior.sizes["chain"], posterior.sizes["draw"]


def pointwise_log_likelihood(posterior: xr.Dataset, model) -> xr.Dataset:
    """``{"X": (chain, draw, obs)}``, the per-row term of the module docstring."""
    spec = _spec(model)
    X = np.ascontiguousarray(spec.X, dtype=np.float64)
    chains, draws = _shape(posterior)
    if spec.truncation is not None:
        out = _stick_breaking_log_likelihood(posterior, spec, X)
    elif spec.likelihood in CONJUGATE:
        z = _flat(posterior, "z").astype(np.int64)
        hyper = _hyper_per_draw(posterior, spec, z.shape[0])
        out = conditional_log_likelihood(
            spec.likelihood, X, z, _alphas(posterior, spec, z.shape[0]), spec.discount,
            hyper, np.random.default_rng(PARAMETER_SEED))
    else:
        out = _nonconjugate_log_likelihood(posterior, spec, X)
    return draws_dataset(posterior, model, "X", out.reshape(chains, draws, -1),
                         dims=(row_dim(model, "X"),))


def conditional_log_likelihood(likelihood: str, X: np.ndarray, labels: np.ndarray,
                               alphas: np.ndarray, discount: float, hyper: list[dict],
                               rng: np.random.Generator) -> np.ndarray:
    """``(S, n)`` ``log p(x_i | z_{-i}, theta, alpha)`` of the module docstring, the
    tables' parameters drawn from their conjugate posterior with ``rng``
    (:func:`custom_ops.dpm.predictive.crp_conditional_log_likelihood`).

    Parameters
    ----------
    likelihood : str
        A conjugate likelihood (``pp_models.dpm.CONJUGATE``).
    X : (n, d) array
        The data.
    labels : (S, n) int array
        Each draw's table labels (any non-negative integers).
    alphas : (S,) array
        Each draw's concentration.
    discount : float
        The Pitman-Yor discount (0: Dirichlet process).
    hyper : list of dict
        The base measure's hyperparameters (``spec.prior``'s keys), one per draw or one
        for all.
    rng : numpy.random.Generator
        The parameters' draws.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    family = cj.FAMILIES[likelihood]
    code = cj.FAMILY_CODES[likelihood]
    hps = np.ascontiguousarray(np.stack(
        [cj.pack_hyper(likelihood, [h[k] for k in family.hyper_names]) for h in hyper]))
    empty = np.zeros(family.stats_size(X.shape[1]))
    # a new table's term: each row's prior predictive, per draw's hyperparameters
    log_new = np.stack([conjugate_log_predictive_rows(code, X, empty, hp, np.empty(len(X)))
                        for hp in hps])
    labels = np.ascontiguousarray(labels, dtype=np.int64)
    out = np.empty(labels.shape)
    draws = CRPDraws(labels, np.ascontiguousarray(alphas, dtype=np.float64), hps, log_new)
    crp_conditional_log_likelihood(code, X, draws, float(discount), rng, out)
    return out


def _component_logpdf(likelihood, X, params) -> np.ndarray:
    """(n, K) log F(x_i | theta_k) for one draw's (K, d) parameter arrays."""
    if likelihood in ("diag_gaussian", "normal"):
        mu, sigma = params
        return stats.norm.logpdf(X[:, None, :], mu[None], sigma[None]).sum(-1)
    if likelihood == "bernoulli":
        (p,) = params
        return (X[:, None, :] * np.log(p)[None]
                + (1 - X[:, None, :]) * np.log1p(-p)[None]).sum(-1)
    if likelihood == "multinomial":
        (p,) = params
        coef = special.gammaln(X.sum(1) + 1) - special.gammaln(X + 1).sum(1)
        return special.xlogy(X[:, None, :], p[None]).sum(-1) + coef[:, None]
    (rate,) = params
    return stats.poisson.logpmf(X[:, None, :], rate[None]).sum(-1)


def _stick_breaking_log_likelihood(posterior, spec, X) -> np.ndarray:
    names = _SB_PARAMS.get(spec.likelihood)
    if names is None:
        raise NotImplementedError(f"the stick-breaking {spec.likelihood!r} DP mixture has "
                                  "no pointwise log-likelihood here yet")
    w = _flat(posterior, "w")
    params = [_flat(posterior, p) for p in names]
    out = np.empty((w.shape[0], X.shape[0]))
    for s in range(w.shape[0]):
        comp = _component_logpdf(spec.likelihood, X, [p[s] for p in params])
        with np.errstate(divide="ignore"):
            out[s] = special.logsumexp(comp + np.log(w[s])[None, :], axis=1)
    return out


def _nonconjugate_log_likelihood(posterior, spec, X) -> np.ndarray:
    z = _flat(posterior, "z").astype(np.int64)
    names = ("mu", "sigma") if spec.likelihood == "normal" else ("rate",)
    params = [_flat(posterior, p) for p in names]
    out = np.empty(z.shape)
    for s in range(z.shape[0]):
        theta = [p[s][z[s]] for p in params]  # (n, d): each row's table's parameters
        if spec.likelihood == "normal":
            out[s] = stats.norm.logpdf(X, theta[0], theta[1]).sum(1)
        else:
            out[s] = stats.poisson.logpmf(X, theta[0]).sum(1)
    return out


def posterior_predictive(posterior: xr.Dataset, model, rng) -> xr.Dataset | None:
    """``{"X": (chain, draw, obs, feature)}``, one replicate per draw (module docstring);
    ``None`` for the non-conjugate CRP (PyMC's forward draw is its posterior
    predictive)."""
    spec = _spec(model)
    X = np.ascontiguousarray(spec.X, dtype=np.float64)
    chains, draws = _shape(posterior)
    if spec.truncation is not None:
        out = _stick_breaking_replicates(posterior, spec, X, rng)
    elif spec.likelihood in CONJUGATE:
        z = _flat(posterior, "z").astype(np.int64)
        hyper = _hyper_per_draw(posterior, spec, z.shape[0])
        out = np.empty((z.shape[0], *X.shape))
        for s in range(z.shape[0]):
            h = hyper[s] if len(hyper) > 1 else hyper[0]
            for k in np.unique(z[s]):
                rows = np.flatnonzero(z[s] == k)
                out[s, rows] = draw_from_posterior(spec.likelihood, rng, X[rows], h,
                                                   len(rows), n_trials=X[rows].sum(1))
    else:
        return None
    return draws_dataset(posterior, model, "X", out.reshape(chains, draws, *X.shape))


def draw_from_posterior(likelihood: str, rng, data: np.ndarray, hyper: dict, size: int, *,
                        n_trials=None) -> np.ndarray:
    """``size`` rows drawn together from the conjugate posterior predictive of ``data``:
    the component's parameters from their posterior given ``data`` (rows of one cluster)
    under the prior ``hyper`` (``spec.prior``'s keys), then the rows given them.
    ``n_trials``: each row's total count (multinomial)."""
    names = cj.FAMILIES[likelihood].hyper_names
    post = cj.posterior_parameters(
        likelihood, cj.FAMILIES[likelihood].stats(np.ascontiguousarray(data, dtype=np.float64)),
        tuple(hyper[k] for k in names))
    d = len(np.atleast_1d(hyper[names[0]]))
    out = np.empty((size, d))
    labels = np.zeros(size, dtype=np.int64)
    if likelihood == "gaussian":
        draw_gaussian(rng, labels, post["m"], float(post["kappa"]), float(post["nu"]),
                      np.ascontiguousarray(post["S"]), out)
    elif likelihood == "diag_gaussian":
        draw_diag_gaussian(rng, labels, *(np.ascontiguousarray(np.broadcast_to(
            np.asarray(post[k], dtype=np.float64), (d,))) for k in ("m", "kappa", "a", "b")),
            out)
    elif likelihood == "bernoulli":
        draw_bernoulli(rng, labels, np.ascontiguousarray(post["a"]),
                       np.ascontiguousarray(post["b"]), out)
    else:
        draw_multinomial(rng, labels, np.ascontiguousarray(post["concentration"]),
                         np.ascontiguousarray(n_trials, dtype=np.float64), out)
    return out


def _stick_breaking_replicates(posterior, spec, X, rng) -> np.ndarray:
    names = _SB_PARAMS.get(spec.likelihood)
    if names is None:
        raise NotImplementedError(f"the stick-breaking {spec.likelihood!r} DP mixture has "
                                  "no posterior predictive here yet")
    w = _flat(posterior, "w")
    params = [_flat(posterior, p) for p in names]
    n, d = X.shape
    out = np.empty((w.shape[0], n, d))
    for s in range(w.shape[0]):
        weights = w[s] / w[s].sum()
        k = rng.choice(weights.size, size=n, p=weights)
        theta = [p[s][k] for p in params]  # (n, d)
        if spec.likelihood in ("diag_gaussian", "normal"):
            out[s] = rng.normal(theta[0], theta[1])
        elif spec.likelihood == "bernoulli":
            out[s] = rng.random((n, d)) < theta[0]
        elif spec.likelihood == "multinomial":
            out[s] = np.stack([rng.multinomial(int(t), p / p.sum())
                               for t, p in zip(X.sum(1), theta[0], strict=True)])
        else:
            out[s] = rng.poisson(theta[0])
    return out
