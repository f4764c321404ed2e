"""Held-out log predictive density: Pitman-Yor diffusion tree vs Dirichlet diffusion tree
vs a DP Gaussian mixture, all through ``inference.fit``.

Data sets (train / test split of one exchangeable sample):

- ``four_clusters``: Knowles (2012) §4.7.1, ``f(x, y) = 1/4 sum N(x; +-1, 1/8)
  N(y; +-1, 1/8)``, D = 2, 100 training and 200 test points.
- ``prior_d5``: data from the DDT prior of §7.7.2 (D = 5, c = 1, sigma2 = 1), 200
  training points and 300 other leaves of the same tree as test points.
- ``prior_pydt``: from the PYDT prior of ``bench_pydt.py`` (c = 1, theta = 1,
  alpha = 0.2, sigma2 = 1), D = 5, 100 training and 300 test leaves of one tree.

Models: ``pydt.model(X)`` (thesis hyperpriors), ``pydt.model(X, binary=True)`` (the DDT),
``dpm`` = the package default ``dpm.model(X)`` (collapsed CRP, Normal-inverse-Wishart
base measure with the data-scaled defaults of ``pp_models.dpm.model``, alpha fixed at 1)
and ``dpm_alpha`` = ``dpm.model(X, alpha=(1, 1))`` (alpha ~ Gamma(1, 1)), all through
``fit(..., method="auto")``. The PYDT/DDT predictive is ``pydt.log_predictive`` (Knowles
§7.6, the new point's position integrated out by quadrature, averaged over posterior
draws); the DPM's is the Chinese-restaurant predictive with conjugate Student-t cluster
predictives, per draw, averaged over draws (the formula of
``pp_models.dpm.outputs.predictive_density``, here at the test points in all D columns).

Printed per data seed: the mean held-out log density per test point with its standard
error over test points, the same from each chain alone (their spread is the Monte Carlo
error of the posterior average), R-hat and bulk ESS of c, theta, alpha, sigma2 and the
number of branch points, and the paired difference to ``dpm`` (the same test points).
Over seeds: the mean of the per-seed paired differences with its standard error over
seeds (data seeds are independent replicates).

Measured (PYDT - dpm per test point, mean over data seeds +- SE over seeds):
four_clusters -0.009 +- 0.033 (seeds 0-4; -0.004 +- 0.010 over seeds 0-19; 4 chains x
(500 + 1000)); prior_pydt +2.39 +- 0.68 and prior_d5 +1.03 +- 0.09 (seeds 0-4, 4 chains x
(250 + 500)). The predictive's Monte Carlo error: the 4 chains' values lie within 0.034
of each other on four_clusters; the old default of 5 sampled positions per draw and 40
draws was 0.02-0.07 nats per point below the quadrature on the same draws.

Usage: python benchmarks/bench_pydt_heldout.py [--data four_clusters prior_d5 prior_pydt]
       [--seeds 0 1 2 3 4] [--draws 150] [--tune 100] [--chains 2]
       [--models pydt ddt dpm dpm_alpha]
"""

from __future__ import annotations

import argparse
import math
import resource
import time

import numpy as np
from scipy.special import logsumexp

from inference import fit
from pp_models import dpm, pydt
from pp_models.dpm.model import get_spec
from pp_models.dpm.outputs import (
    _conjugate_log_pred,
    _posterior_alpha,
    _posterior_hyper,
    _posterior_z,
    _thin_index,
)
from pp_models.pydt.outputs import _log_predictive_per_draw


def four_clusters(seed, n_train=100, n_test=200):
    rng = np.random.default_rng(seed)
    centres = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=float)
    n = n_train + n_test
    X = centres[rng.integers(4, size=n)] + rng.normal(scale=math.sqrt(1 / 8), size=(n, 2))
    return X[:n_train], X[n_train:]


def four_clusters_log_density(X):
    """log f(x) of the generating mixture: the best any model can do on average."""
    centres = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=float)
    sq = ((X[:, None, :] - centres[None]) ** 2).sum(axis=2)
    return logsumexp(-4.0 * sq, axis=1) - math.log(4) + math.log(4 / math.pi)


def _prior_split(seed, n_train, n_test, **params):
    X = pydt.sample_prior(n_train + n_test, dim=5, sigma2=1.0, random_seed=seed,
                          **params)[0].X
    # the leaves of an exchangeable tree: a random split is a train/test split
    perm = np.random.default_rng(seed + 1000).permutation(n_train + n_test)
    return X[perm[:n_train]], X[perm[n_train:]]


