"""How test modules import each other, read from the source (no imports run).

- Exact references (enumerations, closed forms, dense computations) live in
  ``tests.oracles``; shared tools in ``tests.helpers``. Every test folder may import both;
  they import nothing from the test folders.
- A test folder mirrors a layer (``custom_ops`` <- ``pp_models`` <- ``inference``) and
  imports support modules (twins, builders) of its own layer or a lower one, never of a
  higher one: the tests of a kernel do not depend on the tests of the steps built on it.
- No module imports from a test module (``test_*.py``) or a ``conftest.py``: what two test
  files share is a support module.

``ALLOWED`` lists the imports that predate these rules; it may only shrink.
"""

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
LAYERS = ("custom_ops", "pp_models", "inference")
SUPPORT = ("helpers", "oracles")

#: ``importing file -> imported module`` pairs (under ``tests``) that break a rule
#: above; the set may only shrink
ALLOWED: set[str] = set()


def _module_path(module: str) -> Path | None:
    base = ROOT.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.exists():
            return path
    return None


def _imported_modules(source: str) -> list[str]:
    """The ``tests.*`` modules ``source`` imports (``from tests.a import b`` names
    ``tests.a.b`` when that is a module)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names if a.name.split(".")[0] == "tests")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] == "tests":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.append(sub if _module_path(sub) is not None else node.module)
    return sorted(set(found))


def _folder(path: Path) -> str:
    """The top folder of ``path`` under ``tests`` ('' for a module at the top)."""
    parts = path.relative_to(TESTS).parts
    return parts[0] if len(parts) > 1 else ""


def broken_rules(path: Path, source: str) -> list[str]:
    """``importing file -> imported module: rule`` for each import of ``source`` (the
    file at ``path``) that breaks a rule above."""
    broken = []
    mine = _folder(path)
    for module in _imported_modules(source):
        target = _module_path(module)
        if target is None:
            continue
        theirs = _folder(target)
        pair = f"{path.relative_to(TESTS)} -> {module.removeprefix('tests.')}"
        if target.name.startswith("test_") or target.name == "conftest.py":
            broken.append(f"{pair}: imports a test module")
        elif mine in SUPPORT and theirs not in SUPPORT:
            broken.append(f"{pair}: a support package imports a test folder")
        elif mine in LAYERS and theirs in LAYERS and LAYERS.index(theirs) > LAYERS.index(mine):
            broken.append(f"{pair}: imports a higher layer's test folder")
    return broken


def _all_broken() -> dict[str, str]:
    out = {}
    for path in sorted(TESTS.rglob("*.py")):
        for line in broken_rules(path, path.read_text()):
            out[line.split(": ")[0]] = line
    return out


def test_tests_import_oracles_helpers_and_lower_layers_only():
    broken = _all_broken()
    new = [line for pair, line in broken.items() if pair not in ALLOWED]
    assert not new, "\n".join(new)
    fixed = sorted(ALLOWED - set(broken))
    assert not fixed, "no longer broken, remove from ALLOWED:\n" + "\n".join(fixed)


def test_a_planted_import_of_each_kind_is_caught():
    kernel_test = TESTS / "custom_ops" / "lds" / "test_planted.py"
    cases = {
        "from tests.pp_models.lds.test_model import x": "imports a test module",
        "from tests.inference.gibbs.lds import twins": "imports a higher layer",
        "import tests.conftest": "imports a test module",
    }
    for source, rule in cases.items():
        (found,) = broken_rules(kernel_test, source)
        assert rule in found, (source, found)
    oracle = TESTS / "oracles" / "planted.py"
    (found,) = broken_rules(oracle, "from tests.custom_ops.hmm import enumeration")
    assert "a support package imports a test folder" in found
    # allowed: an oracle, a helper, a lower layer's support module
    assert broken_rules(TESTS / "inference" / "gibbs" / "planted.py",
                        "from tests.helpers import backends\n"
                        "from tests.custom_ops.hmm import enumeration") == []
