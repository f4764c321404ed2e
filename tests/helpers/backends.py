"""One check for every Op with a Numba registration: the Numba backend computes what the
Op's Python ``perform`` computes.

PyTensor's default backend is Numba; an Op without a working Numba implementation
silently falls back to object mode (a ``UserWarning``), which is slow. The check compiles
the same graph twice, with ``mode="NUMBA"`` (object mode is an error) and with the
pure-Python linker (every Op runs its ``perform``), and compares every output's value and
shape.
"""

import warnings

import numpy as np
import pytensor
from pytensor.compile.mode import Mode

__all__ = ["PYTHON_MODE", "PYTHON_UNOPTIMISED", "assert_numba_matches_python", "compile_numba"]

#: The pure-Python backend (every Op runs its ``perform``) with light rewrites, for
#: ``verify_grad``: pass this object, not ``mode="FAST_COMPILE"``. verify_grad compiles
#: its finite-difference cost with ``mode_not_slow(mode)``, which turns the string
#: "FAST_COMPILE" into FAST_RUN, the Numba backend: one Numba graph (data baked in as
#: constants, 1-4 s cold) per call, e.g. 31 of test_collapsed.py's 55 cold CPU-s of
#: gradient checks. A Mode object is kept as given.
PYTHON_MODE = Mode(linker="py", optimizer="fast_compile")

#: The pure-Python backend without rewrites, for reference values read off a model's
#: variables (through its transforms) where nothing needs to be fast. PYTHON_MODE's
#: rewrites fold constant subgraphs with C thunks, which g++ compiles on a cold cache
#: (9.5 CPU-s in the HMM tempering tests' reads); none here. (A model's ``logp()``
#: folds constants itself while PyMC builds it, so this does not spare a logp graph.)
PYTHON_UNOPTIMISED = Mode(linker="py", optimizer=None)


def compile_numba(inputs, outputs, *, op=None, **function_kwargs):
    """Compile with the Numba backend; an object-mode fallback raises.

    Parameters
    ----------
    inputs, outputs
        As for :func:`pytensor.function`.
    op : type, optional
        An Op class that must appear in the compiled graph (so that the check is not
        vacuous because a rewrite removed the Op under test).
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*object mode.*")
        fn = pytensor.function(inputs, outputs, mode="NUMBA", **function_kwargs)
    if op is not None:
        ops = {type(node.op) for node in fn.maker.fgraph.apply_nodes}
        names = sorted(o.__name__ for o in ops)
        assert op in ops, f"{op.__name__} is not in the compiled graph: {names}"
    return fn


def assert_numba_matches_python(inputs, outputs, args, *, op=None, rtol=1e-12, atol=1e-12):
    """Assert that the Numba backend and the Ops' Python ``perform`` agree at ``args``.

    Parameters
    ----------
    inputs : list of Variable
        Graph inputs.
    outputs : Variable or list of Variable
        Graph outputs (values, gradients, ...).
    args : sequence
        Values of ``inputs`` to evaluate both functions at.
    op : type, optional
        An Op class that must appear in the Numba-compiled graph.
    rtol, atol : float
        Tolerances of :func:`numpy.testing.assert_allclose` per output.

    Returns
    -------
    pytensor.compile.function.types.Function
        The Numba-compiled function (checked at ``args``), for further use by the test.
    """
    f_numba = compile_numba(inputs, outputs, op=op)
    f_python = pytensor.function(inputs, outputs, mode=Mode(linker="py"))
    got_numba, got_python = f_numba(*args), f_python(*args)
    if not isinstance(outputs, list | tuple):
        got_numba, got_python = [got_numba], [got_python]
    for i, (a, b) in enumerate(zip(got_numba, got_python, strict=True)):
        assert np.shape(a) == np.shape(b), f"output {i}: shape {np.shape(a)} != {np.shape(b)}"
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"output {i}")
    return f_numba
