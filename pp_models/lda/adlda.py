"""Approximate distributed collapsed Gibbs sampling for LDA (AD-LDA).

Newman, Asuncion, Smyth & Welling (2009, JMLR), "Distributed algorithms for topic
models", §3: the documents are split into ``P`` partitions; in every sweep each
partition runs the collapsed Gibbs sweep over its own tokens (Griffiths & Steyvers 2004;
Murphy 2012 Eq. 27.37, here SparseLDA's buckets,
:func:`~custom_ops.lda.gibbs.gibbs_sweep_sparse`) against its own copy of the
corpus-wide word-topic counts ``n_wk``, as if no other partition moved; then the changes
every partition made to its copy are summed into the global counts, which the next
sweep starts from:

.. math:: n_{wk} \\leftarrow n_{wk} + \\sum_p \\big(n^{(p)}_{wk} - n_{wk}\\big).

Each partition's document-topic counts are its own and stay exact. The chain is not the
serial sampler's (a partition does not see the others' moves within a sweep): Newman
et al. found its perplexity indistinguishable, and it burns in over somewhat more sweeps
(docs/families/lda.md has the measurements); with ``P = 1`` it *is* the serial
sampler, draw for draw: partition 0 starts from ``fit``'s initial point for
``lda.model`` (topics ``0, 1, ..., K-1, 0, ...`` in token order) with the generator
``fit`` gives chain 0 for the same ``random_seed``.

Where the partitions live: ``client=None`` keeps them in this process (swept one after
the other: the same algorithm and the same draws as on a cluster); a Dask ``Client``
places partition ``p`` on worker ``p mod W`` and keeps it there. The global counts then
stay on the workers too (the summed changes are applied in a task and the next sweep's
tasks fetch the new counts from the worker that made them), so the client holds a few
numbers per sweep whatever the corpus's size. A corpus on disk (a folder of ``.npz``
shards, :mod:`pp_models.lda.shards`) is read by the workers, a partition of whole shards
each: the client reads only each shard's shape.
"""

from __future__ import annotations

import itertools
import json
import operator
import os
import time
from dataclasses import dataclass, field

import numpy as np
import xarray as xr

from custom_ops.lda.gibbs import SparseLDAState
from custom_ops.lda.likelihood import log_p_topics, log_p_words
from pp_models.lda.inputs import TokenCorpus, prepare_corpus
from pp_models.lda.shards import read_shards, shard_paths, shard_shapes
from pp_models.registry import family_of_module
from pp_models.validation import (
    check_bool,
    check_dask_client,
    check_int,
    check_positive_vector,
    check_random_seed,
)

__all__ = ["ADLDAResult", "adlda"]


