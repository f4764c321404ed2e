"""fit(..., executor=...): chains as tasks of a process pool or a Dask cluster.

The contract: the same seed gives bit-identical draws locally, on a process pool and on
a Dask LocalCluster, for a zoo-Gibbs family (collapsed LDA, the zoo's chain loop) and a
NUTS model with a custom Op (BHC's evidence Op, PyMC's sampler); a worker killed
mid-fit loses only the chain it held; bad executors are refused before any work.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import warnings
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor

import numpy as np
import pytest

from inference import fit
from inference.executors import ChainsLost
from pp_models import bhc, lda
from pp_models.model_info import posterior_with_labels

# the LDA and BHC kernels these fits load are the lda worker's (one compile per run)
pytestmark = pytest.mark.xdist_group("family-lda")

LDA_FIT = dict(draws=15, tune=5, chains=3, random_seed=7, progressbar=False,
               var_names=["phi"])
NUTS_FIT = dict(method="nuts", nuts_sampler="pymc", draws=20, tune=20, chains=2,
                random_seed=3, progressbar=False, compute_convergence_checks=False)


def _corpus(seed=0, n_docs=24, n_words=15):
    rng = np.random.default_rng(seed)
    return rng.poisson(0.6, size=(n_docs, n_words)) + (np.arange(n_words) % 3 == 0)


@pytest.fixture(scope="module")
def lda_model():
    return lda.model(_corpus(), n_topics=3)


def _bhc_model():
    X = (np.random.default_rng(1).random((10, 4)) < 0.4).astype(float)
    return bhc.model(X)


@pytest.fixture(scope="module")
def bhc_model():
    return _bhc_model()


def _compile_nuts_graphs():
    fit(_bhc_model(), **NUTS_FIT)


@pytest.fixture(scope="module")
def pool():
    # spawn: forking a process that holds threads can deadlock
    with ProcessPoolExecutor(max_workers=2,
                             mp_context=multiprocessing.get_context("spawn")) as ex:
        yield ex


@pytest.fixture(scope="module")
def dask_executor():
    distributed = pytest.importorskip("distributed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dask's start-up notices (ports, memory limits)
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        yield client.get_executor()
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def local_runs(lda_model, bhc_model):
    # PyTensor's Numba code for a graph compiled in this process and the code it loads
    # from its disk cache differ in the last bits (2.8e-12 relative on these NUTS draws,
    # cold cache vs warm, without any executor). The workers load cached code, so the
    # graphs are compiled in a throwaway process first and this one loads them too:
    # then both sides run the same code, and the draws are bit for bit the same.
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as warm:
        warm.submit(_compile_nuts_graphs).result()
    return {"lda": fit(lda_model, **LDA_FIT), "nuts": fit(bhc_model, **NUTS_FIT)}


def _same_draws(a, b):
    pa, pb = posterior_with_labels(a), posterior_with_labels(b)
    assert set(pa.data_vars) == set(pb.data_vars)
    for name in pa.data_vars:
        np.testing.assert_array_equal(pa[name].values, pb[name].values, err_msg=name)
    sa, sb = a["sample_stats"].to_dataset(), b["sample_stats"].to_dataset()
    for name in ("log_joint", "lp", "step_size", "tree_depth"):
        if name in sa:
            np.testing.assert_array_equal(sa[name].values, sb[name].values, err_msg=name)


def test_process_pool_gives_the_local_draws(local_runs, lda_model, bhc_model, pool):
    remote = fit(lda_model, executor=pool, **LDA_FIT)
    assert remote.attrs["pp_models_sampler"] == "zoo"
    assert remote["posterior"].sizes["chain"] == 3
    _same_draws(local_runs["lda"], remote)
    remote = fit(bhc_model, executor=pool, **NUTS_FIT)
    _same_draws(local_runs["nuts"], remote)


class _Counting(Executor):
    """Hands every task to ``inner`` and counts them."""

    def __init__(self, inner):
        self.inner, self.submitted = inner, []

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(fn.__name__)
        return self.inner.submit(fn, *args, **kwargs)


def test_a_tempered_chain_is_one_task_with_the_local_draws(lda_model, pool):
    # each chain's whole ladder (3 replicas and their swaps) runs as one task
    kwargs = {**LDA_FIT, "chains": 2, "tempering": 3}
    local = fit(lda_model, **kwargs)
    counting = _Counting(pool)
    remote = fit(lda_model, executor=counting, **kwargs)
    assert counting.submitted == ["_executor_chain"] * 2
    _same_draws(local, remote)
    for name, values in local["tempering"].to_dataset().data_vars.items():
        np.testing.assert_array_equal(values.values, remote["tempering"][name].values,
                                      err_msg=name)


@pytest.mark.dask
def test_dask_executor_gives_the_local_draws(local_runs, lda_model, bhc_model,
                                             dask_executor):
    _same_draws(local_runs["lda"], fit(lda_model, executor=dask_executor, **LDA_FIT))
    _same_draws(local_runs["nuts"], fit(bhc_model, executor=dask_executor, **NUTS_FIT))


def test_a_worker_killed_mid_fit_then_resume(local_runs, lda_model, pool, tmp_path):
    """Chain 2's worker dies after 8 iterations: the fit warns naming chain 2 and returns
    chains 0 and 1 (the local run's draws); the trace keeps chain 2's stored draws and
    ``resume=True`` on another executor finishes it: all three are the local run's."""
    from inference.trace_store import TraceStore

    path = tmp_path / "run"
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx, initializer=_arm_killer,
                             initargs=(2, 8)) as ex:
        with pytest.warns(ChainsLost, match=r"chain 2: its worker was lost"):
            dt = fit(lda_model, executor=ex, trace=path, trace_flush=0, **LDA_FIT)
    assert dt.attrs["pp_models_lost_chains"] == [2]
    assert "pp_models_interrupted" not in dt.attrs
    local = posterior_with_labels(local_runs["lda"])["phi"].values
    np.testing.assert_array_equal(posterior_with_labels(dt)["phi"].values, local[:2])
    store = TraceStore(path)
    assert store.attrs["status"] == "interrupted"
    assert store.completed() == [15, 15, 3]  # 5 tuning + 3 kept draws before the kill

    resumed = fit(lda_model, executor=pool, trace=path, resume=True, **LDA_FIT)
    _same_draws(local_runs["lda"], resumed)
    assert TraceStore(path).attrs["status"] == "complete"


