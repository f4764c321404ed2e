"""Every kernel in ``custom_ops`` (and ``pp_models.partitions``) names its floating-point
flags and its error model, so it computes the same numbers, and raises on the same inputs,
whether Python, a PyTensor graph or another kernel compiles it first.

Numba compiles a kernel that sets no ``fastmath`` with its first caller's flags and caches
that code without recording them (``custom_ops.jit``); PyTensor compiles its
graphs with fastmath on. ``error_model`` is inherited the same way (``inherit_if_not_set``
in ``numba.core.cpu``): a kernel without one, first compiled from a PYDT kernel
(``error_model="numpy"``), returns inf or nan on a division by zero where it raises
``ZeroDivisionError`` when Python compiled it first. Reading ``targetoptions`` compiles
nothing, so the walk over all kernels is cheap; the compiled checks use one small kernel
each.
"""

import importlib
import pkgutil
import re
import types

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher
from pytensor import config
from pytensor.link.numba.dispatch.basic import numba_njit

import custom_ops
import pp_models.partitions
from custom_ops.conjugate.special import digamma
from custom_ops.ibp_fa.ibp import harmonic

# An LLVM floating-point instruction carrying any fast-math flag ("fadd fast", "fmul
# reassoc nsz", "call contract double @llvm.fma...").
FAST_INSTRUCTION = re.compile(
    r"= (?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|call)"
    r"(?: (?:fast|reassoc|nnan|ninf|nsz|arcp|contract|afn))+ ")


def _kernel_modules():
    yield custom_ops
    for info in pkgutil.walk_packages(custom_ops.__path__, "custom_ops."):
        yield importlib.import_module(info.name)
    yield pp_models.partitions


def _kernels(module):
    """The Numba dispatchers defined in ``module`` (not those it imports)."""
    return {name: obj for name, obj in vars(module).items()
            if isinstance(obj, Dispatcher) and obj.py_func.__module__ == module.__name__}


def kernels_without_fastmath(module):
    """Names of ``module``'s kernels that would take their caller's fastmath flags.

    ``inline="always"`` kernels are exempt: Numba inlines their IR into the caller, whose
    flags then apply (custom_ops.pydt.ops compiles the PYDT recursion fast that way).
    """
    return sorted(name for name, kernel in _kernels(module).items()
                  if "fastmath" not in kernel.targetoptions
                  and kernel.targetoptions.get("inline") != "always")


def test_every_custom_ops_kernel_sets_fastmath():
    n_kernels = 0
    missing = []
    for module in _kernel_modules():
        n_kernels += len(_kernels(module))
        missing += [f"{module.__name__}.{name}" for name in kernels_without_fastmath(module)]
    assert not missing, f"kernels without an explicit fastmath option: {missing}"
    # the walk found the kernels (it cannot pass by finding none)
    assert n_kernels > 250


def test_the_walk_catches_a_kernel_without_fastmath():
    module = types.ModuleType("planted")
    exec("import numba\n"
         "@numba.njit\n"
         "def flagless(x):\n    return x\n"
         "@numba.njit(fastmath=False)\n"
         "def exact(x):\n    return x\n"
         "@numba.njit(inline='always')\n"
         "def inlined(x):\n    return x\n", vars(module))
    assert kernels_without_fastmath(module) == ["flagless"]


def kernels_without_error_model(module):
    """Names of ``module``'s kernels that would take their caller's ``error_model``.

    No exemption for ``inline="always"`` helpers: called from Python they are compiled on
    their own, and the option they name is the one their callers use.
    """
    return sorted(name for name, kernel in _kernels(module).items()
                  if "error_model" not in kernel.targetoptions)


def test_every_kernel_sets_error_model():
    n_kernels = 0
    missing = []
    models = set()
    for module in _kernel_modules():
        kernels = _kernels(module)
        n_kernels += len(kernels)
        models |= {k.targetoptions.get("error_model") for k in kernels.values()}
        missing += [f"{module.__name__}.{name}" for name in kernels_without_error_model(module)]
    assert not missing, f"kernels without an explicit error_model: {missing}"
    assert n_kernels > 250
    assert models == {"python", "numpy"}


def test_the_walk_catches_a_kernel_without_error_model():
    module = types.ModuleType("planted")
    exec("import numba\n"
         "@numba.njit(fastmath=False)\n"
         "def modelless(x):\n    return x\n"
         "@numba.njit(error_model='python')\n"
         "def explicit(x):\n    return x\n"
         "@numba.njit(inline='always')\n"
         "def inlined(x):\n    return x\n", vars(module))
    assert kernels_without_error_model(module) == ["inlined", "modelless"]


def _digamma_of_zero_after_a_numpy_kernel_compiled(kernel):
    """A fresh (uncached) copy of ``kernel`` with its own options, compiled first by a
    caller with error_model="numpy" (as the PYDT kernels are), then called from Python
    at a pole: what each returns, or the exception it raises."""
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    copy = numba.njit(**options)(kernel.py_func)

    @numba.njit(error_model="numpy", fastmath=False)
    def numpy_caller(x):
        return copy(x)

    outcomes = []
    for f in (numpy_caller, copy):
        try:
            outcomes.append(f(0.0))
        except ZeroDivisionError:
            outcomes.append(ZeroDivisionError)
    return outcomes


def test_a_kernel_compiled_from_a_numpy_kernel_first_keeps_its_error_model():
    # digamma is shared by the PYDT kernels (error_model="numpy") and the conjugate and
    # CRP kernels called from Python and graphs
    assert digamma.targetoptions["error_model"] == "python"
    assert _digamma_of_zero_after_a_numpy_kernel_compiled(digamma) == [
        ZeroDivisionError, ZeroDivisionError]


def test_without_error_model_the_first_callers_model_leaks_in():
    # the same kernel without its explicit option: Python now gets -inf, not the error
    options = {k: v for k, v in digamma.targetoptions.items()
               if k not in ("error_model", "nopython")}
    modelless = numba.njit(**options)(digamma.py_func)
    assert _digamma_of_zero_after_a_numpy_kernel_compiled(modelless) == [-np.inf, -np.inf]


def _first_compiled_by_a_graph(kernel):
    """A fresh (uncached) copy of ``kernel`` with its own options, compiled first by a
    caller with PyTensor's graph flags, then called from Python; its LLVM IR."""
    options = {k: v for k, v in kernel.targetoptions.items() if k != "nopython"}
    copy = numba.njit(**options)(kernel.py_func)

    def graph_like_caller(n):
        return copy(n)

    numba_njit(graph_like_caller, final_function=True)(10)
    copy(10)
    (signature,) = copy.overloads
    return copy.inspect_llvm(signature)


def test_a_kernel_compiled_from_a_fastmath_graph_first_stays_exact():
    assert config.numba__fastmath, "PyTensor's graphs are compiled with fastmath on"
    ir = _first_compiled_by_a_graph(harmonic)
    assert "fdiv double" in ir and "fadd double" in ir
    assert not FAST_INSTRUCTION.search(ir), FAST_INSTRUCTION.search(ir).group(0)


def test_without_fastmath_the_graph_flags_leak_in():
    # the same kernel without its explicit option: the check above would see the leak
    options = {k: v for k, v in harmonic.targetoptions.items()
               if k not in ("fastmath", "nopython")}
    flagless = numba.njit(**options)(harmonic.py_func)
    ir = _first_compiled_by_a_graph(flagless)
    assert FAST_INSTRUCTION.search(ir)