@dataclass(frozen=True, eq=False)
class ADLDAResult:
    """What :func:`adlda` reached and how.

    Attributes
    ----------
    topic_word : float64 (K, V)
        ``E[phi | z, w]``, ``(n_kv + beta_v) / (n_k + sum beta)``, after the last sweep.
    doc_topic : float64 (D, K) or None
        ``E[theta | z]``, ``(n_dk + alpha_k) / (L_d + sum alpha)``, of the documents with
        tokens, in ``doc_index`` order (``None`` with ``doc_topic=False``).
    doc_index : int64 (D,) or None
        Row of each of those documents in the input (shards: counted across the shards
        in sorted order).
    log_likelihood : float64 (sweeps,)
        ``log p(w | z, beta)`` after each sweep (Murphy Eq. 27.36).
    log_joint : float64 (sweeps,)
        ``log p(w, z | alpha, beta)`` after each sweep (Eqs. 27.34 + 27.36): the
        collapsed Gibbs step's ``log_joint`` stat.
    sweep_seconds, compute_seconds : float64 (sweeps,)
        Wall time of each sweep, and the slowest partition's own time in it (its copy
        of the counts and its sweep); the rest is the reduce and broadcast.
    compute_cpu_seconds : float64 (sweeps, P)
        CPU time of each partition's own work in each sweep (its thread's CPU clock:
        what it costs whatever else shares the machine).
    """

    topic_word: np.ndarray
    doc_topic: np.ndarray | None
    doc_index: np.ndarray | None
    log_likelihood: np.ndarray
    log_joint: np.ndarray
    n_tokens: int
    n_partitions: int
    alpha: np.ndarray
    beta: np.ndarray
    sweep_seconds: np.ndarray
    compute_seconds: np.ndarray
    compute_cpu_seconds: np.ndarray
    random_seed: object = None
    partition_tokens: tuple[int, ...] = field(default=())

    @property
    def sweeps(self) -> int:
        return int(self.log_likelihood.size)

    @property
    def n_topics(self) -> int:
        return int(self.topic_word.shape[0])

    @property
    def n_words(self) -> int:
        return int(self.topic_word.shape[1])

    @property
    def token_updates_per_second(self) -> float:
        """Tokens resampled per second of wall time over all sweeps."""
        return self.n_tokens * self.sweeps / float(self.sweep_seconds.sum())

    @property
    def communication_seconds(self) -> np.ndarray:
        """Per sweep: wall time not spent in the slowest partition's own work."""
        return np.maximum(self.sweep_seconds - self.compute_seconds, 0.0)

    def to_datatree(self, vocabulary=None) -> xr.DataTree:
        """The layout ``inference.fit`` gives ``lda.model`` with ``var_names=["theta",
        "phi"]``: one chain of one draw (the last sweep's state), ``phi`` and ``theta`` beside
        the label-invariant concentrations in ``posterior``, the
        per-sweep log-likelihoods in ``fit_history``; so ``plot_top_words`` (``ppzoo``'s
        ``topics.png``) and ArviZ read it as a fit."""
        K, V = self.topic_word.shape
        words = np.arange(V) if vocabulary is None else np.asarray([str(v) for v in vocabulary])
        if words.size != V:
            raise ValueError(f"vocabulary has {words.size} words, the topics have {V}")
        coords = {"chain": [0], "draw": [0], "topic": np.arange(K), "word": words}
        labels = {"phi": (("chain", "draw", "topic", "word"), self.topic_word[None, None])}
        phi_c = float(np.mean(np.sum(self.topic_word ** 2, axis=1)))
        posterior = {"phi_concentration": (("chain", "draw"), [[phi_c]])}
        if self.doc_topic is not None:
            coords["doc"] = self.doc_index
            labels["theta"] = (("chain", "draw", "doc", "topic"), self.doc_topic[None, None])
            theta_c = float(np.mean(np.sum(self.doc_topic ** 2, axis=1)))
            posterior["theta_concentration"] = (("chain", "draw"), [[theta_c]])
        attrs = {"inference_library": "pp_models", "sampler": "AD-LDA (pp_models.lda.adlda)"}
        post_coords = {k: coords[k] for k in ("chain", "draw")}
        dt = xr.DataTree()
        label_coords = {k: v for k, v in coords.items()
                        if any(k in dims for dims, _ in labels.values())}
        dt["posterior"] = xr.DataTree(xr.Dataset({**posterior, **labels},
                                                 coords={**post_coords, **label_coords},
                                                 attrs=attrs))
        dt["sample_stats"] = xr.DataTree(xr.Dataset(
            {"log_joint": (("chain", "draw"), [[self.log_joint[-1]]])}, coords=post_coords,
            attrs=attrs))
        dt["fit_history"] = xr.DataTree(xr.Dataset(
            {"log_likelihood": (("sweep",), self.log_likelihood),
             "log_joint": (("sweep",), self.log_joint),
             "sweep_seconds": (("sweep",), self.sweep_seconds)},
            coords={"sweep": np.arange(1, self.sweeps + 1)},
            attrs={"description": "log p(w | z) and log p(w, z) after each AD-LDA sweep"}))
        seed = self.random_seed
        dt.attrs.update({
            "pp_models_method": "adlda",
            "pp_models_requested_method": "adlda",
            "pp_models_sampler": "adlda",
            "pp_models_steps": json.dumps({"adlda": ["z"]}),
            "pp_models_random_seed": json.dumps(
                seed if seed is None or isinstance(seed, int) else repr(seed)),
            "pp_models_family": family_of_module(__name__),
            "pp_models_label_invariant": json.dumps(list(posterior)),
            "pp_models_label_variables": json.dumps(["z", "theta", "phi"]),
            "pp_models_n_partitions": self.n_partitions,
        })
        return dt


