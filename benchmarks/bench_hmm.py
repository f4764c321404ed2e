"""HMM forward-backward and FFBS: ours vs hmmlearn 0.3.3, one process.

A Gaussian HMM with K states (T = 10^6, K = 10 by default), parameters drawn once and
given to both sides; data simulated from it. Timed after a warm-up call on a short series
(compile time apart):

- ours/forward-backward: ``pp_models.hmm.forward_backward`` on the emission
  log-likelihoods (their computation included: ``emissions.get_emission("gaussian")
  .log_lik``), which returns the log evidence, the T x K marginals and the K x K
  expected transitions;
- hmmlearn: ``GaussianHMM.score_samples`` (log evidence and the T x K posteriors, its
  log-space forward-backward in C++);
- ours/FFBS: one exact path draw (``custom_ops.hmm.forward_backward.ffbs_kernel``, the
  kernel the ``hmm_ffbs`` step runs), log-likelihoods given.

Peak RSS: the highest resident set seen while each run was timed (sampled every 2 ms).
The two log evidences are printed (they agree to rounding).

Run: ``python benchmarks/bench_hmm.py [--T 1000000] [--K 10] [--repeat 3]``.
The machine has 2 cores shared with other jobs: check ``uptime`` and repeat when quiet.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from hmmlearn import hmm as hmmlearn

from benchmarks._memory import PeakRSS
from custom_ops.hmm.forward_backward import ffbs_kernel
from pp_models import hmm
from pp_models.hmm.emissions import get_emission
from pp_models.hmm.outputs import simulate


def _timed(fn, repeat):
    best, out, peak = np.inf, None, 0.0
    for _ in range(repeat):
        with PeakRSS() as mem:
            start = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - start)
        peak = max(peak, mem.peak_mb - mem.start_mb)
    return best, out, peak


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--T", type=int, default=1_000_000)
    parser.add_argument("--K", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    K, T = args.K, args.T
    pi0 = rng.dirichlet(np.ones(K))
    P = rng.dirichlet(np.ones(K), size=K) + 5.0 * np.eye(K)
    P /= P.sum(axis=1, keepdims=True)
    params = {"mu": np.arange(K) * 1.5, "tau": np.full(K, 1.0)}
    gaussian = get_emission("gaussian")
    y = np.asarray(simulate(gaussian, rng, pi0, P, params, [0, T]), dtype=np.float64)

    theirs = hmmlearn.GaussianHMM(n_components=K, covariance_type="diag", init_params="", params="")
    theirs.startprob_, theirs.transmat_ = pi0, P
    theirs.means_, theirs.covars_ = params["mu"][:, None], (1.0 / params["tau"])[:, None]

    def ours():
        return hmm.forward_backward(np.log(pi0), np.log(P), gaussian.log_lik(params, y))

    def hmmlearn_fb():
        return theirs.score_samples(y[:, None])

    log_lik = np.ascontiguousarray(gaussian.log_lik(params, y))
    path = np.empty(T, dtype=np.int64)
    offsets = np.array([0, T])

    def ffbs():
        return ffbs_kernel(np.log(pi0), np.log(P), log_lik, offsets, rng.random(T), path)

    # warm-up (compilation) on a short series
    hmm.forward_backward(np.log(pi0), np.log(P), log_lik[:100])
    ffbs_kernel(
        np.log(pi0), np.log(P), log_lik[:100], np.array([0, 100]), rng.random(100), path[:100]
    )
    t_ours, r_ours, m_ours = _timed(ours, args.repeat)
    t_theirs, r_theirs, m_theirs = _timed(hmmlearn_fb, args.repeat)
    t_ffbs, _, m_ffbs = _timed(ffbs, args.repeat)
    print(f"T = {T}, K = {K}, best of {args.repeat}")
    print(
        f"ours/forward-backward  {t_ours:8.3f} s  peak +{m_ours:7.1f} MB  "
        f"log p(y) = {r_ours.log_evidence:.6f}"
    )
    print(
        f"hmmlearn score_samples {t_theirs:8.3f} s  peak +{m_theirs:7.1f} MB  "
        f"log p(y) = {r_theirs[0]:.6f}"
    )
    print(f"ours/FFBS (one path)   {t_ffbs:8.3f} s  peak +{m_ffbs:7.1f} MB")
    print(f"speed-up of ours over hmmlearn: {t_theirs / t_ours:.2f}x")


if __name__ == "__main__":
    main()
