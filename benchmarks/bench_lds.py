"""Kalman log-likelihood at T = 10^4, state dimension 4, observation dimension 4: ours
(value; value and gradient in all inputs) beside statsmodels' ``loglike`` (value only)
in one process, after a warm-up call of each (compile time apart).

``--missing F`` makes a fraction ``F`` of the entries of ``y`` missing at random: the
observed entries then change from step to step, so the kernels rarely meet the repeated
covariances they reuse (the covariance recursion at its fixed point), the case of a
time-varying model.

Run: ``python benchmarks/bench_lds.py [--T 10000] [--repeats 5] [--missing 0.1]``.
"""

import argparse
import time

import numpy as np
from statsmodels.tsa.statespace.mlemodel import MLEModel

from custom_ops.lds.kalman import kalman_log_likelihood_kernel, kalman_value_and_gradient_kernel


def _best(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--T", type=int, default=10_000)
    parser.add_argument("--n", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--missing", type=float, default=0.0)
    args, _ = parser.parse_known_args()
    rng = np.random.default_rng(0)
    n = p = args.n
    A = 0.9 * np.eye(n) + 0.02 * rng.normal(size=(n, n))
    C = rng.normal(size=(p, n))
    Q = 0.1 * np.eye(n)
    R = 0.5 * np.eye(p)
    m0, P0 = np.zeros(n), np.eye(n)
    y = rng.normal(size=(args.T, p))
    y[rng.random(size=y.shape) < args.missing] = np.nan

    def ours_value():
        return kalman_log_likelihood_kernel(y, A, C, Q, R, m0, P0)

    def ours_gradient():
        return kalman_value_and_gradient_kernel(y, A, C, Q, R, m0, P0)

    mod = MLEModel(y, k_states=n, initialization="known", initial_state=m0, initial_state_cov=P0)
    mod["design"], mod["transition"], mod["selection"] = C, A, np.eye(n)
    mod["state_cov"], mod["obs_cov"] = Q, R

    def theirs_value():
        return mod.ssm.loglike()

    np.testing.assert_allclose(ours_value(), theirs_value(), rtol=1e-9)
    t_value = _best(ours_value, args.repeats)
    t_grad = _best(ours_gradient, args.repeats)
    t_sm = _best(theirs_value, args.repeats)
    print(
        f"T={args.T} n=p={n} missing={args.missing}: ours value {t_value * 1e3:.1f} ms, "
        f"value+gradient {t_grad * 1e3:.1f} ms; statsmodels loglike {t_sm * 1e3:.1f} ms; "
        f"ratio statsmodels / ours: value {t_sm / t_value:.2f}, "
        f"value+gradient {t_sm / t_grad:.2f}"
    )


if __name__ == "__main__":
    main()
