"""AD-LDA on a Dask LocalCluster vs the single-process collapsed Gibbs sampler.

A synthetic corpus drawn from LDA itself (K = 50 topics over V = 20,000 words, phi_k ~
Dir(0.01), theta_d ~ Dir(0.1), documents of 200 tokens; >= 20 M tokens by default) is
written shard by shard to a folder of ``.npz`` count matrices (never held whole), with
1,000 held-out documents from the same topics. Then, with alpha = 0.1, beta = 0.01 and
the same number of sweeps from the same start:

- single process: ``pp_models.lda.adlda(shards, K, n_partitions=1)`` without a client,
  the serial collapsed Gibbs sampler (SparseLDA kernel; ``n_partitions=1`` is ``fit``'s
  sampler draw for draw, without PyMC's per-draw bookkeeping);
- AD-LDA on a ``LocalCluster(n_workers=W, threads_per_worker=1, processes=True)`` for W
  = 1 and 2, one partition per worker, the shards read by the workers.

Each run follows a warm-up call on the same cluster (one sweep: compiles or loads the
kernels in every worker) and reports: token-updates/s (tokens x sweeps / wall time of the
sweeps; loading apart), the scaling efficiency against the single process, per-worker
throughput on the CPU clock (tokens / thread CPU seconds of each partition's sweep: what
a worker does whatever else shares the machine), the reduce/broadcast seconds per sweep
(wall time minus the slowest partition's own time), the held-out perplexity after the
sweeps (document completion, ``pp_models.lda.perplexity``) and the client's peak RSS
(sampled every 2 ms) above its level before the run, also for a corpus a tenth the size
(client memory must not grow with the corpus: ``doc_topic=False``; the single process
holds the corpus, its figure is for the full size only).

Last, the model on paper for W workers: a sweep costs N / (W r) + c(W), with r the
measured per-worker CPU throughput and c(W) the reduce/broadcast cost, taken as the
measured c(1) plus (c(2) - c(1)) per level of the reduce tree (ceil(log2 W) levels),
compared with the single process on the same CPU clock.

``--convergence`` instead runs the serial sampler and AD-LDA with 2 and 4 partitions in
this process (the same draws as on a cluster) for many sweeps on a smaller corpus, and
prints log p(w | z) and the held-out perplexity along the way: how many sweeps AD-LDA
needs to come within 1 % of the serial sampler.

Run: ``python benchmarks/bench_distributed.py [--tokens 20000000] [--sweeps 10]``; the
machine's load average (``uptime``) is printed with the figures: with other jobs on the
2 cores the wall-clock speed-up means little, the CPU-clock figures still do.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
import warnings

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._memory import PeakRSS
from pp_models import lda
from pp_models.lda.shards import write_shards

ALPHA, BETA = 0.1, 0.01


def lda_blocks(seed, *, n_docs, n_topics, n_words, doc_length, shard_docs, phi=None):
    """Count matrices of documents drawn from LDA, ``shard_docs`` documents at a time
    (each token: a topic from the document's theta, a word from that topic's phi, by
    inverse CDF on the topic's cumulative phi)."""
    rng = np.random.default_rng(seed)
    if phi is None:
        phi = rng.dirichlet(np.full(n_words, BETA), size=n_topics)
    cum = np.cumsum(phi, axis=1)
    cum[:, -1] = 1.0

    def blocks():
        for start in range(0, n_docs, shard_docs):
            d = min(shard_docs, n_docs - start)
            theta = rng.dirichlet(np.full(n_topics, ALPHA), size=d)
            per_doc = np.stack([rng.multinomial(doc_length, t) for t in theta])  # (d, K)
            docs = np.repeat(np.arange(d), doc_length)
            topics = np.repeat(np.tile(np.arange(n_topics), d), per_doc.ravel())
            words = np.empty(topics.size, dtype=np.int64)
            u = rng.random(topics.size)
            for k in range(n_topics):
                mask = topics == k
                words[mask] = np.searchsorted(cum[k], u[mask], side="right")
            yield sp.csr_matrix((np.ones(docs.size, dtype=np.int64), (docs, words)),
                                shape=(d, n_words))

    return phi, blocks()


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def run(shards, n_topics, sweeps, seed, client=None, n_partitions=1):
    with PeakRSS() as mem:
        t0 = time.perf_counter()
        result = lda.adlda(shards, n_topics, client=client, n_partitions=n_partitions,
                           sweeps=sweeps, alpha=ALPHA, beta=BETA, random_seed=seed,
                           doc_topic=False)
        total = time.perf_counter() - t0
    return result, total, mem.peak_mb - mem.start_mb


def describe(label, result, total, client_mb, heldout, serial=None):
    sweeps = result.sweeps
    rate = result.token_updates_per_second
    load = total - result.sweep_seconds.sum()
    cpu = result.compute_cpu_seconds  # (sweeps, P)
    tokens = np.asarray(result.partition_tokens, dtype=float)
    per_worker = float(np.median(tokens[None, :] / cpu))
    comm = float(np.median(result.communication_seconds))
    perp = lda.perplexity(result.topic_word, heldout, alpha=ALPHA, random_seed=0)
    line = (f"{label:<22} {rate / 1e6:7.2f} M tok/s  sweep {np.median(result.sweep_seconds):6.2f} s"
            f"  (load {load:5.1f} s)  per-worker CPU {per_worker / 1e6:6.2f} M tok/s"
            f"  reduce/bcast {comm * 1e3:7.1f} ms  perplexity {perp:8.1f}"
            f"  log p(w|z) {result.log_likelihood[-1]:.6e}  client +{client_mb:6.1f} MB")
    if serial is not None:
        s_rate = serial["result"].token_updates_per_second
        line += (f"\n{'':<22} speed-up {rate / s_rate:4.2f}x, efficiency "
                 f"{rate / s_rate / result.n_partitions:4.2f}, perplexity "
                 f"{perp / serial['perplexity'] - 1:+.3%}, log p(w|z) "
                 f"{result.log_likelihood[-1] / serial['result'].log_likelihood[-1] - 1:+.3%}"
                 f" vs single process")
    print(line, flush=True)
    return {"result": result, "perplexity": perp, "per_worker": per_worker, "comm": comm,
            "rate": rate, "client_mb": client_mb, "sweeps": sweeps}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=20_000_000)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--words", type=int, default=20_000)
    parser.add_argument("--doc-length", type=int, default=200)
    parser.add_argument("--shard-docs", type=int, default=10_000)
    parser.add_argument("--sweeps", type=int, default=10)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--convergence", action="store_true",
                        help="log p(w|z) and perplexity along the sweeps, P = 1, 2, 4")
    parser.add_argument("--dir", default=None, help="where the shards go (default: a "
                        "temporary folder, removed afterwards)")
    args = parser.parse_args(argv)

    if args.convergence:
        return _convergence(args)
    import distributed

    n_docs = -(-args.tokens // args.doc_length)
    workdir = args.dir or tempfile.mkdtemp(prefix="bench-adlda-")
    full, small = os.path.join(workdir, "full"), os.path.join(workdir, "tenth")
    print(f"uptime load average: {load_average()}  (2 cores)")
    t0 = time.perf_counter()
    phi, blocks = lda_blocks(args.seed, n_docs=n_docs, n_topics=args.topics,
                             n_words=args.words, doc_length=args.doc_length,
                             shard_docs=args.shard_docs)
    paths = write_shards(full, blocks)
    n_small = max(max(args.workers), n_docs // 10)
    _, blocks = lda_blocks(args.seed + 1, n_docs=n_small, phi=phi,
                           n_topics=args.topics, n_words=args.words,
                           doc_length=args.doc_length,
                           shard_docs=min(args.shard_docs, n_small // max(args.workers)))
    write_shards(small, blocks)
    _, blocks = lda_blocks(args.seed + 2, n_docs=1000, phi=phi, n_topics=args.topics,
                           n_words=args.words, doc_length=args.doc_length, shard_docs=1000)
    heldout = next(blocks)
    print(f"corpus: {n_docs:,} documents x {args.doc_length} = {n_docs * args.doc_length:,} "
          f"tokens, K = {args.topics}, V = {args.words:,}, {len(paths)} shards "
          f"({time.perf_counter() - t0:.1f} s to draw and write)")
    try:
        lda.adlda(heldout, args.topics, sweeps=1, random_seed=0, doc_topic=False)
        serial = describe("single process", *run(full, args.topics, args.sweeps, args.seed),
                          heldout)
        rows = {}
        for W in args.workers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cluster = distributed.LocalCluster(n_workers=W, threads_per_worker=1,
                                                   processes=True, dashboard_address=None)
                client = distributed.Client(cluster)
            try:
                # warm-up: every worker compiles (or loads) the kernels once
                lda.adlda(heldout, args.topics, client=client, n_partitions=W, sweeps=1,
                          random_seed=0, doc_topic=False)
                print(f"load average before W = {W}: {load_average()}")
                rows[W] = describe(f"AD-LDA, {W} worker(s)",
                                   *run(full, args.topics, args.sweeps, args.seed, client, W),
                                   heldout, serial)
                tenth = run(small, args.topics, 2, args.seed, client, W)
                print(f"{'':<22} client +{tenth[2]:.1f} MB at a tenth of the corpus "
                      f"(+{rows[W]['client_mb']:.1f} MB at the full size)")
            finally:
                client.close()
                cluster.close()
        print(f"uptime load average after: {load_average()}")
        _paper_model(rows, serial, n_docs * args.doc_length)
    finally:
        if args.dir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0


def _convergence(args) -> int:
    n_docs = -(-args.tokens // args.doc_length)
    phi, blocks = lda_blocks(args.seed, n_docs=n_docs, n_topics=args.topics,
                             n_words=args.words, doc_length=args.doc_length,
                             shard_docs=n_docs)
    counts = next(blocks)
    _, blocks = lda_blocks(args.seed + 2, n_docs=1000, phi=phi, n_topics=args.topics,
                           n_words=args.words, doc_length=args.doc_length, shard_docs=1000)
    heldout = next(blocks)
    print(f"uptime load average: {load_average()}; corpus {n_docs:,} x {args.doc_length} "
          f"tokens, K = {args.topics}, V = {args.words:,}, {args.sweeps} sweeps")
    marks = sorted({s for s in (10, 20, 50, 100, 200, 500, args.sweeps) if s <= args.sweeps})
    runs = {}
    for P in (1, 2, 4):
        result = lda.adlda(counts, args.topics, n_partitions=P, sweeps=args.sweeps,
                           alpha=ALPHA, beta=BETA, random_seed=args.seed, doc_topic=False)
        perp = lda.perplexity(result.topic_word, heldout, alpha=ALPHA, random_seed=0)
        runs[P] = (result.log_likelihood, perp)
    for mark in marks:
        row = "  ".join(f"P={P}: {runs[P][0][mark - 1] / runs[1][0][mark - 1] - 1:+.3%}"
                        for P in (2, 4))
        print(f"sweep {mark:>4}: serial log p(w|z) {runs[1][0][mark - 1]:.6e}  {row}")
    print("held-out perplexity after the last sweep: " + ", ".join(
        f"P={P} {runs[P][1]:.1f} ({runs[P][1] / runs[1][1] - 1:+.2%})" for P in (1, 2, 4)))
    return 0


def _paper_model(rows, serial, n_tokens):
    if 1 not in rows:
        return
    r = float(np.median([rows[w]["per_worker"] for w in rows]))
    c1 = rows[1]["comm"]
    step = max(rows[2]["comm"] - c1, 0.0) if 2 in rows else 0.0
    print(f"\nmodel on paper: per-worker CPU throughput r = {r / 1e6:.2f} M tok/s (median "
          f"of the runs), reduce/broadcast c(1) = {c1 * 1e3:.0f} ms, + {step * 1e3:.0f} ms "
          "per level of the reduce tree")
    s_rate = serial["per_worker"]  # the single process on the same (CPU) clock
    print(f"  single process: {s_rate / 1e6:.2f} M tok/s on the CPU clock")
    for W in (1, 2, 4, 8, 16):
        c = c1 + step * math.ceil(math.log2(W)) if W > 1 else c1
        sweep = n_tokens / (W * r) + c
        print(f"  W = {W:>2}: sweep {sweep:6.2f} s = {n_tokens / (W * r):6.2f} s sampling "
              f"+ {c * 1e3:5.0f} ms reduce/broadcast -> {n_tokens / sweep / 1e6:6.1f} M tok/s "
              f"({n_tokens / sweep / s_rate:5.1f}x the single process, efficiency "
              f"{n_tokens / sweep / s_rate / W:4.2f})")


if __name__ == "__main__":
    sys.exit(main())
