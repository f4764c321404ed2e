"""Where a cold test run spends its time: a pytest plugin that records Numba compiles.

Load it with ``-p tests.helpers.compile_profile`` (one process, no ``-n``), on an empty
cache to see a cold run::

    HOME=$(mktemp -d) python -m pytest -p tests.helpers.compile_profile tests/custom_ops

At the end it prints the tests with the most CPU time in this process and how much of it
was Numba compiling (PyTensor's Numba backend compiles every new graph through Numba too,
so graph compiles count), then the kernels compiled in the most specialisations (each
signature, e.g. a ``Literal[int]`` argument or a read-only array, is a compile of its
own). CPU time, not wall time, so that other load on the machine does not blur it; the
CPU of chain worker processes (``fit`` with ``cores > 1``) is not counted.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pytest
from numba.core import event

_ROWS = 20
_per_test: dict[str, tuple[float, float]] = {}  # nodeid -> (cpu, compile cpu)
_signatures: dict[str, set[str]] = defaultdict(set)  # kernel -> signatures compiled
_stack: list[float] = []
_outermost = [0.0]  # compile CPU of outermost compiles (nested ones are inside them)


def _kernel_name(dispatcher) -> str:
    func = getattr(dispatcher, "py_func", None)
    return f"{getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"


class _CompileListener(event.Listener):
    def on_start(self, ev):
        _stack.append(time.process_time())

    def on_end(self, ev):
        spent = time.process_time() - _stack.pop()
        _signatures[_kernel_name(ev.data["dispatcher"])].add(str(ev.data["args"]))
        if not _stack:
            _outermost[0] += spent


event.register("numba:compile", _CompileListener())


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu0, compile0 = time.process_time(), _outermost[0]
    yield
    _per_test[item.nodeid] = (time.process_time() - cpu0, _outermost[0] - compile0)


def pytest_terminal_summary(terminalreporter):
    write = terminalreporter.write_line
    total = sum(cpu for cpu, _ in _per_test.values())
    compiling = sum(c for _, c in _per_test.values())
    terminalreporter.section("compile profile (CPU seconds in this process)")
    write(f"{len(_per_test)} tests: {total:.0f} s CPU, {compiling:.0f} s of it compiling")
    for nodeid, (cpu, comp) in sorted(_per_test.items(), key=lambda kv: -kv[1][0])[:_ROWS]:
        write(f"{cpu:8.1f} {comp:8.1f}  {nodeid}")
    write("kernels compiled in the most specialisations (Numba's own helpers left out):")
    ours = {k: v for k, v in _signatures.items() if not k.startswith("numba.")}
    ranked = sorted(ours.items(), key=lambda kv: -len(kv[1]))[:_ROWS]
    for name, sigs in ranked:
        write(f"{len(sigs):4d}  {name}")
