"""Mixing per second: ESS per second of every checked statistic and of the log joint,
with a family's many-entries moves off and on.

For each family named, the command line's model of its default data set
(``Family.cli.build``, as ``ppzoo fit NAME`` builds it) is sampled by ``inference.fit``
with the command line's ``fit_defaults`` (or ``--draws/--tune/--chains``), once per
setting and seed, after a warm-up fit (compile time apart). Per run it records the
sampling time ``fit`` reports, the bulk ESS of every quantity
``inference.convergence.check_convergence`` checks (``ppzoo check``'s list) and of the
log joint ``log p(state, data)`` of every draw (the model's ``logp`` at the draw's free
values and labels), and the worst R-hat. Chains run in turn (``cores=1``), so the time is
one core's.

With ``--before``, each family is measured instead with the options its command line
had before its defaults changed (:data:`BEFORE`) and with its defaults now.

Settings per family (:data:`SETTINGS`): ``iomm``: ``split_merge`` proposals per sweep
(0: Algorithm 7.1's single-site moves; the factory's option); ``ibp_fa``:
``feature_moves`` whole-feature birth/death proposals per sweep (0: Knowles' sweep);
``pydt``: ``ridge_rounds`` rounds of branch-point moves and theta, alpha, c updates per
sweep (0: one of each). A
family without a setting is measured as it is.

    PYTHONPATH=$PWD python benchmarks/bench_mixing.py iomm --seeds 11 12
    PYTHONPATH=$PWD python benchmarks/bench_mixing.py ibp_fa --seeds 11 12 --draws 1000
    PYTHONPATH=$PWD python benchmarks/bench_mixing.py ibp_fa --seeds 1 2 3 --before
"""

from __future__ import annotations

import argparse
import time

import numpy as np

#: family -> (factory option, values measured)
SETTINGS = {"iomm": ("split_merge", (0, 20)), "ibp_fa": ("feature_moves", (0, 5))}
#: mixture of trees: block moves per sweep (0: one-row updates and exact trees only)
SETTINGS["mixture_of_trees"] = ("block_moves", (0, 50))
#: PYDT: ridge rounds per sweep (0: one branch-move batch and one theta update a sweep)
SETTINGS["pydt"] = ("ridge_rounds", (0, 3))
#: per-draw statistics a family's step reports that track its log joint density
STEP_LOG_DENSITIES = ("log_joint", "log_marginal")


def log_joint(dt, model) -> np.ndarray | None:
    """``(chain, draw)`` log joint density at each draw's free values (None when a free
    variable was not recorded)."""
    import pytensor

    from pp_models.model_info import posterior_with_labels

    posterior = posterior_with_labels(dt)
    logp = model.compile_logp(jacobian=False)
    forward = {}
    for rv in model.free_RVs:
        if rv.name not in posterior.data_vars:
            return None
        value = model.rvs_to_values[rv]
        transform = model.rvs_to_transforms.get(rv)
        if transform is None:
            forward[value.name] = (rv.name, None)
        else:
            x = value.type()
            forward[value.name] = (rv.name, pytensor.function(
                [x], transform.forward(x, *rv.owner.inputs)))
    C, S = posterior.sizes["chain"], posterior.sizes["draw"]
    out = np.empty((C, S))
    for c in range(C):
        for s in range(S):
            point = {}
            for key, (name, f) in forward.items():
                v = np.asarray(posterior[name].values[c, s])
                v = v.astype(model.rvs_to_values[model[name]].dtype)
                point[key] = v if f is None else f(v)
            out[c, s] = logp(point)
    return out


