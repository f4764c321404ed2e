"""Collapsed Gibbs LDA throughput: ours vs `lda` 3.0.2 and tomotopy 0.14, one process.

Reuters (395 documents, 84,010 tokens, V = 4,258), alpha = 0.1, eta = 0.01, the same
number of sweeps for every sampler from the same kind of start (``lda``'s balanced
``z_i = i mod K`` for ours and ``lda``; tomotopy initialises itself). Reported:
token-updates per second (tokens x sweeps / sampling wall time, initialisation
excluded) and the final joint log likelihood log p(w, z).

- ours/sparse: SparseLDA buckets (``custom_ops.lda.gibbs.gibbs_sweep_sparse``), the
  kernel the ``lda_collapsed_gibbs`` step uses by default;
- ours/alias: LightLDA's cycle of a stale alias-table word proposal and a document
  proposal with Metropolis-Hastings corrections (``custom_ops.lda.alias``), the step's
  ``"alias"`` sampler, O(1) per token;
- ours/dense: the O(K) Griffiths-Steyvers conditional, what the step's ``"dense"``
  sampler runs: the fused scan (``gibbs_sweep_dense``) below 64 topics, the blocked
  layout that vectorises (``gibbs_sweep_blocked``) from 64 on;
- ours/fit: the user's path, ``inference.fit(model, method="gibbs", draws=sweeps,
  tune=0, chains=1)`` on a model built once, after one warm-up ``fit`` on it (the
  warm-up's time, mostly compilation, is printed apart); default outputs;
- ours/step: the sparse kernel driven through ``pm.sample`` with the registered step
  (``--step``), i.e. with PyMC's per-draw overhead (point copy, log_joint stat, and the
  trace, which must hold at least one variable: ``theta``, D x K floats per draw, whose
  computation and storage dominate the overhead at K = 500);
- ours/1 thread, ours/2 threads: the step with ``n_threads=1`` (the serial sampler) and
  ``n_threads=2`` (the word x document partition of ``custom_ops.lda.threads``: each
  sweep two epochs in which the two threads run the SparseLDA sweep over cells sharing no
  document and no word, one compiled call per draw), both driven draw by draw with their
  per-draw statistics, so their ratio is the threads' speed-up through the step;
- ours/kernel 1 thr, ours/kernel 2 thr: ``ThreadedLDAState.sweep`` alone with 1 block (the
  serial sweep, draw for draw) and 2, one call per sweep: the threads' speed-up of the
  kernel;
- ours/fit 2 threads: ``fit(..., step=...)`` with the ``n_threads=2`` step, after a
  warm-up ``fit`` (to set against ours/fit);
- lda: ``lda.LDA`` internals (the per-iteration shuffle of its 1 MiB of cached
  uniforms and ``_sample_topics``; its periodic log-likelihood evaluation is excluded);
- tomotopy: ``LDAModel.train(n, workers=1)`` (and ``workers=2``) with hyperparameter
  optimisation off.

Peak RSS: the highest resident set seen while each run was timed (sampled every 2 ms).
CPU: the process's CPU seconds (all threads) during the best run. The 2-thread / 1-thread
ratios of wall time and CPU are printed for the kernel, the step and ``fit``: on a loaded
machine the wall ratio understates what a free core gives, and the CPU ratio says how much
work the threads add.

Run: ``python benchmarks/bench_lda.py [--topics 20 100 500 1000] [--sweeps 200] [--repeat 3]``;
the threads alone: ``--topics 500 --skip lda dense alias sparse fit``.
The machine has 2 cores shared with other jobs: check ``uptime`` and repeat when quiet.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._memory import PeakRSS
from custom_ops.lda.alias import AliasLDAState
from custom_ops.lda.dense import dense_block_width, gibbs_sweep_blocked, gibbs_sweep_dense
from custom_ops.lda.gibbs import (
    SparseLDAState,
    SweepPrior,
    Tokens,
    TopicCounts,
    build_counts,
    log_joint,
    tempering_tables,
)
from custom_ops.lda.threads import ThreadedLDAState
from pp_models import datasets
from pp_models.lda import prepare_corpus

ALPHA, ETA = 0.1, 0.01


def bench_ours_sparse(corpus, n_topics, sweeps, seed):
    rng = np.random.default_rng(seed)
    z0 = np.arange(corpus.n_tokens, dtype=np.int32) % n_topics
    alpha = np.full(n_topics, ALPHA)
    eta = np.full(corpus.n_words, ETA)
    state = SparseLDAState(corpus.words, corpus.doc_ptr, z0, corpus.n_words, n_topics)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        state.sweep(alpha, eta, 1.0, rng)
    elapsed = time.perf_counter() - t0
    return elapsed, log_joint(state.n_wk, state.n_dk, state.n_k, ALPHA, ETA)


def bench_ours_alias(corpus, n_topics, sweeps, seed):
    rng = np.random.default_rng(seed)
    z0 = np.arange(corpus.n_tokens, dtype=np.int32) % n_topics
    alpha = np.full(n_topics, ALPHA)
    eta = np.full(corpus.n_words, ETA)
    state = AliasLDAState(corpus.words, corpus.doc_ptr, z0, corpus.n_words, n_topics)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        state.alias_sweep(alpha, eta, 1.0, rng)
    elapsed = time.perf_counter() - t0
    return elapsed, log_joint(state.n_wk, state.n_dk, state.n_k, ALPHA, ETA)


def bench_ours_dense(corpus, n_topics, sweeps, seed):
    rng = np.random.default_rng(seed)
    z = np.arange(corpus.n_tokens, dtype=np.int32) % n_topics
    alpha = np.full(n_topics, ALPHA)
    eta = np.full(corpus.n_words, ETA)
    n_wk, n_dk, n_k = build_counts(corpus.words, corpus.doc_ptr, z, corpus.n_words, n_topics)
    tokens = Tokens(corpus.words, corpus.doc_ptr, z)
    counts = TopicCounts(n_wk, n_dk, n_k)
    prior = SweepPrior(alpha, eta, 1.0, *tempering_tables(corpus.words, corpus.n_words, eta, 1.0))
    width = dense_block_width(n_topics)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        if width:
            gibbs_sweep_blocked(tokens, counts, prior, width, rng)
        else:
            gibbs_sweep_dense(tokens, counts, prior, rng)
    elapsed = time.perf_counter() - t0
    return elapsed, log_joint(n_wk, n_dk, n_k, ALPHA, ETA)


def bench_ours_step(counts, n_topics, sweeps, seed):
    import pymc as pm

    from inference.gibbs import get_step
    from pp_models import lda as zoo_lda
    from pp_models.model_info import get_info

    m = zoo_lda.model(counts, n_topics=n_topics, alpha=ALPHA, eta=ETA)
    hint = get_info(m).step_hints[0]
    step = get_step(hint.step).from_model(m, hint.var_names, **hint.options(m))
    t0 = time.perf_counter()
    with m:
        dt = pm.sample(
            draws=sweeps,
            tune=0,
            chains=1,
            cores=1,
            step=step,
            random_seed=seed,
            progressbar=False,
            var_names=["theta"],  # PyMC needs one traced variable; theta is D x K
            compute_convergence_checks=False,
        )
    elapsed = time.perf_counter() - t0
    return elapsed, float(dt.sample_stats["log_joint"].values[0, -1])


def bench_ours_threads(counts, n_topics, sweeps, seed, n_threads=2):
    from inference.gibbs import get_step
    from pp_models import lda as zoo_lda
    from pp_models.model_info import get_info

    m = zoo_lda.model(counts, n_topics=n_topics, alpha=ALPHA, eta=ETA)
    hint = get_info(m).step_hints[0]
    step = get_step(hint.step).from_model(
        m, hint.var_names, **hint.options(m), n_threads=n_threads, rng=seed
    )
    point = m.initial_point()
    t0 = time.perf_counter()
    for _ in range(sweeps):
        point, stats = step.step(point)
    elapsed = time.perf_counter() - t0
    return elapsed, float(stats[0]["log_joint"])


def bench_ours_kernel_threads(corpus, n_topics, sweeps, seed, n_threads):
    """``ThreadedLDAState.sweep`` alone, one call per sweep, from the balanced start."""
    z0 = np.arange(corpus.n_tokens, dtype=np.int32) % n_topics
    alpha = np.full(n_topics, ALPHA)
    eta = np.full(corpus.n_words, ETA)
    state = ThreadedLDAState(corpus.words, corpus.doc_ptr, z0, corpus.n_words, n_topics, n_threads)
    rngs = np.random.default_rng(seed).spawn(n_threads)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        state.sweep(alpha, eta, 1.0, rngs)
    elapsed = time.perf_counter() - t0
    return elapsed, log_joint(state.n_wk, state.n_dk, state.n_k, ALPHA, ETA)


_FIT_MODELS: dict = {}


def bench_ours_fit(counts, n_topics, sweeps, seed):
    """``fit`` on a model built once per K; the first call per K is a warm-up."""
    from inference import fit
    from pp_models import lda as zoo_lda

    if n_topics not in _FIT_MODELS:
        m = zoo_lda.model(counts, n_topics=n_topics, alpha=ALPHA, eta=ETA)
        t0 = time.perf_counter()
        fit(m, method="gibbs", draws=2, tune=0, chains=1, random_seed=seed, progressbar=False)
        print(
            f"K={n_topics:4d} ours/fit warm-up call (compilation): "
            f"{time.perf_counter() - t0:.2f} s",
            flush=True,
        )
        _FIT_MODELS[n_topics] = m
    m = _FIT_MODELS[n_topics]
    t0 = time.perf_counter()
    dt = fit(m, method="gibbs", draws=sweeps, tune=0, chains=1, random_seed=seed, progressbar=False)
    elapsed = time.perf_counter() - t0
    return elapsed, float(dt["sample_stats"]["log_joint"].values[0, -1])


_FIT_THREAD_MODELS: dict = {}


def bench_ours_fit_threads(counts, n_topics, sweeps, seed, n_threads=2):
    """``fit`` with the ``n_threads`` step on a model built once per K (warm-up first)."""
    from inference import fit
    from inference.gibbs import get_step
    from pp_models import lda as zoo_lda
    from pp_models.model_info import get_info

    def threaded_step(m):
        hint = get_info(m).step_hints[0]
        return get_step(hint.step).from_model(
            m, hint.var_names, **hint.options(m), n_threads=n_threads
        )

    if n_topics not in _FIT_THREAD_MODELS:
        m = zoo_lda.model(counts, n_topics=n_topics, alpha=ALPHA, eta=ETA)
        fit(
            m,
            method="gibbs",
            draws=2,
            tune=0,
            chains=1,
            random_seed=seed,
            progressbar=False,
            step=threaded_step(m),
        )
        _FIT_THREAD_MODELS[n_topics] = m
    m = _FIT_THREAD_MODELS[n_topics]
    step = threaded_step(m)
    t0 = time.perf_counter()
    dt = fit(
        m,
        method="gibbs",
        draws=sweeps,
        tune=0,
        chains=1,
        random_seed=seed,
        progressbar=False,
        step=step,
    )
    elapsed = time.perf_counter() - t0
    return elapsed, float(dt["sample_stats"]["log_joint"].values[0, -1])


def bench_lda(counts, n_topics, sweeps, seed):
    import lda
    import lda.utils

    logging.getLogger("lda").setLevel(logging.WARNING)
    model = lda.LDA(n_topics=n_topics, n_iter=sweeps, alpha=ALPHA, eta=ETA, random_state=seed)
    random_state = lda.utils.check_random_state(seed)
    rands = model._rands.copy()
    model._initialize(counts)
    t0 = time.perf_counter()
    for _ in range(sweeps):
        random_state.shuffle(rands)  # part of lda's own sampling loop (LDA._fit)
        model._sample_topics(rands)
    elapsed = time.perf_counter() - t0
    return elapsed, model.loglikelihood()


def bench_tomotopy(counts, vocabulary, n_topics, sweeps, seed, workers=1):
    import tomotopy as tp

    mdl = tp.LDAModel(k=n_topics, alpha=ALPHA, eta=ETA, seed=seed)
    mdl.optim_interval = 0  # keep alpha fixed, as the other samplers do
    for row in range(counts.shape[0]):
        start, stop = counts.indptr[row], counts.indptr[row + 1]
        doc = []
        for j, c in zip(counts.indices[start:stop], counts.data[start:stop], strict=True):
            doc.extend([vocabulary[j]] * int(c))
        if doc:
            mdl.add_doc(doc)
    mdl.train(0, workers=workers)  # initialisation
    t0 = time.perf_counter()
    mdl.train(sweeps, workers=workers)
    elapsed = time.perf_counter() - t0
    return elapsed, mdl.ll_per_word * mdl.num_words


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, nargs="+", default=[20, 100, 500, 1000])
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="best of this many runs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--step", action="store_true", help="also time ours through pm.sample")
    parser.add_argument(
        "--skip",
        nargs="*",
        default=[],
        choices=["lda", "tomotopy", "dense", "alias", "fit", "threads", "sparse"],
        help="skip these",
    )
    args = parser.parse_args(argv)

    reuters = datasets.load("reuters")
    counts = reuters.data
    corpus = prepare_corpus(counts)
    n_tok = corpus.n_tokens
    print(f"Reuters: {corpus.n_docs} docs, {n_tok} tokens, V={corpus.n_words}")
    print(f"load average before: {os.getloadavg()} (2 shared cores; numbers are noisy)")

    # compile / warm every kernel outside the timings
    bench_ours_sparse(corpus, 3, 1, 0)
    bench_ours_alias(corpus, 3, 1, 0)
    bench_ours_dense(corpus, 3, 1, 0)
    bench_ours_dense(corpus, 64, 1, 0)
    bench_ours_kernel_threads(corpus, 3, 1, 0, 1)
    bench_ours_kernel_threads(corpus, 3, 1, 0, 2)

    runners = {}
    if "sparse" not in args.skip:
        runners["ours/sparse"] = lambda k, s: bench_ours_sparse(corpus, k, args.sweeps, s)
    if "alias" not in args.skip:
        runners["ours/alias"] = lambda k, s: bench_ours_alias(corpus, k, args.sweeps, s)
    if "dense" not in args.skip:
        runners["ours/dense"] = lambda k, s: bench_ours_dense(corpus, k, args.sweeps, s)
    if "fit" not in args.skip:
        runners["ours/fit"] = lambda k, s: bench_ours_fit(counts, k, args.sweeps, s)
    if "threads" not in args.skip:
        runners["ours/kernel 1 thr"] = lambda k, s: bench_ours_kernel_threads(
            corpus, k, args.sweeps, s, 1
        )
        runners["ours/kernel 2 thr"] = lambda k, s: bench_ours_kernel_threads(
            corpus, k, args.sweeps, s, 2
        )
        runners["ours/1 thread"] = lambda k, s: bench_ours_threads(
            counts, k, args.sweeps, s, n_threads=1
        )
        runners["ours/2 threads"] = lambda k, s: bench_ours_threads(counts, k, args.sweeps, s)
    if "fit" not in args.skip and "threads" not in args.skip:
        runners["ours/fit 2 threads"] = lambda k, s: bench_ours_fit_threads(
            counts, k, args.sweeps, s
        )
    if args.step:
        runners["ours/step"] = lambda k, s: bench_ours_step(counts, k, args.sweeps, s)
    if "lda" not in args.skip:
        runners["lda 3.0.2"] = lambda k, s: bench_lda(counts, k, args.sweeps, s)
    if "tomotopy" not in args.skip:
        runners["tomotopy 0.14"] = lambda k, s: bench_tomotopy(
            counts, reuters.feature_names, k, args.sweeps, s
        )
        runners["tomotopy 2 workers"] = lambda k, s: bench_tomotopy(
            counts, reuters.feature_names, k, args.sweeps, s, workers=2
        )

    rows = []
    for n_topics in args.topics:
        # round-robin over the samplers, best of `repeat`: load from other jobs on the
        # shared cores then hits every sampler alike instead of one block of runs
        best = dict.fromkeys(runners, np.inf)
        cpu = dict.fromkeys(runners, np.inf)
        peak = dict.fromkeys(runners, 0.0)
        lls = {name: [] for name in runners}
        for r in range(args.repeat):
            for name, run in runners.items():
                with PeakRSS() as mem:
                    c0 = time.process_time()
                    elapsed, ll = run(n_topics, args.seed + r)
                    used = time.process_time() - c0
                if elapsed < best[name]:
                    best[name], cpu[name] = elapsed, used
                peak[name] = max(peak[name], mem.peak_mb)
                lls[name].append(ll)
        results = {}
        for name in runners:
            rate = n_tok * args.sweeps / best[name]
            results[name] = rate
            mean_ll = float(np.mean(lls[name]))
            rows.append((n_topics, name, rate, best[name], mean_ll))
            print(
                f"K={n_topics:4d} {name:18s} {rate / 1e6:7.2f} M token-updates/s "
                f"(best {best[name]:6.2f} s of {args.repeat}, CPU {cpu[name]:6.2f} s)  "
                f"log p(w,z) = {mean_ll:,.0f}  "
                f"peak RSS {peak[name]:,.0f} MB",
                flush=True,
            )
        ours = results.get("ours/sparse")
        for other in ("lda 3.0.2", "tomotopy 0.14", "tomotopy 2 workers"):
            if ours and other in results:
                print(f"K={n_topics:4d} ratio ours/sparse : {other} = {ours / results[other]:.2f}x")
        for two, one, what in (
            ("ours/kernel 2 thr", "ours/kernel 1 thr", "kernel"),
            ("ours/2 threads", "ours/1 thread", "step  "),
            ("ours/fit 2 threads", "ours/fit", "fit   "),
        ):
            if two in results and one in results:
                print(
                    f"K={n_topics:4d} 2 threads / 1 thread, {what}: wall speed-up "
                    f"{best[one] / best[two]:.2f}x, CPU {cpu[two] / cpu[one]:.2f}x"
                )
        if "ours/2 threads" in results:
            for other in ("tomotopy 2 workers", "tomotopy 0.14"):
                if other in results:
                    print(
                        f"K={n_topics:4d} ratio ours/2 threads : {other} = "
                        f"{results['ours/2 threads'] / results[other]:.2f}x"
                    )
            if "tomotopy 2 workers" in results and "tomotopy 0.14" in results:
                print(
                    f"K={n_topics:4d} tomotopy 2 workers / 1 worker: wall speed-up "
                    f"{best['tomotopy 0.14'] / best['tomotopy 2 workers']:.2f}x, CPU "
                    f"{cpu['tomotopy 2 workers'] / cpu['tomotopy 0.14']:.2f}x"
                )
            serial_ll = np.mean(lls.get("ours/sparse") or lls["ours/1 thread"])
            print(
                f"K={n_topics:4d} log p(w,z) of 2 threads minus serial: "
                f"{(np.mean(lls['ours/2 threads']) - serial_ll) / abs(serial_ll) * 100:+.2f} %"
            )
        if "ours/fit" in results:
            if ours:
                print(
                    f"K={n_topics:4d} fit overhead over the sparse kernel: "
                    f"{(ours / results['ours/fit'] - 1) * 100:.1f} %"
                )
            for other in ("lda 3.0.2", "tomotopy 0.14", "tomotopy 2 workers"):
                if other in results:
                    print(
                        f"K={n_topics:4d} ratio ours/fit    : {other} = "
                        f"{results['ours/fit'] / results[other]:.2f}x"
                    )
        if "ours/step" in results and "lda 3.0.2" in results:
            print(
                f"K={n_topics:4d} ratio ours/step   : lda 3.0.2 = "
                f"{results['ours/step'] / results['lda 3.0.2']:.2f}x"
            )
        if "ours/alias" in results:
            for other in ("ours/sparse", "tomotopy 0.14"):
                if other in results:
                    print(
                        f"K={n_topics:4d} ratio ours/alias  : {other} = "
                        f"{results['ours/alias'] / results[other]:.2f}x"
                    )
        if "ours/dense" in results and "lda 3.0.2" in results:
            print(
                f"K={n_topics:4d} ratio ours/dense  : lda 3.0.2 = "
                f"{results['ours/dense'] / results['lda 3.0.2']:.2f}x"
            )
    print(f"load average after: {os.getloadavg()}")
    return rows


if __name__ == "__main__":
    main()