def test_a_ctrl_c_while_waiting_cancels_the_chains_not_started(monkeypatch):
    import threading

    import inference.executors as executors

    started, release, ran = threading.Event(), threading.Event(), []

    def chain(c):
        ran.append(c)
        started.set()
        release.wait(10)

    def interrupted_wait(*args, **kwargs):
        started.wait(10)
        raise KeyboardInterrupt

    # chain 0 holds the only thread; chain 1 waits in the queue when Ctrl-C comes
    with ThreadPoolExecutor(1) as ex:
        monkeypatch.setattr(executors.cf, "wait", interrupted_wait)
        with pytest.raises(KeyboardInterrupt):
            executors.run_chain_tasks(ex, chain, {0: (0,), 1: (1,)}, _Never())
        monkeypatch.undo()
        release.set()
    assert ran == [0]


@pytest.mark.slow
@pytest.mark.dask
def test_a_dask_worker_killed_mid_fit_loses_only_its_chain(local_runs, lda_model):
    """The same on a Dask LocalCluster: chain 2's worker dies; the scheduler, allowed no
    retry, reports the task as lost (KilledWorker), the nanny restarts the worker for
    the other chains (one task at a time per worker: only the running one is lost)."""
    dask = pytest.importorskip("dask")
    distributed = pytest.importorskip("distributed")
    config = {"distributed.scheduler.allowed-failures": 0,
              "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(config), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Dask's start-up notices (ports, memory limits)
        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1,
                                           processes=True, dashboard_address=None)
        client = distributed.Client(cluster)
    try:
        client.run(_arm_killer, 2, 8)
        with pytest.warns(ChainsLost, match=r"chain 2: its worker was lost \(KilledWorker"):
            dt = fit(lda_model, executor=client.get_executor(), **LDA_FIT)
    finally:
        client.close()
        cluster.close()
    assert dt.attrs["pp_models_lost_chains"] == [2]
    local = posterior_with_labels(local_runs["lda"])["phi"].values
    np.testing.assert_array_equal(posterior_with_labels(dt)["phi"].values, local[:2])


def test_bad_executors_are_refused_before_any_work(lda_model, bhc_model):
    with pytest.raises(TypeError, match="executor must be a concurrent.futures.Executor"):
        fit(lda_model, executor="tcp://127.0.0.1:8786")
    closed = ThreadPoolExecutor(1)
    closed.shutdown()
    with pytest.raises(ValueError, match="executor: the executor was shut down"):
        fit(lda_model, executor=closed)
    with pytest.raises(ValueError, match="cores is for chains in local processes"):
        fit(lda_model, executor=ThreadPoolExecutor(1), cores=2)
    with pytest.raises(ValueError, match="nuts_sampler='pymc'"):
        fit(bhc_model, method="nuts", executor=ThreadPoolExecutor(1),
            nuts_sampler="nutpie")
    with pytest.raises(ValueError, match="method='advi' has none"):
        fit(bhc_model, method="advi", executor=ThreadPoolExecutor(1))