def adlda(
    counts,
    n_topics: int,
    *,
    client=None,
    n_partitions: int | None = None,
    sweeps: int = 100,
    alpha=0.1,
    beta=0.01,
    random_seed=None,
    doc_topic: bool = True,
) -> ADLDAResult:
    """Fit LDA by approximate distributed collapsed Gibbs sampling (AD-LDA).

    Parameters
    ----------
    counts : count matrix (D, V), sequence of word-id sequences, or a folder of shards
        In memory: as :func:`pp_models.lda.model` takes it (empty documents dropped).
        A path (``str`` / ``os.PathLike``): a folder of ``.npz`` shards
        (:mod:`pp_models.lda.shards`), read by the workers, a partition of whole shards
        each; only the shards' shapes are read here.
    n_topics : int
        K >= 1.
    client : dask.distributed.Client, optional
        Where the partitions live (partition ``p`` on worker ``p mod W``); ``None``: in
        this process.
    n_partitions : int, optional
        ``P``, from 1 to the number of documents (and, for shards, at most the number of
        shards). Default: the client's number of workers (for shards at most their
        number), 1 without a client. Documents are split into contiguous blocks of
        about equal token counts (shards: of about equal document counts).
    sweeps : int
        Gibbs sweeps over every token (>= 1).
    alpha : float or array (K,)
        Dirichlet parameter of the documents' topic proportions.
    beta : float or array (V,)
        Dirichlet parameter of the topics (``lda.model``'s ``eta``).
    random_seed : int, optional
        With ``P = 1``, the sampler's draws are those of ``inference.fit`` on
        ``lda.model(counts, n_topics=K, alpha=alpha, eta=beta)`` with this seed (chain
        0); partition ``p`` of ``P > 1`` draws from the ``p``-th child of that
        generator, wherever it runs.
    doc_topic : bool
        Gather the documents' topic proportions at the end (``D x K`` floats on the
        client); ``False`` keeps the client's memory independent of the corpus.

    Returns
    -------
    ADLDAResult
        ``to_datatree()`` lays it out as ``fit`` does.

    Raises
    ------
    ValueError, TypeError
        Bad sizes or concentrations, ``n_partitions`` < 1 or above the number of
        documents (or shards), a closed ``client``, shards whose vocabularies differ:
        before anything is sent to a worker.
    """
    n_topics = check_int(n_topics, "n_topics", minimum=1)
    sweeps = check_int(sweeps, "sweeps", minimum=1)
    random_seed = check_random_seed(random_seed)
    doc_topic = check_bool(doc_topic, "doc_topic")
    if client is not None:
        check_dask_client(client)
    if n_partitions is not None:
        n_partitions = check_int(n_partitions, "n_partitions", minimum=1)
    workers = sorted(client.scheduler_info()["workers"]) if client is not None else []
    if client is not None and not workers:
        raise ValueError("client: the Dask cluster has no worker")
    default_p = len(workers) if client is not None else 1

    if isinstance(counts, str | os.PathLike):
        paths = shard_paths(counts)
        shapes = shard_shapes(paths)
        n_words = shapes[0][1]
        n_docs = sum(s[0] for s in shapes)
        P = min(default_p, len(paths)) if n_partitions is None else n_partitions
        _check_partitions(P, n_docs)
        if P > len(paths):
            raise ValueError(f"n_partitions={P} exceeds the {len(paths)} shards of counts: "
                             "a partition holds whole shards (write smaller shards)")
        sources = [("shards", tuple(map(os.fspath, group)), first_row)
                   for group, first_row in _group_shards(paths, shapes, P)]
    else:
        corpus = prepare_corpus(counts, name="counts")
        n_words = corpus.n_words
        n_docs = corpus.n_docs
        P = default_p if n_partitions is None else n_partitions
        _check_partitions(P, n_docs)
        sources = [("tokens", block, 0) for block in _split_corpus(corpus, P)]
    alpha_v = check_positive_vector(alpha, "alpha", n_topics, what="one per topic")
    beta_v = check_positive_vector(beta, "beta", n_words, what="one per vocabulary word")

    # fit's chain 0: get_random_generator(seed).spawn(chains)[0], one integer drawn for
    # its initial point's seed, then handed to the step (PyMC's setup_chain)
    chain_rng = np.random.default_rng(random_seed).spawn(1)[0]
    chain_rng.integers(2**30)
    rngs = [chain_rng] if P == 1 else chain_rng.spawn(P)

    backend = (_InProcess() if client is None else _OnDask(client, workers))
    backend.load(sources, n_words, n_topics, rngs)
    log_p_w, log_joint, wall, compute, cpu = [], [], [], [], []
    for _ in range(sweeps):
        t0 = time.perf_counter()
        lpw, lpz, seconds = backend.sweep(alpha_v, beta_v)
        wall.append(time.perf_counter() - t0)
        compute.append(max(s[0] for s in seconds))
        cpu.append([s[1] for s in seconds])
        log_p_w.append(lpw)
        log_joint.append(lpw + lpz)
    n_wk, n_k = backend.global_counts()
    topic_word = ((n_wk + beta_v[:, None]) / (n_k + beta_v.sum())).T
    theta = index = None
    if doc_topic:
        theta, index = backend.doc_topic(alpha_v)
    tokens = backend.partition_tokens
    backend.close()
    return ADLDAResult(
        topic_word=np.ascontiguousarray(topic_word), doc_topic=theta, doc_index=index,
        log_likelihood=np.asarray(log_p_w), log_joint=np.asarray(log_joint),
        n_tokens=int(sum(tokens)), n_partitions=P, alpha=alpha_v, beta=beta_v,
        sweep_seconds=np.asarray(wall), compute_seconds=np.asarray(compute),
        compute_cpu_seconds=np.asarray(cpu),
        random_seed=random_seed, partition_tokens=tuple(int(t) for t in tokens))


