"""Run a getting-it-right campaign (seeds x cases) for the slow tests, on an executor
when one is configured.

``PP_MODELS_TEST_EXECUTOR`` chooses where the runs go: unset, in this process one after
the other; ``processes:N``, a process pool of N workers; ``tcp://HOST:PORT``, the Dask
scheduler there (``Client(address).get_executor()``). The results are the same every way
(each run is seeded by its seed alone).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

from inference.testing import getting_it_right_campaign

ENV = "PP_MODELS_TEST_EXECUTOR"


@contextlib.contextmanager
def configured_executor():
    """The executor ``PP_MODELS_TEST_EXECUTOR`` names (or None), closed afterwards."""
    spec = os.environ.get(ENV, "").strip()
    if not spec:
        yield None
    elif spec.startswith("processes:"):
        workers = int(spec.partition(":")[2])
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as ex:
            yield ex
    else:
        import distributed

        with distributed.Client(spec) as client:
            yield client.get_executor()


def run_campaign(cases, seeds):
    """:func:`getting_it_right_campaign` on the configured executor."""
    with configured_executor() as executor:
        return getting_it_right_campaign(cases, seeds, executor=executor)