def run(family: str, options: dict, draws: int, tune: int, chains: int, seed: int):
    import arviz as az
    import xarray as xr

    from inference import fit
    from inference.convergence import check_convergence
    from pp_models.datasets import load
    from pp_models.registry import get_family

    fam = get_family(family)
    model = fam.cli.build(load(fam.cli.default_dataset),
                          **{**fam.cli.defaults, **options})
    start = time.perf_counter()
    dt = fit(model, draws=draws, tune=tune, chains=chains, cores=1, random_seed=seed,
             progressbar=False)
    wall = time.perf_counter() - start
    seconds = float(dt["posterior"].attrs.get("sampling_time", wall))
    table = check_convergence(dt).table
    ess = {q: float(e) for q, e in table["ess_bulk"].items() if np.isfinite(e)}
    joint = log_joint(dt, model)
    if joint is not None:
        ess["log_joint"] = float(az.ess(xr.DataArray(joint, dims=("chain", "draw")),
                                        method="bulk"))
        ess["log_joint R-hat"] = float(az.rhat(xr.DataArray(joint,
                                                            dims=("chain", "draw"))))
    stats = dt.get("sample_stats")
    for name in STEP_LOG_DENSITIES:
        if stats is not None and name in stats.data_vars:
            values = stats[name].rename(None)
            ess[f"step {name}"] = float(az.ess(values, method="bulk"))
            ess[f"step {name} R-hat"] = float(az.rhat(values))
    finite = table["r_hat"].astype(float)
    return dict(seconds=seconds, wall=wall, ess=ess,
                worst_rhat=float(finite[np.isfinite(finite)].max()),
                passed=bool(check_convergence(dt).passed), dt=dt)


#: family -> the command line's options before its defaults changed (``--before``)
BEFORE = {"ibp_fa": {"thin": 1, "feature_moves": 0}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="+")
    parser.add_argument("--seeds", type=int, nargs="+", default=[11])
    parser.add_argument("--draws", type=int)
    parser.add_argument("--tune", type=int)
    parser.add_argument("--chains", type=int)
    parser.add_argument("--values", nargs="+", type=int,
                        help="the setting's values (default: SETTINGS')")
    parser.add_argument("--before", action="store_true",
                        help="measure the command line's defaults before they changed "
                        "(BEFORE) against its defaults now, instead of the setting")
    args = parser.parse_args(argv)
    from pp_models.registry import get_family

    for family in args.families:
        fam = get_family(family)
        defaults = dict(fam.cli.fit_defaults)
        draws = args.draws or defaults.get("draws", 1000)
        tune = args.tune if args.tune is not None else defaults.get("tune", 1000)
        chains = args.chains or defaults.get("chains", 4)
        key, values = SETTINGS.get(family, (None, (None,)))
        if args.values:
            values = tuple(args.values)
        run(family, {} if key is None else {key: values[-1]}, 20, 20, 2, 0)  # warm-up
        if args.before:
            key, values = "defaults", ("before", "now")
        for value in values:
            options = ({} if key is None or value == "now"
                       else BEFORE[family] if value == "before" else {key: value})
            for seed in args.seeds:
                r = run(family, options, draws, tune, chains, seed)
                label = f"{family} {key}={value}" if key else family
                print(f"\n{label} seed {seed}: {chains} x {draws} (+{tune}), sampling "
                      f"{r['seconds']:.1f} s (fit {r['wall']:.1f} s), worst R-hat "
                      f"{r['worst_rhat']:.3f}, check {'passed' if r['passed'] else 'FAILED'}")
                stats = r["dt"].get("sample_stats")
                if stats is not None:
                    for name in ("splits_accepted", "merges_accepted",
                                 "split_merge_proposed", "feature_moves_accepted",
                                 "feature_moves_proposed", "row_moves", "blocks_moved"):
                        if name in stats.data_vars:
                            print(f"  {name} per draw: {float(stats[name].mean()):.3f}")
                for q, e in r["ess"].items():
                    if q.endswith("R-hat"):
                        print(f"  {q:32s} {e:8.3f}")
                    else:
                        print(f"  {q:32s} ESS {e:8.1f}   ESS/s {e / r['seconds']:8.3f}")


if __name__ == "__main__":
    main()
