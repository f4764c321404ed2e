"""The shared Numba-vs-Python check can fail: a Numba implementation that disagrees with
``perform`` and an Op without a Numba implementation are both caught."""

import numpy as np
import pytensor.tensor as pt
import pytest
from pytensor.graph.basic import Apply
from pytensor.graph.op import Op
from pytensor.link.numba.dispatch import basic as nb

from tests.helpers.backends import assert_numba_matches_python, compile_numba


class _Twice(Op):
    """2 x in ``perform``; ``numba_off_by_one`` makes the Numba version 2 x + 1."""

    __props__ = ("numba_off_by_one",)

    def __init__(self, numba_off_by_one=False):
        self.numba_off_by_one = numba_off_by_one

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = 2.0 * inputs[0]


class _NoNumba(Op):
    """An Op with no Numba registration: Numba falls back to object mode."""

    __props__ = ()

    def make_node(self, x):
        x = pt.as_tensor_variable(x)
        return Apply(self, [x], [x.type()])

    def perform(self, node, inputs, output_storage):
        output_storage[0][0] = -inputs[0]


@nb.register_funcify_default_op_cache_key(_Twice)
def _numba_twice(op, node, **kwargs):
    shift = 1.0 if op.numba_off_by_one else 0.0

    @nb.numba_njit
    def twice(x):
        return 2.0 * x + shift

    return twice


def test_agreeing_backends_pass_and_return_the_numba_function():
    x = pt.dvector("x")
    f = assert_numba_matches_python([x], _Twice()(x), [np.arange(3.0)], op=_Twice)
    np.testing.assert_array_equal(f(np.ones(2)), [2.0, 2.0])


def test_disagreeing_backends_fail():
    x = pt.dvector("x")
    with pytest.raises(AssertionError, match="output 0"):
        assert_numba_matches_python([x], [_Twice(True)(x)], [np.arange(3.0)])


def test_object_mode_fallback_fails():
    x = pt.dvector("x")
    with pytest.raises(UserWarning, match="object mode"):
        compile_numba([x], _NoNumba()(x))


def test_op_missing_from_the_compiled_graph_fails():
    x = pt.dvector("x")
    with pytest.raises(AssertionError, match="_Twice is not in the compiled graph"):
        compile_numba([x], 2.0 * x, op=_Twice)
