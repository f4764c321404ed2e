"""Functions with long positional parameter lists, counted from the source (no import).

A call with nine or more positional arguments is read by counting: swap two and nothing
complains. New code groups such state (a named tuple for a Numba kernel's arrays, as
``custom_ops.pydt``'s ``Topology``; keyword-only options for a Python function). The
functions that still take ``LIMIT`` or more positional parameters are listed in
``ALLOWED`` with their count; the list may only shrink: a new offender, a listed one
that grew, or a listed one that no longer offends (remove it) fails. Those left have
signatures fixed from outside: compiled C entry points of the Ops, an Op's ``make_node``
(one argument per input), the Numba implementations PyTensor calls with a node's inputs
(and the body they share), and a RandomVariable's ``rng_fn``.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("custom_ops", "pp_models", "inference")
LIMIT = 9

#: ``path::qualified name`` -> positional parameters (``self``/``cls`` not counted)
ALLOWED = {
    "custom_ops/bhc/evidence.py::_forward_entry": 11,
    "custom_ops/bhc/evidence.py::_grad_entry": 15,
    "custom_ops/dpm/collapsed.py::_grad_entry": 9,
    "custom_ops/dpm/collapsed.py::_value_entry": 9,
    "custom_ops/lds/ops.py::_kalman_entry": 12,
    "custom_ops/pydt/ops.py::PYDTLogProbGrad.make_node": 9,
    "custom_ops/pydt/ops.py::_forward_entry": 12,
    "custom_ops/pydt/ops.py::_grad_entry": 17,
    "custom_ops/pydt/ops.py::_numba_pydt_logprob_grad.f": 9,
    "custom_ops/pydt/ops.py::_numba_pydt_logprob_grad.gradients": 9,
    "pp_models/lds/distributions.py::LDSObservationsRV.rng_fn": 9,
    "pp_models/lds/distributions.py::_numba_core_lds_observations.random_fn": 9,
}


def long_positional_lists(source: str, path: str) -> dict[str, int]:
    """``path::qualname`` -> positional parameter count, for every function of
    ``source`` with ``LIMIT`` or more (methods without ``self``/``cls``)."""
    found: dict[str, int] = {}

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in child.args.posonlyargs + child.args.args]
                if names and names[0] in ("self", "cls"):
                    names = names[1:]
                if len(names) >= LIMIT:
                    key = f"{path}::{prefix}{child.name}"
                    found[key] = max(found.get(key, 0), len(names))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _scan() -> dict[str, int]:
    found: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found.update(long_positional_lists(path.read_text(), str(path.relative_to(ROOT))))
    return found


def test_the_scan_counts_positional_parameters():
    source = (
        "def f(a, b, c, d, e, f, g, h, i): pass\n"
        "def g(a, b, c, d, e, f, g, h, *, i): pass\n"
        "class C:\n"
        "    def m(self, a, b, c, d, e, f, g, h, i, /, j=1): pass\n"
    )
    assert long_positional_lists(source, "x.py") == {"x.py::f": 9, "x.py::C.m": 10}


def test_long_positional_lists_only_shrink():
    found = _scan()
    new = {k: v for k, v in found.items() if k not in ALLOWED}
    grown = {k: (ALLOWED[k], v) for k, v in found.items() if k in ALLOWED and v > ALLOWED[k]}
    gone = sorted(k for k in ALLOWED if k not in found or found[k] < ALLOWED[k])
    assert not new, f"new functions with {LIMIT}+ positional parameters: {new}"
    assert not grown, f"listed functions whose positional lists grew: {grown}"
    assert not gone, f"shorter now: lower or remove their ALLOWED entries: {gone}"
