"""The kernel decorators of ``custom_ops`` and where Numba caches the compiled kernels.

Kernels are decorated with :data:`njit_exact` (``error_model="python"``) or, in the PYDT
modules, :data:`njit_exact_numpy` (``error_model="numpy"``): cached, exact floating
point, and an explicit error model, for the reasons below.

Where the compiled kernels are cached (``cache=True``): Numba's default is a
``__pycache__`` folder beside each source file, i.e. inside the installed package, which
may be read-only or shared between users and environments. :func:`use_user_cache_dir`
points it at the user's cache folder instead, the location
``platformdirs.user_cache_dir("pp-models")`` names (``$XDG_CACHE_HOME/pp-models`` or
``~/.cache/pp-models`` on Linux, ``~/Library/Caches/pp-models`` on macOS,
``%LOCALAPPDATA%\\pp-models\\Cache`` on Windows), subfolder ``numba``. A user's own
``NUMBA_CACHE_DIR`` is left alone. Numba keys the cache by the source file's full path,
so several checkouts share the folder without clashing. It does not record the LLVM
optimisation level (``NUMBA_OPT``), so code compiled at another level than Numba's
default 3 goes to a folder of its own (``numba-O1``, ...): a test run at ``-O1`` must not
hand its code to the benchmarks. Nor does it notice an edit of a kernel that a cached
kernel calls from another file, so each ``custom_ops`` source gets a subfolder of its own
(:func:`source_cache_folder`; a user's own ``NUMBA_CACHE_DIR`` is used as it is).

Nor does it record the floating-point flags: Numba compiles a kernel that sets no
``fastmath`` with the flags of the code that first calls it (``inherit_if_not_set`` in
``numba.core.cpu``) and saves that code. PyTensor's Numba backend compiles its graphs with
fastmath on, Python calls have it off, so such a kernel gave different numbers depending on
which came first in the process, or in an earlier process that filled the cache. Every
kernel in ``custom_ops`` therefore says ``fastmath=False`` (exact IEEE arithmetic, the same
from Python and from graphs), apart from ``inline="always"`` helpers, whose code becomes
their caller's; code meant to run with fast flags is inlined into a C entry point that
names them (:func:`c_entry_points`). ``error_model`` is inherited the same way (a kernel
without one raised ``ZeroDivisionError`` or returned inf/nan depending on whether Python or
a PYDT kernel, ``error_model="numpy"``, compiled it first), so every kernel names that too:
``"numpy"`` in the PYDT modules, ``"python"`` (Numba's default) everywhere else.
``tests/custom_ops/test_numba_flags.py`` holds every kernel to this.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

import numba

__all__ = [
    "c_entry_points",
    "kernel_source_version",
    "make_cache_writes_process_safe",
    "njit_exact",
    "njit_exact_numpy",
    "register_numba_op",
    "rv_draw_cache_key",
    "source_cache_folder",
    "use_user_cache_dir",
    "user_cache_dir",
]


#: The decorator of every kernel (``@njit_exact``): cached on disk, exact IEEE arithmetic
#: and Python's error model (a division by zero raises ``ZeroDivisionError``), said
#: explicitly because a kernel that leaves them out takes its first caller's (above).
njit_exact = numba.njit(cache=True, error_model="python", fastmath=False)

#: :data:`njit_exact` with ``error_model="numpy"``, for the PYDT kernels
#: (``custom_ops.pydt``): a zero or infinite variance (sigma2 or the times at an
#: extreme) gives an infinite or NaN density, which the samplers reject, instead of
#: raising.
njit_exact_numpy = numba.njit(cache=True, error_model="numpy", fastmath=False)


def user_cache_dir() -> Path:
    """The pp-models cache folder of this user (platformdirs' convention)."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
        return base / "pp-models"
    if os.name == "nt":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
        return base / "pp-models" / "Cache"
    base = os.environ.get("XDG_CACHE_HOME") or ""
    return (Path(base) if base.strip() else Path.home() / ".cache") / "pp-models"


def use_user_cache_dir() -> str | None:
    """Set Numba's cache folder to ``user_cache_dir() / "numba"`` (``"numba-O<level>"``
    when ``NUMBA_OPT`` names another level than 3), in the subfolder of the current
    ``custom_ops`` source (:func:`source_cache_folder`), unless the user set
    ``NUMBA_CACHE_DIR``; returns the folder used (None if left to the user or Numba)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    level = os.environ.get("NUMBA_OPT", "").strip()
    base = user_cache_dir() / ("numba" if level in ("", "3") else f"numba-O{level}")
    try:
        folder = source_cache_folder(base)
    except OSError:
        return None  # no writable home: Numba's own default
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:
        # numba read its configuration when first imported; its cache locators read
        # this attribute each time a function is compiled with cache=True
        from numba.core import config

        config.CACHE_DIR = str(folder)
    return str(folder)


#: Days after which the cache folder of another ``custom_ops`` source is deleted.
STALE_AFTER_DAYS = 14


def source_cache_folder(base: Path) -> Path:
    """The subfolder of ``base`` for the current ``custom_ops`` source, created and marked
    as used now; the subfolders of other sources unused for :data:`STALE_AFTER_DAYS` are
    deleted.

    Numba re-checks only the stamp of a cached function's own file, but a kernel's cached
    machine code holds every kernel it calls from other files: after an edit of
    ``conjugate/gaussian.py`` alone, ``bhc/builders.py``'s cached code would keep running
    the old marginal (a fixed exception would still be raised until the cache was
    deleted), in a checkout or an editable install after ``git pull``. So
    each :func:`kernel_source_version` gets its own subfolder ``src-<version>``; two
    checkouts of different sources each keep theirs.
    """
    import shutil
    import time

    folder = base / f"src-{kernel_source_version():x}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "last-used").touch()
    cutoff = time.time() - STALE_AFTER_DAYS * 86400
    for other in base.glob("src-*"):
        if other == folder:
            continue
        try:
            used = (other / "last-used").stat().st_mtime
        except OSError:
            used = other.stat().st_mtime
        if used < cutoff:
            shutil.rmtree(other, ignore_errors=True)
    return folder


def make_cache_writes_process_safe() -> None:
    """Serialise writes to Numba's on-disk cache between processes (idempotent).

    Numba saves a compiled signature by reading the function's index file, taking the
    first free data-file number, writing the index, then the data file, without a lock
    (numba/numba#10128). Two processes compiling the same function at once (two test
    workers, parallel chains on a cold cache) can both take number k: the index then maps
    one signature to the other's machine code (say PyTensor's ``scalar_from_tensor``
    ``int32`` entry to a file holding the ``float64`` code), and every later process fails
    to type that graph. Here
    the read-number-write sequence runs under a file lock beside the index, so each
    process sees the numbers the others took. PyTensor's graph cache uses the same Numba
    class, so it is covered too. A cache folder where no lock file can be created (read
    only) falls back to Numba's unlocked write.
    """
    from filelock import FileLock
    from numba.core import caching

    unlocked_save = caching.IndexDataCacheFile.save
    if getattr(unlocked_save, "_ppm_locked", False):
        return

    @functools.wraps(unlocked_save)
    def save(self, key, data):
        try:
            lock = FileLock(self._index_path + ".lock")
            lock.acquire()
        except OSError:
            return unlocked_save(self, key, data)
        try:
            return unlocked_save(self, key, data)
        finally:
            lock.release()

    save._ppm_locked = True
    caching.IndexDataCacheFile.save = save


@functools.cache
def kernel_source_version() -> int:
    """A number that changes whenever any source file of ``custom_ops`` changes.

    PyTensor caches the compiled graph functions of a registered Op under a key made of
    the Op's type, its props and one integer the registration returns; the kernels the
    graph calls are compiled into that cached function. Without this number an edited
    kernel kept running its old compiled code inside cached graphs (seen: a traceback
    into a deleted worktree's ``bhc.py``). Hashing the whole package, not the Op's own
    module, also covers kernels it imports (the conjugate dispatch, the tree kernels).
    """
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return int(digest.hexdigest()[:15], 16)


def register_numba_op(op_type):
    """Register an Op's Numba implementation, cached under :func:`kernel_source_version`.

    Use instead of ``pytensor.link.numba.dispatch.basic.register_funcify_default_op_cache_key``:
    the decorated function returns the jitted function only.
    """
    from pytensor.link.numba.dispatch import basic as numba_basic

    def decorator(funcify):
        @functools.wraps(funcify)
        def keyed(op, node=None, **kwargs):
            return funcify(op, node=node, **kwargs), kernel_source_version()

        numba_basic.register_funcify_default_op_cache_key(op_type)(keyed)
        return funcify

    return decorator


def rv_draw_cache_key(module_file) -> int:
    """The cache key a random variable's Numba draw returns from PyTensor's
    ``numba_core_rv_funcify`` (its second value).

    PyTensor caches a compiled graph holding a random variable under a key made of the
    variable's type, its props and this integer, with the draw kernel compiled into it. A
    constant key kept running an edited (or moved) kernel's old code from the cache,
    e.g. a draw whose kernel module was renamed failed to import its old module. The key
    combines :func:`kernel_source_version` (the kernels the draw calls) with the source of
    ``module_file``, the module that defines the draw function itself.
    """
    digest = hashlib.sha256(str(kernel_source_version()).encode())
    digest.update(Path(module_file).read_bytes())
    return int(digest.hexdigest()[:15], 16)


# Compiled C entry points, kept alive as long as the process: LLVM's JIT holds only their
# addresses under the symbols added below.
_ENTRY_POINTS: dict[str, object] = {}


def c_entry_points(prefix: str, signature, *, cfunc_options=None, **entries):
    """Compile (or load from Numba's cache) heavy kernels as C entry points and return,
    in the order given, the functions a jitted caller uses to call them.

    PyTensor's Numba backend links the code of every function a graph calls into that
    graph's LLVM module and optimises and code-generates it again, so a kernel called
    from many distinct graphs would be compiled once per graph, which is most of a cold
    test run's time. A kernel compiled once as ``numba.cfunc(signature,
    cache=True)`` and called through a symbol is not: the graph holds only the call.

    Each entry ``name=function`` becomes the LLVM symbol
    ``ppm_<prefix>_<name>_<kernel_source_version() in hex>``, registered with LLVM's JIT
    linker here and called through ``numba.types.ExternalFunction``. The version in the
    name matches PyTensor's cache key for graphs of a registered Op
    (:func:`register_numba_op`), so a cached graph never resolves to an edited kernel.
    Call this from the Op's Numba registration: PyTensor builds that before it compiles
    or loads a graph using the Op, so the symbol exists before any graph is linked.

    The functions must have the C signature ``signature`` and must not raise (a C
    callback cannot): catch exceptions inside and return a status code for the jitted
    caller to turn into an exception.

    ``cfunc_options`` (a dict) go to ``numba.cfunc``, e.g. ``fastmath`` (default False)
    or ``error_model`` (default "python"):
    the code it inlines (``numba.njit(inline="always")``) is compiled with them, and so is
    a kernel without flags of its own that it compiles first.
    """
    import llvmlite.binding as llvm
    import numba
    from numba import types

    version = kernel_source_version()
    callables = []
    for name, function in entries.items():
        symbol = f"ppm_{prefix}_{name}_{version:x}"
        if symbol not in _ENTRY_POINTS:
            options = {"fastmath": False, "error_model": "python", **(cfunc_options or {})}
            compiled = numba.cfunc(signature, cache=True, **options)(function)
            llvm.add_symbol(symbol, compiled.address)
            _ENTRY_POINTS[symbol] = compiled
        callables.append(types.ExternalFunction(symbol, signature))
    return tuple(callables)
