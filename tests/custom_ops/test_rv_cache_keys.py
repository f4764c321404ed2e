"""The Numba draws of the zoo's random variables are cached under keys that change with
their source, so an edited or moved draw kernel never runs its old compiled code."""

import ast
from pathlib import Path

from pytensor.link.numba.dispatch.random import numba_core_rv_funcify

import custom_ops.jit as jit
from pp_models.distributions import CRP

ROOT = Path(__file__).resolve().parents[2]


def _registered_draws():
    """(file, function) of every ``@numba_core_rv_funcify.register`` in the packages."""
    for path in sorted((ROOT / "pp_models").rglob("*.py")) + sorted(
            (ROOT / "custom_ops").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and any(
                    "numba_core_rv_funcify" in ast.unparse(d) for d in node.decorator_list):
                yield path, node


def test_every_draw_returns_a_source_dependent_key():
    found = list(_registered_draws())
    assert len(found) >= 13
    for path, function in found:
        returns = [n for n in ast.walk(function) if isinstance(n, ast.Return)
                   and isinstance(n.value, ast.Tuple)]
        assert returns, f"{path.name}:{function.name} returns no (function, key) pair"
        for ret in returns:
            key = ast.unparse(ret.value.elts[1])
            assert key == "rv_draw_cache_key(__file__)", (
                f"{path.name}:{function.name} caches its draw under {key!r}: an edited "
                "kernel would keep running its old code")


def test_key_changes_with_the_kernel_sources(monkeypatch):
    node = CRP.dist(alpha=1.0, n=5).owner
    _, key = numba_core_rv_funcify(node.op, node)
    assert isinstance(key, int)
    monkeypatch.setattr(jit, "kernel_source_version", lambda: 12345)
    _, other = numba_core_rv_funcify(node.op, node)
    assert other != key
