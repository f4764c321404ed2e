"""No import cycles between the modules of ``custom_ops``, ``pp_models`` and ``inference``,
counting function-local imports (an import moved into a function to break a cycle hides it
from Python, not from a reader).

The graph is read from the source (no imports run): an edge ``a -> b`` for every
``import b`` / ``from b import name`` in module ``a``, wherever it stands (``a -> b.name``
instead when ``b.name`` is a module); imports under ``if TYPE_CHECKING:`` run never and
are left out, and so are the implicit imports of a package's ``__init__`` by its
submodules. Every strongly connected component of more than one module is a cycle.
:data:`KNOWN_CYCLES` lists the ones not yet removed; it may only shrink.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("custom_ops", "pp_models", "inference")

#: Cycles still in the code, each as its sorted modules (remove an entry with its cycle).
KNOWN_CYCLES: list[tuple[str, ...]] = []


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_nodes(tree) -> set[int]:
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                skipped |= {id(n) for n in ast.walk(child)}
    return skipped


def imports_of(name: str, source: str, modules: set[str], is_package: bool) -> set[str]:
    """The modules of ``modules`` that module ``name``'s ``source`` imports, anywhere."""
    tree = ast.parse(source)
    skipped = _type_checking_nodes(tree)
    found = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            for alias in node.names:
                submodule = f"{target}.{alias.name}"
                found.add(submodule if submodule in modules else target)
    return {m for m in found if m in modules and m != name}


def import_graph() -> dict[str, set[str]]:
    paths = {_module_name(p): p for package in PACKAGES for p in (ROOT / package).rglob("*.py")}
    modules = set(paths)
    return {
        name: imports_of(name, path.read_text(), modules, path.name == "__init__.py")
        for name, path in paths.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[tuple[str, ...]]:
    """The strongly connected components of more than one node (Tarjan), sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found)


def test_no_import_cycles_beyond_the_known_ones():
    found = cycles(import_graph())
    new = [c for c in found if c not in KNOWN_CYCLES]
    gone = [c for c in KNOWN_CYCLES if c not in found]
    assert not new, f"import cycles (function-local imports included): {new}"
    assert not gone, f"cycles removed: take them out of KNOWN_CYCLES: {gone}"


def test_the_graph_sees_a_planted_cycle_through_a_local_import():
    modules = {"pp_models.a", "pp_models.b", "pp_models.c"}
    a = "from pp_models.b import f\n"
    b = "def g():\n    from pp_models import a\n    return a\n"
    c = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pp_models.a import f\n"
    graph = {
        "pp_models.a": imports_of("pp_models.a", a, modules, False),
        "pp_models.b": imports_of("pp_models.b", b, modules, False),
        "pp_models.c": imports_of("pp_models.c", c, modules, False),
    }
    assert graph == {
        "pp_models.a": {"pp_models.b"},
        "pp_models.b": {"pp_models.a"},
        "pp_models.c": set(),
    }
    assert cycles(graph) == [("pp_models.a", "pp_models.b")]
    # a relative import resolves against the package
    assert imports_of("pp_models.c", "from . import a\n", modules, False) == {"pp_models.a"}
