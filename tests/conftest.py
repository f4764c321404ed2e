"""Shared pytest configuration."""

import os
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")

# Parallel chains fork worker processes; keep BLAS single-threaded inside them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")

# --- compile speed ---------------------------------------------------------------------
# From a cold cache, two thirds of the run is compiling (3663b1a, -n 2: 1988 worker-s
# cold, 666 warm). LLVM at -O1 compiles about a fifth faster than Numba's default -O3
# (cold, one process: test_bhc + test_pydt_prior 140 -> 110 CPU-s compiling,
# test_collapsed 116 -> 95) and the tests' kernels ran no slower warm (getting-it-right
# DPM + CRP steps: 91 -> 77 CPU-s). On the whole cold suite, with other changes
# measured together, only 1988 -> 1889 worker-s. Our kernels use no fastmath, so their floating
# point is the same at every level; the tests compare with tolerances anyway. The -O1 code is
# cached apart from the -O3 code users and the benchmarks get, since neither Numba's nor
# PyTensor's cache index records the level: custom_ops.jit names its folder by
# level, and PyTensor's compile folder is set here. Set NUMBA_OPT yourself to override.
# This must run before numba is imported (conftest is imported before any test module).
if "NUMBA_OPT" not in os.environ:
    os.environ["NUMBA_OPT"] = "1"
    if "base_compiledir" not in os.environ.get("PYTENSOR_FLAGS", ""):
        _compiledir = os.path.join(os.path.expanduser("~"), ".pytensor", "tests-numba-O1")
        os.environ["PYTENSOR_FLAGS"] = ",".join(
            f for f in (os.environ.get("PYTENSOR_FLAGS", ""),
                        f"base_compiledir={_compiledir}") if f)

# Both xdist workers share one compile cache, and Numba's cache writes race between
# processes (numba/numba#10128): the package's kernels lock their own writes
# (custom_ops.jit); PyTensor's graphs are locked here, for the test run only, before any
# test can compile one.
from tests.helpers.numba_cache_lock import lock_numba_cache_writes  # noqa: E402

lock_numba_cache_writes()

# --- one xdist worker per family -------------------------------------------------------
# A cold run (fresh clone, empty HOME) spends most of its time compiling Numba kernels and
# PyTensor graphs. With the tests of one family spread over both workers, each worker
# compiles that family's kernels again: the PYDT tests alone took 267 CPU-s on two workers
# against 173 CPU-s on one (cold, same tests). So every test of a family is sent to that
# family's worker (--dist loadgroup in pyproject's addopts): a test under a folder named
# for the family (tests/custom_ops/pydt/, tests/pp_models/pydt/, tests/inference/gibbs/
# pydt/, ...), else one whose node id (file or parameters) names a keyword of the family
# (tests.helpers.worker_groups; tests/test_registration.py fails for a family without
# its own); tests that name none are spread one by one.
from tests.helpers.worker_groups import family_of  # noqa: E402


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue  # a module that asked for its own group keeps it
        family = family_of(item.nodeid)
        if family is not None:
            item.add_marker(pytest.mark.xdist_group(f"family-{family}"))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    """Stop the run when ``--dist loadgroup`` silently ignores the groups.

    xdist carries a test's group to its scheduler as a ``@group`` suffix that each worker
    writes into the node id. pytest 9.2 keeps node ids in a new field, so xdist 3.8's
    write is lost and every test is spread one by one (pytest-dev/pytest-xdist#1386): a
    family's kernels then compile on both workers, a cost seen only by timing a cold run.
    pyproject.toml pins pytest below 9.2 for this; this check tells when that stops holding.
    """
    if node.config.getvalue("dist") != "loadgroup":
        return
    grouped = [nodeid for nodeid in ids if family_of(nodeid) is not None]
    if grouped and not any("@" in nodeid for nodeid in grouped):
        pytest.exit(
            f"--dist loadgroup did not group the tests (e.g. {grouped[0]} has no @group "
            "suffix): this pytest / pytest-xdist pair drops it (pytest-dev/pytest-xdist#1386); "
            "install the versions pyproject.toml allows", returncode=3)
