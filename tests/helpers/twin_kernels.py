"""Planted-bug twins of Numba kernels, built in the tests from the shipped kernels.

A shipped kernel holds no planted-bug switch. Where a bug would sit, it calls a small
kernel of its module that computes that one thing (the Metropolis-Hastings log ratio,
a Jacobian, a proposal density, a prior odds). A twin is the shipped kernel compiled
again with that helper's global name bound to a test-only kernel carrying the bug:
:func:`twin_kernel`. Every kernel between the entry point and the helper is compiled
again the same way (Numba compiles a call to a global by the value the global has when
the caller is compiled), the others are shared.

This is the one mechanism for kernel twins (``docs/architecture.md``, test
conventions). The shipped kernels run the code they always run; the twin pays one
compile of the kernels it changes, cached on disk like the package's kernels
(:class:`custom_ops.jit.KernelCache`) under a name that holds a digest of the bugs'
source, so an edited bug compiles anew and a warm run compiles nothing.
"""

from __future__ import annotations

import hashlib
import inspect
import types

from numba.core.dispatcher import Dispatcher

from custom_ops.jit import KernelCache
from custom_ops.numba_internals import cached_dispatcher

__all__ = ["twin_kernel"]


def _global_names(code) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _global_names(const)
    return names


def _digest(replacements) -> str:
    text = []
    for name in sorted(replacements):
        function = replacements[name]
        function = getattr(function, "py_func", function)
        text.append(f"{name}\n{inspect.getsource(function)}")
    return hashlib.sha256("\n".join(text).encode()).hexdigest()[:12]


_TWINS: dict[tuple, Dispatcher] = {}


def twin_kernel(kernel: Dispatcher, **replacements) -> Dispatcher:
    """``kernel`` compiled with each global name in ``replacements`` bound to the given
    kernel instead, in ``kernel`` and in every kernel it calls (directly or not) that
    uses that name.

    Parameters
    ----------
    kernel
        A shipped Numba kernel (a dispatcher).
    **replacements
        Global name -> the Numba kernel (the planted bug) to call under that name. Each
        name must be a global of some kernel ``kernel`` reaches.

    Returns
    -------
    numba.core.dispatcher.Dispatcher
        The twin (one per kernel and set of replacements in a process).

    Examples
    --------
    >>> @njit_exact_numpy                                          # doctest: +SKIP
    ... def likelihood_ratio_only(d_prior, d_lik, n_before, n_after, q_old, q_new):
    ...     return d_lik
    >>> shortcut = twin_kernel(pydt_sweep, mh_log_ratio=likelihood_ratio_only)  # +SKIP
    """
    key = (kernel, tuple(sorted((name, id(f)) for name, f in replacements.items())))
    if key in _TWINS:
        return _TWINS[key]
    suffix = f"__twin_{_digest(replacements)}"
    rebuilt: dict[Dispatcher, Dispatcher] = {}
    used: set[str] = set()

    def rebuild(dispatcher):
        if dispatcher in rebuilt:
            return rebuilt[dispatcher]
        rebuilt[dispatcher] = dispatcher  # a recursive call sees the shipped one
        function = dispatcher.py_func
        changed = {}
        for name in _global_names(function.__code__):
            if name not in function.__globals__:
                continue
            if name in replacements:
                changed[name] = replacements[name]
                used.add(name)
                continue
            value = function.__globals__[name]
            if isinstance(value, Dispatcher):
                twin = rebuild(value)
                if twin is not value:
                    changed[name] = twin
        if not changed:
            return dispatcher
        namespace = dict(function.__globals__)
        namespace.update(changed)
        copy = types.FunctionType(function.__code__, namespace, function.__name__,
                                  function.__defaults__, function.__closure__)
        copy.__kwdefaults__ = function.__kwdefaults__
        copy.__qualname__ = function.__qualname__ + suffix
        copy.__module__ = function.__module__
        options = {k: v for k, v in dispatcher.targetoptions.items() if k != "nopython"}
        twin = cached_dispatcher(copy, {"nopython": True, **options}, KernelCache)
        rebuilt[dispatcher] = twin
        return twin

    twin = rebuild(kernel)
    missing = set(replacements) - used
    if missing:
        raise ValueError(f"twin_kernel: {kernel.py_func.__qualname__} reaches no kernel "
                         f"using {sorted(missing)}")
    _TWINS[key] = twin
    return twin
