"""The import rules of ``docs/architecture.md``, read from the source (no imports run).

- Layers: ``custom_ops`` <- ``pp_models`` <- ``inference``; nothing imports upward.
- A ``custom_ops`` module never imports another module's private (``_``-prefixed) names:
  what two modules share is public and listed in the owner's ``__all__``.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("custom_ops", "pp_models", "inference")


def _modules(package):
    return sorted((ROOT / package).rglob("*.py"))


def _imports(source):
    """(imported module, imported names) for every import statement in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.module, tuple(alias.name for alias in node.names)))
    return found


def upward_imports(package, source):
    """Modules of a higher layer that ``source`` (a module of ``package``) imports."""
    higher = LAYERS[LAYERS.index(package) + 1:]
    return [module for module, _ in _imports(source) if module.split(".")[0] in higher]


def private_imports(module_name, source):
    """``module:name`` for each private name ``source`` imports from another module of
    its own top-level package."""
    package = module_name.split(".")[0]
    return [f"{module}:{name}" for module, names in _imports(source)
            if module.split(".")[0] == package and module != module_name
            for name in names if name.startswith("_") and not name.startswith("__")]


def _module_name(path):
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("package", LAYERS[:-1])
def test_nothing_imports_upward(package):
    offenders = {_module_name(path): upward_imports(package, path.read_text())
                 for path in _modules(package)}
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, f"{package} imports a higher layer: {offenders}"


def test_kernel_modules_share_only_public_names():
    offenders = {_module_name(path): private_imports(_module_name(path), path.read_text())
                 for path in _modules("custom_ops")}
    offenders = {name: found for name, found in offenders.items() if found}
    assert not offenders, (
        f"custom_ops modules importing another module's private names: {offenders}; "
        "make the name public in its owner (and its __all__)")


def test_the_checks_see_violations():
    # twins: the sources a regression would add
    assert upward_imports("custom_ops", "from pp_models.trees import Tree\n") == [
        "pp_models.trees"]
    assert upward_imports("pp_models", "import inference.fit\n") == ["inference.fit"]
    assert upward_imports("pp_models", "from custom_ops import pydt\n") == []
    source = "from custom_ops.pydt.density import (\n    _forward,\n    pydt_forward,\n)\n"
    assert private_imports("custom_ops.pydt.ops", source) == ["custom_ops.pydt.density:_forward"]
    # a module's own private names, and dunders, are not shared names
    assert private_imports("custom_ops.pydt.ops", "from custom_ops.pydt.ops import _x\n") == []
    assert private_imports("custom_ops.pydt.ops", "from custom_ops import __version__\n") == []
