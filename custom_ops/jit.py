"""The kernel decorators of ``custom_ops`` and where Numba caches the compiled kernels.

Kernels are decorated with :data:`njit_exact` (``error_model="python"``) or, in the PYDT
modules, :data:`njit_exact_numpy` (``error_model="numpy"``): cached, exact floating
point, and an explicit error model, for the reasons below.

Where the compiled kernels are cached: Numba's default for ``cache=True`` is a
``__pycache__`` folder beside each source file, i.e. inside the installed package, which
may be read-only or shared between users and environments. The decorators give each
kernel a cache of this module's (:class:`KernelCache`) instead, in
:func:`kernel_cache_dir`, under the user's cache folder (platformdirs' convention:
``$XDG_CACHE_HOME/pp-models`` or ``~/.cache/pp-models`` on Linux,
``~/Library/Caches/pp-models`` on macOS, ``%LOCALAPPDATA%\\pp-models\\Cache`` on
Windows), subfolder ``numba``. Only this package's kernels go there: Numba's
configuration, and so every other library's cache, is left alone. A user who sets
``NUMBA_CACHE_DIR`` gets the kernels cached there, as Numba caches any function.

Numba does not record the LLVM optimisation level (``NUMBA_OPT``) in its cache, so code
compiled at another level than Numba's default 3 goes to a folder of its own
(``numba-O1``, ...): a test run at ``-O1`` must not hand its code to the benchmarks. Nor
does it notice an edit of a kernel that a cached kernel calls from another file, so each
``custom_ops`` source gets a subfolder of its own (``src-<kernel_source_version>``);
:func:`prune_kernel_cache` deletes other sources' subfolders left unused (nothing is
deleted unless it is called). Nor does it lock its writes (numba/numba#10128): two
processes compiling one kernel at once could take the same data-file number, and the
index would then map one signature to the other's machine code;
:class:`LockedIndexDataCacheFile` takes a file lock for that. Numba has no public option
for any of these; the Numba internals they need live in :mod:`custom_ops.numba_internals`.

Nor does Numba record the floating-point flags: it compiles a kernel that sets no
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
import time
from pathlib import Path

from numba.core import config, sigutils

from custom_ops.numba_internals import (
    LockedIndexDataCacheFile,
    cached_cfunc,
    cached_dispatcher,
    kernel_cache_class,
)

__all__ = [
    "STALE_AFTER_DAYS",
    "KernelCache",
    "LockedIndexDataCacheFile",
    "c_entry_points",
    "kernel_cache_dir",
    "kernel_source_version",
    "njit_exact",
    "njit_exact_numpy",
    "prune_kernel_cache",
    "register_numba_op",
    "rv_draw_cache_key",
    "user_cache_dir",
]


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


def _sources_folder() -> Path:
    """The folder holding one subfolder per source: ``user_cache_dir() / "numba"``, or
    ``"numba-O<level>"`` for code compiled at another optimisation level than 3."""
    level = int(config.OPT)
    return user_cache_dir() / ("numba" if level == 3 else f"numba-O{level}")


def kernel_cache_dir() -> Path:
    """The folder this package's kernels are cached in (unless the user set
    ``NUMBA_CACHE_DIR``): the current source's subfolder ``src-<kernel_source_version()
    in hex>`` of the user's cache folder for the optimisation level."""
    return _sources_folder() / f"src-{kernel_source_version():x}"


#: Days after which :func:`prune_kernel_cache` deletes another source's cache folder.
STALE_AFTER_DAYS = 14

#: The file a process touches in the cache folder it loads kernels from.
LAST_USED = "last-used"


