"""Shared pytest configuration."""

import os
import warnings

import matplotlib
import pytest

matplotlib.use("Agg")

# Parallel chains fork worker processes; keep BLAS single-threaded inside them.
os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore", message="PyTensor could not link to a BLAS")


# --- one xdist worker per family -------------------------------------------------------
# A cold run (fresh clone, empty HOME) spends most of its time compiling Numba kernels and
# PyTensor graphs. With the tests of one family spread over both workers, each worker
# compiles that family's kernels again: the PYDT tests alone took 267 CPU-s on two workers
# against 173 CPU-s on one (cold, same tests). So every test whose node id names a family
# is sent to that family's worker (--dist loadgroup in pyproject's addopts); tests that
# name none are spread one by one. First match wins, so the more specific keys come first.
FAMILY_KEYWORDS = (
    ("pydt", ("pydt", "pitman_yor")),
    ("mixture_of_trees", ("tree_mixture", "mixture_of_trees", "mixtures_of_trees",
                          "spanning_tree", "chow_liu", "map_forest")),
    ("bhc", ("bhc", "hierarchical_clustering")),
    ("lda", ("lda",)),
    ("ibp", ("ibp",)),
    ("ggm", ("ggm", "glasso", "graphical")),
    ("finite_mixture", ("finite_mixture",)),
    ("dpm", ("dpm", "crp", "dirichlet_process", "collapsed", "niw")),
)


def family_of(nodeid: str) -> str | None:
    """The family a test's node id names (its file or its parameters), or None."""
    low = nodeid.lower()
    for family, keys in FAMILY_KEYWORDS:
        if any(key in low for key in keys):
            return family
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue  # a module that asked for its own group keeps it
        family = family_of(item.nodeid)
        if family is not None:
            item.add_marker(pytest.mark.xdist_group(f"family-{family}"))
