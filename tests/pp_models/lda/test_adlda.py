"""AD-LDA: one partition is the serial collapsed Gibbs sampler draw for draw; P > 1
matches it on a corpus drawn from LDA; in-process, Dask and shards on disk agree; the
result reads as a fit; bad input is refused before any work."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from inference import fit
from pp_models import lda
from pp_models.lda.shards import write_shards
from pp_models.model_info import posterior_with_labels


def lda_corpus(seed, *, n_docs, n_words, n_topics, doc_length, alpha=0.1, beta=0.05):
    """A corpus drawn from LDA itself (Blei et al. 2003's generative story) and its true
    topics (K, V)."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, beta), size=n_topics)
    theta = rng.dirichlet(np.full(n_topics, alpha), size=n_docs)
    counts = np.stack([rng.multinomial(doc_length, theta[d] @ phi) for d in range(n_docs)])
    return sp.csr_matrix(counts), phi


def best_match_cosine(true_topics, topics) -> float:
    """Mean over the true topics of the cosine with their best-matching fitted topic."""
    a = true_topics / np.linalg.norm(true_topics, axis=1, keepdims=True)
    b = topics / np.linalg.norm(topics, axis=1, keepdims=True)
    return float((a @ b.T).max(axis=1).mean())


@pytest.fixture(scope="module")
def small():
    return np.random.default_rng(0).poisson(0.5, size=(40, 30))


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def test_one_partition_is_the_serial_sampler_draw_for_draw(small):
    result = lda.adlda(small, 4, sweeps=6, random_seed=5, alpha=0.2, beta=0.05)
    dt = fit(lda.model(small, n_topics=4, alpha=0.2, eta=0.05), chains=1, tune=0, draws=6,
             random_seed=5, progressbar=False, var_names=["theta", "phi"])
    # the step's per-draw log p(w, z): any different topic would move it by far more
    np.testing.assert_allclose(result.log_joint, dt["sample_stats"]["log_joint"].values[0],
                               rtol=1e-12)
    last = posterior_with_labels(dt).isel(chain=0, draw=-1)
    np.testing.assert_allclose(result.topic_word, last["phi"].values, rtol=1e-12)
    np.testing.assert_allclose(result.doc_topic, last["theta"].values, rtol=1e-12)
    assert result.n_tokens == small.sum() and result.n_partitions == 1


def test_partitions_on_dask_and_shards_on_disk_give_the_in_process_draws(small, tmp_path,
                                                                         dask_client):
    here = lda.adlda(small, 4, sweeps=5, random_seed=2, n_partitions=3)
    there = lda.adlda(small, 4, sweeps=5, random_seed=2, n_partitions=3, client=dask_client)
    np.testing.assert_array_equal(here.log_joint, there.log_joint)
    np.testing.assert_array_equal(here.topic_word, there.topic_word)
    np.testing.assert_array_equal(here.doc_topic, there.doc_topic)
    assert here.partition_tokens == there.partition_tokens
    assert here.log_joint[-1] != lda.adlda(small, 4, sweeps=5, random_seed=2).log_joint[-1]

    # the same corpus as 4 shards (an empty document in one): read by the workers
    rows = np.array_split(np.arange(small.shape[0]), 4)
    blocks = [small[r] for r in rows]
    blocks[1] = np.vstack([blocks[1], np.zeros((1, small.shape[1]), dtype=int)])
    write_shards(tmp_path / "shards", blocks)
    one = lda.adlda(tmp_path / "shards", 4, sweeps=5, random_seed=2, n_partitions=1)
    serial = lda.adlda(small, 4, sweeps=5, random_seed=2)
    np.testing.assert_array_equal(one.log_joint, serial.log_joint)
    on_dask = lda.adlda(tmp_path / "shards", 4, sweeps=5, random_seed=2, n_partitions=2,
                        client=dask_client)
    in_process = lda.adlda(tmp_path / "shards", 4, sweeps=5, random_seed=2, n_partitions=2)
    np.testing.assert_array_equal(on_dask.log_joint, in_process.log_joint)
    # the empty document (input row 11 of the shards) is dropped
    assert on_dask.doc_index.size == small.shape[0] and 11 not in on_dask.doc_index[:11]
    assert on_dask.doc_index[-1] == small.shape[0]


@pytest.mark.parametrize("n_partitions", [2, 4])
def test_partitions_reach_the_serial_likelihood_and_topics(n_partitions):
    """Newman et al. (2009): AD-LDA's perplexity matches the serial sampler's. On a
    corpus drawn from LDA (K = 6, V = 120, 300 documents of 60 tokens), after the same
    100 sweeps: final log p(w | z) within 1 % and the true topics recovered as well
    (mean best-match cosine within 0.05)."""
    counts, phi = lda_corpus(3, n_docs=300, n_words=120, n_topics=6, doc_length=60)
    kwargs = dict(sweeps=100, alpha=0.1, beta=0.05, random_seed=11)
    serial = lda.adlda(counts, 6, **kwargs)
    split = lda.adlda(counts, 6, n_partitions=n_partitions, **kwargs)
    gap = abs(split.log_likelihood[-1] / serial.log_likelihood[-1] - 1)
    assert gap < 0.01, (split.log_likelihood[-1], serial.log_likelihood[-1])
    cos_serial = best_match_cosine(phi, serial.topic_word)
    cos_split = best_match_cosine(phi, split.topic_word)
    assert cos_serial > 0.9  # the serial sampler itself recovers the topics
    assert abs(cos_split - cos_serial) < 0.05, (cos_split, cos_serial)


def test_result_reads_as_a_fit(small, tmp_path):
    import arviz as az

    result = lda.adlda(small, 3, sweeps=4, random_seed=1, n_partitions=2)
    assert result.topic_word.shape == (3, 30) and result.doc_topic.shape == (40, 3)
    np.testing.assert_allclose(result.topic_word.sum(1), 1.0)
    assert result.log_likelihood.shape == (4,) and np.all(result.log_likelihood < 0)
    assert result.token_updates_per_second > 0
    dt = result.to_datatree(vocabulary=[f"w{i}" for i in range(30)])
    reference = fit(lda.model(small, n_topics=3), chains=1, tune=0, draws=2,
                    random_seed=1, progressbar=False, var_names=["theta", "phi"])
    for group in ("posterior", "sample_stats"):
        assert set(dt[group].data_vars) <= set(reference[group].data_vars) | {"log_joint"}
        for name in dt[group].data_vars:
            assert dt[group][name].dims == reference[group][name].dims, name
    assert dt.attrs["pp_models_family"] == "lda"
    lda.plot_top_words(dt, tmp_path / "topics.png")
    assert (tmp_path / "topics.png").stat().st_size > 1000
    assert "phi_concentration" in az.summary(dt, kind="stats").index


def test_bad_input_is_refused_before_any_work(small, tmp_path):
    with pytest.raises(ValueError, match="n_partitions must be >= 1"):
        lda.adlda(small, 3, n_partitions=0)
    with pytest.raises(ValueError, match="n_partitions=41 exceeds the 40 documents"):
        lda.adlda(small, 3, n_partitions=41)
    with pytest.raises(TypeError, match="client must be a dask.distributed.Client"):
        lda.adlda(small, 3, client="tcp://127.0.0.1:8786")
    with pytest.raises(ValueError, match="n_topics must be >= 1"):
        lda.adlda(small, 0)
    with pytest.raises(ValueError, match="sweeps must be >= 1"):
        lda.adlda(small, 3, sweeps=0)
    with pytest.raises(ValueError, match=r"alpha must be a number or have shape \(3,\) "
                                         r"\(one per topic\)"):
        lda.adlda(small, 3, alpha=[0.1, 0.1])
    with pytest.raises(ValueError, match="beta must be finite and > 0"):
        lda.adlda(small, 3, beta=0.0)
    with pytest.raises(TypeError, match="doc_topic must be True or False"):
        lda.adlda(small, 3, doc_topic="no")
    write_shards(tmp_path / "mixed", [small[:20]])
    sp.save_npz(tmp_path / "mixed" / "shard-00001.npz", sp.csr_matrix(small[20:, :25]))
    with pytest.raises(ValueError, match="counts: the shards' vocabularies differ: .*"
                                         "shard-00001.npz has 25 words"):
        lda.adlda(tmp_path / "mixed", 3)
    write_shards(tmp_path / "two", [small[:20], small[20:]])
    with pytest.raises(ValueError, match="n_partitions=3 exceeds the 2 shards"):
        lda.adlda(tmp_path / "two", 3, n_partitions=3)
    with pytest.raises(ValueError, match="holds no .npz shard"):
        lda.adlda(tmp_path, 3)


@pytest.mark.dask
def test_a_closed_client_is_refused(small, dask_client):
    distributed = pytest.importorskip("distributed")
    client = distributed.Client(dask_client.scheduler.address)
    client.close()
    with pytest.raises(ValueError, match="client: the Dask client is closed"):
        lda.adlda(small, 3, client=client)