def _check_partitions(P: int, n_docs: int) -> None:
    if P > n_docs:
        raise ValueError(f"n_partitions={P} exceeds the {n_docs} documents of counts")


def _split_corpus(corpus: TokenCorpus, P: int) -> list[TokenCorpus]:
    """``P`` contiguous blocks of documents with about equal token counts, each with at
    least one document."""
    ptr = corpus.doc_ptr
    targets = corpus.n_tokens * np.arange(1, P) / P
    cuts = np.searchsorted(ptr[1:], targets, side="left") + 1
    cuts = np.clip(cuts, np.arange(1, P), corpus.n_docs - P + np.arange(1, P))
    cuts = np.maximum.accumulate(np.maximum(cuts, np.arange(1, P)))
    bounds = np.concatenate([[0], cuts, [corpus.n_docs]]).astype(np.int64)
    blocks = []
    for a, b in itertools.pairwise(bounds):
        lo, hi = ptr[a], ptr[b]
        blocks.append(TokenCorpus(words=corpus.words[lo:hi], doc_ptr=ptr[a:b + 1] - lo,
                                  n_words=corpus.n_words, doc_index=corpus.doc_index[a:b]))
    return blocks


def _group_shards(paths, shapes, P: int):
    """``P`` contiguous groups of shards with about equal document counts, with the
    input row of each group's first document."""
    rows = np.cumsum([0] + [s[0] for s in shapes])
    targets = rows[-1] * np.arange(1, P) / P
    cuts = np.searchsorted(rows[1:-1], targets) + 1
    cuts = np.clip(cuts, np.arange(1, P), len(paths) - P + np.arange(1, P))
    cuts = np.maximum.accumulate(np.maximum(cuts, np.arange(1, P)))
    bounds = [0, *map(int, cuts), len(paths)]
    return [(paths[a:b], int(rows[a])) for a, b in itertools.pairwise(bounds)]


# ---------------------------------------------------------------------------------------
# what a partition does (module-level functions: Dask sends them by reference)
# ---------------------------------------------------------------------------------------
class _Partition:
    """A partition's tokens, topics, document counts and generator (on its worker)."""

    def __init__(self, source, n_words: int, n_topics: int, rng):
        kind, data, first_row = source
        if kind == "shards":
            corpus, index = read_shards(data, n_words)
            index = index + first_row
        else:
            corpus, index = data, data.doc_index
        # fit's initial point for lda.model: topics 0, 1, ..., K-1, 0, ... in token order
        z = (np.arange(corpus.n_tokens) % n_topics).astype(np.int32)
        self.state = SparseLDAState(corpus.words, corpus.doc_ptr, z, n_words, n_topics)
        self.doc_index = np.asarray(index, dtype=np.int64)
        self.lengths = corpus.doc_lengths
        self.rng = rng

    @property
    def n_tokens(self) -> int:
        return int(self.state.words.size)


def _load(source, n_words, n_topics, rng) -> _Partition:
    return _Partition(source, n_words, n_topics, rng)


def _own_counts(part: _Partition):
    return part.state.n_wk.astype(np.int32), part.state.n_k.astype(np.int64), part.n_tokens


def _sweep(part: _Partition, counts, alpha, beta):
    """One sweep of the partition against ``counts`` (the global ``(n_wk, n_k)``);
    returns the partition, its changes to the counts, log p(z_p | alpha) of its
    documents and the (wall, CPU) seconds it took."""
    n_wk, n_k = counts
    t0, c0 = time.perf_counter(), time.thread_time()
    state = part.state
    state.set_word_counts(n_wk, n_k)
    state.sweep(alpha, beta, 1.0, part.rng)  # inverse temperature 1: the posterior
    delta = (state.n_wk - n_wk, (state.n_k - n_k).astype(np.int64))
    log_pz = log_p_topics(state.n_dk, part.lengths, alpha)
    seconds = (time.perf_counter() - t0, time.thread_time() - c0)
    return part, delta, log_pz, seconds


