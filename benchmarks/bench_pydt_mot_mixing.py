"""Mixing per second of two families' default runs.

PYDT (iris), before and after the tree step took over the hyperparameters: ESS (bulk)
per second of sampling of every statistic ``ppzoo check`` scores (c, theta, alpha,
sigma2, root time, branch points, multifurcations) and of the log joint, the number of
divergent transitions, R-hat, and each chain's first-half / second-half means (drift
within a chain against chains that disagree).

- ``before``: the tree step (detach-reattach, times, branch points, non-centred
  hyperparameters) beside NUTS on c, theta, alpha and the precision, the factory's
  steps before the tree step owned them;
- ``after``: the factory's steps now (the same tree step also slice-sampling the
  hyperparameters on their log / logit scale with the tree fixed; no NUTS).

Both on the data ``ppzoo fit pydt`` builds (iris, the repeated row dropped, columns
standardised), ``ppzoo fit``'s defaults (2 chains x 200 draws, 100 tuning), one warm-up
fit first so compile time is not counted; sampling time is the run's own
``sampling_time`` attribute.

    PYTHONPATH=$PWD python benchmarks/bench_pydt_mot_mixing.py --seeds 1 2 3

Mixture of trees (``--family mixture_of_trees``; Reuters word presence, K = 2, the
``ppzoo fit`` default): ESS per second of every quantity ``ppzoo check`` scores and of
``log_marginal`` (the step's log p(X | z, trees), standing in for the log joint), with
the split-merge move off (the default) and on (``split_merge=True``), and each chain's
halves of ``log_marginal``.

    PYTHONPATH=$PWD python benchmarks/bench_pydt_mot_mixing.py --family mixture_of_trees
"""

from __future__ import annotations

import argparse
import json
import time

import arviz_stats as azs
import numpy as np

from custom_ops.pydt.ops import pydt_forward
from inference import fit
from inference.gibbs.pydt import PYDTTreeStep
from pp_models import pydt
from pp_models.datasets import load
from pp_models.trees import DiffusionTree

HYPER = ("c", "theta", "alpha", "precision")
STATISTICS = ("c", "theta", "alpha", "sigma2", "root_time", "n_internal",
              "n_multifurcations", "log_joint")


def cli_rows():
    """The rows ``ppzoo fit pydt`` fits (``pp_models.pydt``'s CLI build): iris, the
    repeated row dropped, columns standardised."""
    X = np.asarray(load("iris").data, dtype=np.float64)
    _, first = np.unique(X, axis=0, return_index=True)
    X = X[np.sort(first)]
    return (X - X.mean(axis=0)) / X.std(axis=0)


def log_joint(dt, model, X):
    """log p(phi) + log p(T | phi) + log p(X | T, sigma2) per draw."""
    post = dt["posterior"]
    trees = dt["posterior_labels"]["tree"].values
    hyper_logp = model.compile_fn(model.logp(vars=[model[h] for h in HYPER],
                                             jacobian=False),
                                  inputs=[model.rvs_to_values[model[h]] for h in HYPER],
                                  on_unused_input="ignore", point_fn=False)
    out = np.empty(trees.shape[:2])
    for c in range(trees.shape[0]):
        for d in range(trees.shape[1]):
            values = {h: float(post[h].values[c, d]) for h in HYPER}
            x = [np.log(values["c"]), np.log(values["theta"]),
                 np.log(values["alpha"] / (1 - values["alpha"])),
                 np.log(values["precision"])]
            tree = DiffusionTree.from_packed(trees[c, d], validate=False)
            lp, ll = pydt_forward(tree.parent, tree.log1m_t, X, values["c"],
                                  values["theta"], values["alpha"], 1.0 / values["precision"])
            out[c, d] = float(hyper_logp(*x)) + lp + ll
    return out


def run(variant, X, seed, draws, tune, chains):
    model = pydt.model(X)
    step = None
    if variant == "before":
        import pymc as pm

        step = [PYDTTreeStep([model["tree"]], model=model, moves=2 * X.shape[0] - 2,
                             noncentred=HYPER),
                pm.NUTS([model[h] for h in HYPER], model=model)]
    start = time.perf_counter()
    dt = fit(model, step=step, draws=draws, tune=tune, chains=chains, random_seed=seed,
             progressbar=False)
    wall = time.perf_counter() - start
    sampling = float(dt["posterior"].attrs.get("sampling_time", wall))
    lj = log_joint(dt, model, X)
    post = dt["posterior"]
    values = {name: post[name].values.astype(float) for name in STATISTICS[:-1]}
    values["log_joint"] = lj
    div = 0
    if "sample_stats" in dt and "diverging" in dt["sample_stats"]:
        div = int(dt["sample_stats"]["diverging"].values.sum())
    row = {"variant": variant, "seed": seed, "sampling_s": round(sampling, 1),
           "wall_s": round(wall, 1), "divergent": div}
    for name, v in values.items():
        ess = float(azs.ess(v, method="bulk"))
        halves = [[round(float(h.mean()), 3) for h in np.array_split(ch, 2)] for ch in v]
        row[name] = {"rhat": round(float(azs.rhat(v)), 3), "ess": round(ess, 1),
                     "ess_per_s": round(ess / sampling, 2), "halves": halves}
    return row


def run_mixture_of_trees(split_merge, seed, draws, tune, chains):
    from inference.convergence import check_convergence
    from pp_models import mixture_of_trees

    entry = mixture_of_trees.FAMILY.cli
    model = entry.build(load(entry.default_dataset), **entry.defaults,
                        split_merge=split_merge)
    start = time.perf_counter()
    dt = fit(model, draws=draws, tune=tune, chains=chains, random_seed=seed,
             progressbar=False)
    wall = time.perf_counter() - start
    sampling = float(dt["posterior"].attrs.get("sampling_time", wall))
    table = check_convergence(dt).table
    lm = dt["sample_stats"]["log_marginal"].values
    row = {"variant": f"split_merge={split_merge}", "seed": seed,
           "sampling_s": round(sampling, 1), "wall_s": round(wall, 1),
           "split_merge_accepted": int(dt["sample_stats"]["split_merge_accepted"].sum()),
           "log_marginal": {"rhat": round(float(azs.rhat(lm)), 3),
                            "ess_per_s": round(float(azs.ess(lm, method="bulk")) / sampling, 2),
                            "halves": [[round(float(h.mean()), 1)
                                        for h in np.array_split(ch, 2)] for ch in lm]}}
    for quantity, r in table.iterrows():
        row[quantity] = {"rhat": round(float(r["r_hat"]), 3),
                         "ess_per_s": round(float(r["ess_bulk"]) / sampling, 2)}
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", default="pydt", choices=["pydt", "mixture_of_trees"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--variants", nargs="+", default=["before", "after"])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--tune", type=int, default=100)
    parser.add_argument("--chains", type=int, default=2)
    args = parser.parse_args()
    if args.family == "mixture_of_trees":
        run_mixture_of_trees(False, 0, 5, 5, 2)  # warm-up: compile
        for split_merge in (False, True):
            for seed in args.seeds:
                print(json.dumps(run_mixture_of_trees(split_merge, seed, args.draws,
                                                      args.tune, args.chains)), flush=True)
        return
    X = cli_rows()
    for variant in args.variants:
        run(variant, X, 0, 5, 5, 1)  # warm-up: compile
        for seed in args.seeds:
            print(json.dumps(run(variant, X, seed, args.draws, args.tune, args.chains)),
                  flush=True)


if __name__ == "__main__":
    main()
