"""Every use of Numba's private internals in the packages, in one place.

Numba offers no public option for where one function's compiled code is cached (only the
process-wide ``NUMBA_CACHE_DIR``, which would move every other library's cache too), nor
for locking the cache's writes, nor for giving a dispatcher or a C callback another cache
class. :mod:`custom_ops.jit` needs all three (its module docstring says why); this module
builds them on the Numba internals listed in :data:`PRIVATE_NAMES`, each with the reason,
and nothing else in ``custom_ops``, ``pp_models`` or ``inference`` touches a private name
of Numba (``tests/test_private_names.py``). ``tests/custom_ops/test_numba_internals.py``
checks that every name listed here exists in the installed Numba and that its version is
one of :data:`CHECKED_VERSIONS`, so an upgrade that moves one of them fails there, by
name, instead of silently caching in the wrong place.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from numba.core import caching
from numba.core.ccallback import CFunc
from numba.core.registry import CPUDispatcher

__all__ = [
    "CHECKED_VERSIONS",
    "PRIVATE_NAMES",
    "LockedIndexDataCacheFile",
    "cached_cfunc",
    "cached_dispatcher",
    "kernel_cache_class",
]

#: The Numba releases (major.minor) this module was checked against.
CHECKED_VERSIONS = ("0.68",)

#: Each private name of Numba used here -> why (no public route gives it).
PRIVATE_NAMES = {
    "numba.core.caching._CacheLocator": (
        "base class of a cache locator: the only way to choose a function's cache "
        "folder without the process-wide NUMBA_CACHE_DIR"
    ),
    "numba.core.caching._SourceFileBackedLocatorMixin": (
        "the source-file stamp and staleness check every Numba locator uses; reused so "
        "the kernels go stale exactly when Numba's own cache would"
    ),
    "numba.core.caching._CacheLocator.get_suitable_cache_subpath": (
        "the per-source-file subfolder name Numba's own locators use"
    ),
    "numba.core.caching.CacheImpl._locator_classes": (
        "the locators a cache implementation tries, in order (a user's NUMBA_CACHE_DIR "
        "first, then ours)"
    ),
    "numba.core.caching.Cache._impl_class": ("the cache implementation a FunctionCache builds"),
    "numba.core.caching.Cache._impl": (
        "the built implementation, whose locator knows the folder in use"
    ),
    "numba.core.caching.Cache._cache_path": (
        "the cache folder, to build the locked cache file there"
    ),
    "numba.core.caching.Cache._cache_file": (
        "the index and data files of one function, replaced by the locked ones"
    ),
    "numba.core.caching.IndexDataCacheFile._index_path": (
        "the index file, beside which the lock file is taken"
    ),
    "numba.core.dispatcher.Dispatcher._cache": (
        "a dispatcher's cache: enable_caching() only installs Numba's own FunctionCache"
    ),
    "numba.core.ccallback.CFunc._cache": ("a C callback's cache, as for the dispatcher"),
    "numba.core.ccallback.CFunc._pyfunc": (
        "the Python function a C callback compiles (its cache is keyed on it)"
    ),
}


class LockedIndexDataCacheFile(caching.IndexDataCacheFile):
    """Numba's index and data files of one cached function, saved under a file lock.

    Numba's ``save`` reads the index, takes the first free data-file number, writes the
    index, then the data file (numba/numba#10128): two processes saving one function at
    once could both take number k, and the index would map one signature to the other's
    code in every later process. Here that sequence runs under ``<index>.lock``, so each
    process sees the numbers the others took. Where no lock file can be created (a
    read-only cache) the save is skipped.
    """

    #: tests that lock every Numba cache write leave this class's writes to it
    locks_its_writes = True

    def save(self, key, data):
        from filelock import FileLock

        with FileLock(self._index_path + ".lock"):
            super().save(key, data)


def kernel_cache_class(
    cache_root: Callable[[], os.PathLike | str], on_use: Callable[[str], None]
) -> type:
    """A Numba function-cache class that caches under ``cache_root()`` (read when a
    function is decorated), then the source file's own subfolder, unless the user set
    ``NUMBA_CACHE_DIR`` (Numba's own locator, used as Numba uses it; a
    ``NUMBA_CACHE_LOCATOR_CLASSES`` setting overrides both); writes under a lock
    (:class:`LockedIndexDataCacheFile`); calls ``on_use(root)`` after each load or save
    from ``cache_root``'s folder; skips (compiles in memory) a cache it cannot read or
    write rather than failing the call."""

    class KernelCacheLocator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self.root = str(cache_root())
            self._cache_path = os.path.join(self.root, self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if not os.path.exists(py_file):
                return None
            return cls(py_func, py_file)

    class KernelCacheImpl(caching.CompileResultCacheImpl):
        _locator_classes = [caching.UserProvidedCacheLocator, KernelCacheLocator]

    class KernelCache(caching.FunctionCache):
        """The on-disk cache of one kernel of this package (see
        :func:`custom_ops.numba_internals.kernel_cache_class`)."""

        _impl_class = KernelCacheImpl

        def __init__(self, py_func):
            super().__init__(py_func)
            self._cache_file = LockedIndexDataCacheFile(
                cache_path=self._cache_path,
                filename_base=self._impl.filename_base,
                source_stamp=self._impl.locator.get_source_stamp(),
            )

        def _mark(self):
            root = getattr(self._impl.locator, "root", None)
            if root is not None:
                on_use(root)

        def load_overload(self, sig, target_context):
            self._mark()
            try:
                return super().load_overload(sig, target_context)
            except OSError:
                return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except OSError:
                return  # no writable cache folder: the kernel stays compiled in memory
            self._mark()

    KernelCache.__qualname__ = KernelCache.__name__ = "KernelCache"
    return KernelCache


def cached_dispatcher(py_func, targetoptions: dict, cache_class: type) -> CPUDispatcher:
    """Numba's CPU dispatcher of ``py_func`` (what ``numba.njit(**targetoptions)`` builds),
    cached by ``cache_class`` (from :func:`kernel_cache_class`) instead of Numba's
    default cache."""
    dispatcher = CPUDispatcher(py_func=py_func, locals={}, targetoptions=targetoptions)
    dispatcher._cache = cache_class(dispatcher.py_func)
    return dispatcher


def cached_cfunc(py_func, signature, options: dict, cache_class: type) -> CFunc:
    """Numba's C callback of ``py_func`` (what ``numba.cfunc(signature, **options)``
    builds, not yet compiled), cached by ``cache_class``."""
    compiled = CFunc(py_func, signature, locals={}, options=options)
    compiled._cache = cache_class(compiled._pyfunc)
    return compiled
