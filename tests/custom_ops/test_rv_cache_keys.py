"""The Numba draws of the zoo's random variables are cached under keys that change with
their source, so an edited or moved draw kernel never runs its old compiled code (every
zoo random variable uses the key: tests/pp_models/test_distributions.py)."""

from pytensor.link.numba.dispatch.random import numba_core_rv_funcify

import custom_ops.jit as jit
from pp_models.distributions import CRP


def test_key_changes_with_the_kernel_sources(monkeypatch):
    node = CRP.dist(alpha=1.0, n=5).owner
    _, key = numba_core_rv_funcify(node.op, node)
    assert isinstance(key, int)
    monkeypatch.setattr(jit, "kernel_source_version", lambda: 12345)
    _, other = numba_core_rv_funcify(node.op, node)
    assert other != key
