"""Benchmark: the graphical-lasso path, ours vs scikit-learn (and gglasso), one process.

Data (as in the anchors note): p = 200, n = 500 draws from a sparse precision with 398
edges of weight +-U(0.3, 0.6), the diagonal shifted so that the smallest eigenvalue is
0.2; S = the sample correlation matrix; 20 penalties log-spaced from lambda_max to
lambda_max / 100. Off-diagonal convention (scikit-learn's), so all solvers solve the
same problem.

Figures: wall-clock seconds for the whole path through the user path
(``graphical_lasso_path``) after a warm-up call (Numba compile time reported apart),
the kernel alone (``custom_ops.ggm.glasso.glasso_sweeps`` with warm starts), scikit-learn's
``graphical_lasso`` per lambda and its warm-start path, gglasso's ``ADMM_SGL`` if
installed; for every answer the KKT gap (evaluated the same way for every solver),
whether the precision is positive definite, and the edge F1 against the truth. Peak RSS
at the end.

Last, the block Gibbs sampler of the Bayesian graphical lasso through ``fit``: 1,000
sweeps at p = 50 and p = 100 (n = 500).

BLAS runs single-threaded (``OPENBLAS_NUM_THREADS=1`` unless set): on a small shared
machine a multi-threaded BLAS spends its time contending (measured here: a 100 x 100
``numpy.linalg.inv`` took 277 ms), which hurt every solver, scikit-learn most.

Run: ``python benchmarks/bench_ggm.py`` (``--quick``: p = 60, n = 200).
"""

# ruff: noqa: E402  (the BLAS thread settings must precede importing numpy)
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse
import contextlib
import io
import resource
import time
import warnings

import numpy as np

from custom_ops.ggm.glasso import glasso_sweeps, kkt_violation
from pp_models.ggm import graphical_lasso, graphical_lasso_path, lambda_max


def make_problem(p, n, n_edges, seed=0):
    rng = np.random.default_rng(seed)
    iu = np.triu_indices(p, 1)
    pick = rng.choice(iu[0].size, size=n_edges, replace=False)
    omega = np.zeros((p, p))
    weights = rng.uniform(0.3, 0.6, n_edges) * rng.choice([-1.0, 1.0], n_edges)
    omega[iu[0][pick], iu[1][pick]] = weights
    omega = omega + omega.T
    omega += (0.2 - np.linalg.eigvalsh(omega)[0]) * np.eye(p)
    X = rng.multivariate_normal(np.zeros(p), np.linalg.inv(omega), size=n)
    return X, omega


def edge_f1(precision, truth):
    est = np.triu(precision != 0, 1)
    true = np.triu(truth != 0, 1)
    tp = np.count_nonzero(est & true)
    return 2 * tp / max(np.count_nonzero(est) + np.count_nonzero(true), 1)


def describe(name, seconds, precisions, S, lams, truth):
    gaps, pd, edges, f1 = [], [], [], []
    for prec, lam in zip(precisions, lams, strict=True):
        try:
            np.linalg.cholesky(prec)
            pd.append(True)
            gaps.append(kkt_violation(np.linalg.inv(prec), S, prec, lam, False))
        except np.linalg.LinAlgError:
            pd.append(False)
            gaps.append(np.inf)
        edges.append(int(np.count_nonzero(np.triu(prec != 0, 1))))
        f1.append(edge_f1(prec, truth))
    print(
        f"{name:<38s} {seconds:8.2f} s   max KKT gap {max(gaps):.2e}   PD {sum(pd)}/{len(pd)}"
        f"   edges {edges[0]}..{edges[-1]}   best F1 {max(f1):.3f}"
    )
    return gaps


