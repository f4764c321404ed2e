"""A file lock around every Numba cache write, for test runs only.

The xdist workers share one PyTensor compile cache, and PyTensor caches its graphs with
Numba's own cache class, which saves without a lock (numba/numba#10128): two workers
saving one function at once could take the same data-file number, and the index then maps
one signature to another's code in every later process (seen in a cold run: PyTensor's
``scalar_from_tensor`` int32 entry held float64 code). The package's own kernels lock
their writes (``custom_ops.jit.LockedIndexDataCacheFile``); PyTensor's graphs are not the
package's to change, so the test run (``tests/conftest.py``) patches Numba here. A library
must not do this; a test harness running many processes on one cache may.
"""

import functools

__all__ = ["lock_numba_cache_writes"]


def lock_numba_cache_writes() -> None:
    """Serialise ``IndexDataCacheFile.save`` between processes with a lock beside the
    index (idempotent). Classes that lock their own writes (``locks_its_writes``) are left
    to it: a second lock on the same file from one process would wait for itself."""
    from filelock import FileLock
    from numba.core import caching

    unlocked_save = caching.IndexDataCacheFile.save
    if getattr(unlocked_save, "_tests_locked", False):
        return

    @functools.wraps(unlocked_save)
    def save(self, key, data):
        if getattr(self, "locks_its_writes", False):
            return unlocked_save(self, key, data)
        try:
            lock = FileLock(self._index_path + ".lock")
            lock.acquire()
        except OSError:
            return unlocked_save(self, key, data)
        try:
            return unlocked_save(self, key, data)
        finally:
            lock.release()

    save._tests_locked = True
    caching.IndexDataCacheFile.save = save
