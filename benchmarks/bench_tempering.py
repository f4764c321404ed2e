"""Benchmark: parallel tempering and evidence (inference.tempering).

Three measurements, each through the path users take (``fit(..., tempering=N)``,
``inference.evidence``, ``pm.sample_smc``), after one warm-up call that compiles (its
time is reported apart):

``--mixing``: the defaults that do not mix without tempering, side by side with and
without it: the finite mixture on iris at the demo's seed (``ppzoo demo``: 4 chains x 1000
draws + 1000 tuning) and the DP mixture on iris at 4 x 1000 (+ 1000 tuning). For each:
the worst R-hat and the smallest bulk ESS over the label-invariant statistics
(``inference.convergence.check_convergence``, as ``ppzoo check`` reports them), the
smallest bulk ESS per second of wall time, whether ``ppzoo check`` passes, and for the
tempered run the final ladder's swap acceptance, the communication barrier Lambda and the
round trips. Other families add their rows here.

``--cost``: tempering's cost per sweep against ``(number of replicas) x (plain sweep)``:
the same chain run plain and tempered (``fit``, one chain, one core), seconds per
iteration of each, the ratio ``tempered / (N x plain)`` (the goal: <= 1.2).

``--evidence``: log evidence of the conjugate Normal model (n = 20, mu ~ N(0, 1),
y ~ N(mu, 1); exact: y ~ N(0, I + 11')) and of a 2-D Gaussian mixture small enough to
enumerate (K = 2 equal weights, unit-variance components, means ~ N(0, 3^2 I); n = 10
points; exact by summing the 2^10 assignments of Gaussian marginals), by ``pm.sample_smc``
(``draws=1000, chains=2``, the anchors' setting) and by ``inference.evidence`` (stepping
stone, sizes chosen so that 3 se <= 0.1 nats). Both on the same all-continuous model
(the mixture's assignments summed out in a potential), in this process, ``cores=2``;
each run ``--repeats`` times with different seeds: wall time, error against the truth,
and the wall-time ratio. Peak RSS of each block (``_memory.PeakRSS``).

Run: ``python benchmarks/bench_tempering.py [--mixing] [--cost] [--evidence]
[--temperatures 8] [--repeats 3]`` (no flag: all three).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from _memory import PeakRSS

DEMO_SEED = 20261126


# ---------------------------------------------------------------------- mixing
def _report(dt, seconds):
    from inference.convergence import check_convergence

    report = check_convergence(dt)
    table = report.table
    ess = float(np.nanmin(table["ess_bulk"].values))
    row = {"rhat_max": float(np.nanmax(table["r_hat"].values)), "ess_min": ess,
           "ess_tail_min": float(np.nanmin(table["ess_tail"].values)),
           "divergences": int(report.n_divergent or 0),
           "ess_per_s": ess / seconds, "passed": bool(report.passed), "seconds": seconds,
           "worst": str(table.sort_values("r_hat").index[-1])}
    if "tempering" in dt.children:
        g = dt["tempering"]
        row["acceptance"] = np.round(g["swap_acceptance"].mean("chain").values, 2).tolist()
        row["barrier"] = float(g["barrier"].mean())
        row["round_trips"] = g["round_trips"].values.tolist()
    return row


def _fit_row(label, build, sizes, seed, tempering):
    from inference import fit

    model = build()
    start = time.perf_counter()
    fit(model, draws=5, tune=5, chains=1, cores=1, random_seed=0, progressbar=False,
        tempering=tempering)
    compile_s = time.perf_counter() - start
    with PeakRSS() as mem:
        start = time.perf_counter()
        dt = fit(model, random_seed=seed, progressbar=False, tempering=tempering, **sizes)
        seconds = time.perf_counter() - start
    row = _report(dt, seconds)
    row.update(label=label, compile_s=compile_s, peak_mb=mem.peak_mb)
    return row


def mixing(temperatures: int):
    from pp_models import datasets, dpm, finite_mixture

    iris = datasets.load("iris").data
    sizes = dict(draws=1000, tune=1000, chains=4, cores=2)
    cases = [
        ("finite_mixture iris (demo seed)", lambda: finite_mixture.model(iris, 3), DEMO_SEED),
        ("dpm iris 4 x 1000", lambda: dpm.model(iris, alpha=(1.0, 1.0)), DEMO_SEED),
    ]
    print(f"{'model':34} {'tempering':>9} {'R-hat max':>9} {'ESS min':>8} {'ESS/s':>7} "
          f"{'check':>6} {'wall s':>7} {'compile s':>9}  worst / ladder")
    for label, build, seed in cases:
        for tempering in (None, temperatures):
            row = _fit_row(label, build, sizes, seed, tempering)
            extra = (f"{row['worst']}; tail ESS min {row['ess_tail_min']:.0f}, "
                     f"{row['divergences']} divergences")
            if tempering:
                extra += (f"; acceptance {row['acceptance']}, Lambda {row['barrier']:.2f}, "
                          f"round trips {row['round_trips']}")
            print(f"{label:34} {tempering or '-'!s:>9} {row['rhat_max']:9.3f} "
                  f"{row['ess_min']:8.0f} {row['ess_per_s']:7.2f} "
                  f"{'pass' if row['passed'] else 'FAIL':>6} {row['seconds']:7.1f} "
                  f"{row['compile_s']:9.1f}  {extra}", flush=True)


# ---------------------------------------------------------------------- cost
def cost(temperatures: int, iterations: int = 300):
    from inference import fit
    from pp_models import datasets, dpm, finite_mixture

    iris = datasets.load("iris").data
    print(f"{'model':22} {'N':>3} {'plain s/it':>10} {'tempered s/it':>13} "
          f"{'tempered / (N x plain)':>22}")
    for label, build in (("finite_mixture iris", lambda: finite_mixture.model(iris, 3)),
                         ("dpm iris", lambda: dpm.model(iris, alpha=(1.0, 1.0)))):
        model = build()
        for tempering in (None, temperatures):
            fit(model, draws=5, tune=5, chains=1, cores=1, progressbar=False,
                tempering=tempering)
        times = {}
        for tempering in (None, temperatures):
            start = time.process_time()
            fit(model, draws=iterations, tune=iterations, chains=1, cores=1, random_seed=1,
                progressbar=False, tempering=tempering)
            times[tempering] = (time.process_time() - start) / (2 * iterations)
        plain, tempered = times[None], times[temperatures]
        print(f"{label:22} {temperatures:3d} {plain:10.4f} {tempered:13.4f} "
              f"{tempered / (temperatures * plain):22.2f}", flush=True)


# ---------------------------------------------------------------------- evidence
def conjugate_normal():
    import pymc as pm
    from scipy import stats

    y = np.random.default_rng(0).normal(0.5, 1.0, 20)
    exact = float(stats.multivariate_normal(np.zeros(20), np.eye(20) + 1.0).logpdf(y))
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        pm.Normal("y", mu, 1.0, observed=y)
    return m, exact


def gaussian_mixture_2d():
    """K = 2, w = (1/2, 1/2), x_i | k ~ N(mu_k, I), mu_k ~ N(0, 3^2 I); n = 10 points.
    Exact: sum over the 2^10 assignments of prod_k prod_dims N(X_k,j | 0, I + 9 11')."""
    import itertools

    import pymc as pm
    import pytensor.tensor as pt
    from scipy import special, stats

    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal([-2.0, 1.0], 1.0, (5, 2)),
                        rng.normal([2.5, -1.0], 1.0, (5, 2))])
    n, tau2 = X.shape[0], 9.0

    def block(Xk):
        if Xk.shape[0] == 0:
            return 0.0
        cov = np.eye(Xk.shape[0]) + tau2
        return sum(stats.multivariate_normal(np.zeros(Xk.shape[0]), cov).logpdf(Xk[:, j])
                   for j in range(2))

    terms = []
    cache = {}
    for z in itertools.product((0, 1), repeat=n):
        z = np.array(z)
        lp = n * np.log(0.5)
        for k in (0, 1):
            key = tuple(np.flatnonzero(z == k))
            if key not in cache:
                cache[key] = block(X[list(key)])
            lp += cache[key]
        terms.append(lp)
    exact = float(special.logsumexp(terms))
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 3.0, shape=(2, 2))
        comp = pm.logp(pm.Normal.dist(mu[None], 1.0), pt.as_tensor(X)[:, None, :]).sum(-1)
        pm.Potential("X_loglik", pm.math.logsumexp(np.log(0.5) + comp, axis=1).sum())
    return m, exact