def _log_p_w(counts, beta) -> float:
    return log_p_words(counts[0], counts[1], beta)


def _add(a, b):
    return a[0] + b[0], a[1] + b[1]


def _apply(counts, delta):
    """The global counts after a sweep's summed changes."""
    return (counts[0] + delta[0]).astype(np.int32), counts[1] + delta[1]


def _doc_topic(part: _Partition, alpha):
    n_dk = part.state.n_dk
    theta = (n_dk + alpha) / (part.lengths[:, None] + alpha.sum())
    return theta, part.doc_index


def _sum_tree(items, add):
    """Pairwise sums (a tree: on a cluster the pairs are summed in parallel)."""
    items = list(items)
    while len(items) > 1:
        items = [add(items[i], items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


class _InProcess:
    """The partitions in this process, swept one after the other."""

    def load(self, sources, n_words, n_topics, rngs):
        self.parts = [_load(s, n_words, n_topics, r) for s, r in zip(sources, rngs)]
        own = [_own_counts(p) for p in self.parts]
        self.counts = _sum_tree([o[:2] for o in own], _add)
        self.counts = (self.counts[0].astype(np.int32), self.counts[1])
        self.partition_tokens = [o[2] for o in own]

    def sweep(self, alpha, beta):
        outs = [_sweep(p, self.counts, alpha, beta) for p in self.parts]
        self.counts = _apply(self.counts, _sum_tree([o[1] for o in outs], _add))
        return _log_p_w(self.counts, beta), sum(o[2] for o in outs), [o[3] for o in outs]

    def global_counts(self):
        return self.counts

    def doc_topic(self, alpha):
        outs = [_doc_topic(p, alpha) for p in self.parts]
        return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])

    def close(self):
        self.parts = []


class _OnDask:
    """Partition ``p`` on worker ``p mod W``; the global counts on a worker too."""

    def __init__(self, client, workers):
        self.client = client
        self.workers = workers

    def _submit(self, fn, *args, worker=None):
        where = {} if worker is None else {"workers": [worker], "allow_other_workers": False}
        return self.client.submit(fn, *args, pure=False, **where)

    def load(self, sources, n_words, n_topics, rngs):
        self.homes = [self.workers[p % len(self.workers)] for p in range(len(sources))]
        self.parts = []
        for (kind, data, first), rng, home in zip(sources, rngs, self.homes, strict=True):
            if kind == "tokens":  # the block goes straight to its worker
                data = self.client.scatter(data, workers=[home], direct=False)
            self.parts.append(self._submit(_load, (kind, data, first), n_words, n_topics,
                                           rng, worker=home))
        own = [self._submit(_own_counts, p, worker=h) for p, h in zip(self.parts, self.homes)]
        pairs = [self._submit(operator.itemgetter(0, 1), o) for o in own]
        self.counts = self._submit(_apply, _sum_tree(pairs, self._add),
                                   (np.int32(0), np.int64(0)))
        self.partition_tokens = self.client.gather(
            [self._submit(operator.itemgetter(2), o) for o in own])

    def _add(self, a, b):
        return self._submit(_add, a, b)

    def sweep(self, alpha, beta):
        outs = [self._submit(_sweep, p, self.counts, alpha, beta, worker=h)
                for p, h in zip(self.parts, self.homes)]
        self.parts = [self._submit(operator.itemgetter(0), o, worker=h)
                      for o, h in zip(outs, self.homes)]
        delta = _sum_tree([self._submit(operator.itemgetter(1), o) for o in outs], self._add)
        self.counts = self._submit(_apply, self.counts, delta)
        small = self.client.gather(
            [self._submit(_log_p_w, self.counts, beta)]
            + [self._submit(operator.itemgetter(2, 3), o) for o in outs])
        return small[0], sum(s[0] for s in small[1:]), [s[1] for s in small[1:]]

    def global_counts(self):
        return self.counts.result()

    def doc_topic(self, alpha):
        outs = self.client.gather([self._submit(_doc_topic, p, alpha, worker=h)
                                   for p, h in zip(self.parts, self.homes)])
        return np.concatenate([o[0] for o in outs]), np.concatenate([o[1] for o in outs])

    def close(self):
        self.client.cancel([*self.parts, self.counts])
        self.parts = []

