"""sbc: uniform ranks for correct inference, detected miscalibration, executors."""

import multiprocessing
from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from inference.testing import sbc
from tests.inference.testing import conjugate_normal as cn

# One xdist worker runs this module (--dist loadgroup): its tests fit the same model, and
# on a cold cache the first compiles it (test_correct_... 25 s cold in one process, the
# next test then 7.6 s, its warm time); spread over two workers, both paid the compile.
# test_gir.py's conjugate-normal tests (the same generative model) join the group.
pytestmark = pytest.mark.xdist_group("conjugate_normal")

# cores=1: chains run one after the other in this process; forking two workers per fit
# cost more than the 250 sweeps (the draws are the same: each chain has its own seed)
FIT = dict(method="gibbs", draws=200, tune=50, chains=2, cores=1)


def _sbc(bug=None, n_simulations=60, seed=5, executor=None, **kwargs):
    return sbc(
        cn.generative_model(),
        data_vars=["y"],
        n_simulations=n_simulations,
        fit_kwargs={**FIT, "step": _Step(bug)},
        executor=executor,
        random_seed=seed,
        **kwargs,
    )


class _Step:
    """Picklable step factory (process executors pickle the fit options)."""

    def __init__(self, bug):
        self.bug = bug

    def __call__(self, model):
        return cn.NormalGibbs(model=model, bug=self.bug)


@pytest.fixture(scope="module")
def correct_run():
    # one SBC of the correct inference: test_correct_... checks it, test_plot draws it
    return _sbc()


def test_correct_inference_has_uniform_ranks(correct_run):
    result = correct_run
    assert result.ranks.shape == (60, 4)
    assert result.ranks.to_numpy().min() >= 0 and result.ranks.to_numpy().max() <= 99
    result.assert_passed(0.01)


def test_miscalibrated_inference_is_caught():
    # Posterior sd of mu replaced by its variance (< 1 here): too narrow, ranks pile up
    # at the ends.
    result = _sbc("variance")
    assert not result.passed(0.01), str(result)
    table = result.uniformity()
    assert table.loc["mu", "p_chi2_holm"] < 0.01 or table.loc["mu", "p_ks_holm"] < 0.01


def _serial_ranks(correct_run, n_simulations):
    """The ranks a serial ``_sbc(n_simulations=n)`` (seed 5) gives: the first n of the
    module's serial 60-simulation run, since simulation i is seeded by the i-th child of
    ``SeedSequence(5).spawn(...)``, the same for any number of simulations (checked)."""
    assert correct_run.seeds[:n_simulations] == [
        (s.entropy, s.spawn_key) for s in np.random.SeedSequence(5).spawn(n_simulations)]
    return correct_run.ranks.to_numpy()[:n_simulations]


def test_process_pool_gives_the_same_ranks_as_serial(correct_run):
    spawn = multiprocessing.get_context("spawn")  # fork after threads can deadlock
    with ProcessPoolExecutor(max_workers=2, mp_context=spawn) as pool:
        parallel = _sbc(n_simulations=6, executor=pool)
    np.testing.assert_array_equal(_serial_ranks(correct_run, 6), parallel.ranks.to_numpy())


@pytest.mark.slow  # 22 cold worker-s: Dask is one optional executor; the process-pool
@pytest.mark.dask  # test above checks the executor contract (seeds, pickling) by default
def test_dask_executor_gives_the_same_ranks_as_serial(correct_run):
    distributed = pytest.importorskip("distributed")
    # one worker process: the Dask plumbing (pickling, futures) is the same with two,
    # each of which imports the whole stack; the process-pool test covers two workers
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        parallel = _sbc(n_simulations=8, executor=client.get_executor())
    np.testing.assert_array_equal(_serial_ranks(correct_run, 8), parallel.ranks.to_numpy())


def test_plot(correct_run):
    fig = correct_run.plot()
    assert len(fig.axes) >= 4


def test_errors():
    model = cn.generative_model()
    with pytest.raises(ValueError, match="data_vars: 'x' not a random variable"):
        sbc(model, data_vars=["x"])
    with pytest.raises(ValueError, match="n_simulations must be >= 2"):
        sbc(model, data_vars=["y"], n_simulations=1)
    with pytest.raises(ValueError, match="random_seed"):
        sbc(model, data_vars=["y"], fit_kwargs={"random_seed": 1})
    with pytest.raises(ValueError, match="exceeds the 100 posterior draws"):
        sbc(model, data_vars=["y"], fit_kwargs={"draws": 50, "chains": 2}, n_rank_draws=200)
    with pytest.raises(TypeError, match="Executor"):
        sbc(model, data_vars=["y"], executor="dask")


@pytest.mark.slow
def test_full_size_sbc():
    """200 simulations: correct inference passes, the gross bug is caught.

    Measured here (seed 1): SBC at this size does not catch the subtler twins that
    getting_it_right catches every time: "count" reaches Holm p = 0.013 on sigma2 and
    "prior" (the prior is only ~5 % of mu's posterior precision) stays at p > 0.4. Use
    getting-it-right for a transition, SBC for the inference as a whole.
    """
    result = _sbc(n_simulations=200, seed=1)
    result.assert_passed(0.01)
    assert not _sbc("variance", n_simulations=200, seed=1).passed(0.01)