@pytest.mark.dask
def test_a_closed_dask_client_is_refused(dask_executor, lda_model):
    distributed = pytest.importorskip("distributed")
    client = distributed.Client(dask_executor._client.scheduler.address)
    executor = client.get_executor()
    client.close()
    with pytest.raises(ValueError, match="executor: the Dask client is closed"):
        fit(lda_model, executor=executor)
    with pytest.raises(TypeError, match=r"pass client.get_executor\(\)"):
        fit(lda_model, executor=client)


@pytest.mark.dask
def test_ppzoo_fit_scheduler_runs_the_chains_on_the_cluster(dask_executor, tmp_path):
    import xarray as xr

    from inference.cli import main

    csv = tmp_path / "counts.csv"
    counts = _corpus()
    csv.write_text(",".join(f"w{i}" for i in range(counts.shape[1])) + "\n"
                   + "\n".join(",".join(map(str, row)) for row in counts) + "\n")
    args = ["fit", "lda", "--data", str(csv), "--param", "n_topics=3", "--draws", "4",
            "--tune", "2", "--chains", "2", "--seed", "9", "--no-progress"]
    address = dask_executor._client.scheduler.address
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--out", str(tmp_path / "dask"), "--scheduler", address]) == 0
    local = xr.open_datatree(tmp_path / "local" / "posterior.nc", engine="h5netcdf")
    remote = xr.open_datatree(tmp_path / "dask" / "posterior.nc", engine="h5netcdf")
    _same_draws(local, remote)


def test_ppzoo_fit_scheduler_unreachable_exits_2_naming_the_flag(monkeypatch, capsys):
    pytest.importorskip("distributed")
    import inference.cli as cli
    import inference.cli.execution

    monkeypatch.setattr(inference.cli.execution, "CONNECT_SECONDS", 0.5)
    assert cli.main(["fit", "lda", "--scheduler", "tcp://127.0.0.1:9", "--draws", "2"]) == 2
    err = capsys.readouterr().err
    assert "--scheduler tcp://127.0.0.1:9: cannot connect to a Dask scheduler" in err


def test_no_module_imports_dask_at_import_time():
    """Dask is imported inside the functions that need it (``--scheduler``, a Dask
    client's checks go by class name), never when a module is imported; the command
    line's own startup test (test_cli_startup.py) lists dask among the heavy modules."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    offenders = []
    for package in ("inference", "pp_models", "custom_ops"):
        for path in (root / package).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in tree.body:  # module level only
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom)
                         else [])
                if any(n.split(".")[0] in ("dask", "distributed") for n in names):
                    offenders.append(f"{path.relative_to(root)}:{node.lineno}")
    assert offenders == []


# ------------------------------------------------------------------ worker-side helpers
class _Never:
    def is_set(self):
        return False

    def arm(self):
        pass


def _arm_killer(chain, after):
    """Worker initializer: the process dies at the ``after``-th iteration of chain
    ``chain`` (checked between iterations, where a kill from outside could land)."""
    import inference.chains as chains

    original = chains._run_chain

    class Countdown:
        def __init__(self):
            self.left = after

        def is_set(self):
            self.left -= 1
            if self.left < 0:
                os.kill(os.getpid(), signal.SIGKILL)
            return False

        def arm(self):
            pass

    def run_chain(step, spec, job, flag, progress):
        if job.chain == chain:
            flag = Countdown()
        return original(step, spec, job, flag, progress)

    chains._run_chain = run_chain


@pytest.mark.slow
@pytest.mark.dask
def test_every_family_default_gives_the_local_draws_on_dask(dask_executor):
    """Each ppzoo family's default model on its default data set, a few draws of its
    default method: Dask's draws are the local run's (PyMC's NUTS locally too: nutpie
    cannot hand a chain to a worker)."""
    from pp_models.datasets import load
    from pp_models.registry import list_models

    failures = {}
    for entry in list_models():
        model = entry.build(load(entry.default_dataset), **entry.defaults)
        kwargs = dict(draws=4, tune=4, chains=2, random_seed=5, progressbar=False,
                      compute_convergence_checks=False, nuts_sampler="pymc")
        if "var_names" in entry.fit_defaults:
            kwargs["var_names"] = list(entry.fit_defaults["var_names"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            local = fit(model, **kwargs)
            remote = fit(model, executor=dask_executor, **kwargs)
        try:
            _same_draws(local, remote)
        except AssertionError as err:
            failures[entry.name] = str(err)[:300]
    assert not failures, failures
