"""No private name of another library is used outside the one adapter per concern.

A private name (``_x``, not a dunder) of Numba, PyMC, PyTensor, ArviZ, xarray or the
standard library can change in any of their releases without notice. The packages reach
such names only in the adapter modules listed in :data:`ADAPTERS`, each of which names
every private call it makes and why, with a test pinning the versions it was checked on
(``tests/custom_ops/test_numba_internals.py``, ``tests/pp_models/test_pymc_internals.py``).

Read from the source (no imports run): every ``import``/``from ... import`` of a private
name or module of those libraries, and every attribute access ``alias._x`` on a name bound
to one of their modules or to something imported from them.
"""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("custom_ops", "pp_models", "inference")

#: Libraries whose private names only the adapters may use (the standard library too).
WATCHED = frozenset(
    {"numba", "pymc", "pytensor", "arviz", "arviz_base", "arviz_stats", "arviz_plots", "xarray"}
) | frozenset(sys.stdlib_module_names)

#: The adapter modules: the only places a private name of a watched library appears.
ADAPTERS = {
    "custom_ops/numba_internals.py": "Numba's cache locator, cache file and dispatchers",
    "pp_models/pymc_internals.py": "PyMC: default transforms, the sequential chain loop",
}

#: Underscored names the library documents as public API.
DOCUMENTED = frozenset({"os._exit"})


def _private(name: str) -> bool:
    if name in DOCUMENTED:
        return False
    return any(
        part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
        for part in name.split(".")
    )


def _watched(module: str) -> bool:
    return module.split(".")[0] in WATCHED


def private_uses(source: str) -> list[str]:
    """``line: dotted name`` of each private name of a watched library ``source`` uses."""
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> dotted name in a watched library
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _watched(alias.name):
                    if _private(alias.name):
                        found.append(f"{node.lineno}: {alias.name}")
                    local = alias.asname or alias.name.split(".")[0]
                    aliases[local] = alias.name if alias.asname else local
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if not _watched(node.module):
                continue
            for alias in node.names:
                dotted = f"{node.module}.{alias.name}"
                if _private(dotted):
                    found.append(f"{node.lineno}: {dotted}")
                aliases[alias.asname or alias.name] = dotted
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not (node.attr.startswith("__") and node.attr.endswith("__"))
        ):
            root, chain = node.value, []
            while isinstance(root, ast.Attribute):
                chain.append(root.attr)
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                dotted = ".".join([aliases[root.id], *reversed(chain), node.attr])
                if dotted not in DOCUMENTED:
                    found.append(f"{node.lineno}: {dotted}")
    return sorted(set(found), key=lambda s: (int(s.split(":")[0]), s))


def _sources():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


def test_private_names_of_other_libraries_stay_in_the_adapters():
    offenders = {}
    for name, path in _sources():
        if name in ADAPTERS:
            continue
        found = private_uses(path.read_text())
        if found:
            offenders[name] = found
    assert not offenders, (
        "private names of other libraries outside the adapter modules "
        f"({sorted(ADAPTERS)}): {offenders}; use the library's public API, or move the "
        "call into the adapter of its concern with the reason and a version test"
    )


def test_the_adapters_exist_and_use_private_names():
    for name in ADAPTERS:
        assert private_uses((ROOT / name).read_text()), f"{name} uses no private name"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import atexit\natexit._run_exitfuncs()\n", ["2: atexit._run_exitfuncs"]),
        (
            "from numba.core import caching\nclass L(caching._CacheLocator): pass\n",
            ["2: numba.core.caching._CacheLocator"],
        ),
        ("from pymc.sampling.mcmc import _iter_sample\n", ["1: pymc.sampling.mcmc._iter_sample"]),
        (
            "import pymc.sampling.mcmc as mcmc\nf = mcmc._sample_many\n",
            ["2: pymc.sampling.mcmc._sample_many"],
        ),
        ("import numba._helperlib\n", ["1: numba._helperlib"]),
        ("import sys\nsys._getframe(1)\n", ["2: sys._getframe"]),
        ("import os\nos._exit(1)\n", []),
        # public names, dunders, and private names of our own objects are not flagged
        ("import numba\nnumba.__version__\nfrom pymc import sample\nself._x = 1\n", []),
        ("from custom_ops.jit import njit_exact\nnjit_exact._y\n", []),
    ],
)
def test_the_scan_sees_a_planted_violation(source, expected):
    assert private_uses(source) == expected


def test_no_plotting_call_switches_the_matplotlib_backend():
    # the backend is the user's (or matplotlib's headless default) to choose: figures are
    # drawn on matplotlib.figure.Figure objects and saved
    offenders = [name for name, path in _sources() if "matplotlib.use(" in path.read_text()]
    assert not offenders, f"matplotlib.use() called in {offenders}"