def _smc(model, seed, draws=1000):
    import pymc as pm

    with model, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = pm.sample_smc(draws=draws, chains=2, cores=2, random_seed=seed,
                           progressbar=False, compute_convergence_checks=False)
    lml = dt["sample_stats"]["log_marginal_likelihood"].values
    per_chain = [float(np.asarray(v)[~np.isnan(np.asarray(v, dtype=float))][-1])
                 for v in lml.reshape(lml.shape[0], -1)]
    return float(np.mean(per_chain)), per_chain


def _timed(fn, *args, **kwargs):
    with PeakRSS() as mem:
        start = time.perf_counter()
        value = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
    return value, seconds, mem.peak_mb


def evidence_table(repeats: int, ours_sizes: dict, smc_draws=(250, 500, 1000),
                   with_pt: bool = False, tolerance: float = 0.1):
    """Ours (``inference.evidence``, independent nutpie runs per temperature) against
    ``pm.sample_smc`` at several ``draws`` (its anchor setting 1000 and cheaper ones), in
    this process, the repeats interleaved (each repeat runs every tool with seed
    ``100 + r``) so that all see the same machine load. The reference is the cheapest
    SMC setting whose every repeat is within ``tolerance`` nats of the truth."""
    from inference import evidence
    from inference.tempering.ladder import initial_ladder
    from inference.tempering.nutpie_ladder import run_ladder

    for label, make in (("conjugate Normal (n=20)", conjugate_normal),
                        ("2-D Gaussian mixture", gaussian_mixture_2d)):
        model, exact = make()
        sizes = ours_sizes[label]
        # warm-up calls: compile outside the timings
        start = time.perf_counter()
        evidence(model, **{**sizes, "draws": 10, "tune": 10}, random_seed=0)
        ours_compile = time.perf_counter() - start
        start = time.perf_counter()
        _smc(model, 0, draws=100)
        smc_first = time.perf_counter() - start
        rows: dict[str, list] = {f"pm.sample_smc draws={d}": [] for d in smc_draws}
        rows["ours (nutpie SS)"] = []
        rows["ours, runs alone"] = []
        if with_pt:
            rows["ours (PT SS)"] = []
        peaks = dict.fromkeys(rows, 0.0)
        ladder = initial_ladder(sizes["n_temperatures"])
        for r in range(repeats):
            seed = 100 + r
            for d in smc_draws:
                key = f"pm.sample_smc draws={d}"
                (est, _), seconds, peak = _timed(_smc, model, seed, draws=d)
                rows[key].append((seconds, est - exact, np.nan))
                peaks[key] = max(peaks[key], peak)
            res, seconds, peak = _timed(evidence, model, random_seed=seed,
                                          sampler="nutpie", **sizes)
            rows["ours (nutpie SS)"].append((seconds, res.log_evidence - exact, res.se))
            peaks["ours (nutpie SS)"] = max(peaks["ours (nutpie SS)"], peak)
            kernel = {k: v for k, v in sizes.items() if k != "n_temperatures"}
            _, seconds, peak = _timed(run_ladder, model, ladder,
                                      rng=np.random.default_rng(seed), last=False, **kernel)
            rows["ours, runs alone"].append((seconds, np.nan, np.nan))
            peaks["ours, runs alone"] = max(peaks["ours, runs alone"], peak)
            if with_pt:
                res, seconds, peak = _timed(evidence, model, random_seed=seed,
                                              sampler="parallel_tempering",
                                              **PT_SIZES[label])
                rows["ours (PT SS)"].append((seconds, res.log_evidence - exact, res.se))
                peaks["ours (PT SS)"] = max(peaks["ours (PT SS)"], peak)
        print(f"\n{label}: exact {exact:.3f}; ours {sizes}; compile: ours {ours_compile:.1f} s, "
              f"SMC's first call {smc_first:.1f} s")
        print(f"  {'tool':26} {'wall s (median)':>15} {'max |error|':>11} {'median se':>9} "
              f"{'peak MB':>8}  errors")
        for tool, values in rows.items():
            wall = np.median([v[0] for v in values])
            errs = [v[1] for v in values]
            worst = np.nanmax(np.abs(errs)) if np.isfinite(errs).any() else np.nan
            se = np.nanmedian([v[2] for v in values]) if np.isfinite(
                [v[2] for v in values]).any() else np.nan
            shown = ", ".join(f"{e:+.3f}" for e in errs) if np.isfinite(errs).any() else "-"
            print(f"  {tool:26} {wall:15.3f} {worst:11.3f} {se:9.3f} {peaks[tool]:8.0f}  "
                  f"{shown}")
        ours_wall = np.median([v[0] for v in rows["ours (nutpie SS)"]])
        reaching = [d for d in smc_draws if max(abs(v[1]) for v in
                                                 rows[f"pm.sample_smc draws={d}"]) <= tolerance]
        if reaching:
            smc_wall = min(np.median([v[0] for v in rows[f"pm.sample_smc draws={d}"]])
                           for d in reaching)
            print(f"  wall-time ratio ours / (cheapest SMC within {tolerance} nats on every "
                  f"repeat) = {ours_wall / smc_wall:.2f}", flush=True)
        else:
            print(f"  no SMC setting was within {tolerance} nats on every repeat", flush=True)