def prior_d5(seed, n_train=200, n_test=300):
    return _prior_split(seed, n_train, n_test, c=1.0, theta=0.0, alpha=0.0)


def prior_pydt(seed, n_train=100, n_test=300):
    return _prior_split(seed, n_train, n_test, c=1.0, theta=1.0, alpha=0.2)


DATA = {"four_clusters": four_clusters, "prior_d5": prior_d5, "prior_pydt": prior_pydt}
TRUE_LOG_DENSITY = {"four_clusters": four_clusters_log_density}
MODELS = ["pydt", "ddt", "dpm", "dpm_alpha"]


def _diagnostics(dt, names):
    """R-hat and bulk ESS (ArviZ) of each named posterior quantity."""
    import warnings

    import arviz as az
    import xarray as xr

    out = {}
    post = dt["posterior"]
    for v in names:
        if v not in post or post.sizes["chain"] < 2:
            continue
        da = xr.DataArray(np.asarray(post[v].values, dtype=float), dims=("chain", "draw"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            out[v] = (float(az.rhat(da)), float(az.ess(da, method="bulk")))
    return out


def dpm_log_predictive(dt, m, X_new, max_draws=200):
    """Per test point log p(x* | X) under a collapsed-CRP DP mixture fit: per draw the
    Pitman-Yor seating of a new row times the conjugate (Student-t) cluster predictive,
    averaged over draws (Neal 2000; Murphy 2012 Eq. 25.27)."""
    spec = get_spec(m)
    X = spec.X
    n, d = X.shape
    sel = list(range(d))
    Z = _posterior_z(dt)
    alphas = _posterior_alpha(dt, spec, Z.shape[0])
    hyper_of = _posterior_hyper(dt, spec)
    idx = _thin_index(Z.shape[0], max_draws)
    per_draw = np.empty((idx.size, X_new.shape[0]))
    for j, s in enumerate(idx):
        z = Z[s]
        K = int(z.max()) + 1
        sizes = np.bincount(z, minlength=K)
        a = alphas[s]
        hyper = hyper_of(s)
        terms = [math.log((a + K * spec.discount) / (n + a))
                 + _conjugate_log_pred(spec, X_new, sel, None, hyper)]
        for k in range(K):
            if sizes[k] == 0:
                continue
            terms.append(math.log((sizes[k] - spec.discount) / (n + a))
                         + _conjugate_log_pred(spec, X_new, sel, X[z == k], hyper))
        per_draw[j] = logsumexp(np.stack(terms), axis=0)
    return logsumexp(per_draw, axis=0) - math.log(idx.size)


def _per_chain(dt, function):
    """``function`` applied to each chain of ``dt`` alone (a DataTree of one chain)."""
    import xarray as xr

    out = []
    for c in range(dt["posterior"].sizes["chain"]):
        groups = {}
        for name, node in dt.children.items():
            ds = node.to_dataset()
            groups[name] = ds.isel(chain=[c]) if "chain" in ds.dims else ds
        out.append(function(xr.DataTree.from_dict(groups)))
    return out


def run_model(name, X, X_test, args, seed):
    t0 = time.perf_counter()
    if name in ("dpm", "dpm_alpha"):
        m = dpm.model(X) if name == "dpm" else dpm.model(X, alpha=(1.0, 1.0))
        dt = fit(m, method="auto", draws=args.draws, tune=args.tune, chains=args.chains,
                 cores=1, random_seed=seed, progressbar=False)
        fit_s = time.perf_counter() - t0
        lp = dpm_log_predictive(dt, m, X_test, max_draws=args.pred_draws)
        chains = _per_chain(dt, lambda d: dpm_log_predictive(
            d, m, X_test, max_draws=args.pred_draws).mean())
        Z = _posterior_z(dt)
        extra = {"K": float(np.mean(Z.max(axis=1) + 1))}
        names = ["alpha"]
    else:
        m = pydt.model(X, binary=(name == "ddt"))
        dt = fit(m, method="auto", draws=args.draws, tune=args.tune, chains=args.chains,
                 cores=1, random_seed=seed, progressbar=False)
        fit_s = time.perf_counter() - t0
        # pydt.log_predictive, keeping each draw's term to average per chain too
        chain_of, per_draw = _log_predictive_per_draw(dt, X, X_test, args.positions,
                                                      args.pred_draws, seed)
        lp = logsumexp(per_draw, axis=0) - math.log(per_draw.shape[0])
        chains = [float((logsumexp(per_draw[chain_of == c], axis=0)
                         - math.log(np.count_nonzero(chain_of == c))).mean())
                  for c in np.unique(chain_of)]
        if args.compare_positions:
            # the previous default: k sampled positions per draw, 40 draws
            mc = pydt.log_predictive(dt, X, X_test, n_positions=args.compare_positions,
                                     max_draws=40, random_seed=seed)
            print(f"  {name} sampled-position predictive ({args.compare_positions} per draw, "
                  f"40 draws): {mc.mean():.3f}; quadrature over the same thinning: "
                  f"{pydt.log_predictive(dt, X, X_test, max_draws=40).mean():.3f}",
                  flush=True)
        post = dt["posterior"]
        extra = {v: float(post[v].mean()) for v in ("c", "sigma2", "theta", "alpha")
                 if v in post}
        for v in ("c", "sigma2"):
            draws = post[v].values.reshape(-1)
            extra[v + "_sd"] = float(draws.std(ddof=1))
        for v in ("n_internal", "n_multifurcations"):
            if v in post:
                extra[v] = float(post[v].mean())
        names = ["c", "theta", "alpha", "sigma2", "n_internal"]
    diag = _diagnostics(dt, names)
    return lp, fit_s, time.perf_counter() - t0 - fit_s, extra, chains, diag


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--models", nargs="+", default=["pydt", "dpm"], choices=MODELS)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--draws", type=int, default=150)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--positions", type=int, default=None,
                        help="sample this many positions per draw (default: quadrature)")
    parser.add_argument("--pred-draws", type=int, default=200)
    parser.add_argument("--compare-positions", type=int, default=0,
                        help="also print the sampled-position predictive with this many "
                        "positions per draw")
    args = parser.parse_args(argv)
    results = {}
    for data in args.data:
        for seed in args.seeds:
            X, X_test = DATA[data](seed)
            per_model = {}
            if data in TRUE_LOG_DENSITY:
                lp = TRUE_LOG_DENSITY[data](X_test)
                print(f"{data} seed {seed} true density: {lp.mean():.3f} +- "
                      f"{lp.std(ddof=1) / math.sqrt(lp.size):.3f} per test point", flush=True)
            for name in args.models:
                lp, fit_s, pred_s, extra, chains, diag = run_model(name, X, X_test, args,
                                                                   seed)
                per_model[name] = lp
                se = lp.std(ddof=1) / math.sqrt(lp.size)
                info = ", ".join(f"{k} {v:.3g}" for k, v in extra.items())
                per_chain = " ".join(f"{v:.3f}" for v in chains)
                rhat = ", ".join(f"{k} {r:.3f}/{e:.0f}" for k, (r, e) in diag.items())
                print(f"{data} seed {seed} {name:5s}: held-out log density per point "
                      f"{lp.mean():.3f} +- {se:.3f} (n_test {lp.size}; chains alone "
                      f"{per_chain}); fit {fit_s:.0f} s, predictive {pred_s:.0f} s; {info}; "
                      f"R-hat/bulk ESS: {rhat}", flush=True)
            if "dpm" in per_model:
                for name, lp in per_model.items():
                    if name == "dpm":
                        continue
                    diff = lp - per_model["dpm"]
                    print(f"{data} seed {seed} {name} - dpm: {diff.mean():+.3f} +- "
                          f"{diff.std(ddof=1) / math.sqrt(diff.size):.3f} per test point "
                          "(paired)", flush=True)
            results[(data, seed)] = per_model
        if "dpm" in args.models and len(args.seeds) > 1:
            for name in args.models:
                if name == "dpm":
                    continue
                d = np.array([(results[(data, s)][name] - results[(data, s)]["dpm"]).mean()
                              for s in args.seeds])
                print(f"{data} over {len(d)} seeds: {name} - dpm {d.mean():+.3f} +- "
                      f"{d.std(ddof=1) / math.sqrt(d.size):.3f} per test point (mean of "
                      f"per-seed paired differences, SE over seeds; per seed "
                      f"{' '.join(f'{x:+.3f}' for x in d)})", flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")
    return results


if __name__ == "__main__":
    main()
