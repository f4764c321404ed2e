"""Chain stacking: weights for chains that stay in separate modes.

When every chain is stationary but the chains disagree (``check_convergence``'s
``multimodal`` verdict), pooling them weighs each mode by the number of chains that
happened to land there. Stacking (Yao, Vehtari & Gelman 2022, "Stacking for non-mixing
Bayesian computations: the curse and blessing of multimodal posteriors", JMLR 23(79))
weighs the chains by how well each predicts left-out data instead: with
``elpd[i, k]`` the PSIS-LOO log predictive density of observation i from chain k's
draws alone (Vehtari, Gelman & Gabry 2017, Eqs. 7-10; Pareto smoothing with the tail
length of independent draws, r_eff = 1), the weights maximise

    sum_i log sum_k w_k exp(elpd[i, k])   over the simplex (their Eq. 3),

a concave objective in the weights, maximised here on the simplex by sequential
quadratic programming with its gradient.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import optimize
from scipy.special import logsumexp

from pp_models.validation import rng_from_seed

__all__ = [
    "ChainStacking",
    "chain_loo",
    "saved_stacking_text",
    "stack_chains",
    "stacking_attrs",
    "stacking_weights",
]


@dataclass(frozen=True)
class ChainStacking:
    """The stacking of a run's chains.

    Attributes
    ----------
    weights : numpy.ndarray
        One weight per chain, non-negative, summing to 1.
    elpd : numpy.ndarray
        ``(n_observations, n_chains)`` pointwise PSIS-LOO log predictive densities of
        each chain.
    pareto_k : numpy.ndarray
        ``(n_observations, n_chains)`` Pareto k of each chain's importance weights
        (above 0.7: that chain's LOO term for the observation is unreliable).
    posterior : xarray.DataTree
        The stacked posterior: one chain of ``n_chains * n_draws`` draws, chain k's draws
        resampled (uniformly, with replacement) ``round(weights[k] * n_chains * n_draws)``
        times (largest remainders), every group with (chain, draw) dims resampled alike.
    """

    weights: np.ndarray
    elpd: np.ndarray
    pareto_k: np.ndarray
    posterior: xr.DataTree

    def __str__(self) -> str:
        return _stacking_text(
            self.weights,
            self.elpd.sum(axis=0),
            int(np.sum(self.pareto_k > 0.7)),
            self.pareto_k.size,
        )


_WEIGHTS_ATTR = "pp_models_chain_stacking_weights"
_ELPD_ATTR = "pp_models_chain_stacking_elpd_loo"
#: [per-chain LOO terms with Pareto k > 0.7, all per-chain LOO terms]
_PARETO_ATTR = "pp_models_chain_stacking_pareto_k_above_0_7"


def _stacking_text(weights, elpd_sums, k_bad: int, k_total: int) -> str:
    lines = ["Chain stacking weights (Yao, Vehtari & Gelman 2022; per-chain PSIS-LOO):"]
    for k, (w, e) in enumerate(zip(weights, elpd_sums, strict=True)):
        lines.append(f"  chain {k}: weight {w:.3f}, elpd_loo {e:.1f}")
    if k_bad:
        lines.append(
            f"  ({k_bad} of {k_total} per-chain LOO terms have "
            "Pareto k > 0.7: those chains' LOO estimates are unreliable)"
        )
    return "\n".join(lines)


def stacking_attrs(weights, elpd, pareto_k) -> dict:
    """The weights, each chain's ``elpd_loo`` and its Pareto k count as attributes of a
    saved result, so a check of the file prints them without the pointwise
    log-likelihood (:func:`saved_stacking_text` reads them back).

    Parameters
    ----------
    weights : array_like
        ``(n_chains,)``, from :func:`stacking_weights`.
    elpd, pareto_k : array_like
        ``(n_observations, n_chains)``, from :func:`chain_loo`.
    """
    elpd, pareto_k = np.asarray(elpd, dtype=float), np.asarray(pareto_k, dtype=float)
    return {
        _WEIGHTS_ATTR: [float(w) for w in weights],
        _ELPD_ATTR: [float(e) for e in elpd.sum(axis=0)],
        _PARETO_ATTR: [int(np.sum(pareto_k > 0.7)), int(pareto_k.size)],
    }


def saved_stacking_text(dt: xr.DataTree) -> str | None:
    """The chain stacking weights a result was saved with (:func:`stacking_attrs`,
    as ``ppzoo fit`` saves a ``multimodal`` run), as :class:`ChainStacking` prints them;
    None when it has none."""
    if _WEIGHTS_ATTR not in dt.attrs:
        return None
    weights = np.atleast_1d(np.asarray(dt.attrs[_WEIGHTS_ATTR], dtype=float))
    elpd = np.atleast_1d(np.asarray(dt.attrs[_ELPD_ATTR], dtype=float))
    k_bad, k_total = (int(v) for v in np.asarray(dt.attrs[_PARETO_ATTR]))
    return _stacking_text(weights, elpd, k_bad, k_total)


def chain_loo(dt: xr.DataTree, *, var_name: str | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise PSIS-LOO of each chain alone.

    Parameters
    ----------
    dt : xarray.DataTree
        With a ``log_likelihood`` group (``fit(..., log_likelihood=True)``,
        ``inference.compute_log_likelihood``).
    var_name : str, optional
        The observed variable; needed when the group holds several.

    Returns
    -------
    elpd, pareto_k : numpy.ndarray
        Both ``(n_observations, n_chains)``.
    """
    import arviz_stats  # noqa: F401  (registers the .azstats accessor)

    if not isinstance(dt, xr.DataTree) or "log_likelihood" not in dt.children:
        raise ValueError(
            "dt has no 'log_likelihood' group: fit with "
            "fit(..., log_likelihood=True) or add one with "
            "inference.compute_log_likelihood(dt, model)"
        )
    group = dt["log_likelihood"].to_dataset()
    names = list(group.data_vars)
    if var_name is None:
        if len(names) != 1:
            raise ValueError(
                f"var_name: the log_likelihood group holds {', '.join(names)}; name one"
            )
        var_name = names[0]
    elif var_name not in names:
        raise ValueError(
            f"var_name: {var_name!r} is not in the log_likelihood group ({', '.join(names)})"
        )
    log_lik = group[var_name]
    n_chains = log_lik.sizes.get("chain", 0)
    if n_chains < 2:
        raise ValueError("stacking chains needs at least 2 chains")
    other = [d for d in log_lik.dims if d not in ("chain", "draw")]
    log_lik = log_lik.stack(_obs=other) if other else log_lik.expand_dims("_obs", axis=-1)
    elpd, pareto_k = [], []
    for c in range(n_chains):
        one = log_lik.isel(chain=[c])
        with warnings.catch_warnings():
            # a large Pareto k is returned, and said in ChainStacking's text
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", RuntimeWarning)
            # PSIS of the leave-one-out ratios 1 / p(y_i | theta): the accessor takes the
            # log-likelihood and returns normalised log weights, as arviz_stats.loo uses it
            log_weights, k = one.azstats.psislw(dim=["chain", "draw"], r_eff=1.0)
        terms = (log_weights + one).transpose("_obs", "chain", "draw").values
        elpd.append(logsumexp(terms.reshape(terms.shape[0], -1), axis=1))
        pareto_k.append(np.asarray(k.transpose("_obs").values, dtype=np.float64))
    return np.stack(elpd, axis=1), np.stack(pareto_k, axis=1)


def stacking_weights(elpd) -> np.ndarray:
    """Weights on the simplex maximising ``sum_i log sum_k w_k exp(elpd[i, k])``.

    Parameters
    ----------
    elpd : array_like
        ``(n_observations, n_candidates)`` pointwise log predictive densities.

    Returns
    -------
    numpy.ndarray
        ``(n_candidates,)``, non-negative, summing to 1.
    """
    elpd = np.asarray(elpd, dtype=np.float64)
    if elpd.ndim != 2 or elpd.shape[1] < 1 or elpd.shape[0] < 1:
        raise ValueError("elpd must be a (n_observations, n_candidates) array")
    if not np.all(np.isfinite(elpd)):
        raise ValueError("elpd must be finite")
    k = elpd.shape[1]
    if k == 1:
        return np.ones(1)
    # exp(elpd - row max) keeps the mixture densities in range; the shift is a constant
    dens = np.exp(elpd - elpd.max(axis=1, keepdims=True))

    n = elpd.shape[0]

    def negative(w):
        mix = np.maximum(dens @ w, _TINY)
        return -np.sum(np.log(mix)) / n, -(dens / mix[:, None]).sum(axis=0) / n

    # the objective is concave in w: SLSQP on the simplex (bounds and sum = 1) reaches
    # its maximum; the few candidates (chains) keep each step cheap
    result = optimize.minimize(
        negative,
        np.full(k, 1.0 / k),
        jac=True,
        method="SLSQP",
        bounds=[(0.0, 1.0)] * k,
        constraints=[
            {"type": "eq", "fun": lambda w: np.sum(w) - 1.0, "jac": lambda w: np.ones_like(w)}
        ],
        options={"ftol": 1e-14, "maxiter": 1000},
    )
    w = np.clip(result.x, 0.0, None)
    return w / w.sum()


#: Floor of a mixture density (after the rows' shift), so a weight at 0 on the only
#: candidate that predicts an observation gives a large finite penalty, not log(0).
_TINY = 1e-300


def stack_chains(
    dt: xr.DataTree, *, var_name: str | None = None, random_seed=None
) -> ChainStacking:
    """Stacking weights of a run's chains and the stacked posterior.

    Parameters
    ----------
    dt : xarray.DataTree
        A fit with a ``log_likelihood`` group of at least 2 chains.
    var_name : str, optional
        The observed variable, when the ``log_likelihood`` group holds several.
    random_seed : int, optional
        Seeds the resampling of the stacked posterior.

    Returns
    -------
    ChainStacking
        ``weights`` per chain, the per-chain pointwise LOO, and ``posterior``: the draws
        resampled by the weights (see :class:`ChainStacking`).
    """
    elpd, pareto_k = chain_loo(dt, var_name=var_name)
    weights = stacking_weights(elpd)
    rng = rng_from_seed(random_seed)
    return ChainStacking(weights, elpd, pareto_k, _resampled(dt, weights, rng))


def _resampled(dt: xr.DataTree, weights: np.ndarray, rng) -> xr.DataTree:
    n_chains, n_draws = dt["log_likelihood"].sizes["chain"], dt["log_likelihood"].sizes["draw"]
    total = n_chains * n_draws
    exact = weights * total
    counts = np.floor(exact).astype(int)
    counts[np.argsort(exact - counts)[::-1][: total - counts.sum()]] += 1
    chain = np.repeat(np.arange(n_chains), counts)
    draw = np.concatenate([rng.integers(0, n_draws, size=m) for m in counts])
    pick = dict(
        chain=xr.DataArray(chain, dims="_stacked"), draw=xr.DataArray(draw, dims="_stacked")
    )
    out = xr.DataTree()
    for node in dt.children.values():
        ds = node.to_dataset()
        if ds.sizes.get("chain") == n_chains and ds.sizes.get("draw") == n_draws:
            ds = ds.drop_vars(["chain", "draw"], errors="ignore").isel(pick)
            ds = ds.rename({"_stacked": "draw"}).expand_dims("chain", axis=0)
            ds = ds.transpose("chain", "draw", ...)
            ds = ds.assign_coords(chain=[0], draw=np.arange(total))
        out[node.name] = xr.DataTree(ds)
    out.attrs.update(
        {k: v for k, v in dt.attrs.items() if k not in (_WEIGHTS_ATTR, _ELPD_ATTR, _PARETO_ATTR)}
    )
    out.attrs["pp_models_stacking_weights"] = [float(w) for w in weights]
    return out