#: Stepping stone on nutpie: sizes for about 3 se <= 0.1 nats (``--large``: 3 se <= 0.1
#: with room).
OURS_SIZES = {
    "conjugate Normal (n=20)": dict(n_temperatures=6, draws=600, tune=200, chains=2, cores=2),
    "2-D Gaussian mixture": dict(n_temperatures=12, draws=1000, tune=200, chains=2, cores=2),
}
OURS_SIZES_LARGE = {
    "conjugate Normal (n=20)": dict(n_temperatures=8, draws=1000, tune=200, chains=2, cores=2),
    "2-D Gaussian mixture": dict(n_temperatures=16, draws=2000, tune=200, chains=2, cores=2),
}

#: The parallel-tempering stepping stone of the first measurement (``--with-pt``).
PT_SIZES = {
    "conjugate Normal (n=20)": dict(n_temperatures=5, draws=400, tune=200, chains=2, cores=2),
    "2-D Gaussian mixture": dict(n_temperatures=8, draws=600, tune=300, chains=2, cores=2),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mixing", action="store_true")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--evidence", action="store_true")
    parser.add_argument("--temperatures", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--large", action="store_true",
                        help="our evidence at the larger sizes (OURS_SIZES_LARGE)")
    parser.add_argument("--with-pt", action="store_true",
                        help="also the parallel-tempering stepping stone (--evidence)")
    args = parser.parse_args()
    every = not (args.mixing or args.cost or args.evidence)
    if args.cost or every:
        cost(args.temperatures)
    if args.evidence or every:
        evidence_table(args.repeats, OURS_SIZES_LARGE if args.large else OURS_SIZES,
                       with_pt=args.with_pt)
    if args.mixing or every:
        mixing(args.temperatures)


if __name__ == "__main__":
    main()
