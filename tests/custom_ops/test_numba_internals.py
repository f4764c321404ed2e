"""The Numba internals :mod:`custom_ops.numba_internals` uses exist in the installed Numba,
whose version is one the module was checked on: a Numba upgrade that moves one fails here,
by name, before the kernels' cache quietly goes elsewhere."""

import importlib

import numba

from custom_ops import numba_internals


def _resolve(dotted):
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            obj = getattr(obj, name)
        return obj
    raise ImportError(dotted)


def test_numba_is_a_checked_version():
    major_minor = ".".join(numba.__version__.split(".")[:2])
    assert major_minor in numba_internals.CHECKED_VERSIONS, (
        f"Numba {numba.__version__} is not among the versions custom_ops.numba_internals "
        f"was checked on {numba_internals.CHECKED_VERSIONS}: check each name in its "
        "PRIVATE_NAMES against this Numba, then add the version"
    )


def test_every_private_name_the_adapter_uses_exists():
    missing = []
    for dotted in numba_internals.PRIVATE_NAMES:
        owner, _, attribute = dotted.rpartition(".")
        try:
            target = _resolve(owner)
        except (ImportError, AttributeError):
            missing.append(dotted)
            continue
        if hasattr(target, attribute):
            continue
        # instance attributes: set by the class's __init__ (read from its source)
        import inspect

        source = "".join(
            inspect.getsource(c)
            for c in getattr(target, "__mro__", ())
            if c.__module__.startswith("numba")
        )
        if f"self.{attribute} =" not in source:
            missing.append(dotted)
    assert not missing, f"Numba {numba.__version__} lacks {missing}"


def test_a_kernel_cache_locates_saves_under_the_lock_and_loads(tmp_path):
    # the adapter's pieces working together on a throwaway function
    import textwrap

    source = tmp_path / "kernel_mod.py"
    source.write_text(
        textwrap.dedent("""
        def twice(x):
            return 2 * x
    """)
    )
    spec = importlib.util.spec_from_file_location("kernel_mod", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    used = []
    cache_class = numba_internals.kernel_cache_class(lambda: tmp_path / "cache", used.append)
    kernel = numba_internals.cached_dispatcher(module.twice, {"nopython": True}, cache_class)
    assert kernel(3) == 6
    cache = kernel._cache
    assert isinstance(cache._cache_file, numba_internals.LockedIndexDataCacheFile)
    saved = list((tmp_path / "cache").rglob("*.nbi"))
    assert saved and list((tmp_path / "cache").rglob("*.nbi.lock"))
    assert used == [str(tmp_path / "cache")] * len(used) and used
    again = numba_internals.cached_dispatcher(module.twice, {"nopython": True}, cache_class)
    assert again(4) == 8 and again.stats.cache_hits
