"""Held-out log predictive density: Pitman-Yor diffusion tree vs Dirichlet diffusion tree
vs a DP Gaussian mixture, all through ``inference.fit``.

Data sets (train / test split of one exchangeable sample):

- ``four_clusters``: Knowles (2012) §4.7.1, ``f(x, y) = 1/4 sum N(x; +-1, 1/8)
  N(y; +-1, 1/8)``, D = 2, 100 training and 200 test points.
- ``prior_d5``: data from the DDT prior of §7.7.2 (D = 5, c = 1, sigma2 = 1), 200
  training points and the next 100 leaves of the same tree as test points.

Models: ``pydt.model(X)`` (thesis hyperpriors), ``pydt.model(X, binary=True)`` (the DDT)
and ``dpm.model(X, likelihood="gaussian", alpha=(1, 1))`` (collapsed CRP with a
Normal-inverse-Wishart base measure, alpha ~ Gamma(1, 1)). The PYDT/DDT predictive is
``pydt.log_predictive`` (Knowles §7.6); the DPM's is the Chinese-restaurant predictive
with conjugate Student-t cluster predictives, per draw, averaged over draws (the
formula of ``pp_models.dpm.outputs.predictive_density``, here at the test points in all
D columns).

Printed: the mean held-out log density per test point with its standard error over test
points, and the paired difference to the DPM with its standard error (the same test
points). Fitted hyperparameters are printed too (c and sigma2 against the truth on
``prior_d5``).

Usage: python benchmarks/bench_pydt_heldout.py [--data four_clusters prior_d5]
       [--seeds 0] [--draws 150] [--tune 100] [--models pydt ddt dpm]
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


def four_clusters(seed, n_train=100, n_test=200):
    rng = np.random.default_rng(seed)
    centres = np.array([[-1, -1], [-1, 1], [1, -1], [1, 1]], dtype=float)
    n = n_train + n_test
    X = centres[rng.integers(4, size=n)] + rng.normal(scale=math.sqrt(1 / 8), size=(n, 2))
    return X[:n_train], X[n_train:]


def prior_d5(seed, n_train=200, n_test=100):
    X = pydt.sample_prior(n_train + n_test, c=1.0, theta=0.0, alpha=0.0, dim=5,
                          sigma2=1.0, random_seed=seed)[0].X
    # the leaves of an exchangeable tree: a random split is a train/test split
    perm = np.random.default_rng(seed + 1000).permutation(n_train + n_test)
    return X[perm[:n_train]], X[perm[n_train:]]


DATA = {"four_clusters": four_clusters, "prior_d5": prior_d5}


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


def run_model(name, X, X_test, args, seed):
    t0 = time.perf_counter()
    if name == "dpm":
        m = dpm.model(X, likelihood="gaussian", alpha=(1.0, 1.0))
        dt = fit(m, draws=args.draws, tune=args.tune, chains=args.chains, cores=1,
                 random_seed=seed, progressbar=False)
        fit_s = time.perf_counter() - t0
        lp = dpm_log_predictive(dt, m, X_test)
        extra = {"K": float(np.mean(_posterior_z(dt).max(axis=1) + 1))}
    else:
        m = pydt.model(X, binary=(name == "ddt"))
        dt = fit(m, draws=args.draws, tune=args.tune, chains=args.chains, cores=1,
                 random_seed=seed, progressbar=False)
        fit_s = time.perf_counter() - t0
        lp = pydt.log_predictive(dt, X, X_test, n_positions=args.positions,
                                 max_draws=args.pred_draws, random_seed=seed)
        post = dt["posterior"]
        extra = {v: float(post[v].mean()) for v in ("c", "sigma2", "theta", "alpha")
                 if v in post}
        for v in ("c", "sigma2"):
            draws = post[v].values.reshape(-1)
            extra[v + "_sd"] = float(draws.std(ddof=1))
        if "n_multifurcations" in post:
            extra["n_multifurcations"] = float(post["n_multifurcations"].mean())
    return lp, fit_s, time.perf_counter() - t0 - fit_s, extra


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--models", nargs="+", default=["pydt", "ddt", "dpm"],
                        choices=["pydt", "ddt", "dpm"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--draws", type=int, default=150)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--positions", type=int, default=5)
    parser.add_argument("--pred-draws", type=int, default=40)
    args = parser.parse_args(argv)
    results = {}
    for data in args.data:
        for seed in args.seeds:
            X, X_test = DATA[data](seed)
            per_model = {}
            for name in args.models:
                lp, fit_s, pred_s, extra = run_model(name, X, X_test, args, seed)
                per_model[name] = lp
                se = lp.std(ddof=1) / math.sqrt(lp.size)
                info = ", ".join(f"{k} {v:.3g}" for k, v in extra.items())
                print(f"{data} seed {seed} {name:5s}: held-out log density per point "
                      f"{lp.mean():.3f} +- {se:.3f} (n_test {lp.size}); fit {fit_s:.0f} s, "
                      f"predictive {pred_s:.0f} s; {info}", flush=True)
            if "dpm" in per_model:
                for name, lp in per_model.items():
                    if name == "dpm":
                        continue
                    diff = lp - per_model["dpm"]
                    print(f"{data} seed {seed} {name} - dpm: {diff.mean():+.3f} +- "
                          f"{diff.std(ddof=1) / math.sqrt(diff.size):.3f} per test point "
                          "(paired)", flush=True)
            results[(data, seed)] = per_model
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {rss:.0f} MB")
    return results


if __name__ == "__main__":
    main()