def prune_kernel_cache(older_than_days: float = STALE_AFTER_DAYS) -> list[Path]:
    """Delete the kernel cache folders of other ``custom_ops`` sources unused for
    ``older_than_days`` days and return them.

    Each version of the package's source (after a ``git pull`` in a checkout, an
    upgrade) compiles into a new folder (:func:`kernel_cache_dir`); the old ones stay
    until this is called. A folder counts as used
    when a process last loaded a kernel from it. The current source's folder is kept,
    and so is a user's own ``NUMBA_CACHE_DIR`` (never pruned).

    Examples
    --------
    >>> from custom_ops.jit import prune_kernel_cache
    >>> removed = prune_kernel_cache(older_than_days=30)  # doctest: +SKIP
    """
    import shutil

    if isinstance(older_than_days, bool) or not isinstance(older_than_days, int | float):
        raise TypeError(f"older_than_days must be a number, got {older_than_days!r}")
    if not older_than_days >= 0:
        raise ValueError(f"older_than_days must be >= 0, got {older_than_days!r}")
    current = kernel_cache_dir()
    cutoff = time.time() - older_than_days * 86400
    removed = []
    for other in sorted(_sources_folder().glob("src-*")):
        if other == current:
            continue
        try:
            used = (other / LAST_USED).stat().st_mtime
        except OSError:
            used = other.stat().st_mtime
        if used < cutoff:
            shutil.rmtree(other, ignore_errors=True)
            removed.append(other)
    return removed


_MARKED: set[str] = set()


def _mark_used(folder: str) -> None:
    """Touch ``folder``'s ``last-used`` file, once per process, once the folder exists."""
    if folder in _MARKED:
        return
    try:
        if os.path.isdir(folder):
            Path(folder, LAST_USED).touch()
            _MARKED.add(folder)
    except OSError:
        _MARKED.add(folder)  # a read-only cache is still read


#: The on-disk cache of one kernel of this package: located by :func:`kernel_cache_dir`
#: (or a user's ``NUMBA_CACHE_DIR``), written under a lock
#: (:class:`LockedIndexDataCacheFile`); a cache that cannot be read or written is
#: skipped (the kernel is compiled in memory) rather than failing the call. Built on
#: Numba's internals in :mod:`custom_ops.numba_internals`, their one home.
KernelCache = kernel_cache_class(kernel_cache_dir, _mark_used)


def _kernel_decorator(**defaults):
    """A decorator compiling a function as ``numba.njit(cache=True, **defaults)`` does,
    with :class:`KernelCache` in place of Numba's cache; ``@decorator(**options)`` adds
    or overrides options (``nogil=True``, ``inline="always"``)."""

    def decorator(function=None, **options):
        if function is None:
            return _kernel_decorator(**{**defaults, **options})
        if config.DISABLE_JIT:
            return function
        targetoptions = {"nopython": True, "boundscheck": None, **defaults}
        return cached_dispatcher(function, targetoptions, KernelCache)

    return decorator


#: The decorator of every kernel (``@njit_exact``, or ``@njit_exact(nogil=True)`` with
#: more Numba options): cached on disk (:class:`KernelCache`), exact IEEE arithmetic and
#: Python's error model (a division by zero raises ``ZeroDivisionError``), said explicitly
#: because a kernel that leaves them out takes its first caller's (above).
njit_exact = _kernel_decorator(error_model="python", fastmath=False)

#: :data:`njit_exact` with ``error_model="numpy"``, for the PYDT kernels
#: (``custom_ops.pydt``): a zero or infinite variance (sigma2 or the times at an
#: extreme) gives an infinite or NaN density, which the samplers reject, instead of
#: raising.
njit_exact_numpy = _kernel_decorator(error_model="numpy", fastmath=False)


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
    from numba import types

    version = kernel_source_version()
    callables = []
    for name, function in entries.items():
        symbol = f"ppm_{prefix}_{name}_{version:x}"
        if symbol not in _ENTRY_POINTS:
            options = {"fastmath": False, "error_model": "python", **(cfunc_options or {})}
            compiled = cached_cfunc(function, sigutils.normalize_signature(signature),
                                    options, KernelCache)
            compiled.compile()
            llvm.add_symbol(symbol, compiled.address)
            _ENTRY_POINTS[symbol] = compiled
        callables.append(types.ExternalFunction(symbol, signature))
    return tuple(callables)