def gibbs_sweeps(ps, n, seed, sweeps=1000):
    """Block Gibbs sweeps per second through ``fit`` (Bayesian graphical lasso, lam = 1)."""
    from inference import fit
    from pp_models import ggm

    fit(ggm.model(np.random.default_rng(0).normal(size=(50, 4))), draws=5, tune=0,
        chains=1, random_seed=0, progressbar=False)  # warm-up: compile
    from inference.gibbs.ggm import BGLassoBlockGibbs

    for p in ps:
        X, _ = make_problem(p, n, 2 * p, seed)
        X = (X - X.mean(0)) / X.std(0)
        model = ggm.model(X, lam=1.0)
        t = time.perf_counter()
        fit(model, draws=sweeps, tune=0, chains=1, random_seed=1, progressbar=False)
        total = time.perf_counter() - t
        step = BGLassoBlockGibbs([model["Omega"]], model=model, rng=1)
        point = model.initial_point()
        t = time.perf_counter()
        for _ in range(100):
            point, _ = step.step(point)
        per_step = (time.perf_counter() - t) / 100
        print(f"block Gibbs p = {p:3d}, n = {n}: {sweeps} sweeps through fit {total:6.1f} s "
              f"({sweeps / total:6.1f} sweeps/s); step alone {1 / per_step:6.1f} sweeps/s")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="p = 60, n = 200")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-gglasso", action="store_true")
    parser.add_argument("--no-gibbs", action="store_true", help="skip the block Gibbs timing")
    parser.add_argument("--gibbs-only", action="store_true")
    args = parser.parse_args(argv)
    if args.gibbs_only:
        gibbs_sweeps((20, 50) if args.quick else (50, 100), 500, args.seed)
        return
    p, n, n_edges = (60, 200, 60) if args.quick else (200, 500, 398)
    X, omega = make_problem(p, n, n_edges, args.seed)
    S = np.corrcoef(X, rowvar=False)
    lmax = lambda_max(S)
    lams = lmax * np.logspace(0, -2, 20)
    print(f"p = {p}, n = {n}, {n_edges} true edges; 20 lambdas {lams[0]:.3f} .. {lams[-1]:.4f}")

    t = time.perf_counter()
    graphical_lasso(S[:5, :5], 0.1, penalize_diagonal=False)
    print(f"Numba load/compile (first call): {time.perf_counter() - t:.2f} s")

    t = time.perf_counter()
    path = graphical_lasso_path(S, lams, penalize_diagonal=False)
    ours = time.perf_counter() - t
    assert all(r.converged for r in path.results)
    gaps = describe("ours: graphical_lasso_path", ours, path.precisions, S, lams, omega)
    print(f"    (reported kkt_gap max {max(r.kkt_gap for r in path.results):.2e}; "
          f"sweeps per lambda {[r.iterations for r in path.results]})")
    del gaps

    # kernel alone: the same warm-started sweeps without validation and assembly
    W = 0.95 * S
    np.fill_diagonal(W, np.diag(S))
    B = np.zeros_like(S)
    threshold = 1e-6 * np.abs(S[~np.eye(p, dtype=bool)]).mean()
    t = time.perf_counter()
    for lam in lams:
        glasso_sweeps(S, W, B, lam, threshold, 500, 1000)
    print(f"{'ours: kernel alone (glasso_sweeps)':<38s} {time.perf_counter() - t:8.2f} s")

    t = time.perf_counter()
    cold = [graphical_lasso(S, lam, penalize_diagonal=False) for lam in lams]
    describe("ours: graphical_lasso per lambda (cold)", time.perf_counter() - t,
             [r.precision for r in cold], S, lams, omega)

    from sklearn.covariance import graphical_lasso as sk_glasso
    from sklearn.covariance._graph_lasso import graphical_lasso_path as sk_path

    n_warn = 0
    precisions = []
    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for lam in lams:
            try:
                precisions.append(sk_glasso(S, alpha=lam)[1])
            except FloatingPointError:
                precisions.append(np.full((p, p), np.nan))
        n_warn = sum("converge" in str(w.message) for w in caught)
    sk_time = time.perf_counter() - t
    describe("scikit-learn graphical_lasso per lambda", sk_time, precisions, S, lams, omega)
    print(f"    ({n_warn} 'did not converge' warnings)")

    t = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # standardised data: its empirical covariance is S, the correlation matrix
        Z = (X - X.mean(axis=0)) / X.std(axis=0)
        _, sk_precisions = sk_path(Z, alphas=lams, X_test=None, mode="cd")
        n_warn = sum("converge" in str(w.message) for w in caught)
    sk_path_time = time.perf_counter() - t
    describe("scikit-learn graphical_lasso_path (warm)", sk_path_time,
             sk_precisions, S, lams, omega)
    print(f"    ({n_warn} 'did not converge' warnings)")

    if not args.no_gglasso:
        try:
            from gglasso.problem import glasso_problem
            from gglasso.solver.single_admm_solver import ADMM_SGL
        except ImportError:
            print("gglasso not installed (pip install gglasso==0.3.1)")
        else:
            del glasso_problem
            quiet = contextlib.redirect_stdout(io.StringIO())
            with quiet:  # warm-up: gglasso's own Numba compile
                ADMM_SGL(S[:5, :5], 0.1, np.eye(5), np.eye(5), verbose=False, latent=False)
            precisions = []
            t = time.perf_counter()
            Omega0 = np.eye(p)
            for lam in lams:
                with contextlib.redirect_stdout(io.StringIO()):
                    sol, _ = ADMM_SGL(S, lam, Omega0, Omega0, verbose=False, latent=False)
                precisions.append(sol["Theta"])
                Omega0 = sol["Omega"]
            describe("gglasso 0.3.1 ADMM_SGL (warm)", time.perf_counter() - t,
                     precisions, S, lams, omega)
            print("    (ADMM iterates are only approximately sparse; its edge counts use "
                  "exact non-zeros)")

    print(f"speed-up vs scikit-learn per lambda: {sk_time / ours:.1f}x; "
          f"vs its warm path: {sk_path_time / ours:.1f}x")

    if not args.no_gibbs:
        gibbs_sweeps((20, 50) if args.quick else (50, 100), 500, args.seed)
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
