"""Is a bad clustering the posterior's or the sampler's?

For the panel's failures of ``benchmarks/bench_clustering.py`` (iris and breast cancer,
the default ``dpm.model(X)``, fixed alpha = 1) this scores partitions by the collapsed log
joint ``log p(z | alpha) + log p(X | z, hyper)`` (the CRP's EPPF plus the conjugate
Normal-Inverse-Wishart marginal, at the model's hyperparameters):

- references: the true classes, scikit-learn ``GaussianMixture`` and ``KMeans`` with
  k = 2, 3 and the true K (``n_init`` restarts);
- the sampler through ``fit(dpm.model(X), method="gibbs", draws=300, tune=200,
  chains=2)``, per seed and chain: the mean and maximum log joint over the draws, the
  last draw's K and ARI, and the point estimate's ARI; once with the start search of
  ``crp_collapsed_gibbs`` (the default: candidates scored after a pilot run) and once
  with the start it replaced (``--old-start``: the greedy seating if its raw joint beats
  one cluster, ``start_pilot=0, start_kmeans=()``);
- the kernel (Algorithm 3 sweeps + one split-merge proposal per iteration) run for 300
  iterations from the true classes and from the Gaussian mixture with max(3, true K)
  components: where the
  better-ARI partitions lead (mean log joint of the last 200 iterations, end K, ARI).

If partitions with a better ARI have a *higher* joint than where the sampler sits, the
sampler is stuck (a start/mixing failure); if every better-ARI partition has a lower
joint, it is the posterior. ``--prior-grid`` repeats the reference comparison on iris
over a grid of NIW priors (scale of the prior cluster covariance relative to the data's,
``nu0``, ``kappa0``): does any reasonable prior prefer the three species?

Run: ``python benchmarks/bench_clustering_modes.py [--datasets iris,breast_cancer]
[--seeds 1,2,3] [--old-start] [--prior-grid]``.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
from bench_clustering import load

from custom_ops.conjugate import FAMILY_CODES, pack_hyper
from custom_ops.dpm.collapsed import collapsed_loglik_value
from custom_ops.dpm.crp import canonicalize, crp_logp
from custom_ops.dpm.gibbs import ConjugateData, CRPPrior, collapsed_sweeps, split_merge_proposal


class Joint:
    """Collapsed log joint of partitions of ``X`` under one NIW prior, alpha fixed."""

    def __init__(self, X, hyper, alpha=1.0):
        self.X, self.hyper, self.alpha = X, hyper, alpha
        self.hp = pack_hyper("gaussian", hyper)

    def __call__(self, z):
        z, _K = canonicalize(np.asarray(z, dtype=np.int64))
        return crp_logp(z, self.alpha, 0.0) + collapsed_loglik_value(
            "gaussian", z, self.X, self.hyper)

    def run_kernel(self, z0, iterations, seed, keep_from):
        """(mean log joint from iteration ``keep_from`` on, end partition)."""
        rng = np.random.default_rng(seed)
        code = FAMILY_CODES["gaussian"]
        z = np.ascontiguousarray(canonicalize(np.asarray(z0, dtype=np.int64))[0])
        trace = []
        data = ConjugateData(self.X, code, self.hp)
        prior = CRPPrior(self.alpha, 0.0)
        for it in range(iterations):
            z = collapsed_sweeps(data, z, prior, 1.0, rng, 1)
            prop, lp, ll, lqf, lqr, _split = split_merge_proposal(data, z, prior, 1.0, rng, 4)
            if math.log(rng.random()) < lp + ll + lqr - lqf:
                z, _K = canonicalize(prop)
            if it >= keep_from:
                trace.append(self(z))
        return float(np.mean(trace)), z


def _hyper(m):
    from pp_models.dpm.spec import PRIOR_KEYS, get_spec

    spec = get_spec(m)
    return [spec.prior[k] for k in PRIOR_KEYS["gaussian"]]


def _references(X, y, seed=0):
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture

    out = {"true classes": np.asarray(y)}
    for k in sorted({2, 3, len(np.unique(y))}):
        out[f"GaussianMixture k={k}"] = GaussianMixture(
            k, random_state=seed, n_init=5).fit(X).predict(X)
        out[f"KMeans k={k}"] = KMeans(k, random_state=seed, n_init=10).fit(X).labels_
    return out


def _row(label, z, y, joint):
    from pp_models import partitions

    z = np.asarray(z)
    return (f"| {label} | {len(np.unique(z))} | "
            f"{partitions.adjusted_rand_index(z, y):.3f} | {joint(z):.1f} |")


def diagnose(name, seeds, old_start):
    from inference.fitting import fit
    from inference.gibbs.dpm.crp_collapsed import CRPCollapsedGibbs
    from pp_models import dpm, partitions
    from pp_models.model_info import posterior_with_labels

    X, y = load(name)
    m = dpm.model(X, alpha=1.0)
    joint = Joint(X, _hyper(m))
    print(f"\n### {name} ({X.shape[0]} x {X.shape[1]}), default prior, alpha = 1, "
          f"{'old' if old_start else 'new'} start\n")
    print("| partition | K | ARI | log joint |\n|---|---|---|---|")
    refs = _references(X, y)
    for label, z in refs.items():
        print(_row(label, z, y, joint), flush=True)
    for seed in seeds:
        step = None
        if old_start:
            step = CRPCollapsedGibbs([m["z"]], model=m, start_pilot=0, start_kmeans=())
        start = time.perf_counter()
        dt = fit(m, method="gibbs", draws=300, tune=200, chains=2, random_seed=seed,
                 progressbar=False, step=step)
        seconds = time.perf_counter() - start
        Z = posterior_with_labels(dt)["z"].values
        pe = dt["clustering"]["point_estimate"].values
        print(_row(f"seed {seed}: point estimate ({seconds:.0f} s)", pe, y, joint))
        for c in range(Z.shape[0]):
            lj = np.array([joint(Z[c, i]) for i in range(0, Z.shape[1], 10)])
            print(_row(f"seed {seed} chain {c}: last draw (draws: mean {lj.mean():.1f}, "
                       f"max {lj.max():.1f})", Z[c, -1], y, joint), flush=True)
    for label in ("true classes", f"GaussianMixture k={max(3, len(np.unique(y)))}"):
        mean, z = joint.run_kernel(refs[label], 300, 7, 100)
        print(f"| kernel 300 it. from {label} (mean of last 200: {mean:.1f}) | "
              f"{z.max() + 1} | {partitions.adjusted_rand_index(z, y):.3f} | {joint(z):.1f} |",
              flush=True)


def prior_grid():
    from pp_models import dpm, partitions

    X, y = load("iris")
    d = X.shape[1]
    refs = _references(X, y)
    k2, k3 = refs["GaussianMixture k=2"], refs["GaussianMixture k=3"]
    print("\n### iris over NIW priors: J = log joint; K = 2 is the 2-component Gaussian "
          "mixture (ARI 0.568), K = 3 the 3-component one (ARI 0.904)\n")
    print("| prior cov. / data cov. | nu0 | kappa0 | J(K=2) - J(true) | J(K=2) - J(K=3) | "
          "kernel from true: end K, ARI |\n|---|---|---|---|---|---|")
    var = X.var(axis=0)
    for nu0 in (d + 2.0, 2 * d + 1.0):
        for kappa0 in (0.01, 0.05):
            for scale in (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 1.5):
                S0 = scale * np.diag(var) * max(nu0 - d - 1.0, 1.0)
                m = dpm.model(X, alpha=1.0, prior={"nu0": nu0, "kappa0": kappa0, "S0": S0})
                joint = Joint(X, _hyper(m))
                _mean, z = joint.run_kernel(y, 300, 1, 100)
                print(f"| {scale:.2f} | {nu0:.0f} | {kappa0:.2f} | "
                      f"{joint(k2) - joint(y):.1f} | {joint(k2) - joint(k3):.1f} | "
                      f"{z.max() + 1}, {partitions.adjusted_rand_index(z, y):.3f} |",
                      flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="iris,breast_cancer")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--old-start", action="store_true")
    parser.add_argument("--prior-grid", action="store_true")
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    for name in args.datasets.split(","):
        if name:
            diagnose(name, seeds, args.old_start)
    if args.prior_grid:
        prior_grid()


if __name__ == "__main__":
    main()
