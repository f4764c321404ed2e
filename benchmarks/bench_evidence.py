"""Benchmark: how honest and how fast ``inference.evidence`` is, on cases with an exact
answer.

``--ais``: annealed importance sampling on a one-parameter Beta-Bernoulli model (p ~
Beta(1, 1), 14 ones in 20 Bernoulli(p) draws; exact ``B(15, 7)``), at the defaults (4
chains x ``--particles`` particles x 200 temperatures, ``cores=1``): wall time, estimate,
se and error. Run it at two commits to compare (the brief's before/after).

``--calibration CASE``: 20 seeds of one case, the exact value within ±2 se on how many,
and the mean and sd of ``z = (estimate - exact) / se``. Cases: ``normal:METHOD:SAMPLER``
(the conjugate Normal of ``tests/inference/tempering/test_evidence.py`` at its slow
test's sizes), ``lda`` (the 7-token LDA of ``test_evidence_lda.py``, exact by
enumeration), ``mixture:N`` (``finite_mixture.model(x, 2, weight_concentration=1,
resolution=0.1)`` on three tight groups of three at -4, 0, 4.5, exact by enumeration and
quadrature, N temperatures, 2 chains x 300 draws + 200 tuning).

Run from the repository root (the cases come from ``tests/``):
``python benchmarks/bench_evidence.py --ais`` or ``--calibration lda``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def ais(particles: int) -> None:
    import pymc as pm
    from scipy import special

    from inference import evidence

    y = np.r_[np.ones(14), np.zeros(6)]
    exact = float(special.betaln(15, 7) - special.betaln(1, 1))
    with pm.Model() as m:
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("y", p, observed=y)
    for label in ("first call (compiles)", "second call"):
        start = time.perf_counter()
        r = evidence(m, method="ais", draws=particles, chains=4, cores=1, random_seed=1)
        print(f"{label}: {time.perf_counter() - start:.1f} s, {r.log_evidence:.4f} ± "
              f"{r.se:.4f}, exact {exact:.4f}, error {r.log_evidence - exact:+.4f}")


def calibration(case: str) -> None:
    from inference import evidence

    if case.startswith("normal"):
        from tests.oracles.normal import EXACT, normal_model

        _, method, sampler = case.split(":")
        model, exact = normal_model(), EXACT
        sizes = {"stepping_stone": dict(n_temperatures=6, draws=500, tune=300, chains=2),
                 "thermodynamic": dict(n_temperatures=16, draws=400, tune=300, chains=2),
                 "ais": dict(n_temperatures=40, draws=60, tune=150, chains=2)}[method]
        kwargs, seeds = dict(method=method, sampler=sampler, **sizes), 100
    elif case == "lda":
        from pp_models import lda
        from tests.inference.tempering.test_evidence_lda import ALPHA, DOCS, ETA
        from tests.oracles.lda import LDAEnumeration

        model = lda.model(DOCS, n_topics=2, alpha=ALPHA, eta=ETA, n_words=3)
        exact = LDAEnumeration(DOCS, 2, ALPHA, ETA).log_evidence()
        kwargs, seeds = dict(n_temperatures=8, draws=500, tune=300, chains=2), 100
    else:
        from pp_models import finite_mixture
        from tests.inference.tempering.test_evidence_finite_mixture import BIMODAL_X
        from tests.oracles import mixtures as oracles

        exact = oracles.finite_mixture_log_evidence(BIMODAL_X, 2, 1.0, 0.1)
        model = finite_mixture.model(BIMODAL_X.reshape(-1, 1), n_components=2,
                                     weight_concentration=1, resolution=0.1)
        kwargs = dict(n_temperatures=int(case.split(":")[1]), draws=300, tune=200, chains=2)
        seeds = 300
    z = []
    for seed in range(20):
        start = time.perf_counter()
        r = evidence(model, random_seed=seeds + seed, cores=1, **kwargs)
        z.append((r.log_evidence - exact) / r.se)
        print(f"{case} seed {seeds + seed}: {time.perf_counter() - start:.1f} s, z "
              f"{z[-1]:+.2f}, {r.log_evidence:.3f} ± {r.se:.4f} (exact {exact:.3f}); "
              f"{r.se_method}", flush=True)
    z = np.array(z)
    print(f"{case}: covered {int(np.sum(np.abs(z) < 2))}/20, mean z {z.mean():.2f}, "
          f"sd z {z.std():.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ais", action="store_true")
    parser.add_argument("--particles", type=int, default=1000)
    parser.add_argument("--calibration", metavar="CASE")
    args = parser.parse_args()
    if args.ais:
        ais(args.particles)
    if args.calibration:
        calibration(args.calibration)


if __name__ == "__main__":
    main()
